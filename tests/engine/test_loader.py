import gc
import json
import weakref

import pytest
import torch

from app.core.paths import cache_dir
from app.engine.loading.gguf_convert import cached_conversion, conversion_dir
from app.engine.loading.loader import LoadCancelled, ModelLoadError, conversion_dtype, load_model


def test_tiny_model_report_reads_back_what_is_active(tiny_loaded):
    report = tiny_loaded.report
    assert report.device == "cpu"
    assert report.attention == "sdpa+gqa-packed"  # GQA model: K/V never expanded
    assert report.quantization == "none"
    assert (report.weight_dtype, report.compute_dtype) == ("float32", "float32")
    # tied embeddings 49152×64 + 2 layers: parameters × 4 bytes, read from the model
    params = sum(p.numel() for p in tiny_loaded.model.parameters())
    assert report.weight_bytes >= params * 4
    assert report.max_positions == 512
    assert report.has_chat_template
    assert tiny_loaded.tokenizer.padding_side == "left"  # case C08


def test_gguf_conversion_is_cached_in_the_user_cache(real_model_path, real_model_folder):
    dtype = conversion_dtype()
    assert real_model_folder == conversion_dir(real_model_path, dtype)
    assert real_model_folder.is_relative_to(cache_dir()) and real_model_folder.name.endswith(".gguf.hf")
    assert cached_conversion(real_model_path, dtype) == real_model_folder
    stamp = json.loads((real_model_folder / "headroom-source.json").read_text())
    assert (stamp["size"], stamp["dtype"]) == (real_model_path.stat().st_size, "bfloat16")
    weights = (real_model_folder / "model.safetensors").stat().st_size
    assert 134_515_008 * 2 <= weights < 134_515_008 * 2 + 65536  # bf16, not the old float32 (517 MB)
    assert (real_model_folder / "tokenizer.json").is_file()


def test_cached_gguf_opens_in_seconds(real_model_path, real_model_folder):
    loaded = load_model(real_model_path)
    assert loaded.report.source == str(real_model_folder)
    assert loaded.report.load_seconds < 20  # conversion takes ~30 s (60+ s on a busy box); the cache ~1 s


@pytest.mark.parametrize("make_bad, expected", [
    (lambda d: d / "missing", "no model at"),
    (lambda d: (d / "notes.txt").write_text("hi") and d / "notes.txt", "is not a .gguf file"),
    (lambda d: (d / "broken.gguf").write_bytes(b"GARBAGE" * 100) and d / "broken.gguf",
     "broken.gguf is not a GGUF file (no GGUF magic bytes)"),
    (lambda d: (d / "empty.gguf").touch() or d / "empty.gguf", "empty.gguf is an empty file"),  # trial 6: mmap's error
    (lambda d: (d / "cut.gguf").write_bytes(b"GGUF\x03\x00") and d / "cut.gguf", "cannot convert cut.gguf"),
    (lambda d: d, "no config.json"),
])
def test_bad_models_raise_one_line_errors(tmp_path, make_bad, expected):
    with pytest.raises(ModelLoadError) as info:
        load_model(make_bad(tmp_path))
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_a_folder_without_weights_is_refused_before_it_is_planned(tmp_path):
    """New-user trial: a folder holding only config.json printed "Plan: … does not fit … weights 25.10
    GiB" before the "no weights files" it then said."""
    (tmp_path / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    said: list[str] = []
    with pytest.raises(ModelLoadError, match="has no weight files"):
        load_model(tmp_path, progress=lambda text, _fraction: said.append(text))
    assert said == []


def test_broken_weights_leave_nothing_in_memory(tmp_path, tiny_model_dir):
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((tiny_model_dir / name).read_bytes())
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 64)
    before = {id(o) for o in gc.get_objects() if isinstance(o, torch.nn.Module)}
    with pytest.raises(ModelLoadError, match="cannot load"):
        load_model(tmp_path)
    gc.collect()
    leaked = [o for o in gc.get_objects() if isinstance(o, torch.nn.Module) and id(o) not in before]
    assert leaked == []


def test_cancel_before_weights_raises_and_releases(tiny_model_dir):
    import threading

    cancel = threading.Event()
    cancel.set()
    with pytest.raises(LoadCancelled):
        load_model(tiny_model_dir, cancel=cancel)


