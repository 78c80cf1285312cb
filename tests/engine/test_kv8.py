"""8-bit KV cache (issue 16): quantization bounds, the attention over 8-bit keys and values
against 16-bit, the bytes the memory model counts, and the per-chat choice in planning.

Tiny random GQA models from configs (no download), float32 on the CPU.
"""

import importlib.util
import os

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


def test_prefill_spike_counts_one_block_not_the_span():
    """Llama-3-8B in bf16, a 1,024-token chunk at the end of a 98k-token prompt: the 8-bit
    attention phase is the chunk's activations plus one 4,096-key block and the chunk's own keys
    dequantized, the float32 merge and the chunk's quantization — 113.5 MB, where dequantizing the
    whole span alone was 401 MB — and it stays the same at any longer span."""
    config = llama3_8b(max_position_embeddings=131_072)
    int8 = PrefillModel.from_config(config, 2, attn_implementation="sdpa+gqa-packed", kv_bits=8)
    assert not int8.dynamic_cache
    c, dims = 1024, 8 * (128 + 128)  # Hkv × (dk + dv)
    activations = c * 2 * (3 * 4096 + 3 * 32 * 256 // 2)
    block_and_own = dims * (4096 + c) * 2
    merge = c * 32 * 128 * (4 + 2) + 2 * c * 32 * 4
    quantize = 2 * dims * c * 4
    at_98k = prefill_breakdown(int8, 98_304, 0, c)
    assert at_98k.attention_phase == activations + block_and_own + merge + quantize == 113_508_352
    assert dims * 98_304 * 2 == 402_653_184  # what the whole-span dequant used to add
    assert prefill_breakdown(int8, 131_072, 0, c).attention_phase == at_98k.attention_phase
    # a span shorter than one block: only that much of the past is dequantized
    short = prefill_breakdown(int8, 1024 + 100, 0, c).attention_phase
    assert at_98k.attention_phase - short == dims * (4096 - 100) * 2


# --------------------------------------------------------------------------- blockwise prefill


def _reference_attention(query, key, value, scale):
    """Causal attention of the c queries at the end of the keys, float32, GQA expanded."""
    c, span, groups = query.shape[2], key.shape[2], query.shape[1] // key.shape[1]
    k, v = key.float().repeat_interleave(groups, 1), value.float().repeat_interleave(groups, 1)
    allowed = torch.arange(span).view(1, -1) <= (span - c + torch.arange(c)).view(-1, 1)
    out = torch.nn.functional.scaled_dot_product_attention(query.float(), k, v, attn_mask=allowed, scale=scale)
    return out.transpose(1, 2)


@pytest.mark.parametrize("block", [3, 8, 21, 4096])
def test_blockwise_prefill_is_attention_over_the_dequantized_span(monkeypatch, block):
    """Past blocks of 3 / 8 / 21 keys (several, exact multiple of 21 past keys, or one block)
    and the chunk's own 7 keys, merged by log-sum-exp: the attention over the whole span."""
    from app.engine.local import attention
    from app.engine.memory import kv_layout

    monkeypatch.setattr(kv_layout, "KV8_PREFILL_BLOCK", block)
    torch.manual_seed(5)
    b, hkv, g, d, cap, span, c = 1, 2, 4, 16, 40, 28, 7
    query = torch.randn(b, hkv * g, c, d)
    packed_k = kv_quant.quantize(torch.randn(b, hkv, cap, d) * 2)
    packed_v = kv_quant.quantize(torch.randn(b, hkv, cap, d))
    got = attention.blockwise_8bit_prefill(query, packed_k, packed_v, span, None, attention._sdpa_with_lse)
    deq_k = kv_quant.dequantize(packed_k[:, :, :span], torch.float32)
    deq_v = kv_quant.dequantize(packed_v[:, :, :span], torch.float32)
    expected = kv_quant.rotate(_reference_attention(kv_quant.rotate(query), deq_k, deq_v, d ** -0.5))
    assert got.shape == (b, c, hkv * g, d)
    torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-4)


