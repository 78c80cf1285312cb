"""Issue 12 on the CPU: one compiled decode graph serves every cache capacity, a static cache
grows by copying what it holds (nothing re-prefilled), prefill attends to the filled span only,
the planner picks the largest prefill chunk that is admitted, and the CPU thread choice."""

import threading

import pytest
import torch

from app.engine.events import ReplyFinished
from app.engine.local.attention import KV_SPAN_KWARG, gqa_packed_sdpa_forward
from app.engine.local.chat_format import encode_prompt, render_prompt
from app.engine.local.compiled_decode import warm_up
from app.engine.local.cpu_threads import CpuLoadMeter, apply_cpu_threads, choose_threads
from app.engine.local.generation import SamplingParams, prefill, stream_chat_reply
from app.engine.local.kv_session import KVSession, common_prefix
from app.engine.local.static_cache import capacity_of, grow_static_cache, is_span_cache, new_static_cache
from tests.helpers.dynamo_graphs import counting_compiler, layer_graphs

TURN1 = [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "What is the capital of France?"}]


def run(loaded, messages, params, **kwargs) -> ReplyFinished:
    events = list(stream_chat_reply(loaded, messages, params, threading.Event(), **kwargs))
    return events[-1]


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_one_compile_serves_every_capacity(tiny_loaded, fresh_dynamo):
    """Three caches of different capacities run the compiled step; dynamo traces one graph (a
    capacity guard would trace one per capacity) and the answers equal the eager ones."""
    graphs = []
    decoder = warm_up(tiny_loaded, (64,), compiler=counting_compiler(graphs), require_cuda=False)
    assert decoder.status.state == "ready" and len(layer_graphs(graphs)) == 1
    assert decoder.regional and "one decoder layer compiled for all" in decoder.status.reason
    # the graph is one layer's: its parameters are one layer's, the cache tensors one layer's
    params = [n for n in layer_graphs(graphs)[0].graph.nodes if n.op == "placeholder" and "_parameters_" in n.name]
    assert len(params) == len(dict(tiny_loaded.model.model.layers[0].named_parameters()))
    # around the layers, the rotary embedding and the final norm: one graph each
    assert len(graphs) == 3
    params = SamplingParams(max_new_tokens=6, temperature=0)
    for capacity in (64, 128, 320):
        session = KVSession(capacity_tokens=capacity, static=True)
        done = run(tiny_loaded, TURN1, params, session=session, decoder=decoder)
        assert done.decode_path == "compiled" and capacity_of(session.cache) == capacity
        eager = run(tiny_loaded, TURN1, params, session=KVSession(capacity_tokens=capacity, static=True))
        assert eager.decode_path == "eager-static" and done.text == eager.text and done.new_tokens == 6
    assert len(graphs) == 3


def test_a_layer_step_that_disagrees_gives_way_to_the_whole_forward(tiny_loaded, fresh_dynamo):
    """The warm-up checks the layer-at-a-time step against the model's own forward; a step that
    disagrees (here a compiler that spoils every layer's output) is set aside with the reason and
    the whole forward is compiled, so answers stay the model's."""
    def spoiling(fn):
        if fn.__name__ != "_layer_step":
            return fn
        return lambda *args: tuple(half * 1.5 for half in fn(*args))

    decoder = warm_up(tiny_loaded, (64,), compiler=spoiling, require_cuda=False)
    assert decoder.status.state == "ready" and not decoder.regional
    assert "its logits differ from the model's forward" in decoder.regional_failure
    assert "the whole forward compiled: its logits differ" in decoder.status.reason
    params = SamplingParams(max_new_tokens=6, temperature=0)
    done = run(tiny_loaded, TURN1, params, session=KVSession(capacity_tokens=64, static=True), decoder=decoder)
    eager = run(tiny_loaded, TURN1, params, session=KVSession(capacity_tokens=64, static=True))
    assert done.decode_path == "compiled" and done.text == eager.text


