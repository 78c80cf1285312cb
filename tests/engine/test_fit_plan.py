"""Fit plan before load (app.engine.loading.fit_plan), the context that fits
(app.engine.memory.context_fit), the "auto" context setting, and `python -m app --plan`."""

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from transformers import LlamaConfig

from app.core.settings import AUTO_CONTEXT, Settings, load_settings, resolve_context, save_settings
from app.engine.loading.fit_plan import FULL, NO_FIT, PARTIAL, build_plan
from app.engine.loading.placement import choose_placement
from app.engine.memory.context_fit import context_cost, largest_context
from app.engine.memory.prefill_spike import PrefillModel
from app.engine.memory.units import GiB, MiB
from tests.helpers.tiny_gguf import write_tiny_gguf

ROOT = Path(__file__).resolve().parents[2]
CPU = choose_placement(False, None, False, (False, "no CUDA"))
NF4 = choose_placement(True, (9, 0), False, (True, ""))  # an H200 with bitsandbytes


def llama3_8b() -> LlamaConfig:
    return LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                       num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                       tie_word_embeddings=False)


def test_kv_per_token_and_verdict_at_full_context_on_a_big_gpu():
    plan = build_plan("llama3-8b", "hf", {}, llama3_8b(), NF4, free=139 * GiB, total=140 * GiB)
    assert plan.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131_072  # bf16 KV
    assert plan.kv_bytes_full_context == 131_072 * 8192
    assert plan.weights_form == "NF4 + bfloat16" and 5 * GiB < plan.weights_bytes < 6 * GiB
    assert plan.prefill_chunk_tokens == 1024 and plan.prefill_spike_full_context > 0
    assert plan.margin_bytes == int(140 * GiB * 0.02)
    assert (plan.verdict, plan.context_fit) == (FULL, 8192)


def test_a_small_card_gets_the_largest_context_that_fits_with_margin():
    config = llama3_8b()
    full = build_plan("m", "hf", {}, config, NF4, free=139 * GiB, total=140 * GiB)
    free = full.weights_bytes + full.margin_bytes + 300 * MiB
    plan = build_plan("m", "hf", {}, config, NF4, free=free, total=140 * GiB)
    model = PrefillModel.from_config(config, 2, attn_implementation="sdpa+gqa-packed", quantized_4bit=True,
                                     dynamic_cache=False, nf4_prefill_sliced=True)
    budget = free - plan.margin_bytes - plan.weights_bytes
    n = plan.context_fit
    assert plan.verdict == PARTIAL and plan.verdict_text == f"fits with context {n:,}"
    assert context_cost(model, n, 1024).total <= budget < context_cost(model, n + 1, 1024).total
    assert 1100 < n < 1250  # 1,172: KV 128 KiB/token + one sliced NF4 dequant (37 MB) and logits of the spike
    assert "fits with context" in plan.summary() and f"{n:,} of 8,192 tokens" in plan.summary()


def test_weights_alone_beyond_free_memory_do_not_fit():
    plan = build_plan("m", "hf", {}, llama3_8b(), CPU, free=20 * GiB, total=24 * GiB)
    assert plan.weights_form == "float32" and plan.weights_bytes > 29 * GiB
    assert (plan.verdict, plan.context_fit) == (NO_FIT, 0)
    assert plan.to_json()["verdict_text"] == "does not fit"


def test_largest_context_is_zero_when_nothing_fits_and_capped_by_the_model():
    model = PrefillModel.from_config(llama3_8b(), 2)
    assert largest_context(model, 0, 8192, 256) == 0
    assert largest_context(model, 10**15, 8192, 256) == 8192


def test_auto_context_resolves_to_what_fits_capped_by_training():
    assert resolve_context(AUTO_CONTEXT, 5000, 8192) == 5000
    assert resolve_context(AUTO_CONTEXT, 100_000, 8192) == 8192
    assert resolve_context(4096, 1000, 8192) == 4096  # an explicit choice is the user's
    assert resolve_context(32768, 1000, 8192) == 8192


