""""sdpa+gqa-packed" computes the same attention as transformers' sdpa and eager paths.

Tiny random GQA models built from configs (no download), float32 on the CPU: chunked prefill
into a DynamicCache (the masked case the packed path exists for), then decode steps.
"""

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    DynamicCache,
    LlamaConfig,
    MistralConfig,
    Qwen2Config,
    StaticCache,
)
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from app.engine.local import attention
from app.engine.local.attention import (
    PACKED_SDPA,
    enable_packed_sdpa,
    gqa_packed_sdpa_forward,
    packed_mask_bytes,
    query_slice,
    uses_gqa,
)
from app.engine.local.generation import prefill
from app.engine.memory.prefill_spike import PrefillModel, prefill_breakdown

SHAPE = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=8, head_dim=16, max_position_embeddings=256,
             bos_token_id=1, eos_token_id=2)


def _configs():
    yield "llama g=4", LlamaConfig(**SHAPE, num_key_value_heads=2)
    yield "llama g=8 (MQA)", LlamaConfig(**SHAPE, num_key_value_heads=1)
    yield "mistral window", MistralConfig(**SHAPE, num_key_value_heads=2, sliding_window=12)
    yield "qwen2", Qwen2Config(**{**SHAPE, "num_attention_heads": 8}, num_key_value_heads=4)


def _model(config, attention):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=attention, dtype=torch.float32)
    return model.eval()


@torch.inference_mode()
def _run(model, ids, chunk, decode_steps=3, static=False):
    """Logits of the last prefill position and of each greedy decode step."""
    if static:
        cache = StaticCache(config=model.config, max_cache_len=ids.shape[1] + decode_steps + 1)
    else:
        cache = DynamicCache(config=model.config)
    logits = [prefill(model, ids, cache, chunk)]
    for _ in range(decode_steps):
        step = logits[-1].argmax().view(1, 1)
        logits.append(model(input_ids=step, past_key_values=cache, use_cache=True,
                            logits_to_keep=1).logits[0, -1].float())
    return torch.stack(logits)


@pytest.mark.parametrize("name,config", list(_configs()), ids=[n for n, _ in _configs()])
@pytest.mark.parametrize("chunk,static", [(None, False), (7, False), (16, False), (16, True)])
def test_packed_matches_sdpa_and_eager(name, config, chunk, static, monkeypatch):
    monkeypatch.setattr(attention, "MAX_PACKED_ROWS", 24)  # 16-token chunks go in slices too
    ids = torch.randint(3, config.vocab_size, (1, 41), generator=torch.Generator().manual_seed(1))
    reference = {att: _run(_model(config, att), ids, chunk, static=static) for att in ("sdpa", "eager")}
    packed_model = _model(config, "sdpa")
    assert enable_packed_sdpa(packed_model) == PACKED_SDPA
    packed = _run(packed_model, ids, chunk, static=static)
    torch.testing.assert_close(packed, reference["sdpa"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(packed, reference["eager"], rtol=1e-4, atol=1e-4)


def test_packed_call_is_taken_and_never_expands_kv(monkeypatch):
    """With a mask and c > 1 the packed branch runs: SDPA gets Hkv heads, g·c query rows."""
    seen = []
    real = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        seen.append((tuple(q.shape), tuple(k.shape), tuple(kw["attn_mask"].shape), kw["attn_mask"].dtype))
        return real(q, k, v, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, h, n, 16, generator=g) for h, n in ((8, 5), (2, 19), (2, 19)))
    mask = torch.ones(1, 1, 5, 19, dtype=torch.bool).tril(diagonal=14)
    mask[..., :3] = False  # a sliding-window-like hole as well
    module = torch.nn.Module()
    module.num_key_value_groups = 4
    out, weights = gqa_packed_sdpa_forward(module, q, k, v, mask, scaling=0.25)
    assert weights is None
    assert seen == [((1, 2, 20, 16), (1, 2, 19, 16), (1, 1, 20, 19), torch.float32)]
    expected, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=0.25)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    assert out.shape == (1, 5, 8, 16)


def test_float_additive_mask_is_packed_too():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, h, n, 8, generator=g) for h, n in ((6, 4), (3, 9), (3, 9)))
    additive = torch.randn(1, 1, 4, 9, generator=g)
    module = torch.nn.Module()
    module.num_key_value_groups = 2
    out, _ = gqa_packed_sdpa_forward(module, q, k, v, additive)
    expected, _ = sdpa_attention_forward(module, q, k, v, additive)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)


def test_enable_leaves_other_paths_alone():
    no_gqa = LlamaConfig(**SHAPE, num_key_value_heads=8)
    assert not uses_gqa(no_gqa)
    assert enable_packed_sdpa(_model(no_gqa, "sdpa")) == "sdpa"
    gqa = LlamaConfig(**SHAPE, num_key_value_heads=2)
    assert uses_gqa(gqa)
    assert enable_packed_sdpa(_model(gqa, "eager")) == "eager"
    model = _model(gqa, "sdpa")
    assert enable_packed_sdpa(model) == PACKED_SDPA
    assert enable_packed_sdpa(model) == PACKED_SDPA  # idempotent


