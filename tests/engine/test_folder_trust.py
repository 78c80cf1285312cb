"""Offline by construction (issue 6 item 6): a model's own code and pickle weights are refused
with one line saying how to allow them for that model, and accepted once allowed."""

import json
import shutil

import pytest
import torch
from transformers import AutoTokenizer, LlamaForCausalLM

from app.engine.loading.folder_trust import (
    MODEL_JSON_FILES,
    TrustRequired,
    check_folder,
    folder_refusal,
    needs_remote_code,
    weight_files,
)
from app.engine.loading.loader import ModelLoadError, load_model
from tests.helpers.tiny_models import tiny_llama_config

CUSTOM_CONFIG = '''from transformers import LlamaConfig


class TinyCustomConfig(LlamaConfig):
    model_type = "tiny_custom"
'''
CUSTOM_MODEL = '''from transformers import LlamaForCausalLM

from .configuration_tiny import TinyCustomConfig


class TinyCustomForCausalLM(LlamaForCausalLM):
    config_class = TinyCustomConfig
    custom_code_ran = True
'''


def save_pickle_model(folder, tokenizer_source, seed=1):
    """A tiny random Llama whose weights are only pytorch_model.bin (a pickle)."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(tiny_llama_config())
    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(folder)
    return model


@pytest.fixture
def pickle_dir(tmp_path, real_model_folder):
    folder = tmp_path / "tiny-pickle"
    save_pickle_model(folder, real_model_folder)
    return folder


def test_pickle_only_folder_is_refused_with_one_line(pickle_dir):
    with pytest.raises(ModelLoadError) as info:
        load_model(pickle_dir)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("tiny-pickle has only pickle weights (pytorch_model.bin)")
    assert "can run arbitrary code" in message and "“Allow pickle weights”" in message


def test_pickle_only_folder_loads_once_allowed(pickle_dir):
    expected = torch.load(pickle_dir / "pytorch_model.bin", weights_only=True)
    loaded = load_model(pickle_dir, allow_pickle=True)
    weights = loaded.model.state_dict()
    assert torch.equal(weights["model.embed_tokens.weight"], expected["model.embed_tokens.weight"])
    assert torch.equal(weights["model.layers.1.mlp.down_proj.weight"],
                       expected["model.layers.1.mlp.down_proj.weight"])


def test_safetensors_win_over_pickle_in_the_same_folder(tiny_model_dir, tmp_path, real_model_folder):
    folder = tmp_path / "both"
    shutil.copytree(tiny_model_dir, folder)
    other = save_pickle_model(tmp_path / "other", real_model_folder, seed=7)  # different weights
    shutil.copy(tmp_path / "other" / "pytorch_model.bin", folder / "pytorch_model.bin")
    assert check_folder(folder).use_safetensors is True
    loaded = load_model(folder)  # no permission needed: the pickle file is never opened
    from safetensors.torch import load_file

    saved = load_file(folder / "model.safetensors")
    embed = loaded.model.state_dict()["model.embed_tokens.weight"]
    assert torch.equal(embed, saved["model.embed_tokens.weight"])
    assert not torch.equal(embed, other.state_dict()["model.embed_tokens.weight"])


@pytest.fixture
def remote_code_dir(tmp_path, tiny_model_dir, monkeypatch):
    import transformers.dynamic_module_utils as dynamic

    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "modules"))  # not ~/.cache
    folder = tmp_path / "tiny-custom"
    shutil.copytree(tiny_model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="tiny_custom", architectures=["TinyCustomForCausalLM"], auto_map={
        "AutoConfig": "configuration_tiny.TinyCustomConfig",
        "AutoModelForCausalLM": "modeling_tiny.TinyCustomForCausalLM"})
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "configuration_tiny.py").write_text(CUSTOM_CONFIG)
    (folder / "modeling_tiny.py").write_text(CUSTOM_MODEL)
    return folder


def test_model_that_needs_its_own_code_is_refused_with_one_line(remote_code_dir):
    with pytest.raises(ModelLoadError) as info:
        load_model(remote_code_dir)
    assert str(info.value) == (
        "tiny-custom needs to run Python code shipped with it (trust_remote_code), which is off; "
        "if you trust its source, tick “Run this model's own code” for it in Open model… and open it again")


def test_model_code_runs_once_trusted_for_that_model(remote_code_dir):
    loaded = load_model(remote_code_dir, trust_remote_code=True)
    assert type(loaded.model).__name__ == "TinyCustomForCausalLM"
    assert type(loaded.model).custom_code_ran is True


def test_auto_map_with_a_builtin_model_type_needs_no_code():
    # e.g. Phi-3 checkpoints still carry auto_map; transformers uses its own class
    config = {"model_type": "phi3", "auto_map": {"AutoModelForCausalLM": "modeling_phi3.Phi3ForCausalLM"}}
    assert needs_remote_code(config) is False
    assert needs_remote_code({**config, "model_type": "my_arch"}) is True
    assert needs_remote_code({"model_type": "my_arch"}) is False  # no code named, nothing to run


def test_weight_files_ignore_training_pickles(tmp_path):
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                 "training_args.bin", "optimizer.pt", "consolidated.pth"):
        (tmp_path / name).write_bytes(b"x")
    files = weight_files(tmp_path)
    assert files.safetensors == ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    assert files.pickle == ("consolidated.pth",)


def test_folder_without_weights_is_a_plain_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(tiny_llama_config().to_dict()))
    with pytest.raises(ValueError, match="has no weight files") as info:
        check_folder(tmp_path)
    assert not isinstance(info.value, TrustRequired)


@pytest.mark.parametrize("name", MODEL_JSON_FILES)
@pytest.mark.parametrize("content, wrong", [
    ('{"bos_token": ', "is unreadable (Expecting value: line 1 column 15 (char 14))"),  # cut short
    ("[1, 2]", "is not a JSON object"),
    (b"\xff\xfe{}", "is unreadable ('utf-8' codec can't decode byte 0xff"),
])
def test_a_damaged_json_file_the_load_reads_is_refused_naming_it(tmp_path, name, content, wrong):
    """New-user trial: a tokenizer_config.json of `{"bos_token": ` was "The model could not be opened
    (JSONDecodeError)"; a broken config.json was already named. Every JSON file the load reads is."""
    (tmp_path / "config.json").write_text(json.dumps(tiny_llama_config().to_dict()))
    (tmp_path / "model.safetensors").write_bytes(b"x")
    bad = tmp_path / name
    bad.write_bytes(content) if isinstance(content, bytes) else bad.write_text(content)
    with pytest.raises(ValueError) as refused:
        check_folder(tmp_path)
    assert str(refused.value).startswith(f"{name} of {tmp_path.name} {wrong}")
    assert folder_refusal(tmp_path) == str(refused.value)  # the Open model listing refuses it too


