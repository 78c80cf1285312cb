"""8-bit KV cache (issue 16): quantization bounds, the attention over 8-bit keys and values
against 16-bit, the bytes the memory model counts, and the per-chat choice in planning.

Tiny random GQA models from configs (no download), float32 on the CPU.
"""

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, MistralConfig

from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.kv_precision import KV_8, KV_16, KV_AUTO, kv_bits_choices, valid_kv_precision
from app.engine.local import kv_quant
from app.engine.local.attention import enable_packed_sdpa, gqa_packed_sdpa_forward
from app.engine.local.generation import prefill
from app.engine.local.kv_session import KVSession
from app.engine.local.static_cache import (
    QuantizedSpanLayer,
    grow_static_cache,
    kv_bits_of,
    new_static_cache,
)
from app.engine.memory.kv_layout import KVLayout, kv_bytes_per_token, kv_cache_bytes
from app.engine.memory.prefill_spike import PrefillModel, prefill_breakdown
from app.engine.memory.units import GiB, MiB
from tests.engine.test_memory import llama3_8b

SHAPE = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=8, head_dim=16, max_position_embeddings=256,
             bos_token_id=1, eos_token_id=2, num_key_value_heads=2)


# --------------------------------------------------------------------------- quantization


@pytest.mark.parametrize("d", [16, 64, 128, 96])
def test_rotation_is_orthonormal_and_its_own_inverse(d):
    x = torch.randn(5, 3, d)
    y = kv_quant.rotate(x)
    assert torch.allclose(kv_quant.rotate(y), x, atol=1e-5)
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-5)
    q, k = torch.randn(d), torch.randn(d)
    assert torch.allclose(kv_quant.rotate(q) @ kv_quant.rotate(k), q @ k, rtol=1e-4, atol=1e-4)


def test_int8_round_trip_within_half_a_step_per_vector():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 40, 64) * torch.linspace(0.01, 30, 64)  # outlier channels, as keys have
    x[0, 0, 0] = 0.0  # an all-zero vector stays zero
    packed = kv_quant.quantize(x, "int8")
    assert packed.dtype == torch.int8 and packed.shape == (2, 3, 40, 64 + kv_quant.SCALE_BYTES)
    rotated = kv_quant.rotate(x)
    back = kv_quant.dequantize(packed, torch.float32)
    step = rotated.abs().amax(-1, keepdim=True) / 127
    assert ((back - rotated).abs() <= step / 2 + 1e-6).all()
    assert back[0, 0, 0].abs().max() == 0
    # relative error of whole vectors, back in the original basis
    error = (kv_quant.rotate(back) - x).norm(dim=-1) / x.norm(dim=-1).clamp_min(1e-9)
    assert error[x.norm(dim=-1) > 0].max() < 0.01


def test_fp8_round_trip_within_its_mantissa():
    torch.manual_seed(1)
    x = torch.randn(1, 2, 30, 32)
    packed = kv_quant.quantize(x, "fp8")
    assert packed.dtype == torch.uint8 and kv_quant.packed_format(packed) == "fp8"
    rotated = kv_quant.rotate(x)
    back = kv_quant.dequantize(packed, torch.float32)
    scale = rotated.abs().amax(-1, keepdim=True) / 448
    # e4m3: 3 mantissa bits (half a step ≤ 1/16 relative), subnormals below 2^-6 in steps of 2^-9
    assert ((back - rotated).abs() <= rotated.abs() / 16 + scale * 2.0 ** -10 + 1e-7).all()


def test_unknown_format_and_bits_are_refused():
    with pytest.raises(ValueError, match="unknown KV format"):
        kv_quant.quantize(torch.zeros(1, 4), "int4")
    with pytest.raises(ValueError, match="16 or 8"):
        new_static_cache(LlamaConfig(**SHAPE), 16, kv_bits=4)
    with pytest.raises(ValueError, match="16 or 8"):
        KVSession().set_kv_bits(4)


# --------------------------------------------------------------------------- attention


def _model(config=None):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config or LlamaConfig(**SHAPE), attn_implementation="sdpa",
                                             dtype=torch.float32).eval()
    assert enable_packed_sdpa(model) == "sdpa+gqa-packed"
    return model


@torch.inference_mode()
def _logits(model, ids, kv_bits, chunk=16, steps=4, kv_format="int8"):
    cache = new_static_cache(model.config, ids.shape[1] + steps + 4, kv_bits, kv_format)
    out = [prefill(model, ids, cache, chunk)]
    for _ in range(steps):
        step = out[-1].argmax().view(1, 1)
        out.append(model(input_ids=step, cache=cache, use_cache=True, logits_to_keep=1).logits[0, -1].float())
    return torch.stack(out), cache