@torch.inference_mode()
def _prefill_logits(model, ids, chunk, capacity=64):
    cache = new_static_cache(model.config, capacity, 8)
    return prefill(model, ids, cache, chunk)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_blockwise_8bit_prefill_matches_the_whole_span_path(monkeypatch, dtype):
    """A 48-token prompt in 16-token chunks with 5-key blocks (up to 7 blocks per chunk): the same
    logits as dequantizing the whole span (the path kept where no kernel gives a log-sum-exp),
    and no dequantization ever sees more than one block or the chunk."""
    from app.engine.local import attention
    from app.engine.memory import kv_layout

    model = _model().to(dtype)
    ids = torch.randint(3, 97, (1, 48), generator=torch.Generator().manual_seed(6))
    monkeypatch.setattr(attention, "_sdpa_lse_applies", lambda *_: False)
    whole_span = _prefill_logits(model, ids, 16)
    monkeypatch.undo()

    monkeypatch.setattr(kv_layout, "KV8_PREFILL_BLOCK", 5)
    seen, whole = [], []
    eager = kv_quant.dequantize_eager
    monkeypatch.setattr(kv_quant, "dequantize_eager", lambda p, dt: seen.append(p.shape[2]) or eager(p, dt))
    monkeypatch.setattr(kv_quant, "dequantize", lambda *a: whole.append(a) or pytest.fail("whole span"))
    blockwise = _prefill_logits(model, ids, 16)
    spread = whole_span.abs().max()
    tolerance = 1e-5 if dtype == torch.float32 else 2 ** -7  # bf16: two units of its last place
    assert (blockwise - whole_span).abs().max() <= tolerance * spread
    assert torch.equal(blockwise.argmax(), whole_span.argmax())
    # per chunk, keys then values: own 16 keys, then the past in blocks of 5
    per_chunk = [[16], [16, 5, 5, 5, 1], [16] + [5] * 6 + [2]]
    layers = model.config.num_hidden_layers
    assert seen == [n for sizes in per_chunk for _ in range(layers) for n in sizes for _ in range(2)]
    assert max(seen) == 16 and whole == []


_KERNEL = (os.environ.get("TRITON_INTERPRET") == "1" or torch.cuda.is_available())


@pytest.mark.skipif(not _KERNEL or importlib.util.find_spec("triton") is None,
                    reason="needs Triton: CUDA, or TRITON_INTERPRET=1")
def test_the_8bit_kernel_prefills_and_decodes_as_the_torch_paths(monkeypatch):
    """The model over an 8-bit cache with app.engine.local.split_kv_attention's kernel (prefill chunks
    and decode steps) against the same model on the torch paths (blockwise prefill, blockwise
    decode): the same logits to float32 noise. On the CPU the kernel runs in Triton's interpreter
    (float32: its bf16 casts are emulated wrongly there)."""
    from app.engine.local import split_kv_attention

    model = _model()
    ids = torch.randint(3, 97, (1, 40), generator=torch.Generator().manual_seed(8))
    torch_paths, _ = _logits(model, ids, 8)
    monkeypatch.setattr(split_kv_attention, "triton_applies", lambda query, key: key.dtype == torch.int8)
    monkeypatch.setattr(split_kv_attention, "triton_failure", "")
    monkeypatch.setattr(split_kv_attention, "_checked", {torch.device("cpu")})  # its own test checks it
    calls = []
    attend = split_kv_attention._attend
    monkeypatch.setattr(split_kv_attention, "_attend", lambda *a: calls.append(a[0].shape) or attend(*a))
    kernel, _ = _logits(model, ids, 8)
    assert split_kv_attention.triton_failure == ""
    layers = model.config.num_hidden_layers
    assert len(calls) == layers * (3 + 4)  # 3 prefill chunks of 16, 16 and 8 tokens, 4 decode steps
    assert (kernel - torch_paths).abs().max() < 1e-4 * torch_paths.abs().max()


@pytest.mark.parametrize("fmt", ["int8", "fp8"])
def test_eager_dequantize_reads_the_same_values_in_two_kernels(fmt):
    packed = kv_quant.quantize(torch.randn(1, 2, 37, 16) * 3, fmt)
    block = packed[:, :, 5:21]  # a block of the cache: a strided view at an offset
    assert torch.equal(kv_quant.dequantize_eager(block, torch.float32), kv_quant.dequantize(block, torch.float32))
    assert torch.equal(kv_quant.dequantize_eager(block, torch.bfloat16), kv_quant.dequantize(block, torch.bfloat16))
    odd = kv_quant.quantize(torch.randn(3, 2), fmt)[1:]  # rows of 6 bytes: no float32 view, the general path
    assert torch.equal(kv_quant.dequantize_eager(odd, torch.float32), kv_quant.dequantize(odd, torch.float32))


# --------------------------------------------------------------------------- the choice


