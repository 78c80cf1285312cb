"""CompiledDecode keeps one captured CUDA graph: the cache decoding now (issue 12).

CUDA graphs need a GPU; here a stand-in capture records what the decoder asks of it, on the real
tiny model and its span caches, so the bookkeeping is what is tested: capture once per cache, a
replay per later step, a new capture when the cache's tensors change (growth, another chat), and a
failed capture that leaves the compiled function running."""

import pytest
import torch

from app.engine.local import compiled_decode
from app.engine.local.compiled_decode import CompiledDecode, _cache_tensors, _layout
from app.engine.local.generation import cache_kwarg
from app.engine.local.static_cache import grow_static_cache, kv_format_of, new_static_cache


class FakeCapture:
    """CapturedStep's interface without CUDA: remembers the cache's tensor addresses as the real
    one does; replays by running the compiled function (what the graph would do)."""

    made: list = []

    def __init__(self, compiled, input_ids, cache):
        self.compiled, self.cache = compiled, cache
        self.layout = _layout(_cache_tensors(cache))
        self.replays = 0
        FakeCapture.made.append(self)

    def serves(self, cache) -> bool:
        return _layout(_cache_tensors(cache)) == self.layout

    def replay(self, input_ids):
        self.replays += 1
        return self.compiled(input_ids, self.cache)


@pytest.fixture
def decoder(tiny_loaded, monkeypatch):
    FakeCapture.made = []
    monkeypatch.setattr(compiled_decode, "CapturedStep", FakeCapture)
    calls = []

    def compiler(fn):
        def run(input_ids, cache):
            calls.append(cache)
            return fn(input_ids, cache)
        return run

    dec = CompiledDecode(tiny_loaded.model, compiler)
    dec._compiled = dec._compiler(dec._forward)
    dec.captures = True
    dec.calls = calls
    return dec


def _prefilled(model, capacity=64, tokens=5):
    cache = new_static_cache(model.config, capacity)
    with torch.inference_mode():
        model(input_ids=torch.arange(1, tokens + 1).view(1, -1), use_cache=True,
              **{cache_kwarg(type(model)): cache})
    return cache


def test_one_capture_per_cache_then_replays(decoder, tiny_loaded):
    cache = _prefilled(tiny_loaded.model)
    token = torch.tensor([[7]])
    with torch.inference_mode():
        for _ in range(4):
            decoder.step(token, cache)
    assert len(FakeCapture.made) == 1
    assert FakeCapture.made[0].replays == 3
    assert int(cache.layers[0].cumulative_length) == 5 + 4  # every step wrote its token once


def test_a_grown_cache_or_another_chat_is_captured_again(decoder, tiny_loaded):
    cache = _prefilled(tiny_loaded.model)
    other = _prefilled(tiny_loaded.model)
    token = torch.tensor([[7]])
    with torch.inference_mode():
        decoder.step(token, cache)
        decoder.step(token, other)  # another chat: its own tensors
        decoder.step(token, other)
        grow_static_cache(other, 128, int(other.layers[0].cumulative_length))
        decoder.step(token, other)  # grown: new tensors, the old graph would write freed memory
    assert len(FakeCapture.made) == 3
    assert [c.replays for c in FakeCapture.made] == [0, 1, 0]
    assert decoder._graph is FakeCapture.made[-1]


def test_a_failed_capture_keeps_the_compiled_step_and_says_why(decoder, tiny_loaded, monkeypatch):
    def broken(*args):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(compiled_decode, "CapturedStep", broken)
    decoder.status = compiled_decode.DecodeStatus("ready", "compiled decode for 16-bit KV")
    cache = _prefilled(tiny_loaded.model)
    token = torch.tensor([[7]])
    with torch.inference_mode():
        first = decoder.step(token, cache)
        decoder.step(token, cache)
    assert first.shape == (tiny_loaded.model.config.vocab_size,)
    assert len(decoder.calls) == 2  # both steps ran the compiled function; no second capture tried
    assert "CUDA-graph capture failed (RuntimeError: operation not permitted" in decoder.status.reason
    assert decoder.status.state == "ready"


def test_cache_tensors_are_every_layers_keys_values_and_counter(tiny_loaded):
    cache = _prefilled(tiny_loaded.model)
    tensors = _cache_tensors(cache)
    assert len(tensors) == 3 * len(cache.layers)
    assert tensors[0] is cache.layers[0].keys and tensors[2] is cache.layers[0].cumulative_length


