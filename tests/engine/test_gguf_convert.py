"""GGUF header, streaming conversion and refusals, on tiny GGUFs the tests write themselves
(tests/helpers/tiny_gguf.py) and on the real default model."""

import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from app.engine.loading import gguf_convert
from app.engine.loading.gguf_convert import (
    ConversionCancelled,
    ConversionRefused,
    cached_conversion,
    conversion_dir,
    convert_gguf,
    sweep_abandoned,
)
from app.engine.loading.gguf_header import UnsupportedGguf, read_gguf_header
from app.engine.loading.loader import ModelLoadError, load_model, resolve_model_folder
from tests.helpers.tiny_gguf import TEMPLATE, write_tiny_gguf

PROMPT = [{"role": "user", "content": "hello there"}]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HEADROOM_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def tiny_f32(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny-F32.gguf"
    return path, write_tiny_gguf(path, "F32")


@pytest.fixture(scope="module")
def tiny_q8(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny-Q8_0.gguf"
    return path, write_tiny_gguf(path, "Q8_0")


def logits_of(folder_or_model, tokenizer_folder: Path) -> torch.Tensor:
    tok = AutoTokenizer.from_pretrained(tokenizer_folder)
    ids = tok.apply_chat_template(PROMPT, add_generation_prompt=True, return_tensors="pt")["input_ids"]
    model = folder_or_model
    if isinstance(model, Path):
        model = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    with torch.no_grad():
        return model(ids).logits


def safetensors_dtypes(folder: Path) -> set[str]:
    raw = (folder / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    return {v["dtype"] for k, v in header.items() if k != "__metadata__"}


# ----------------------------------------------------------------------------------- header


def test_header_gives_shapes_and_config_as_transformers_builds_it(tiny_q8):
    path, _ = tiny_q8
    header = read_gguf_header(path)
    info = header.describe()
    assert (info["architecture"], info["model_type"], info["quantization"]) == ("llama", "llama", "Q8_0")
    assert (info["trained_context"], info["layers"], info["kv_heads"], info["head_dim"]) == (512, 2, 2, 16)
    # 2 × 261 × 64 (embedding, untied head) + 2 × (64·64·2 + 32·64·2 + 3·64·128 + 2·64) + 64
    assert info["parameters"] == 2 * 261 * 64 + 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 128 + 2 * 64) + 64
    assert header.output_bytes(2) == info["parameters"] * 2
    ours = header.hf_config().to_dict()
    theirs = AutoConfig.from_pretrained(path.parent, gguf_file=path.name).to_dict()
    ours.pop("_name_or_path"), theirs.pop("_name_or_path")
    assert ours == theirs


def test_default_model_header_in_well_under_a_second(real_model_path):
    read_gguf_header(real_model_path)  # imports warm
    started = time.perf_counter()
    header = read_gguf_header(real_model_path)
    assert time.perf_counter() - started < 1.0  # ~0.1 s; gguf.GGUFReader took 24 s here
    info = header.describe()
    assert (info["quantization"], info["trained_context"], info["kv_heads"], info["head_dim"]) == ("Q4_1", 8192, 3, 64)
    assert info["parameters"] == 134_515_008


@pytest.mark.parametrize("make, expected", [
    (lambda d: (d / "junk.gguf").write_bytes(b"NOTGGUF" * 64) and d / "junk.gguf",
     "junk.gguf is not a GGUF file"),
    (lambda d: write_tiny_gguf(d / "moe.gguf", architecture="qwen2moe") and d / "moe.gguf",
     "architecture 'qwen2moe' (mixture-of-experts) is not supported"),
    (lambda d: write_tiny_gguf(d / "odd.gguf", architecture="flux9") and d / "odd.gguf",
     "architecture 'flux9' is not supported by transformers' GGUF mapping"),
    (lambda d: write_tiny_gguf(d / "i8.gguf", extra_tensor=("extra.weight", 24)) and d / "i8.gguf",
     "tensor type I8 cannot be dequantized"),
])
def test_unsupported_gguf_is_refused_in_seconds_naming_what(tmp_path, make, expected):
    path = make(tmp_path)
    started = time.perf_counter()
    with pytest.raises(UnsupportedGguf, match=expected.replace("(", r"\(").replace(")", r"\)")):
        read_gguf_header(path)
    with pytest.raises(ModelLoadError) as info:
        load_model(path)
    assert time.perf_counter() - started < 5
    # no magic bytes: said from the first bytes, before any conversion (app.engine.loading.model_path)
    said = expected if path.name == "junk.gguf" else f"cannot convert {path.name}: "
    assert str(info.value).startswith(said) and "\n" not in str(info.value)


# ------------------------------------------------------------------------------- conversion


def test_f32_gguf_converts_to_the_exact_model_it_was_made_from(tiny_f32, cache):
    path, source_model = tiny_f32
    stages = []
    folder = convert_gguf(path, "float32", progress=lambda text, frac: stages.append(frac))
    assert folder == conversion_dir(path, "float32") and folder.is_relative_to(cache)
    assert folder.name == "tiny-F32.gguf.hf"
    assert cached_conversion(path, "float32") == folder
    assert stages == sorted(stages) and stages[-1] == 1.0
    assert [p.name for p in folder.parent.parent.iterdir()] == [folder.parent.name]  # no .partial left
    # q/k were stored permuted as llama.cpp does; transformers' reverse permutation undoes it
    assert torch.equal(logits_of(folder, folder), logits_of(source_model, folder))
    tok = AutoTokenizer.from_pretrained(folder)
    assert tok.chat_template == TEMPLATE and tok.eos_token == "<|im_end|>"


def test_quantized_gguf_matches_transformers_own_gguf_load(tiny_q8, tmp_path):
    path, _ = tiny_q8
    folder = convert_gguf(path, "float32")
    theirs = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    assert torch.equal(logits_of(folder, folder), logits_of(theirs, folder))
    AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name).save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):  # the same tokenizer
        assert (folder / name).read_bytes() == (tmp_path / name).read_bytes()