def test_unloading_frees_the_model(tiny_model_dir):
    loaded = load_model(tiny_model_dir)
    ref = weakref.ref(loaded.model)
    del loaded
    gc.collect()
    assert ref() is None


def _modules() -> set[int]:
    gc.collect()
    return {id(o) for o in gc.get_objects() if isinstance(o, torch.nn.Module)}


def _cut_copy(tiny_model_dir, folder):
    """The new-user trial's folder: a working model whose model.safetensors was cut short."""
    import shutil

    shutil.copytree(tiny_model_dir, folder)
    weights = folder / "model.safetensors"
    with open(weights, "r+b") as file:
        file.truncate(weights.stat().st_size // 2)
    return folder


def test_a_cut_safetensors_file_is_named_and_nothing_stays_loaded(tmp_path, tiny_model_dir):
    folder = _cut_copy(tiny_model_dir, tmp_path / "cut")
    before = _modules()
    with pytest.raises(ModelLoadError) as info:
        load_model(folder)
    assert str(info.value) == (
        "cannot load cut: model.safetensors: damaged safetensors file (it ends before its own tensors "
        "do); the file is probably incomplete or corrupted — download it again")
    assert _modules() - before == set()


def test_a_safetensor_error_in_the_load_itself_names_the_damaged_file(tmp_path, tiny_model_dir, monkeypatch):
    """When the header check before the load passes (here: skipped), the SafetensorError that
    transformers then raises is traced back to the file, and the half-built model is freed."""
    from app.engine.loading import loader, safetensors_header

    folder = _cut_copy(tiny_model_dir, tmp_path / "cut")
    checks = []

    def check_after_the_first(path):
        checks.append(path)
        return None if len(checks) == 1 else safetensors_header.damaged_safetensors(path)

    monkeypatch.setattr(loader, "damaged_safetensors", check_after_the_first)
    before = _modules()
    with pytest.raises(ModelLoadError) as info:
        load_model(folder)
    assert len(checks) == 2
    assert str(info.value).startswith("cannot load cut: model.safetensors: damaged safetensors file (it ends before")
    assert _modules() - before == set()


def _copy(folder, to):
    import shutil

    shutil.copytree(folder, to)
    return to


def test_a_broken_chat_template_is_set_aside_for_the_plain_transcript(tmp_path, tiny_model_dir):
    """A template that cannot render (a typo in its Jinja, a GGUF's damaged chat_template) failed
    every turn of a model that loaded as healthy (new-user trial 12): it is dropped at load, the
    report says why, and prompts use the transcript format of a model without one (case C14)."""
    from app.engine.local.chat_format import encode_messages

    folder = _copy(tiny_model_dir, tmp_path / "tiny")
    for path in folder.iterdir():
        if path.name == "chat_template.jinja":
            path.write_text("{% for %}{{{{ ")
        elif path.name == "tokenizer_config.json":
            config = json.loads(path.read_text())
            if "chat_template" in config:
                config["chat_template"] = "{% for %}{{{{ "
                path.write_text(json.dumps(config))
    loaded = load_model(folder)
    assert not loaded.report.has_chat_template and loaded.prompt_format.kind == "transcript"
    assert any(f.startswith("its chat template fails (TemplateSyntaxError") for f in loaded.report.fallbacks)
    ids = encode_messages(loaded.tokenizer, loaded.prompt_format, [{"role": "user", "content": "hi"}])
    assert loaded.tokenizer.decode(ids) == "User: hi\n\nAssistant:"


def test_a_model_whose_weights_lack_layers_its_config_names_is_refused_before_loading(tmp_path, tiny_model_dir):
    """A config naming more layers than the weights hold (a GGUF whose block_count said 1000 for 30
    layers took a minute and 13 GiB, then answered noise): refused from the headers, nothing loaded."""
    folder = _copy(tiny_model_dir, tmp_path / "tiny")
    config = json.loads((folder / "config.json").read_text())
    layers = config["num_hidden_layers"]
    config["num_hidden_layers"] = 1000
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError) as info:
        load_model(folder)
    assert str(info.value) == (f"cannot load tiny: damaged model: its config has 1,000 layers but its weights only "
                               f"{layers}; the files are incomplete or do not belong together — download the model "
                               "again")