def test_a_large_json_file_is_checked_by_its_ends_not_parsed(tmp_path, monkeypatch):
    """A tokenizer.json is 9–33 MB and the Open model dialog asks every listed folder: one over
    PARSED_JSON_BYTES is checked by its two ends (a download cut short), never parsed."""
    from app.engine.loading import folder_trust

    (tmp_path / "config.json").write_text(json.dumps(tiny_llama_config().to_dict()))
    (tmp_path / "model.safetensors").write_bytes(b"x")
    tokenizer = tmp_path / "tokenizer.json"
    whole = json.dumps({"model": {"vocab": {f"t{i}": i for i in range(100_000)}}}) + "\n"
    assert len(whole) > folder_trust.PARSED_JSON_BYTES
    tokenizer.write_text(whole)
    parsed = []
    real_loads = json.loads
    monkeypatch.setattr(folder_trust.json, "loads", lambda text: parsed.append(len(text)) or real_loads(text))
    assert folder_refusal(tmp_path) is None and max(parsed) < folder_trust.PARSED_JSON_BYTES
    tokenizer.write_text(whole[:-40])  # cut short
    assert folder_refusal(tmp_path) == (f"tokenizer.json of {tmp_path.name} is unreadable "
                                        "(cut short, or not a JSON object)")
    tokenizer.write_bytes(b"\xef\xbb\xbf" + whole.encode())  # a BOM, which the load refuses: refused here too
    assert folder_refusal(tmp_path).startswith(f"tokenizer.json of {tmp_path.name} is unreadable")