def test_bf16_output_is_half_the_float32_size_and_loads(tiny_q8, monkeypatch):
    path, _ = tiny_q8
    monkeypatch.setattr(gguf_convert, "CHUNK_BYTES", 4096)  # the embedding goes in 16-row chunks
    bf16 = convert_gguf(path, "bfloat16")
    f32 = convert_gguf(path, "float32")
    assert safetensors_dtypes(bf16) == {"BF16"} and safetensors_dtypes(f32) == {"F32"}
    weights = read_gguf_header(path).parameters
    assert (bf16 / "model.safetensors").stat().st_size - weights * 2 < 8192  # header only on top
    a, b = logits_of(bf16, bf16), logits_of(f32, f32)
    assert torch.allclose(a, b, atol=0.05) and torch.equal(a.argmax(-1), b.argmax(-1))


def test_chunked_rows_give_the_same_tensors(tiny_q8, monkeypatch, tmp_path):
    path, _ = tiny_q8
    whole = convert_gguf(path, "float32")
    monkeypatch.setenv("HEADROOM_CACHE_DIR", str(tmp_path / "chunked"))
    monkeypatch.setattr(gguf_convert, "CHUNK_BYTES", 1024)
    chunked = convert_gguf(path, "float32")
    assert (whole / "model.safetensors").read_bytes() == (chunked / "model.safetensors").read_bytes()


def test_cancel_at_a_tensor_leaves_nothing(tiny_q8, cache):
    path, _ = tiny_q8
    cancel = threading.Event()

    def progress(text, _frac):
        if text.startswith("Converting model.layers.0"):
            cancel.set()

    with pytest.raises(ConversionCancelled):
        convert_gguf(path, "bfloat16", progress, cancel)
    assert list((cache / "gguf").iterdir()) == []
    assert cached_conversion(path) is None


def test_too_little_disk_is_refused_before_writing(tiny_q8, cache, monkeypatch):
    path, _ = tiny_q8
    monkeypatch.setattr(gguf_convert.shutil, "disk_usage", lambda _p: type("U", (), {"free": 10_000})())
    with pytest.raises(ConversionRefused, match="not enough disk space to convert tiny-Q8_0.gguf"):
        convert_gguf(path)
    assert not (cache / "gguf").exists() or list((cache / "gguf").iterdir()) == []


