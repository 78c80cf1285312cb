"""Headroom's FlashAttention-2 path over its static cache ("fa2+static"), on the CPU with a fake
flash_attn (tests/helpers/fake_flash_attn.py): the same logits as eager attention, K/V read in
place from the cache, the filled length from the positions; the per-phase choice and the
LoadReport / projection that follow from it."""

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, DynamicCache, LlamaConfig

from app.engine.loading.loader import build_report
from app.engine.loading.placement import choose_placement
from app.engine.local import fa2_attention as fa
from app.engine.local.attention import KV_SPAN_KWARG
from app.engine.local.generation import prefill
from app.engine.local.static_cache import new_static_cache
from app.engine.memory.prefill_spike import PrefillModel, prefill_breakdown
from tests.helpers.fake_flash_attn import FakeFlashAttn

SHAPE = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=8, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
             bos_token_id=1, eos_token_id=2)


def _model(attention="eager"):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(LlamaConfig(**SHAPE), attn_implementation=attention,
                                             dtype=torch.float32)
    return model.eval()


def _as_fa2(model, decode=None):
    """What the loader does after a flash_attention_2 load (FA2 cannot load on the CPU)."""
    model.config._attn_implementation = fa.FA2_LABEL
    return fa.enable_fa2_static(model, decode)


@torch.inference_mode()
def _run(model, ids, chunk, cache, steps=3):
    logits = [prefill(model, ids, cache, chunk)]
    for _ in range(steps):
        step = logits[-1].argmax().view(1, 1)
        logits.append(model(input_ids=step, past_key_values=cache, use_cache=True,
                            logits_to_keep=1).logits[0, -1].float())
    return torch.stack(logits)