def test_replays_that_drift_from_their_captured_step_give_way_to_the_whole_forward(tiny_loaded, fresh_dynamo):
    """A host value baked into a CUDA-graph capture shows as replays that differ from the model
    more than the step they replay, while each stays inside the depth-scaled tolerance: here
    every step after the check's first scales the layer outputs by a little more."""
    layers = tiny_loaded.model.config.num_hidden_layers
    calls = []

    def drifting(fn):
        if fn.__name__ != "_layer_step":
            return fn

        def step(*args):
            calls.append(1)
            drift = max(0, (len(calls) - 1) // layers - 3)  # steps 1-3: the warm-up's; 4: the check's first
            return tuple(half * (1 + 0.004 * drift) for half in fn(*args))
        return step

    decoder = warm_up(tiny_loaded, (64,), compiler=drifting, require_cuda=False)
    assert not decoder.regional and "its replays drift from the step they captured" in decoder.regional_failure
    errors = [float(e) for e in decoder.regional_failure.split("(relative errors ")[1].rstrip(")").split(" / ")]
    assert errors[0] < 1e-3 and 1e-3 < errors[1] < errors[2] <= 2e-2


def test_the_regional_tolerance_grows_with_depth():
    from types import SimpleNamespace

    from app.engine.local.compiled_decode import regional_tolerance

    def model(layers):
        return SimpleNamespace(config=SimpleNamespace(num_hidden_layers=layers))
    assert regional_tolerance(model(2)) == pytest.approx(2e-2)  # the floor
    assert regional_tolerance(model(32)) == pytest.approx(0.096)  # 8B: measured 0.05 on the H200
    assert regional_tolerance(model(80)) == pytest.approx(0.24)


def test_a_layer_step_that_cannot_run_gives_way_to_the_whole_forward(tiny_loaded, fresh_dynamo):
    def failing(fn):
        if fn.__name__ != "_layer_step":
            return fn

        def step(*args):
            raise TypeError("unexpected keyword argument 'cache'")
        return step

    decoder = warm_up(tiny_loaded, (64,), compiler=failing, require_cuda=False)
    assert decoder.status.state == "ready" and not decoder.regional
    assert decoder.regional_failure == "TypeError: unexpected keyword argument 'cache'"


def test_which_models_compile_one_layer_for_all():
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    from app.engine.local.compiled_decode import regional_reason

    small = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2)
    llama = LlamaForCausalLM(LlamaConfig(**small))
    assert regional_reason(llama) == ""
    assert regional_reason(MistralForCausalLM(MistralConfig(**small, sliding_window=16))) == "sliding-window attention"
    assert regional_reason(MistralForCausalLM(MistralConfig(**small, sliding_window=None))) == ""
    llama.model.layers[1].forward = lambda *a, **k: None  # a hook of its own (accelerate's, say)
    assert regional_reason(llama) == "decoder layers with a forward of their own (hooks)"
    del llama.model.layers[1].forward
    llama.config.rope_scaling = {"rope_type": "dynamic", "factor": 2.0}
    assert regional_reason(llama) == "dynamic RoPE"  # reads the positions on the host
    llama.config.model_type = "gemma"
    assert regional_reason(llama) == "gemma layers are not known to be alike"


def test_grow_static_cache_keeps_every_token(tiny_loaded):
    model = tiny_loaded.model
    ids = torch.randint(0, 49152, (1, 40), generator=torch.Generator().manual_seed(1))
    more = torch.randint(0, 49152, (1, 12), generator=torch.Generator().manual_seed(2))
    cache = new_static_cache(model.config, 48)
    with torch.inference_mode():
        prefill(model, ids, cache, None)
        held = [(layer.keys[:, :, :40].clone(), layer.values[:, :, :40].clone()) for layer in cache.layers]
        grow_static_cache(cache, 112, 40)
        assert capacity_of(cache) == 112 and is_span_cache(cache)
        for (keys, values), layer in zip(held, cache.layers, strict=True):
            assert layer.keys.shape[2] == 112 == layer.values.shape[2]
            assert torch.equal(layer.keys[:, :, :40], keys) and torch.equal(layer.values[:, :, :40], values)
            assert not layer.keys[:, :, 40:].any()
        assert int(cache.layers[0].cumulative_length) == 40
        grown = prefill(model, more, cache, None, cached_tokens=40)
        cold = prefill(model, torch.cat([ids, more], dim=1), new_static_cache(model.config, 112), None)
    torch.testing.assert_close(grown, cold, rtol=1e-4, atol=1e-4)
    cache.crop(-12)  # back to the 40 tokens before `more` (transformers 5.17 layers cannot crop)
    assert all(int(layer.cumulative_length) == 40 for layer in cache.layers)
    with pytest.raises(ValueError):
        grow_static_cache(cache, 32, 52)