def test_a_captured_step_does_not_keep_its_caches_memory(tiny_loaded, monkeypatch):
    """The real CapturedStep (its CUDA calls stood in for): once the cache is dropped, grown or
    parked, its old tensors are freed, not held by the graph until the next step."""
    import contextlib
    import weakref

    class Stub:
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    monkeypatch.setattr(torch.cuda, "CUDAGraph", Stub)
    monkeypatch.setattr(torch.cuda, "Stream", Stub)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: Stub())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    cache = _prefilled(tiny_loaded.model)
    keys = weakref.ref(cache.layers[0].keys)
    compiled = CompiledDecode(tiny_loaded.model)._forward
    with torch.inference_mode():
        step = compiled_decode.CapturedStep(compiled, torch.tensor([[7]]), cache)
    assert step.serves(cache)
    grow_static_cache(cache, 128, int(cache.layers[0].cumulative_length))
    assert keys() is None and not step.serves(cache)


def test_a_restored_chat_is_captured_before_its_turn_and_nothing_runs(decoder, tiny_loaded):
    """prepare(): the graph of a chat switched back to is recorded when the chat is opened, so
    its first token is a replay; recording runs nothing (the cache keeps its fill)."""
    from app.engine.local.static_cache import kv_format_of

    cache = _prefilled(tiny_loaded.model)
    other = _prefilled(tiny_loaded.model)
    decoder._ready.add((kv_format_of(cache), 64))
    token = torch.tensor([[7]])
    with torch.inference_mode():
        decoder.step(token, cache)
        ran = len(decoder.calls)
        assert decoder.prepare(other)
        assert len(decoder.calls) == ran  # recorded, not run
        assert int(other.layers[0].cumulative_length) == 5
        assert decoder.prepare(other)  # already served: no second capture
        decoder.step(token, other)
    assert len(FakeCapture.made) == 2
    assert FakeCapture.made[1].replays == 1 and decoder._graph is FakeCapture.made[1]


def test_prepare_leaves_what_it_cannot_serve_to_the_next_step(decoder, tiny_loaded, monkeypatch):
    cache = _prefilled(tiny_loaded.model)
    assert not decoder.prepare(cache)  # no KV format compiled: that turn decodes eagerly anyway
    assert FakeCapture.made == []
    from app.engine.local.static_cache import kv_format_of

    decoder._ready.add((kv_format_of(cache), 64))

    def broken(*args):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(compiled_decode, "CapturedStep", broken)
    assert not decoder.prepare(cache)
    assert decoder._capture_failed == ""  # a failed early capture does not turn graphs off


def test_a_new_cache_of_a_warmed_format_is_recorded_first_then_replayed(decoder, tiny_loaded):
    """No eager Inductor step before the capture once the format is warmed up (can_run): the
    first step of a new chat, or of a grown cache, is its graph's first replay."""
    from app.engine.local.static_cache import kv_format_of

    cache = _prefilled(tiny_loaded.model)
    decoder._ready.add((kv_format_of(cache), 64))
    token = torch.tensor([[7]])
    with torch.inference_mode():
        for _ in range(3):
            decoder.step(token, cache)
    assert len(FakeCapture.made) == 1 and FakeCapture.made[0].replays == 3
    assert len(decoder.calls) == 3  # every step is a replay: none ran outside the graph
    assert int(cache.layers[0].cumulative_length) == 5 + 3


def test_a_failed_first_recording_falls_back_to_the_eager_step_and_capture(decoder, tiny_loaded, monkeypatch):
    from app.engine.local.static_cache import kv_format_of

    attempts = []

    def once_broken(compiled, input_ids, cache):
        attempts.append(cache)
        if len(attempts) == 1:
            raise RuntimeError("operation not permitted when stream is capturing")
        return FakeCapture(compiled, input_ids, cache)

    monkeypatch.setattr(compiled_decode, "CapturedStep", once_broken)
    cache = _prefilled(tiny_loaded.model)
    decoder._ready.add((kv_format_of(cache), 64))
    token = torch.tensor([[7]])
    with torch.inference_mode():
        first = decoder.step(token, cache)
        decoder.step(token, cache)
    assert first.shape == (tiny_loaded.model.config.vocab_size,)
    assert len(attempts) == 2 and decoder._capture_failed == ""  # graphs stay on
    assert len(decoder.calls) == 2 and FakeCapture.made[0].replays == 1  # eager once, then a replay
    assert int(cache.layers[0].cumulative_length) == 5 + 2