@pytest.mark.parametrize("decode", ["fa2", "packed"])
@pytest.mark.parametrize("chunk", [None, 7])
def test_static_cache_prefill_and_decode_match_eager(monkeypatch, decode, chunk):
    fake = FakeFlashAttn().install(monkeypatch)
    ids = torch.randint(3, 97, (1, 23), generator=torch.Generator().manual_seed(1))
    expected = _run(_model("eager"), ids, chunk, DynamicCache(config=_model().config))
    model = _model()
    phases = _as_fa2(model, decode)
    cache = new_static_cache(model.config, 64)
    got = _run(model, ids, chunk, cache)
    torch.testing.assert_close(got, expected, atol=2e-4, rtol=1e-4)
    assert model.config._attn_implementation == fa.FA2_STATIC
    layers = model.config.num_hidden_layers
    prefill_calls = layers * (1 if chunk is None else -(-23 // chunk))
    decode_calls = 3 * layers if decode == "fa2" else 0
    assert len(fake.calls) == prefill_calls + decode_calls
    assert phases.decode.startswith("FlashAttention-2" if decode == "fa2" else "packed")
    # every call reads the cache itself (a view: same storage, no copy) up to the filled length
    first, last = fake.calls[0], fake.calls[-1]
    assert first["k_cache"].untyped_storage().data_ptr() == cache.layers[0].keys.untyped_storage().data_ptr()
    assert first["k_cache"].shape == (1, 64, 2, 16) and first["causal"]
    assert int(first["cache_seqlens"][0]) == (23 if chunk is None else 7)
    assert int(last["cache_seqlens"][0]) == (26 if decode == "fa2" else 23)


@pytest.mark.parametrize("decode", ["fa2", "packed"])
def test_an_8bit_cache_matches_headroom_sdpa_on_the_same_cache(monkeypatch, decode):
    """8-bit KV with FA2 loaded (found on the H200: FA2 was handed the int8 cache, "query and key
    must have the same dtype"): a prefill chunk runs FA2 over its own keys (causal) and over the
    past one dequantized block at a time (no mask), merged by FA2's log-sum-exp; decode runs the
    packed 8-bit decode; the logits are those of Headroom's SDPA path on an 8-bit cache (whose
    blockwise prefill matches the whole-span one, tests/engine/test_kv8.py)."""
    from app.engine.local import attention
    from app.engine.memory import kv_layout

    monkeypatch.setattr(kv_layout, "KV8_PREFILL_BLOCK", 5)
    fake = FakeFlashAttn().install(monkeypatch)
    ids = torch.randint(3, 97, (1, 23), generator=torch.Generator().manual_seed(1))
    reference = _model("sdpa")
    attention.enable_packed_sdpa(reference)
    expected = _run(reference, ids, 7, new_static_cache(reference.config, 64, kv_bits=8))
    assert fake.calls == []  # the SDPA path runs torch's kernels
    model = _model()
    _as_fa2(model, decode)
    got = _run(model, ids, 7, new_static_cache(model.config, 64, kv_bits=8))
    torch.testing.assert_close(got, expected, atol=2e-4, rtol=1e-4)
    assert all(call["k_cache"].dtype == torch.float32 for call in fake.calls)
    # chunks of 7, 7, 7, 2 tokens after 0, 7, 14, 21 cached: (keys, causal) of each FA2 call,
    # the own chunk first, then blocks of at most 5 keys; decode is never FA2's here
    per_chunk = [[(7, True)], [(7, True), (5, False), (2, False)],
                 [(7, True), (5, False), (5, False), (4, False)],
                 [(2, True)] + [(5, False)] * 4 + [(1, False)]]
    layers = model.config.num_hidden_layers
    expected_calls = [call for chunk in per_chunk for _ in range(layers) for call in chunk]
    assert [(c["k_cache"].shape[1], c["causal"]) for c in fake.calls] == expected_calls
    assert all(int(c["cache_seqlens"][0]) == c["k_cache"].shape[1] for c in fake.calls)


def test_dynamic_cache_works_too(monkeypatch):
    """Keys of exactly the filled length (a DynamicCache): the same call, the same answer."""
    FakeFlashAttn().install(monkeypatch)
    ids = torch.randint(3, 97, (1, 11), generator=torch.Generator().manual_seed(2))
    expected = _run(_model("eager"), ids, 4, DynamicCache(config=_model().config))
    model = _model()
    _as_fa2(model)
    torch.testing.assert_close(_run(model, ids, 4, DynamicCache(config=model.config)), expected,
                               atol=2e-4, rtol=1e-4)


def test_the_kv_span_kwarg_is_accepted_and_what_fa2_does_not_do_is_refused(monkeypatch):
    FakeFlashAttn().install(monkeypatch)
    fa._register_kvcache_op()  # what switching the attention on does (alone, no earlier test did it)
    module = _model().model.layers[0].self_attn
    q, k = torch.randn(1, 8, 3, 16), torch.randn(1, 2, 10, 16)
    pos = torch.arange(5, 8).view(1, 3)
    out, _ = fa.fa2_static_forward(module, q, k, k, None, position_ids=pos, **{KV_SPAN_KWARG: 8})
    assert out.shape == (1, 3, 8, 16)
    with pytest.raises(ValueError, match="unpadded"):
        fa.fa2_static_forward(module, q, k, k, torch.ones(1, 8, dtype=torch.bool), position_ids=pos)
    with pytest.raises(ValueError, match="position ids"):
        fa.fa2_static_forward(module, q, k, k, None)


def test_phases_choice_and_setting():
    assert fa.choose_phases(None).decode.startswith("FlashAttention-2 split-KV")  # faster compiled
    assert fa.choose_phases(" FA2 ").decode.startswith("FlashAttention-2 split-KV")
    assert fa.choose_phases(" Packed ").decode.startswith("packed GQA")
    assert all(line.startswith(("prefill: FlashAttention-2", "decode: ")) for line in fa.choose_phases("").lines())
    with pytest.raises(ValueError, match="HEADROOM_FA2_DECODE"):
        fa.choose_phases("flash")


def test_enable_leaves_other_attention_alone_and_reads_the_environment(monkeypatch):
    model = _model("sdpa")
    assert fa.enable_fa2_static(model) is None and model.config._attn_implementation == "sdpa"
    monkeypatch.setenv(fa.DECODE_OPT_IN, "packed")
    model = _model()
    assert _as_fa2(model).decode.startswith("packed")
    assert {getattr(layer.self_attn, fa.DECODE_ATTR) for layer in model.model.layers} == {"packed"}


def test_load_report_names_fa2_and_its_phases(monkeypatch):
    FakeFlashAttn().install(monkeypatch)
    model = _model()
    phases = _as_fa2(model)
    placement = choose_placement(True, (9, 0), _build("2.8.3.post2"), (True, ""),
                                 head_dim=16 * 8)
    assert placement.attention == "flash_attention_2" and placement.flash_attn_version == "2.8.3.post2"
    tokenizer = type("Tok", (), {"chat_template": "x"})()
    report = build_report(model, tokenizer, Path("/m/tiny"), placement, 1.0, phases)
    assert report.attention == "flash_attention_2 (flash-attn 2.8.3.post2)"
    assert report.attention_phases == phases.lines()
    assert not any("activated" in f or "not active" in f for f in report.fallbacks)
    # a FA2 placement whose model did not switch says so
    plain = _model("sdpa")
    report = build_report(plain, tokenizer, Path("/m/tiny"), placement, 1.0, None)
    assert any("transformers activated sdpa" in f for f in report.fallbacks)
    assert any("not active" in f for f in report.fallbacks)


def _build(version, head_dims=None):
    from app.engine.loading.placement import FlashAttnBuild

    return FlashAttnBuild(version, head_dims, ("bf16", "fp16") if head_dims else None, ("90",) if head_dims else None)


def test_projection_models_fa2_without_mask_or_workspace():
    """The label the LoadReport carries selects FA2's memory model: no mask, nothing
    materialized per layer call over the cache; SDPA's packed path pays both."""
    config = LlamaConfig(**{**SHAPE, "num_hidden_layers": 4})
    label = fa.attention_label(fa.FA2_STATIC, "2.8.3.post2")
    fa2 = prefill_breakdown(PrefillModel.from_config(config, 2, attn_implementation=label, dynamic_cache=False),
                            4096, resident_tokens=20000, chunk_size=1024)
    packed = prefill_breakdown(PrefillModel.from_config(config, 2, attn_implementation="sdpa+gqa-packed",
                                                        dynamic_cache=False), 4096, resident_tokens=20000,
                               chunk_size=1024)
    assert fa2.mask == 0 and packed.mask == 1024 * 24096
    assert packed.attention_phase > fa2.attention_phase == 1024 * 2 * (3 * 64 + 3 * 8 * 32 // 2)


def test_the_decode_step_traces_as_one_graph_through_the_custom_op(monkeypatch):
    """torch.compile (fullgraph: a graph break raises) through "fa2+static": FA2 is reached as
    the custom op headroom::fa2_with_kvcache, traced with its fake, and gives eager's logits."""
    fake = FakeFlashAttn().install(monkeypatch)
    model = _model()
    _as_fa2(model, "fa2")
    ids = torch.randint(3, 97, (1, 10), generator=torch.Generator().manual_seed(3))

    def step(x, cache):
        return model(input_ids=x, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[0, -1]

    torch._dynamo.reset()
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    with torch.inference_mode():
        eager_cache, compiled_cache = new_static_cache(model.config, 32), new_static_cache(model.config, 32)
        token = prefill(model, ids, eager_cache, None).argmax().view(1, 1)
        prefill(model, ids, compiled_cache, None)
        calls = len(fake.calls)
        for _ in range(2):
            expected, got = step(token, eager_cache), compiled(token, compiled_cache)
            torch.testing.assert_close(got, expected)
            token = expected.argmax().view(1, 1)
    assert len(fake.calls) - calls == 2 * 2 * model.config.num_hidden_layers  # eager and compiled, per layer


@pytest.mark.parametrize("decode", ["fa2", "packed"])
def test_the_regional_decode_step_runs_over_fa2_static(monkeypatch, decode):
    """The compiled decode's layer-at-a-time step (its layers uncompiled here: the same calls) over
    "fa2+static" gives the model's own logits: the step passes no mask of its own to an attention
    that takes none (compiled_decode's `_causal_mask`; "fa2+static" raises for a mask)."""
    from app.engine.local import compiled_decode

    FakeFlashAttn().install(monkeypatch)
    model = _model()
    _as_fa2(model, decode)
    ids = torch.randint(3, 97, (1, 10), generator=torch.Generator().manual_seed(4))
    dec = compiled_decode.CompiledDecode(model, lambda fn: fn)
    dec._layer_compiled = compiled_decode._layer_step
    dec._outer_compiled = {"rotary_emb": compiled_decode._outer_step, "norm": compiled_decode._final_norm}
    with torch.inference_mode():
        mine, theirs = new_static_cache(model.config, 32), new_static_cache(model.config, 32)
        token = prefill(model, ids, mine, None).argmax().view(1, 1)
        prefill(model, ids, theirs, None)
        for _ in range(2):
            got, want = dec._regional_forward(token, mine), dec._forward(token, theirs)
            torch.testing.assert_close(got, want)
            token = want.argmax().view(1, 1)