def test_session_growth_reuses_the_cache(tiny_loaded):
    """Turn 2 needs more slots than turn 1's cache has: the cache grows, the common prefix is
    reused (only the new tokens are prefilled) and the answer equals a cold prefill's."""
    session = KVSession(capacity_tokens=64, static=True)
    first = run(tiny_loaded, TURN1, SamplingParams(max_new_tokens=8, temperature=0), session=session)
    messages = [*TURN1, {"role": "assistant", "content": first.text}, {"role": "user", "content": "And Italy?"}]
    params = SamplingParams(max_new_tokens=60, temperature=0)
    cached = list(session.token_ids)
    tok = tiny_loaded.tokenizer
    ids = encode_prompt(tok, render_prompt(tok, tiny_loaded.prompt_format, messages))
    warm = run(tiny_loaded, messages, params, session=session)
    assert session.last_growth is not None and session.last_growth[:2] == (64, 2048)
    assert warm.reused_tokens == common_prefix(cached, ids) > 0  # every cached token that matches is kept
    assert warm.prefill_tokens == warm.prompt_tokens - warm.reused_tokens
    assert capacity_of(session.cache) == 2048 and "cache grown" in session.notes[-1]
    assert warm.text == run(tiny_loaded, messages, params, session=KVSession(static=True)).text


def test_span_prefill_attention_equals_full_cache_attention():
    """A 6-query chunk after 10 cached keys in a 32-slot cache: attending to the first 16 keys
    (kv_span) gives the same output as attending to all 32 under the causal mask."""
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 4, 6, 8), torch.randn(1, 2, 32, 8), torch.randn(1, 2, 32, 8)
    positions = torch.arange(10, 16).view(6, 1)
    mask = (torch.arange(32).view(1, 32) <= positions).view(1, 1, 6, 32)
    module = torch.nn.Module()
    full, _ = gqa_packed_sdpa_forward(module, q, k, v, mask, scaling=8 ** -0.5)
    span, _ = gqa_packed_sdpa_forward(module, q, k, v, mask, scaling=8 ** -0.5, **{KV_SPAN_KWARG: 16})
    torch.testing.assert_close(span, full)
    k[:, :, 16:] = float("nan")  # keys past the span are never read
    span_nan, _ = gqa_packed_sdpa_forward(module, q, k, v, mask, scaling=8 ** -0.5, **{KV_SPAN_KWARG: 16})
    torch.testing.assert_close(span_nan, full)


def test_choose_threads():
    assert choose_threads(3, cores=8, busy_cores=5) == 3  # a setting wins
    assert choose_threads(0, cores=8, busy_cores=None) == 8
    assert choose_threads(0, cores=2, busy_cores=1) == 1  # one busy core of two: one thread
    assert choose_threads(0, cores=4, busy_cores=6) == 1


def test_cpu_load_meter_counts_other_programs_only():
    """2 cores, 100 jiffies/s, 1 s between looks: 200 jiffies of wall time. This process used
    0.9 s (90 jiffies); other programs' share decides."""
    stats = iter([(0, 0), (190, 200), (290, 400), (380, 600)])
    own = iter([0.0, 0.9, 1.8, 1.8])
    meter = CpuLoadMeter(lambda: next(stats), lambda: next(own), clock_ticks=100, cores=2)
    assert meter.busy_cores() == 1  # 190 − 90 = 100 jiffies: one core busy elsewhere
    assert meter.busy_cores() == 0  # 100 − 90 = 10: idle
    assert meter.busy_cores() == 1  # 90 jiffies of others, this process idle: 0.9 core
    seen = []
    assert apply_cpu_threads(0, None, seen.append) == seen[0] >= 1