@pytest.mark.parametrize("kv_format", ["int8", "fp8"])
def test_8bit_cache_gives_16bit_logits_within_tolerance(kv_format):
    model = _model()
    ids = torch.randint(3, 97, (1, 48), generator=torch.Generator().manual_seed(2))
    reference, cache16 = _logits(model, ids, 16)
    quantized, cache8 = _logits(model, ids, 8, kv_format=kv_format)
    assert kv_bits_of(cache16) == 16 and kv_bits_of(cache8) == 8
    assert all(isinstance(layer, QuantizedSpanLayer) for layer in cache8.layers)
    assert cache8.layers[0].keys.dtype == kv_quant.storage_dtype(kv_format)
    spread = reference.abs().max()
    assert (quantized - reference).abs().max() < (0.01 if kv_format == "int8" else 0.05) * spread
    assert torch.equal(quantized.argmax(-1), reference.argmax(-1))


def test_16bit_static_cache_is_untouched():
    cache = new_static_cache(LlamaConfig(**SHAPE), 32)
    assert kv_bits_of(cache) == 16
    assert not any(isinstance(layer, QuantizedSpanLayer) for layer in cache.layers)


def test_packed_decode_equals_attention_over_dequantized_keys():
    """The decode step folds the scales into the products; the result is the attention over the
    dequantized (rotated back) keys and values."""
    torch.manual_seed(3)
    b, hkv, g, s, d = 1, 2, 4, 37, 16
    query = torch.randn(b, hkv * g, 1, d)
    key, value = torch.randn(b, hkv, s, d) * 3, torch.randn(b, hkv, s, d)
    mask = torch.ones(b, 1, 1, s, dtype=torch.bool)
    mask[..., 30:] = False  # empty slots of the static cache
    packed_k, packed_v = kv_quant.quantize(key), kv_quant.quantize(value)
    out, _ = gqa_packed_sdpa_forward(torch.nn.Module(), query, packed_k, packed_v, mask, scaling=d ** -0.5)
    deq_k = kv_quant.rotate(kv_quant.dequantize(packed_k, torch.float32))
    deq_v = kv_quant.rotate(kv_quant.dequantize(packed_v, torch.float32))
    expected = torch.nn.functional.scaled_dot_product_attention(
        query, deq_k.repeat_interleave(g, 1), deq_v.repeat_interleave(g, 1), attn_mask=mask, scale=d ** -0.5)
    assert out.shape == (b, 1, hkv * g, d)
    assert torch.allclose(out, expected.transpose(1, 2), atol=1e-5)


def test_8bit_cache_grows_and_keeps_its_tokens():
    model = _model()
    ids = torch.randint(3, 97, (1, 20), generator=torch.Generator().manual_seed(4))
    _, cache = _logits(model, ids, 8, steps=0)
    before = cache.layers[0].keys[:, :, :20].clone()
    grow_static_cache(cache, 64, 20)
    layer = cache.layers[0]
    assert layer.keys.shape[2] == 64 and layer.keys.dtype == torch.int8
    assert torch.equal(layer.keys[:, :, :20], before)


def test_session_switching_precision_drops_the_cache_once():
    model = _model()
    session = KVSession(kv_bits=16)
    prompt = list(range(3, 30))
    cache, reused = session.begin_turn(model, prompt, 4)
    prefill(model, torch.tensor([prompt]), cache, 8)
    session.commit(prompt)
    assert session.cached_tokens == 27 and not session.is_static  # CPU 16-bit: dynamic cache
    assert session.set_kv_bits(8) is True and session.cache is None and "8-bit" in session.notes[-1]
    assert session.set_kv_bits(8) is False
    cache, reused = session.begin_turn(model, prompt, 4)
    assert reused == 0 and session.is_static and kv_bits_of(cache) == 8  # 8-bit is always static
    prefill(model, torch.tensor([prompt]), cache, 8)
    session.commit(prompt)
    layout = KVLayout.from_config(model.config, 4, kv_bits=8)
    assert session.cache_bytes == layout.bytes_per_token * session.capacity_tokens


# --------------------------------------------------------------------------- memory model