def test_kv_bits_choices():
    assert kv_bits_choices(KV_16, True) == (16,)
    assert kv_bits_choices(KV_8, True) == (8,)
    assert kv_bits_choices(KV_AUTO, True) == (16, 8)  # whatever the cache holds: decided per turn
    assert kv_bits_choices(KV_8, False) == (16,)
    assert kv_bits_choices(KV_AUTO, False) == (16,)
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


def test_auto_returns_to_16bit_when_the_turn_fits_there_and_keeps_8bit_when_not(tiny_loaded):
    """Trial 9: a chat set to 8-bit, switched to "auto" with plenty of memory free, answered in
    int8 from its 8-bit cache. "auto" decides per turn: the dropped 8-bit cache counts as free,
    the history is read again at 16-bit. Where 16-bit does not fit even so, the 8-bit cache stays
    and its tokens are reused."""
    roomy = _foresight(tiny_loaded, 2 * GiB)
    back = _plan(roomy, KV_AUTO, held_bits=8, held_bytes=16 * MiB)
    assert back.admitted and back.kv_bits == 16
    prompt, margin = len(back.prompt_ids), roomy.safety_margin(back.sample)

    def needed(bits):  # exactly prompt + max_new_tokens slots: what a tight card gets
        p = roomy.project(prompt, 64, chunk=roomy.chunk, kv_bits=bits)
        return p.growth + p.error_bar_bytes + margin

    need16, need8 = needed(16), needed(8)
    held = (need16 - need8) // 4  # the chat's 8-bit cache
    tight = _foresight(tiny_loaded, need16 - held - MiB)  # 16-bit short by 1 MiB with the cache dropped
    assert not _plan(tight, KV_16, held_bits=8, held_bytes=held).admitted
    stays = _plan(tight, KV_AUTO, held_bits=8, held_bytes=held)
    assert stays.admitted and stays.kv_bits == 8
    assert _plan(_foresight(tiny_loaded, need16 - held + MiB), KV_AUTO, held_bits=8, held_bytes=held).kv_bits == 16


def test_an_auto_turn_after_an_8bit_one_runs_at_full_precision_on_the_cpu(tiny_loaded):
    """The turn runner end to end (tiny model, float32 on the CPU, 8 GiB free): an 8-bit turn
    leaves an 8-bit cache; "auto" then answers at full precision, prefilling the whole prompt
    once (nothing reused from the 8-bit cache), and the next "auto" turn reuses its 16-bit cache."""
    import threading

    from app.core.settings import GenerationSettings
    from app.engine.events import TurnCompleted, TurnPlanned
    from app.engine.local.turn_runner import TurnRunner
    from app.engine.memory.probe import FakeProbe

    runner = TurnRunner(tiny_loaded, FakeProbe(total=8 * GiB, kind="cpu"))
    settings = GenerationSettings(system_prompt="", max_new_tokens=4, temperature=0.0)
    messages = [Message(Role.USER, "What is the capital of France?")]

    def turn(precision):
        events = list(runner.run_turn(messages, SummaryState(), settings, threading.Event(), kv_precision=precision))
        [planned] = [e.plan for e in events if isinstance(e, TurnPlanned)]
        [done] = [e.finished for e in events if isinstance(e, TurnCompleted)]
        messages.extend([Message(Role.ASSISTANT, done.text or "Paris."), Message(Role.USER, "And of Spain?")])
        return planned, done

    planned, first = turn(KV_8)
    assert planned.kv_bits == 8 and runner.session.kv_bits == 8 and first.reused_tokens == 0
    planned, switched = turn(KV_AUTO)
    assert planned.kv_bits == 16 and runner.session.kv_bits == 16
    assert switched.reused_tokens == 0 and switched.prefill_tokens == switched.prompt_tokens  # read again once
    planned, after = turn(KV_AUTO)
    assert planned.kv_bits == 16 and after.reused_tokens > 0  # the 16-bit cache serves the next turn


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


@pytest.mark.parametrize("eager_views", [False, True])
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8])
def test_scale_bytes_are_the_float32_bits_without_a_dtype_view(dtype, eager_views, monkeypatch):
    """The scale's 4 bytes, made and read with integer arithmetic (Inductor in torch 2.11 cannot
    lower the float32 -> int8 view of a computed tensor, H200): exactly the IEEE-754 bytes a view
    would give, over every binade a scale can take, and read back to the same float; the eager
    path's own view (``_EAGER_VIEWS``) gives the same bytes and floats."""
    monkeypatch.setattr(kv_quant, "_EAGER_VIEWS", eager_views)
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