def _said(path) -> str:
    """The load's failure as the window and --ask say it (English)."""
    from app.chat.error_text import plain_failure

    with pytest.raises(ModelLoadError) as failed:
        resolve_model_folder(path)
    return plain_failure(str(failed.value), "load", path).line()


def test_a_cache_that_cannot_take_the_conversion_is_said_as_that_not_as_a_bad_gguf(tiny_q8, cache, monkeypatch):
    """New-user trial: a full disk, a disk that filled mid-way and a file where the cache folder belongs
    were all "This GGUF file could not be read", and the default model's advice was to reinstall it."""
    import errno

    path, _ = tiny_q8
    monkeypatch.setattr(gguf_convert.shutil, "disk_usage", lambda _p: type("U", (), {"free": 10_000})())
    said = _said(path)
    assert said.startswith("There is not enough disk space to convert this GGUF file: it needs ")
    assert f"in {cache / 'gguf'}, and 9.8 KiB is free. Free some space there" in said
    monkeypatch.undo()
    monkeypatch.setenv("HEADROOM_CACHE_DIR", str(cache))

    def full(self, name, pieces):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gguf_convert._ShardWriter, "add", full)
    assert _said(path) == (f"The converted model could not be written to {cache / 'gguf'}: the disk is full. "
                           "Free some space there, or start Headroom with HEADROOM_CACHE_DIR set to a folder on "
                           "another disk.")
    assert [p.name for p in (cache / "gguf").iterdir()] == []  # nothing half-written is left
    monkeypatch.undo()
    in_the_way = cache.parent / "a-file"
    in_the_way.write_text("x")
    monkeypatch.setenv("HEADROOM_CACHE_DIR", str(in_the_way))
    assert _said(path) == (f"The converted model could not be written to {in_the_way / 'gguf'}: a part of the "
                           "path is a file, not a folder. Check that folder, or start Headroom with "
                           "HEADROOM_CACHE_DIR set to another folder.")