def test_cpu_load_meter_waits_out_a_look_too_short_to_count():
    """New-user trial: `--ask` looked milliseconds after the load, /proc/stat had not ticked, the load
    was "unknown", and both threads ran beside a busy core at 1 tok/s. A look sooner than
    MIN_WINDOW_S after the last waits out the rest; a later one does not wait."""
    now, slept = [100.0], []
    stats = {100.0: (0, 0), 100.25: (25, 50), 105.0: (500, 1000)}  # the other core busy all along
    own = iter([0.0, 0.0, 0.0])

    def sleep(seconds):
        slept.append(seconds)
        now[0] = round(now[0] + seconds, 6)

    meter = CpuLoadMeter(lambda: stats[now[0]], lambda: next(own), clock_ticks=100, cores=2,
                         clock=lambda: now[0], sleep=sleep)
    now[0] = 100.001  # the first turn, right after the load
    assert meter.busy_cores() == 1 and slept == [pytest.approx(0.249)]
    now[0] = 105.0
    assert meter.busy_cores() == 1 and len(slept) == 1


class FakeCudaProbe:
    """A CUDA probe whose free memory a test sets (bytes); 1 GiB allocated, 2 TiB total."""

    kind = "cuda"
    free = 2**40

    def sample(self):
        from app.engine.memory.sample import MemorySample

        return MemorySample(0.0, "cuda", "fake", 2**30, 2**30, 2**30, self.free, 2**41)

    def reset_peak(self):
        pass


def test_planner_takes_the_largest_admitted_chunk(tiny_loaded):
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.engine.local.turn_planner import Foresight

    probe = FakeCudaProbe()
    foresight = Foresight(tiny_loaded, probe)
    foresight.static_cache, foresight.chunk_ladder = True, (128, 32, 8)  # a 200-token prompt
    messages = [Message(Role.USER, "word " * 200)]
    roomy = foresight.plan(messages, SummaryState(), "", 64)
    assert roomy.admitted and roomy.projection.basis.chunk_size == 128
    margin = foresight.safety_margin(probe.sample())
    needed = {}
    for chunk in (128, 32, 8):
        p = foresight.project(len(roomy.prompt_ids), roomy.projection.basis.max_new_tokens, chunk=chunk)
        needed[chunk] = p.growth + p.error_bar_bytes + margin
    assert needed[128] > needed[32] > needed[8]
    probe.free = (needed[32] + needed[128]) // 2
    tight = foresight.plan(messages, SummaryState(), "", 64)
    assert tight.admitted and tight.projection.basis.chunk_size == 32
    assert roomy.capacity_tokens == tight.capacity_tokens == 2048  # rounded up: rarely grows


def test_nf4_weights_are_dequantized_whole_unless_memory_needs_slices(tiny_loaded, monkeypatch):
    """A sliced NF4 prefill costs a launch pair and a Python call per slice: each chunk is tried
    with whole weights first, and slices are admitted only when the whole weight's transient
    does not fit. The runner then switches the layers (nf4_prefill.set_sliced) for the turn and
    back after it; HEADROOM_NF4_PREFILL=sliced always slices."""
    from dataclasses import replace

    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.engine.local.turn_planner import Foresight
    from app.engine.memory import prefill_spike

    monkeypatch.setattr(prefill_spike, "PREFILL_DEQUANT_SLICE_BYTES", 1024)  # the tiny weights: 4 slices
    loaded = replace(tiny_loaded, report=replace(tiny_loaded.report, quantization="NF4 4-bit + double quant",
                                                 nf4_prefill_sliced=True))
    probe = FakeCudaProbe()
    foresight = Foresight(loaded, probe)
    foresight.static_cache, foresight.chunk_ladder = True, (128, 32)
    whole, sliced = foresight.dequant_variants(16)
    assert not whole.nf4_sliced and sliced.nf4_sliced and whole.dequant_bytes > sliced.dequant_bytes
    messages = [Message(Role.USER, "word " * 200)]
    roomy = foresight.plan(messages, SummaryState(), "", 64)
    assert roomy.projection.basis.chunk_size == 128 and not roomy.projection.basis.model.nf4_sliced
    margin = foresight.safety_margin(probe.sample())

    def needed(model, chunk):
        p = foresight.project(len(roomy.prompt_ids), roomy.projection.basis.max_new_tokens, chunk=chunk, model=model)
        return p.growth + p.error_bar_bytes + margin
    probe.free = (needed(whole, 128) + needed(sliced, 128)) // 2
    tight = foresight.plan(messages, SummaryState(), "", 64)
    assert tight.admitted and tight.projection.basis.chunk_size == 128 and tight.projection.basis.model.nf4_sliced
    monkeypatch.setenv("HEADROOM_NF4_PREFILL", "sliced")
    assert Foresight(loaded, FakeCudaProbe()).dequant_variants(16) == (sliced,)