def test_weights_of_other_shapes_than_the_config_names_are_said_as_such(tmp_path, tiny_model_dir):
    """New-user re-trial: a config.json whose sizes do not match the weights said only "The model could
    not be opened (RuntimeError)"; transformers' own words ask for ignore_mismatched_sizes."""
    from app.chat.error_text import plain_failure

    folder = _copy(tiny_model_dir, tmp_path / "tiny")
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] += 8
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError) as info:
        load_model(folder)
    assert str(info.value) == "cannot load tiny: its weights do not match its config.json (tensor shapes differ)"
    assert plain_failure(str(info.value), during="load").line() == (
        "This model's weights do not match its config.json: their tensors have other shapes than it names. The "
        "config.json was edited or belongs to another model; download the model again.")


def test_ctrl_c_inside_a_lazy_import_is_ctrl_c_not_a_damaged_model(tiny_model_dir, monkeypatch):
    """New-user re-trial: Ctrl+C 0.3 s after `--ask` arrived inside accelerate's import, which
    transformers re-raises as an ImportError: it said "This GGUF file could not be read … installs it
    again". The interrupt goes on as one (--ask then says "headroom: interrupted", exit 130)."""
    from app.engine.loading import loader

    def interrupted_import(*_args, **_kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("Failed to import accelerate because of the following error") from exc

    monkeypatch.setattr(loader.AutoModelForCausalLM, "from_pretrained", interrupted_import)
    with pytest.raises(KeyboardInterrupt):
        load_model(tiny_model_dir)
    monkeypatch.undo()
    with pytest.raises(ModelLoadError, match="ImportError"):  # an ImportError of its own stays a load error
        monkeypatch.setattr(loader.AutoModelForCausalLM, "from_pretrained",
                            lambda *_a, **_k: (_ for _ in ()).throw(ImportError("no accelerate")))
        load_model(tiny_model_dir)


def test_preflight_refuses_by_headers_what_the_load_would_refuse(tmp_path, tiny_model_dir, monkeypatch):
    """What the window refuses before it frees the open model (new-user trial: a cut GGUF freed it,
    failed, then reopened it): a cut or unsupported GGUF, a cut safetensors file, a folder without
    weights. A whole model passes, with no file written and nothing loaded."""
    import shutil

    from app.engine.loading.loader import preflight
    from tests.helpers.tiny_gguf import write_tiny_gguf

    monkeypatch.setenv("HEADROOM_CACHE_DIR", str(tmp_path / "cache"))
    whole = tmp_path / "whole.gguf"
    write_tiny_gguf(whole, "Q8_0")
    preflight(whole)
    preflight(tiny_model_dir)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(ModelLoadError, match=r"^cannot convert cut.gguf: cut.gguf: damaged GGUF file \(it ends"):
        preflight(cut)
    odd = tmp_path / "odd.gguf"
    write_tiny_gguf(odd, "F32", architecture="flux9")
    with pytest.raises(ModelLoadError, match="^cannot convert odd.gguf: .*architecture 'flux9' is not supported"):
        preflight(odd)
    folder = tmp_path / "cut-folder"
    shutil.copytree(tiny_model_dir, folder)
    with open(folder / "model.safetensors", "r+b") as f:
        f.truncate(f.seek(0, 2) // 2)
    with pytest.raises(ModelLoadError, match="model.safetensors: damaged safetensors file"):
        preflight(folder)
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="has no weight files"):
        preflight(folder)
    assert not cache_dir().exists()  # headers read, nothing converted


@pytest.mark.parametrize("stage", ["Loading the tokenizer", "Converting "])
def test_a_pipe_closed_under_the_progress_lines_is_no_model_failure(tiny_model_dir, tmp_path, monkeypatch, stage):
    """New-user re-trial: `--ask … 2>&1 | head -1` logged "cannot open …gguf: cannot load …:
    BrokenPipeError", a model failure; it goes on to app.main, which ends as a Unix filter (141)."""
    from tests.helpers.tiny_gguf import write_tiny_gguf

    monkeypatch.setenv("HEADROOM_CACHE_DIR", str(tmp_path / "cache"))
    path = tiny_model_dir
    if stage == "Converting ":
        path = tmp_path / "tiny.gguf"
        write_tiny_gguf(path, "F32")

    def progress(text, _fraction):
        if text.startswith(stage):
            raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        load_model(path, progress)