def test_sliced_call_matches_one_call(monkeypatch):
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, h, n, 16, generator=g) for h, n in ((8, 13), (2, 30), (2, 30)))
    mask = torch.ones(1, 1, 13, 30, dtype=torch.bool).tril(diagonal=17)
    module = torch.nn.Module()
    module.num_key_value_groups = 4
    whole, _ = gqa_packed_sdpa_forward(module, q, k, v, mask)
    monkeypatch.setattr(attention, "MAX_PACKED_ROWS", 12)  # 3 queries per call: 5 calls
    assert query_slice(4, 13) == 3
    sliced, _ = gqa_packed_sdpa_forward(module, q, k, v, mask)
    torch.testing.assert_close(sliced, whole, rtol=1e-5, atol=1e-6)


def test_packed_mask_bytes():
    # Llama-3-8B, 128-token chunk over 49,152 cached tokens, bf16: 4·128·49,152·2 + 128·49,152
    assert packed_mask_bytes(4, 128, 49_152, 2) == 4 * 128 * 49_152 * 2 + 128 * 49_152
    assert packed_mask_bytes(4, 4096, 1000, 2) == packed_mask_bytes(4, 256, 1000, 2)  # sliced
    assert packed_mask_bytes(1, 1, 17, 2) == 32 * 2 + 17  # rows padded to 16 elements


@pytest.mark.parametrize("chunk", [128, 1024, 4096])
def test_memory_projection_knows_the_packed_path(chunk):
    """app.engine.memory.prefill_spike models the packed workspace exactly as attention.packed_mask_bytes,
    and no longer counts the repeat_kv expansion (Llama-3-8B shape, static cache)."""
    config = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8)
    n = 49_152
    packed = PrefillModel.from_config(config, 2, attn_implementation=PACKED_SDPA,
                                      quantized_4bit=True, dynamic_cache=False)
    plain = PrefillModel.from_config(config, 2, attn_implementation="sdpa",
                                     quantized_4bit=True, dynamic_cache=False)
    c = min(n, chunk)
    attn_act = c * 2 * (3 * 4096 + 3 * 32 * 256 // 2)
    assert prefill_breakdown(packed, n, 0, chunk).attention_phase == (
        attn_act + packed_mask_bytes(4, c, n, 2))
    expansion = 32 * 256 * n * 2
    assert prefill_breakdown(plain, n, 0, chunk).attention_phase >= attn_act + expansion


@pytest.mark.parametrize("mask_kind", ["bool", "additive", "none"])
def test_decode_step_is_packed_and_matches_sdpa(mask_kind, monkeypatch):
    """One query: two batched products over (B, Hkv, g, d) queries and the unexpanded cache
    (no SDPA call, no K/V copy), the same result as transformers' sdpa."""
    sdpa_calls, products = [], []
    real_matmul = torch.matmul

    def spy(a, b):
        products.append((tuple(a.shape), tuple(b.shape)))
        return real_matmul(a, b)

    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, h, n, 16, generator=g) for h, n in ((8, 1), (2, 33), (2, 33)))
    mask = {"bool": torch.arange(33).view(1, 1, 1, 33) < 20,
            "additive": torch.randn(1, 1, 1, 33, generator=g), "none": None}[mask_kind]
    module = torch.nn.Module()
    module.num_key_value_groups = 4
    expected, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=0.25)
    monkeypatch.setattr(torch, "matmul", spy)
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", lambda *a, **kw: sdpa_calls.append(1))
    out, _ = gqa_packed_sdpa_forward(module, q, k, v, mask, scaling=0.25)
    assert sdpa_calls == []
    assert products == [((1, 2, 4, 16), (1, 2, 16, 33)), ((1, 2, 4, 33), (1, 2, 33, 16))]
    assert out.shape == (1, 1, 8, 16)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)


def test_decode_step_in_bf16_stays_close_to_sdpa():
    """bf16 like the GPU path: scores in bf16, softmax in float32 (transformers' eager recipe)."""
    g = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(1, h, n, 64, generator=g).bfloat16() for h, n in ((32, 1), (8, 300), (8, 300)))
    mask = (torch.arange(300) < 257).view(1, 1, 1, 300)
    module = torch.nn.Module()
    module.num_key_value_groups = 4
    expected, _ = sdpa_attention_forward(module, q.float(), k.float(), v.float(), mask)
    out, _ = gqa_packed_sdpa_forward(module, q, k, v, mask)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), expected, rtol=2e-2, atol=2e-2)


def test_compiled_decode_step_never_repeats_kv(monkeypatch):
    """Inside torch.compile transformers skips its own single-query packing and calls repeat_kv
    on the whole cache; the packed path must not (the compiled step's K/V stay unexpanded)."""
    from transformers.integrations import sdpa_attention

    calls = []
    real_repeat = sdpa_attention.repeat_kv
    monkeypatch.setattr(sdpa_attention, "repeat_kv", lambda x, n: calls.append(n) or real_repeat(x, n))
    config = LlamaConfig(**SHAPE, num_key_value_heads=2)
    ids = torch.randint(3, config.vocab_size, (1, 9), generator=torch.Generator().manual_seed(6))
    reference = _run(_model(config, "sdpa"), ids, None, static=True)
    model = _model(config, "sdpa")
    enable_packed_sdpa(model)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)  # what transformers checks
    calls.clear()
    packed = _run(model, ids, None, static=True)
    torch.testing.assert_close(packed, reference, rtol=1e-5, atol=1e-5)
    assert calls == []