def test_kv_layout_bytes_for_8bit():
    config = llama3_8b()
    assert kv_bytes_per_token(config, 2) == 131_072
    assert kv_bytes_per_token(config, 2, kv_bits=8) == 32 * 2 * 8 * (128 + 4) == 67_584
    layout = KVLayout.from_config(config, 2, kv_bits=8)
    assert layout.kv_bits == 8 and KVLayout.from_config(config, 2).kv_bits == 16
    assert kv_cache_bytes(layout, 100_000) == 67_584 * 100_000
    with pytest.raises(ValueError):
        KVLayout.from_config(config, 2, kv_bits=4)


def test_sliding_layers_stay_16bit():
    config = MistralConfig(**SHAPE, sliding_window=12)
    config.layer_types = ["sliding_attention", "full_attention"]
    layout = KVLayout.from_config(config, 2, kv_bits=8)
    sliding, full = layout.layers
    assert (sliding.element_bytes, sliding.scale_bytes) == (2, 0)
    assert (full.element_bytes, full.scale_bytes) == (1, 4)


def test_prefill_spike_counts_the_dequantized_span():
    config = llama3_8b()
    bf16 = PrefillModel.from_config(config, 2, attn_implementation="sdpa+gqa-packed", dynamic_cache=False)
    int8 = PrefillModel.from_config(config, 2, attn_implementation="sdpa+gqa-packed", kv_bits=8)
    assert not int8.dynamic_cache
    extra = prefill_breakdown(int8, 32_768, 0, 1024).total - prefill_breakdown(bf16, 32_768, 0, 1024).total
    span_bf16 = 8 * 256 * 32_768 * 2  # one layer's keys and values over the span, in bf16
    assert span_bf16 <= extra <= span_bf16 + 8 * 256 * 1024 * 8


# --------------------------------------------------------------------------- the choice


def test_kv_bits_choices():
    assert kv_bits_choices(KV_16, 16, True) == (16,)
    assert kv_bits_choices(KV_8, 16, True) == (8,)
    assert kv_bits_choices(KV_AUTO, 16, True) == (16, 8)
    assert kv_bits_choices(KV_AUTO, 8, True) == (8,)  # stays 8-bit while the cache is
    assert kv_bits_choices(KV_8, 16, False) == (16,)
    assert valid_kv_precision("4-bit") == KV_16 and valid_kv_precision(KV_AUTO) == KV_AUTO


def _plan(foresight, precision, held_bits=16, held_bytes=0):
    messages = [Message(Role.USER, "word " * 300)]
    return foresight.plan(messages, SummaryState(), "", 64, 0, kv_precision=precision,
                          held_kv_bits=held_bits, held_bytes=held_bytes)


def _foresight(tiny_loaded, free):
    """A Foresight as on CUDA (static caches at both precisions) with ``free`` bytes free, whose
    memory model is the tiny model's with 32 layers (KV, not the logits, sets the need)."""
    from dataclasses import replace

    from app.engine.local.turn_planner import Foresight
    from app.engine.memory.probe import FakeProbe

    total = 4 * GiB
    foresight = Foresight(tiny_loaded, FakeProbe(total=total, allocated=total - free, context_overhead=0))
    foresight.static_cache = True
    deep = tiny_loaded.model.config.to_dict() | {"num_hidden_layers": 32}
    config = type(tiny_loaded.model.config).from_dict(deep)
    deep16, deep8 = (PrefillModel.from_config(config, 4, attn_implementation="sdpa+gqa-packed", kv_bits=bits)
                     for bits in (16, 8))
    foresight.prefill_model, foresight.prefill_model_kv8 = replace(deep16, dynamic_cache=False), deep8
    return foresight