def test_a_full_card_gets_an_exact_cache_before_a_refusal(tiny_loaded):
    """The static cache is rounded up to 2,048-token steps only while memory admits it; when the
    rounding alone does not fit, exactly prompt + max_new_tokens slots are admitted, and the turn
    then runs with that capacity."""
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.engine.local.turn_planner import Foresight

    probe = FakeCudaProbe()
    foresight = Foresight(tiny_loaded, probe)
    foresight.static_cache, foresight.chunk_ladder = True, (256,)
    messages = [Message(Role.USER, "word " * 200)]
    plan = foresight.plan(messages, SummaryState(), "", 64)
    need = len(plan.prompt_ids) + 64
    margin = foresight.safety_margin(probe.sample())

    def needed(capacity: int) -> int:
        p = foresight.project(len(plan.prompt_ids), capacity - len(plan.prompt_ids), chunk=256)
        return p.growth + p.error_bar_bytes + margin

    probe.free = (needed(need) + needed(2048)) // 2
    exact = foresight.plan(messages, SummaryState(), "", 64)
    assert exact.admitted and exact.capacity_tokens == need < 2048
    probe.free = needed(need) - 1
    assert not foresight.plan(messages, SummaryState(), "", 64).admitted
    from app.engine.local.generation import stream_reply

    session = KVSession(static=True)
    ids = list(range(10, 60))
    events = list(stream_reply(tiny_loaded.model, tiny_loaded.tokenizer, ids, SamplingParams(max_new_tokens=4),
                               frozenset(), threading.Event(), session=session, capacity_tokens=54))
    assert events[-1].new_tokens == 4 and capacity_of(session.cache) == 54


def test_a_format_whose_layer_step_fails_takes_every_format_to_the_whole_forward(tiny_loaded, fresh_dynamo):
    """16-bit passes the layer-at-a-time check, 8-bit does not: both formats are compiled again as
    the whole forward during the warm-up, so no turn of either compiles inside it."""
    from app.engine.local.static_cache import QuantizedSpanLayer

    graphs = []
    counting = counting_compiler(graphs)

    def compiler(fn):
        compiled = counting(fn)
        if fn.__name__ != "_layer_step":
            return compiled
        return lambda *args: tuple(half * (1.5 if isinstance(args[3], QuantizedSpanLayer) else 1.0)
                                   for half in compiled(*args))

    decoder = warm_up(tiny_loaded, (64,), compiler=compiler, require_cuda=False, kv_bits=(16, 8))
    assert decoder.status.state == "ready" and decoder.status.kv_bits == (16, 8) and not decoder.regional
    traced = len(graphs)
    params = SamplingParams(max_new_tokens=4, temperature=0)
    done = run(tiny_loaded, TURN1, params, session=KVSession(capacity_tokens=64, static=True), decoder=decoder)
    assert done.decode_path == "compiled" and len(graphs) == traced  # nothing traced inside the turn