@pytest.mark.parametrize("space", [" " * 100, "\n" * 200_000], ids=["100-spaces", "200k-newlines"])
def test_a_valid_large_json_file_with_whitespace_around_it_is_not_refused(tmp_path, space):
    """New-user re-trial: a valid tokenizer.json ending in 100 spaces was "could not be read" (its
    last 64 bytes alone were read, all whitespace)."""
    (tmp_path / "config.json").write_text(json.dumps(tiny_llama_config().to_dict()))
    (tmp_path / "model.safetensors").write_bytes(b"x")
    whole = json.dumps({"model": {"vocab": {f"t{i}": i for i in range(100_000)}}})
    (tmp_path / "tokenizer.json").write_text(space + whole + space)
    assert folder_refusal(tmp_path) is None
    assert check_folder(tmp_path).use_safetensors


def _zeroed(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(4096) + data[middle + 4096:]


def _cut_after_a_brace(data: bytes) -> bytes:
    return data[:data.index(b"}", len(data) // 2) + 1]


@pytest.mark.parametrize("damage", [
    _zeroed,
    lambda data: data[:len(data) // 3] + data[len(data) // 3 + 1_000_000:],  # 1 MB gone mid-file
    _cut_after_a_brace,
    lambda data: b"\xef\xbb\xbf" + data,  # tokenizers and transformers both refuse a BOM
], ids=["4k-zeroed", "1mb-removed", "cut-after-brace", "bom"])
def test_damage_inside_a_large_tokenizer_json_is_named_before_the_load(tiny_model_dir, tmp_path, damage):
    """New-user re-trial: damage its ends do not show failed the load as "The model could not be
    opened (JSONDecodeError)"; the load's check parses it whole (the Open model listing checks ends)."""
    folder = shutil.copytree(tiny_model_dir, tmp_path / "badtok")
    tokenizer = folder / "tokenizer.json"
    assert tokenizer.stat().st_size > 2_000_000  # SmolLM2's, 3.5 MB: over PARSED_JSON_BYTES
    tokenizer.write_bytes(damage(tokenizer.read_bytes()))
    with pytest.raises(ModelLoadError, match=r"^tokenizer\.json of badtok is unreadable \("):
        load_model(folder)


@pytest.mark.parametrize("name", ["tokenizer_config.json", "generation_config.json"])
def test_the_loader_names_a_damaged_json_file_before_loading(tiny_model_dir, tmp_path, name):
    """A damaged generation_config.json was dropped by transformers in silence (its stop tokens
    with it); a damaged tokenizer_config.json failed as a bare JSONDecodeError."""
    folder = shutil.copytree(tiny_model_dir, tmp_path / "badtok")
    (folder / name).write_text('{"bos_token": ')
    with pytest.raises(ModelLoadError, match=rf"^{name} of badtok is unreadable \(Expecting value"):
        load_model(folder)


def test_headless_refuses_then_honours_the_permission_saved_for_that_model(pickle_dir, tmp_path):
    import os
    import subprocess
    import sys

    from app.core.settings import ModelPermissions, Settings, save_settings

    config = tmp_path / "config"
    env = os.environ | {"HEADROOM_CONFIG_DIR": str(config)}

    def ask():
        return subprocess.run([sys.executable, "-m", "app", "--ask", "hi", "--model", str(pickle_dir),
                               "--max-new-tokens", "2"], capture_output=True, text=True, env=env, timeout=300)

    refused = ask()
    assert refused.returncode == 1
    assert [line for line in refused.stderr.splitlines() if line.startswith("headroom:")] == [
        f"headroom: {pickle_dir.name}: This model has only pickle weights (.bin / .pt), which can run code when "
        "loaded; they are off. If you trust its source, tick “Allow pickle weights (.bin / .pt) for this model” "
        "in Open model and open it again, or convert it to safetensors. (Open model is in the window: run "
        "headroom without --ask.)"]  # the window's line (trial 12), and where Open model is (trial 14)
    save_settings(Settings().with_permissions(ModelPermissions(str(pickle_dir), allow_pickle=True)),
                  config / "settings.json")
    allowed = ask()
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    assert "2 tokens" in allowed.stderr