@pytest.mark.parametrize("damage", ["cut weights", "broken config", "tokenizer deleted", "config edited"])
def test_a_damaged_conversion_is_converted_again_with_its_hard_linked_copies(tiny_q8, cache, tmp_path, damage):
    """New-user trial: a cut model.safetensors (or a broken config.json) in the cache was reused at every
    open, and a fresh download of the same GGUF reused it again; only deleting the cache helped."""
    path, _ = tiny_q8
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(path, copy)
    first = resolve_model_folder(path)
    second = resolve_model_folder(copy)  # the same content: hard links to the first's files
    assert (first / "model.safetensors").stat().st_ino == (second / "model.safetensors").stat().st_ino
    if damage == "cut weights":
        with open(first / "model.safetensors", "r+b") as f:  # the shared inode: both are cut
            f.truncate(f.seek(0, os.SEEK_END) // 2)
    elif damage == "broken config":
        (first / "config.json").write_text('{"model_type": "llama",', encoding="utf-8")
    elif damage == "tokenizer deleted":  # re-trial: the load said "This GGUF file could not be read …", for good
        (first / "tokenizer.json").unlink()
    else:  # re-trial: valid JSON of the same size, a wrong value; the load failed with a generic line
        config = (first / "config.json").read_text(encoding="utf-8")
        assert '"num_hidden_layers": 2,' in config
        (first / "config.json").write_text(config.replace('"num_hidden_layers": 2,', '"num_hidden_layers": 7,'),
                                           encoding="utf-8")
    assert gguf_convert.conversion_damage(first) is not None
    again = resolve_model_folder(copy)
    assert again == second and gguf_convert.conversion_damage(again) is None
    model = AutoModelForCausalLM.from_pretrained(again)
    assert model.config.num_hidden_layers == 2
    if damage == "cut weights":  # the first shared the cut file: removed too, and converted anew on open
        assert not first.exists()
    assert gguf_convert.conversion_damage(resolve_model_folder(path)) is None


def test_the_old_float32_folder_beside_the_gguf_is_replaced(tmp_path):
    path = tmp_path / "m.gguf"
    write_tiny_gguf(path, "Q8_0")
    legacy = tmp_path / "m.gguf.hf"
    legacy.mkdir()
    (legacy / "headroom-source.json").write_text("{}")
    mine = tmp_path / "other.hf"
    mine.mkdir()
    stages = []
    loaded = load_model(path, progress=lambda text, _frac: stages.append(text))
    assert not legacy.exists() and mine.exists()  # only the folder Headroom made goes
    # the plan is the first line, before the conversion reads anything
    assert stages[0].startswith("Plan: m.gguf: fits at full context (512 of 512 tokens) on cpu")
    assert stages[1] == "Checking whether m.gguf was converted before"  # its sha256 (a copy is not converted twice)
    assert stages[2].startswith("conversion writes 210 KiB to ")  # not "0.00 GiB"
    assert loaded.report.name == "m.gguf" and loaded.report.weight_dtype == "float32"  # CPU upcasts


@pytest.mark.real_model
def test_default_model_converts_to_the_logits_of_transformers_gguf_load(real_model_path, tmp_path):
    """float32 output is bit-identical to transformers' own load of the GGUF (what the old
    converter saved); bf16 output picks the same greedy token and says "Paris"."""
    link = tmp_path / real_model_path.name  # a link: the shared install's old folder stays put
    link.symlink_to(real_model_path)
    ours = convert_gguf(link, "float32")
    from transformers import GgufConfig

    theirs = AutoModelForCausalLM.from_pretrained(
        real_model_path.parent, gguf_file=real_model_path.name, dtype=torch.float32,
        quantization_config=GgufConfig(dequantize=True), use_kernels=False)
    prompt = [{"role": "user", "content": "What is the capital of France?"}]
    tok = AutoTokenizer.from_pretrained(ours)
    ids = tok.apply_chat_template(prompt, add_generation_prompt=True, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = theirs(ids).logits
        got = AutoModelForCausalLM.from_pretrained(ours, dtype=torch.float32)(ids).logits
    assert torch.equal(got, expected)
    bf16 = AutoModelForCausalLM.from_pretrained(convert_gguf(link, "bfloat16"), dtype=torch.float32)
    with torch.no_grad():
        out = bf16.generate(ids, max_new_tokens=8, do_sample=False)
    assert torch.equal(bf16(ids).logits[0, -1].argmax(), expected[0, -1].argmax())
    assert "Paris" in tok.decode(out[0, ids.shape[1]:])


def test_conversion_dtype_follows_the_placement(monkeypatch):
    from app.engine.loading import loader
    from app.engine.loading.placement import choose_placement

    turing = choose_placement(True, (7, 5), False, (True, ""))  # no bf16: fp16 compute (C06)
    ampere = choose_placement(True, (8, 0), False, (True, ""))
    cpu = choose_placement(False, None, False, (False, "no CUDA"))
    for placement, expected in ((turing, "float16"), (ampere, "bfloat16"), (cpu, "bfloat16")):
        monkeypatch.setattr(loader, "detect_placement", lambda *_a, p=placement: p)
        assert loader.conversion_dtype() == expected


def test_a_truncated_or_garbled_header_is_said_in_words(tmp_path, tiny_q8):
    """New-user trial: a damaged header showed the codec's own text ("'utf-8' codec can't
    decode byte 0xae …")."""
    data = bytearray(tiny_q8[0].read_bytes())
    garbled = tmp_path / "garbled.gguf"
    garbled.write_bytes(bytes(data[:40]) + b"\xae" * 64 + bytes(data[104:]))
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(bytes(data[:60]))
    for path in (garbled, truncated):
        with pytest.raises(UnsupportedGguf) as info:
            read_gguf_header(path)
        text = str(info.value)
        assert "damaged GGUF header" in text and "download it again" in text and "codec" not in text


@pytest.mark.parametrize("after_magic, said", [
    (b"not a gguf" * 50, "damaged GGUF header (its version field holds no GGUF version)"),
    (struct.pack("<I", 1001) + b"\0" * 96, "damaged GGUF header (its version field holds no GGUF version)"),
    (struct.pack("<I", 1) + b"\0" * 96, "v.gguf is GGUF version 1; supported: 2 and 3"),
    (struct.pack("<I", 4) + b"\0" * 96, "v.gguf is GGUF version 4; supported: 2 and 3"),
    (struct.pack("<I", 0) + b"\0" * 96, "v.gguf is GGUF version 0; supported: 2 and 3"),
    # a big-endian file (gguf.GGUFReader reads the low 16 bits zero as that): whole, not damaged, and
    # said as that, not as the byte-swapped "GGUF version 50331648"
    (struct.pack(">I", 3) + b"\0" * 96,
     "v.gguf is a big-endian GGUF (version 3); only little-endian GGUF files are supported"),
    (struct.pack(">I", 2) + b"\0" * 96,
     "v.gguf is a big-endian GGUF (version 2); only little-endian GGUF files are supported"),
], ids=["junk", "1001", "1", "4", "0", "big-endian-3", "big-endian-2"])
def test_a_version_no_gguf_has_is_said_as_a_damaged_header(tmp_path, after_magic, said):
    """The magic bytes, then junk, read "x.gguf is GGUF version 1629516654; supported: 2 and 3":
    a version no GGUF writer uses is a damaged file; a small one is still said as its version."""
    path = tmp_path / "v.gguf"
    path.write_bytes(b"GGUF" + after_magic)
    with pytest.raises(UnsupportedGguf) as info:
        read_gguf_header(path)
    assert said in str(info.value)


def test_the_name_map_is_transformers_own_built_from_one_tensor_name_map(tiny_q8, monkeypatch):
    """transformers builds gguf's TensorNameMap for every submodule it recurses into: 9.5 s of pure
    Python for the default model, the window starved of the GIL (tests/benchmarks/ui_stalls.py)."""
    import gguf
    from gguf import tensor_mapping
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor, get_gguf_hf_weights_map

    header = read_gguf_header(tiny_q8[0])
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(header.hf_config())
    own = get_gguf_hf_weights_map(model, TENSOR_PROCESSORS.get(header.architecture, TensorProcessor)(
        config=header.config))
    built = []
    original_init = tensor_mapping.TensorNameMap.__init__
    monkeypatch.setattr(tensor_mapping.TensorNameMap, "__init__",
                        lambda self, *args: (built.append(args), original_init(self, *args))[1])
    before = gguf.get_tensor_name_map
    mapping, _processor = gguf_convert._name_map(header)
    assert mapping == own and len(mapping) > 5
    assert len(built) == 1  # one map, shared by every submodule
    assert gguf.get_tensor_name_map is before  # put back


def _patched(tmp_path: Path, source: Path, key: str, value: int) -> Path:
    """A copy of `source` with the integer metadata `key` set to `value` in place."""
    import shutil

    from gguf import GGUFReader

    path = tmp_path / f"{key.rsplit('.', 1)[-1]}-{value}.gguf"
    shutil.copy(source, path)
    reader = GGUFReader(path, "r+")
    field = reader.fields[key]
    field.parts[field.data[0]][0] = value
    reader.data.flush()
    del reader
    return path


@pytest.mark.parametrize("key, value, said", [
    ("llama.attention.head_count", 0, "its attention head count is 0"),
    ("llama.attention.head_count_kv", 0, "its key-value head count is 0"),
    ("llama.attention.head_count_kv", 3, "its key-value head count (3) does not divide its attention head count (4)"),
    ("tokenizer.ggml.eos_token_id", 1_000_000, "its end-of-text token id (1,000,000) is outside its vocabulary "
                                               "(261 tokens)"),
    # new-user trial 13: converted whole, then refused from the folder; said before any conversion now
    ("llama.block_count", 40, "it names 40 layers but its tensors hold only 2"),
], ids=["heads-0", "kv-heads-0", "kv-heads-3", "eos-out-of-vocabulary", "layers-missing"])
def test_impossible_header_values_are_a_damaged_gguf_naming_them(tmp_path, tiny_q8, key, value, said):
    """New-user trial: ZeroDivisionError, IndexError and "cannot reshape array" from the conversion."""
    path = _patched(tmp_path, tiny_q8[0], key, value)
    with pytest.raises(UnsupportedGguf) as info:
        read_gguf_header(path)
    assert str(info.value) == (f"{path.name}: damaged GGUF header ({said}); the file is probably incomplete or "
                               "corrupted — download it again")


def test_a_garbled_length_is_a_damaged_header_not_an_overflow(tmp_path, tiny_q8):
    """0xFF over a length read "OverflowError: Python int too large to convert to C ssize_t"."""
    data = bytearray(tiny_q8[0].read_bytes())
    key = b"tokenizer.ggml.tokens"
    first = data.index(key) + len(key) + 4 + 4 + 8  # value type, element type, count: then a length
    data[first:first + 8] = b"\xff" * 8  # in the vocabulary, which is walked, not decoded
    path = tmp_path / "long.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises(UnsupportedGguf, match=r"damaged GGUF header \(a length or count in it is larger than any "
                                              r"file\)"):
        read_gguf_header(path)


@pytest.mark.parametrize("change, said", [
    ({"num_attention_heads": 0}, "its model settings or its tokenizer's do not fit together"),
    ({"num_key_value_heads": 3}, "its tensor blk.0.attn_k.weight does not fit the head counts in its header"),
])
def test_conversion_errors_from_header_values_are_a_damaged_gguf(tiny_q8, cache, change, said):
    """Past the header's checks, transformers' own errors on such values are said the same way."""
    from dataclasses import replace

    header = read_gguf_header(tiny_q8[0])
    with pytest.raises(UnsupportedGguf) as info:
        convert_gguf(tiny_q8[0], "float32", header=replace(header, config=header.config | change))
    assert str(info.value) == (f"{tiny_q8[0].name}: damaged GGUF file ({said}); the file is probably incomplete or "
                               "corrupted — download it again")
    assert not list(cache.rglob("*.safetensors"))  # nothing half-written is left


def test_a_killed_conversions_folder_is_swept_and_a_running_ones_kept(tiny_q8, cache):
    """kill -9 mid-conversion skips its clean-up: the next GGUF opened removes that folder (its
    process is gone) but not one whose process still runs (another Headroom converting)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned = cache / "gguf" / f"m-0123456789ab-bfloat16.partial-{dead.pid}"
    running = cache / "gguf" / f"n-0123456789ab-bfloat16.partial-{os.getppid()}"
    for folder in (abandoned, running):
        (folder / "m.gguf.hf").mkdir(parents=True)
        (folder / "m.gguf.hf" / "model-00001.safetensors").write_bytes(b"x" * 1000)
    folder = resolve_model_folder(tiny_q8[0])
    assert not abandoned.exists() and running.exists()
    assert sorted(p.name for p in (cache / "gguf").iterdir()) == sorted([folder.parent.name, running.name])
    assert sweep_abandoned() == []


def test_a_copy_moved_or_renamed_gguf_reuses_its_conversion_by_hard_links(tiny_q8, cache, tmp_path):
    """New-user trial: a copy of the default model in another folder converted anew, 261 MB each (16 GB
    for an 8B). Same content (sha256), so its folder is hard links to the first: no disk used, and the
    first folder (another Headroom may be loading from it) is left as it is. The report's name is the file's."""
    path, _ = tiny_q8
    first = convert_gguf(path, "bfloat16")
    copy = tmp_path / "elsewhere" / "renamed-Q8_0.gguf"
    copy.parent.mkdir()
    shutil.copy(path, copy)  # a new mtime too: the content decides
    said = []
    second = convert_gguf(copy, "bfloat16", lambda text, _f: said.append(text))
    assert second == conversion_dir(copy) == cached_conversion(copy) and second.name == "renamed-Q8_0.gguf.hf"
    assert said[-1] == "Converted before: reused" and not any(t.startswith("conversion writes") for t in said)
    weights = (first / "model.safetensors", second / "model.safetensors")
    assert os.path.samefile(*weights) and weights[0].stat().st_nlink == 2
    assert cached_conversion(path) == first  # untouched


def test_another_file_of_the_same_size_and_mtime_is_converted_not_taken_for_it(tiny_q8, cache, tmp_path):
    """The new-user re-trial: a chat template changed in place, size and mtime restored (touch -r), reused
    the old conversion when only the file's end was compared. The whole file's sha256 decides."""
    path, _ = tiny_q8
    first = convert_gguf(path, "bfloat16")
    other = tmp_path / "other.gguf"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte in the middle
    other.write_bytes(bytes(data))
    os.utime(other, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    second = convert_gguf(other, "bfloat16")
    assert not os.path.samefile(first / "model.safetensors", second / "model.safetensors")


def test_a_replaced_file_drops_the_conversion_of_what_it_held_before(tiny_q8, cache, tmp_path):
    """The new-user re-trial: a GGUF downloaded again over itself left both conversions, 261 MB each."""
    path, _ = tiny_q8
    local = tmp_path / "m.gguf"
    shutil.copy(path, local)
    before = convert_gguf(local, "bfloat16")
    data = bytearray(local.read_bytes())
    data[-1] ^= 0xFF
    local.write_bytes(bytes(data))  # the same path, another content
    after = convert_gguf(local, "bfloat16")
    assert after != before and not before.parent.exists() and after.is_dir()


def test_two_conversions_of_one_file_at_once_take_turns_and_share_one_folder(tiny_q8, monkeypatch):
    """New-user trial: `--ask` started while another Headroom converted the same GGUF; the one to finish
    last replaced the other's folder while it loaded from it ("This model folder has no weights files",
    2 of 3 tries). Now the second waits, says so, and takes the first's conversion."""
    path, _ = tiny_q8
    writing, go_on = threading.Event(), threading.Event()
    write_weights = gguf_convert._write_weights

    def slow_write(*args, **kwargs):
        writing.set()
        assert go_on.wait(30)
        return write_weights(*args, **kwargs)

    monkeypatch.setattr(gguf_convert, "_write_weights", slow_write)
    results: dict[str, Path] = {}
    said: list[str] = []
    first = threading.Thread(target=lambda: results.setdefault("first", convert_gguf(path)))
    first.start()
    assert writing.wait(30)
    second = threading.Thread(target=lambda: results.setdefault(
        "second", convert_gguf(path, progress=lambda text, _fraction: said.append(text))))
    second.start()
    deadline = time.monotonic() + 30
    while "Waiting for another Headroom converting this file" not in said and time.monotonic() < deadline:
        time.sleep(0.02)
    assert said == ["Waiting for another Headroom converting this file"]  # nothing converted meanwhile
    writing.clear()
    go_on.set()
    first.join(30)
    second.join(30)
    assert results["first"] == results["second"] and not writing.is_set()  # written once
    assert said[-1] == "Converted by another Headroom: reused"
    assert gguf_convert.conversion_damage(results["first"]) is None
    assert AutoModelForCausalLM.from_pretrained(results["first"]).config.num_hidden_layers == 2


def test_waiting_for_another_conversion_can_be_cancelled(tiny_q8, cache):
    from filelock import FileLock

    path, _ = tiny_q8
    (cache / "locks").mkdir(parents=True)
    held = FileLock(str(cache / "locks" / f"{gguf_convert.conversion_dir(path).parent.name}.lock"))
    held.acquire()
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    try:
        with pytest.raises(gguf_convert.ConversionCancelled):
            convert_gguf(path, cancel=cancel)
    finally:
        held.release()
    assert time.monotonic() - started < 5
    assert not (cache / "gguf").exists() or list((cache / "gguf").iterdir()) == []


def test_a_gguf_under_another_name_opens_by_its_bytes(tmp_path, tiny_q8):
    """New-user re-trial: a valid GGUF named "noext" (a hub cache's blob, a renamed download) was refused
    as "not a .gguf file"; a text file of that kind of name still is."""
    from app.engine.loading.catalog import Catalog
    from app.engine.loading.fit_plan import plan_model
    from app.engine.loading.model_path import refusal

    path, _ = tiny_q8
    blob = tmp_path / "3f9a1c0de2"
    shutil.copyfile(path, blob)
    assert refusal(blob) is None
    assert plan_model(blob, "cpu").kind == "gguf"
    loaded = load_model(blob, device_preference="cpu")
    assert loaded.report.name == "3f9a1c0de2" and loaded.model.config.num_hidden_layers == 2
    (tmp_path / "notes").write_text("GGU is not enough")
    assert refusal(tmp_path / "notes") == "notes is not a .gguf file or a model folder (no config.json next to it)"
    entry = Catalog.for_this_machine("cpu").describe(blob)  # the open-model list, by the same check
    assert not entry.refusal and entry.fit is not None and entry.disk_bytes == path.stat().st_size