@pytest.mark.parametrize("kv_bits", [16, 8])
@pytest.mark.parametrize("outer", [False, True])
def test_the_layer_step_writes_without_counting_and_the_step_counts_each_layer_once(tiny_loaded, kv_bits, outer):
    """The regional step's layers write through SpanLayer.write (no increment kernel in each
    layer); `_regional_forward` moves every layer's counter by the step's tokens once, and the
    logits and cache are the model's own forward's: with its own causal mask (`_causal_mask`), and
    with the final norm adding the last layer's halves (`_final_norm`, ``outer``) or not."""
    model = tiny_loaded.model
    dec = CompiledDecode(model, lambda fn: fn)
    dec._layer_compiled = compiled_decode._layer_step  # the layer step uncompiled: the same calls
    if outer:
        dec._outer_compiled = {"rotary_emb": compiled_decode._outer_step, "norm": compiled_decode._final_norm}
    mine, theirs = _prefilled(model), _prefilled(model)
    if kv_bits == 8:
        mine, theirs = (new_static_cache(model.config, 64, 8) for _ in range(2))
        with torch.inference_mode():
            for cache in (mine, theirs):
                model(input_ids=torch.arange(1, 6).view(1, -1), use_cache=True, **{cache_kwarg(type(model)): cache})
    layer = mine.layers[1]
    dtype = layer.keys.dtype if kv_bits == 16 else model.dtype
    keys = torch.randn(1, layer.num_heads, 1, layer.k_head_dim, dtype=dtype)
    with torch.inference_mode():
        compiled_decode._LayerCache(layer).update(keys, keys)
        assert int(layer.cumulative_length) == 5  # written at slot 5, not counted
        for token_id in (7, 9):
            token = torch.tensor([[token_id]])
            got = dec._regional_forward(token, mine)
            want = dec._forward(token, theirs)
            assert torch.equal(got, want)
    assert [int(layer.cumulative_length) for layer in mine.layers] == [7] * len(mine.layers)
    assert [int(layer.cumulative_length) for layer in theirs.layers] == [7] * len(theirs.layers)
    for a, b in zip(mine.layers, theirs.layers, strict=True):
        assert torch.equal(a.keys[:, :, :7], b.keys[:, :, :7]) and torch.equal(a.values[:, :, :7], b.values[:, :, :7])


@pytest.mark.parametrize("fill, queries", [(1, 1), (5, 1), (60, 1), (5, 3)])
def test_the_step_mask_is_the_one_transformers_builds(tiny_loaded, fill, queries):
    """`_causal_mask` (one compare against kept slot numbers) equals transformers' own causal mask
    for the step's queries over a span cache, and a second step reuses the slot numbers and the
    first layer's zero delta instead of making them again (a captured step replays no kernel for
    them)."""
    from transformers.masking_utils import create_causal_mask

    model = tiny_loaded.model
    dec = CompiledDecode(model, lambda fn: fn)
    cache = _prefilled(model, tokens=fill)  # the step's queries come after the cache's fill
    positions = torch.arange(fill, fill + queries).view(1, -1)
    embeds = torch.zeros(1, queries, model.config.hidden_size, dtype=model.dtype)
    want = create_causal_mask(config=model.config, inputs_embeds=embeds, attention_mask=None,
                              past_key_values=cache, position_ids=positions,
                              **({"cache_position": positions[0]} if dec._takes_cache_position else {}))
    got = dec._causal_mask(cache, positions)
    assert got.dtype == torch.bool and got.shape == (1, 1, queries, 64)
    assert torch.equal(got, want.expand_as(got))
    assert int(got.sum()) == sum(fill + 1 + q for q in range(queries))
    slots = dec._buffers.slots(64, torch.device("cpu"))
    assert torch.equal(dec._causal_mask(cache, positions), got)
    assert dec._buffers.slots(64, torch.device("cpu")).data_ptr() == slots.data_ptr()
    hidden = torch.ones(1, 1, 8)
    assert dec._buffers.zeros_like(hidden) is dec._buffers.zeros_like(hidden)
    assert not dec._buffers.zeros_like(hidden).any()


def test_a_regional_capture_finds_its_constant_tensors_made(decoder, tiny_loaded, monkeypatch):
    """Before a regional step is captured, the slot numbers for the cache's capacity and the first
    layer's zero delta exist (`CompiledDecode._capture`): made inside the capture they would be
    kernels in every replay. A grown cache gets slot numbers for its new capacity."""
    seen = []

    class Recording(FakeCapture):
        def __init__(self, compiled, input_ids, cache):
            buffers = decoder._buffers
            seen.append((None if buffers._slots is None else buffers._slots.numel(), bool(buffers._zeros)))
            super().__init__(compiled, input_ids, cache)

    monkeypatch.setattr(compiled_decode, "CapturedStep", Recording)
    decoder._layer_compiled = compiled_decode._layer_step
    decoder._compiled = decoder._regional_forward
    cache = _prefilled(tiny_loaded.model)
    decoder._ready.add((kv_format_of(cache), 64))  # warmed up: a new cache is captured straight away
    token = torch.tensor([[7]])
    with torch.inference_mode():
        decoder.step(token, cache)
        capacity = 4 * max(64, decoder._buffers._slots.numel())
        grow_static_cache(cache, capacity, int(cache.layers[0].cumulative_length))
        decoder.step(token, cache)
    assert seen[0][0] >= 64 and seen[0][1]
    assert seen[1] == (capacity, True)