def test_the_cache_write_and_read_trace_without_a_byte_view(monkeypatch):
    """No float32 <-> int8 dtype view in the traced quantize or unpack: torch 2.11's Inductor
    fails to lower one inside the compiled 8-bit decode step (H200; reproduced on the CPU with
    torch 2.11), so the 8-bit step never compiled. make_fx does not say it is compiling, as
    Dynamo does: the test says it, so the compiled step's branch is the one traced."""
    from torch.fx.experimental.proxy_tensor import make_fx

    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)

    x = torch.randn(1, 3, 2, 64).transpose(1, 2)
    write = make_fx(lambda v: kv_quant.quantize(v, "int8"))(x)
    read = make_fx(lambda p: kv_quant.unpack(p)[1])(kv_quant.quantize(x, "int8"))
    for graph in (write.graph, read.graph):
        assert [n for n in graph.nodes if n.target == torch.ops.aten.view.dtype] == []
    assert any(n.target == torch.ops.aten.frexp.Tensor for n in write.graph.nodes)


@pytest.mark.parametrize("attention,offered", [("sdpa+gqa-packed", True), ("fa2+static", True),
                                               ("flash_attention_2 (flash-attn 2.8.3)", True),
                                               ("sdpa", False), ("eager", False)])
def test_8bit_is_offered_where_headroom_attention_reads_it(tiny_loaded, attention, offered):
    """Whatever name the report gives Headroom's FA2 path (the LoadReport's "flash_attention_2
    (…)" or the registered "fa2+static", as the memory benchmark reports it), 8-bit KV is there."""
    from dataclasses import replace

    from app.engine.local.turn_planner import Foresight
    from app.engine.memory.probe import FakeProbe

    loaded = replace(tiny_loaded, report=replace(tiny_loaded.report, attention=attention))
    assert Foresight(loaded, FakeProbe(total=4 * GiB)).kv8_available is offered


def test_the_8bit_rule_knows_the_engine_names():
    """app.core's kv8_supported holds the names as strings (core imports no engine code): they
    must stay the names the engine registers and reports."""
    from app.core.kv_precision import kv8_supported
    from app.engine.local.attention import PACKED_SDPA
    from app.engine.local.fa2_attention import FA2_LABEL, FA2_STATIC

    assert kv8_supported(PACKED_SDPA) and kv8_supported(FA2_STATIC)
    assert kv8_supported(f"{FA2_LABEL} (flash-attn 2.8.3)") and not kv8_supported("sdpa")


@pytest.mark.parametrize("made_eagerly", [True, False])
def test_the_compiled_rotation_and_packing_write_what_the_eager_ones_write(made_eagerly, monkeypatch):
    """Under torch.compile (the decode step) rotate is a product-and-sum Inductor fuses and the
    codes and scale bytes are joined by padding, not a cat; the Hadamard matrix is the one made
    eagerly (an input, not a construction in the graph), or built in the graph when none was."""
    monkeypatch.setattr(kv_quant, "_HADAMARD", {})
    x = torch.randn(1, 2, 3, 64, generator=torch.Generator().manual_seed(4)) * 3
    if made_eagerly:
        kv_quant.rotate(x)
        assert list(kv_quant._HADAMARD) == [(64, "cpu", None)]
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(lambda t: (kv_quant.rotate(t), kv_quant.quantize(t)), backend=record, fullgraph=True)
    torch._dynamo.reset()
    rotated, packed = compiled(x)
    targets = {node.target for node in graphs[0].graph.nodes}
    assert torch.matmul not in targets  # no cuBLAS launch per rotation
    assert (torch.ones in targets) != made_eagerly  # the matrix is built in the graph only as a fallback
    assert torch.allclose(rotated, kv_quant.rotate(x), atol=1e-5)
    assert kv_quant.rotate(rotated).sub(x).abs().max() < 1e-4  # still its own inverse
    want = kv_quant.quantize(x)
    assert packed.shape == want.shape == (1, 2, 3, 64 + kv_quant.SCALE_BYTES) and packed.dtype == torch.int8
    codes, scale = kv_quant.unpack(packed)
    want_codes, want_scale = kv_quant.unpack(want)
    assert torch.allclose(scale, want_scale, rtol=1e-6)
    assert (codes.int() - want_codes.int()).abs().max() <= 1  # a rounding tie may fall either way