def test_admission_offers_8bit_with_its_numbers(tiny_loaded):
    roomy = _foresight(tiny_loaded, 2 * GiB)
    assert roomy.kv8_available
    plan = _plan(roomy, KV_16)
    prompt, margin = len(plan.prompt_ids), roomy.safety_margin(plan.sample)

    def needed(bits):  # exactly prompt + max_new_tokens slots: what a tight card gets
        p = roomy.project(prompt, 64, chunk=roomy.chunk, kv_bits=bits)
        return p.growth + p.error_bar_bytes + margin

    need16, need8 = needed(16), needed(8)
    assert need8 < need16 - MiB
    tight = _foresight(tiny_loaded, (need8 + need16) // 2)
    refused = _plan(tight, KV_16)
    assert not refused.admitted and refused.kv_bits == 16 and refused.decision.cause == "memory"
    assert refused.decision.kv8_needed_bytes == need8
    assert any(r.startswith("switch this chat to 8-bit KV") for r in refused.decision.remedies)
    chosen = _plan(tight, KV_8)
    assert chosen.admitted and chosen.kv_bits == 8 and chosen.capacity_tokens is not None
    auto = _plan(tight, KV_AUTO)
    assert auto.admitted and auto.kv_bits == 8
    assert _plan(roomy, KV_AUTO).kv_bits == 16  # auto keeps 16-bit while it fits
    too_tight = _foresight(tiny_loaded, need8 - MiB)
    assert _plan(too_tight, KV_16).decision.kv8_needed_bytes is None  # offered only when it fits


def test_a_precision_switch_counts_the_dropped_cache_as_free(tiny_loaded):
    roomy = _foresight(tiny_loaded, 2 * GiB)
    need8 = _plan(roomy, KV_8).decision.needed_bytes
    held = 64 * MiB  # a 16-bit cache the switch drops
    tight = _foresight(tiny_loaded, need8 - held // 2)
    assert not _plan(tight, KV_8).admitted
    assert _plan(tight, KV_8, held_bits=16, held_bytes=held).admitted


def test_auto_context_is_wider_for_a_chat_that_may_run_8bit(tiny_loaded):
    """The tiny model with 32 layers, so that its KV cache, not its logits, sets the context."""
    from dataclasses import replace
    from types import SimpleNamespace

    from app.engine.local.turn_planner import Foresight
    from app.engine.memory.context_fit import context_cost
    from app.engine.memory.probe import FakeProbe

    config = type(tiny_loaded.model.config).from_dict(tiny_loaded.model.config.to_dict() | {"num_hidden_layers": 32})
    deep = replace(tiny_loaded, model=SimpleNamespace(device=tiny_loaded.model.device, config=config))
    roomy = Foresight(deep, FakeProbe(total=4 * GiB, context_overhead=0))
    room = context_cost(roomy.prefill_model, 300, roomy.chunk).total  # 16-bit: 300 tokens fit
    tight = Foresight(deep, FakeProbe(total=4 * GiB, allocated=4 * GiB - 256 * MiB - room, context_overhead=0))
    assert tight.auto_context == 300 < tight.auto_context_kv8
    assert context_cost(tight.prefill_model_kv8, tight.auto_context_kv8, tight.chunk).total <= room
    assert tight.budget(0, 64).context_tokens == 300
    assert tight.budget(0, 64, kv_bits=8).context_tokens == tight.auto_context_kv8
    assert tight.budget(400, 64, kv_bits=8).context_tokens == 400  # an explicit setting wins


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8])
def test_scale_bytes_are_the_float32_bits_without_a_dtype_view(dtype):
    """The scale's 4 bytes, made and read with integer arithmetic (Inductor in torch 2.11 cannot
    lower the float32 -> int8 view of a computed tensor, H200): exactly the IEEE-754 bytes a view
    would give, over every binade a scale can take, and read back to the same float."""
    torch.manual_seed(0)
    exponents = torch.arange(-45, 40, dtype=torch.float32)
    scale = (torch.rand(exponents.numel(), 3) + 0.5) * torch.exp2(exponents).unsqueeze(1)
    scale = torch.cat([scale.reshape(-1), torch.tensor([1.0, 2.0 ** -126, 1e-12 / 127, 3.0e38])]).view(-1, 1)
    raw = kv_quant.scale_to_bytes(scale, dtype)
    assert raw.dtype == dtype and raw.shape == (scale.shape[0], kv_quant.SCALE_BYTES)
    assert torch.equal(raw, scale.contiguous().view(dtype))
    assert torch.equal(kv_quant.scale_from_bytes(raw), scale)
    packed = kv_quant.quantize(torch.randn(2, 3, 64), "int8" if dtype == torch.int8 else "fp8")
    codes, got = kv_quant.unpack(packed)
    assert torch.equal(got, packed[..., 64:].contiguous().view(torch.float32))


def test_the_cache_write_and_read_trace_without_a_byte_view():
    """No float32 <-> int8 dtype view in the traced quantize or unpack: torch 2.11's Inductor
    fails to lower one inside the compiled 8-bit decode step (H200; reproduced on the CPU with
    torch 2.11), so the 8-bit step never compiled."""
    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.randn(1, 3, 2, 64).transpose(1, 2)
    write = make_fx(lambda v: kv_quant.quantize(v, "int8"))(x)
    read = make_fx(lambda p: kv_quant.unpack(p)[1])(kv_quant.quantize(x, "int8"))
    for graph in (write.graph, read.graph):
        assert [n for n in graph.nodes if n.target == torch.ops.aten.view.dtype] == []
    assert any(n.target == torch.ops.aten.frexp.Tensor for n in write.graph.nodes)