def test_per_model_context_setting_round_trips(tmp_path):
    settings = Settings().with_context("/models/a.gguf", 4096).with_context("/models/b", 0)
    assert settings.context_for("/models/a.gguf") == 4096 and settings.context_for("/models/b") == AUTO_CONTEXT
    save_settings(settings, tmp_path / "s.json")
    loaded = load_settings(tmp_path / "s.json")
    assert loaded.context_for("/models/a.gguf") == 4096 and len(loaded.model_contexts) == 1
    assert loaded.with_context("/models/a.gguf", AUTO_CONTEXT).model_contexts == ()
    capped = replace(loaded, generation=replace(loaded.generation, context_tokens=2048))
    assert capped.context_for("/models/b") == 2048 and capped.own_context("/models/b") == AUTO_CONTEXT
    assert capped.context_for("/models/a.gguf") == capped.own_context("/models/a.gguf") == 4096  # its own wins


def test_auto_context_reaches_admission_and_the_history_budget(tiny_loaded):
    from app.engine.local.turn_planner import Foresight
    from app.engine.memory.probe import FakeProbe

    roomy = Foresight(tiny_loaded, FakeProbe(total=4 * GiB, context_overhead=0))
    assert roomy.auto_context == 512 and roomy.budget(0, 64).context_tokens == 512
    room = context_cost(roomy.prefill_model, 300, roomy.chunk).total  # KV + spike of 300 tokens
    probe = FakeProbe(total=4 * GiB, allocated=4 * GiB - 256 * MiB - room, context_overhead=0)
    tight = Foresight(tiny_loaded, probe)
    assert tight.auto_context == 300
    assert tight.budget(0, 64).context_tokens == 300
    assert tight.budget(400, 64).context_tokens == 400  # an explicit setting wins


def _cli(*args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "app", "--plan", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_plan_prints_json_and_one_line_without_loading(tmp_path):
    gguf = tmp_path / "tiny.gguf"
    write_tiny_gguf(gguf, "Q8_0")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"nope" * 100)
    env = {"HEADROOM_CACHE_DIR": str(tmp_path / "cache")}
    done = _cli("--model", str(gguf), "--cpu", env_extra=env)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (plan["kind"], plan["device"], plan["verdict"], plan["trained_context"]) == ("gguf", "cpu", FULL, 512)
    assert plan["model"]["quantization"] == "Q8_0" and plan["kv_bytes_per_token"] == 2 * 2 * 2 * 16 * 4
    assert plan["conversion"]["output_bytes"] == 107_456 * 2 and plan["conversion"]["enough_disk"]
    lines = [line for line in done.stderr.splitlines() if line.startswith("[plan]")]
    assert len(lines) == 1 and "tiny.gguf: fits at full context (512 of 512 tokens) on cpu" in lines[0]
    assert not (tmp_path / "cache").exists()  # nothing converted, nothing loaded
    bad = _cli("--model", str(junk), env_extra=env)
    assert bad.returncode == 1 and bad.stdout == ""
    assert "headroom: junk.gguf: This file is not a GGUF file" in bad.stderr
    # what --ask refuses is refused here too (new-user trial: a config.json alone was planned from defaults)
    (tmp_path / "config-only").mkdir()
    (tmp_path / "config-only" / "config.json").write_text('{"model_type": "llama"}')
    config_only = _cli("--model", str(tmp_path / "config-only"), env_extra=env)
    assert config_only.returncode == 1 and config_only.stdout == ""
    assert config_only.stderr.strip().endswith("config-only: This model folder has no weights files (.safetensors or "
                                               ".bin). The download may be incomplete; download the model again, "
                                               "or pick another folder.")
    both = _cli("--ask", "hi", env_extra=env)  # each answers and exits: both at once is a usage error
    assert both.returncode == 2 and "argument --ask: not allowed with argument --plan" in both.stderr


@pytest.mark.real_model
def test_cli_plan_of_the_default_model(real_model_path):
    done = _cli("--model", str(real_model_path), "--cpu")
    plan = json.loads(done.stdout)
    assert plan["model"]["parameters"] == 134_515_008 and plan["weights_bytes"] == 134_515_008 * 4
    assert plan["kv_bytes_per_token"] == 30 * 2 * 3 * 64 * 4 and plan["verdict"] == FULL
