"""torch.compile's and Triton's on-disk caches live in the user cache folder (issue 12, item 3: a
second launch reaches the compiled path in ≤ 10 s only if both caches are found again)."""

import os

import pytest
import torch
from torch._inductor.runtime.cache_dir_utils import default_cache_dir

from app.engine.local.compiled_decode import use_compile_caches


def test_both_caches_go_to_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())  # what torch writes itself
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)

    inductor = use_compile_caches()

    assert inductor == str(tmp_path / "headroom" / "torchinductor")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == inductor
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "headroom" / "triton")


def test_folders_the_user_chose_are_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "my-triton"))

    assert use_compile_caches() == str(tmp_path / "mine")
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "my-triton")


def test_the_decode_step_compiles_with_combo_kernels_unless_turned_off(monkeypatch):
    """Inductor's combo kernels launch a layer's independent small kernels as one (H200, 8B: 446 →
    382 launches a step, 3.531 → 3.449 ms; bitwise the same logits): on by default, off by its switch."""
    from app.engine.local import compiled_decode, nvrtc

    seen = []
    monkeypatch.setattr(nvrtc, "PDL", False)  # its option: tests/engine/test_pdl.py
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: seen.append(kw) or fn)
    compiled_decode._inductor(len)
    monkeypatch.setenv(compiled_decode.COMBO_KERNELS_OPT_OUT, "0")
    compiled_decode._inductor(len)
    assert seen == [{"dynamic": None, "options": {"combo_kernels": True}}, {"dynamic": None, "options": {}}]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="combo kernels are Triton kernels: needs CUDA")
def test_on_the_gpu_combo_kernels_change_no_bit():
    """Six compiled decode steps of a tiny Llama over a StaticCache, with and without combo kernels:
    the same logits and cache, bit for bit (H200, 2026-12-03: equal; results/decode_anatomy_h200_combo.json)."""
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=256)
    model = LlamaForCausalLM(config).to(torch.bfloat16).cuda().eval()
    prompt = torch.randint(0, 512, (1, 8), device="cuda")
    runs = []
    for options in ({"combo_kernels": True}, {}):
        torch._dynamo.reset()
        cache = StaticCache(config=config, max_cache_len=64)
        with torch.inference_mode():
            out = model(prompt, past_key_values=cache, use_cache=True, cache_position=torch.arange(8, device="cuda"))
            step = torch.compile(lambda t, pos, cache=cache: model(t, past_key_values=cache, use_cache=True,
                                                                   cache_position=pos).logits,
                                 dynamic=None, options=options)
            token, logits = out.logits[:, -1:].argmax(-1), []
            for i in range(6):
                logits.append(step(token, torch.tensor([8 + i], device="cuda")).float().clone())
                token = logits[-1][:, -1:].argmax(-1)
        runs.append((logits, cache.layers[0].keys.clone(), cache.layers[0].values.clone()))
    (ours, keys, values), (theirs, keys0, values0) = runs
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    assert torch.equal(keys, keys0) and torch.equal(values, values0)