def test_the_layers_get_their_own_forward_back_even_after_an_error(tiny_loaded):
    from app.engine.local.compiled_decode import CompiledDecode

    decoder = CompiledDecode(tiny_loaded.model, compiler=lambda fn: fn)
    decoder._layer_compiled = lambda *args: None
    layers = tiny_loaded.model.model.layers
    hook = layers[0].forward = lambda *a, **k: "hooked"  # an instance forward someone installed
    cache = new_static_cache(tiny_loaded.model.config, 64)
    cache.layers = cache.layers[:1]  # the second layer has no cache layer: patching fails halfway
    try:
        with pytest.raises(IndexError), decoder._layers_compiled(cache):
            pass
        assert vars(layers[0])["forward"] is hook and "forward" not in vars(layers[1])
    finally:
        del layers[0].forward


def test_the_rotary_embedding_and_norm_run_compiled_in_the_step_only(tiny_loaded):
    """Inside the step the model's rotary embedding and final norm call their compiled function
    (with the module, whose class forward it runs); after it, also after an error, they have their
    own forward again."""
    from app.engine.local.compiled_decode import OUTER_MODULES, CompiledDecode

    model = tiny_loaded.model.model
    calls = []
    decoder = CompiledDecode(tiny_loaded.model, compiler=lambda fn: fn)
    decoder._layer_compiled = lambda *args: None
    decoder._outer_compiled = {name: lambda module, *a, **k: calls.append(module) or "compiled"
                               for name in OUTER_MODULES}
    cache = new_static_cache(tiny_loaded.model.config, 64)
    with decoder._layers_compiled(cache):
        assert model.rotary_emb(None) == model.norm(None) == "compiled"
    assert calls == [model.rotary_emb, model.norm]
    assert "forward" not in vars(model.rotary_emb) and "forward" not in vars(model.norm)
    with pytest.raises(RuntimeError), decoder._layers_compiled(cache):
        raise RuntimeError("a step that fails")
    assert "forward" not in vars(model.rotary_emb) and "forward" not in vars(model.norm)


def test_each_loaded_model_compiles_its_own_copy_of_the_step(tiny_loaded):
    """Dynamo keeps graphs, and its limit of 8 recompiles, per code object: two decoders (two
    model loads) compile different code objects, for the layer step (and each module around the
    layers) and for the whole forward."""
    from app.engine.local.compiled_decode import CompiledDecode

    seen = []
    decoders = [CompiledDecode(tiny_loaded.model, compiler=lambda fn: seen.append(fn) or fn) for _ in range(2)]
    for decoder in decoders:
        decoder._build()
        decoder.regional_failure = "whole forward asked for"
        decoder._build()
    assert [fn.__name__ for fn in seen] == ["_layer_step", "_outer_step", "_final_norm", "_forward"] * 2
    step_codes = {id(fn.__code__) for fn in seen if fn.__name__ != "_forward"}
    forward_codes = {id(fn.__func__.__code__) for fn in seen if fn.__name__ == "_forward"}
    assert len(step_codes) == 6 and len(forward_codes) == 2


def test_the_turn_runs_its_nf4_prefill_as_admitted_and_slices_again_after(tiny_loaded, monkeypatch):
    from dataclasses import replace

    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.core.settings import GenerationSettings
    from app.engine.events import TurnCompleted
    from app.engine.local import nf4_prefill
    from app.engine.local.turn_runner import TurnRunner
    from app.engine.memory import prefill_spike
    from app.engine.memory.probe import CpuProbe

    monkeypatch.setattr(prefill_spike, "PREFILL_DEQUANT_SLICE_BYTES", 1024)
    switched = []
    monkeypatch.setattr(nf4_prefill, "set_sliced", lambda model, sliced: switched.append(sliced))
    loaded = replace(tiny_loaded, report=replace(tiny_loaded.report, quantization="NF4 4-bit + double quant",
                                                 nf4_prefill_sliced=True))
    runner = TurnRunner(loaded, CpuProbe())
    events = list(runner.run_turn([Message(Role.USER, "Hello there")], SummaryState(),
                                  GenerationSettings(max_new_tokens=3, temperature=0.0), threading.Event()))
    assert isinstance(events[-1], TurnCompleted)
    assert switched[-2:] == [False, True]  # whole weights for the turn (room), sliced again after