def test_the_step_takes_float32_logits_from_the_head_only_while_it_runs(tiny_loaded, monkeypatch):
    """Where the lm_head qualifies (`_takes_fp32_logits`: CUDA, stood in for here), the regional step's
    head is `_logits_fp32` over the head's own weight: the logits are float32 and equal to the model's
    own up to its bf16 rounding of them; after the step, also after an error, the head has its own
    forward again. HEADROOM_LOGITS_FP32=0 (LOGITS_FP32 False) leaves the head alone."""
    model = tiny_loaded.model
    calls = []

    def fp32_logits(weight, hidden):  # torch.mm's out_dtype is CUDA-only: the same product in float32
        calls.append(weight)
        return (hidden.float() @ weight.float().t())

    monkeypatch.setattr(compiled_decode, "_takes_fp32_logits", lambda head: head is model.lm_head)
    monkeypatch.setattr(compiled_decode, "_logits_fp32", fp32_logits)
    dec = CompiledDecode(model, lambda fn: fn)
    dec._layer_compiled = compiled_decode._layer_step
    mine, theirs = _prefilled(model), _prefilled(model)
    token = torch.tensor([[7]])
    with torch.inference_mode():
        got = dec._regional_forward(token, mine)
        want = dec._forward(token, theirs)
    assert calls == [model.lm_head.weight] and "forward" not in vars(model.lm_head)
    assert got.dtype == torch.float32  # the model's own, up to their rounding to its dtype
    assert torch.equal(got.to(model.dtype).float(), want) and torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(compiled_decode, "LOGITS_FP32", False)
    with torch.inference_mode():
        dec._regional_forward(token, mine)
    assert len(calls) == 1


@pytest.mark.parametrize("implementation", ["fa2+static", "eager"])
def test_no_step_mask_where_the_attention_takes_no_sdpa_mask(tiny_loaded, monkeypatch, implementation):
    """"fa2+static" takes no mask (it raises for one) and eager attention adds a float one:
    `_causal_mask` leaves both to transformers, and builds the boolean one only for the "sdpa" kind."""
    model = tiny_loaded.model
    dec = CompiledDecode(model, lambda fn: fn)
    cache = _prefilled(model)
    positions = torch.tensor([[5]])
    assert dec._causal_mask(cache, positions) is not None  # the tiny model's own attention
    monkeypatch.setattr(model.config, "_attn_implementation", implementation)
    assert dec._causal_mask(cache, positions) is None


def test_kept_buffers_outlive_the_graphs_that_read_them(tiny_loaded):
    """Slot numbers outgrown by a larger cache stay referenced (a graph captured earlier may still be
    replayed, e.g. after a failed capture of the new cache), and zeros of another shape do not replace
    the step's zero delta."""
    buffers = compiled_decode._StepBuffers()
    cpu = torch.device("cpu")
    first = buffers._slots if buffers.slots(100, cpu) is not None else None
    assert first.numel() == compiled_decode.CAPACITY_STEP
    grown = buffers.slots(5000, cpu)
    assert grown.numel() == 5000 and buffers._slots.numel() == 8192
    assert any(t is first for t in buffers._retired)
    assert torch.equal(grown, torch.arange(5000))
    one = buffers.zeros_like(torch.ones(1, 1, 8))
    three = buffers.zeros_like(torch.ones(1, 3, 8))
    assert three.shape == (1, 3, 8) and buffers.zeros_like(torch.ones(1, 1, 8)) is one


def test_float32_logits_keep_the_heads_shape_and_take_only_plain_16bit_cuda_heads(monkeypatch):
    """`_logits_fp32` (torch.mm with out_dtype, CUDA-only: a float32 stand-in here) gives (..., V) float32
    logits equal to the float32 product; `_takes_fp32_logits` refuses what it cannot stand in for."""
    seen = []

    def mm(a, b, out_dtype=None):
        seen.append(out_dtype)
        return (a.float() @ b.float()).to(out_dtype)

    monkeypatch.setattr(torch, "mm", mm)
    weight = torch.randn(11, 8).to(torch.bfloat16)
    hidden = torch.randn(1, 1, 8).to(torch.bfloat16)
    got = compiled_decode._logits_fp32(weight, hidden)
    assert got.shape == (1, 1, 11) and got.dtype == torch.float32 and seen == [torch.float32]
    assert torch.equal(got, hidden.float() @ weight.float().t())
    head = torch.nn.Linear(8, 11, bias=False).to(torch.bfloat16)
    assert not compiled_decode._takes_fp32_logits(head)  # on the CPU
    assert not compiled_decode._takes_fp32_logits(torch.nn.Linear(8, 11, bias=True))
    assert not compiled_decode._takes_fp32_logits(None)
