"""The compiled decode step per KV format (issues 12 and 16) on the CPU: a step compiled for
16-bit KV does not serve an 8-bit cache (Dynamo would recompile inside the turn), so such a turn
decodes eagerly and says why, the 8-bit step is compiled after it, and the warm-up compiles the
formats the open chat may use. torch.compile is replaced by a Dynamo backend that counts traced
graphs (a trace is what costs ≈50 s on the GPU) or by the identity."""

import threading

import pytest
import torch

from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.kv_precision import KV_8, KV_16, KV_AUTO
from app.core.settings import GenerationSettings
from app.engine.events import ReplyFinished, TurnCompleted
from app.engine.local.compiled_decode import warm_up
from app.engine.local.generation import SamplingParams, stream_chat_reply
from app.engine.local.kv_session import KVSession
from app.engine.local.static_cache import KV16_FORMAT, QuantizedSpanLayer, kv_format_of, new_static_cache
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import FakeProbe
from app.engine.memory.units import GiB
from tests.helpers.dynamo_graphs import counting_compiler, layer_graphs

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
PARAMS = SamplingParams(max_new_tokens=6, temperature=0)


@pytest.fixture
def traces():
    """A compiler whose Dynamo backend records every graph it is given (one per trace)."""
    torch._dynamo.reset()
    graphs = []
    yield counting_compiler(graphs), graphs
    torch._dynamo.reset()


def run(loaded, kv_bits, decoder) -> ReplyFinished:
    session = KVSession(capacity_tokens=128, static=True, kv_bits=kv_bits)
    return list(stream_chat_reply(loaded, QUESTION, PARAMS, threading.Event(), session=session,
                                  decoder=decoder))[-1]


def test_kv_format_of_a_cache(tiny_loaded):
    config = tiny_loaded.model.config
    assert kv_format_of(new_static_cache(config, 64)) == KV16_FORMAT == "16-bit"
    assert kv_format_of(new_static_cache(config, 64, 8)) == "int8"
    assert kv_format_of(new_static_cache(config, 64, 8, "fp8")) == "fp8"
    assert kv_format_of(None) == KV16_FORMAT


def test_an_8bit_turn_never_compiles_inside_and_its_step_compiles_after(tiny_loaded, traces):
    counting, graphs = traces
    decoder = warm_up(tiny_loaded, (64,), compiler=counting, require_cuda=False)
    assert decoder.status.state == "ready" and decoder.status.kv_bits == (16,) and len(layer_graphs(graphs)) == 1
    phases = decoder.warm_up_phases["16-bit, 64 tokens"]  # where a warm-up's seconds went, part by part
    assert list(phases)[:4] == ["eager_prefill", "first_step_compile_and_capture", "replay_1", "replay_2"]
    rounding = 0.0005 * len(phases)  # each part is kept to the millisecond
    assert all(seconds >= 0 for seconds in phases.values())
    assert sum(phases.values()) <= decoder.status.seconds + rounding
    config = tiny_loaded.model.config
    assert decoder.can_run(new_static_cache(config, 256)) and not decoder.can_run(new_static_cache(config, 256, 8))
    assert decoder.missing(8) and not decoder.missing(16)

    eager = run(tiny_loaded, 8, decoder)
    assert eager.decode_path == "eager-static (8-bit KV step not compiled yet)" and eager.new_tokens == 6
    assert len(graphs) == 3  # nothing was traced inside the turn (the layer, the rotary embedding, the norm)
    assert run(tiny_loaded, 16, decoder).decode_path == "compiled"

    seen = []
    warm_up(tiny_loaded, (64,), on_status=seen.append, compiler=counting, require_cuda=False, decoder=decoder,
            kv_bits=(8,))
    assert [(s.state, s.compiling_kv_bits, s.kv_bits) for s in seen] == [
        ("compiling", (8,), (16,)), ("ready", (), (16, 8))]
    assert "8-bit KV" in seen[0].reason and "16-bit and 8-bit KV" in seen[1].reason
    assert len(layer_graphs(graphs)) == 2 and not decoder.missing(8)
    compiled = run(tiny_loaded, 8, decoder)
    assert compiled.decode_path == "compiled" and compiled.text == eager.text
    # no recompile either way
    assert run(tiny_loaded, 16, decoder).decode_path == "compiled" and len(layer_graphs(graphs)) == 2
    assert len(graphs) == 4  # the rotary embedding and the final norm: one graph each for both formats
    again = []
    warm_up(tiny_loaded, (64,), on_status=again.append, compiler=counting, require_cuda=False, decoder=decoder,
            kv_bits=(16, 8))
    assert again == [] and len(layer_graphs(graphs)) == 2  # both compiled: nothing to do, nothing said


def test_a_format_that_fails_to_compile_stays_eager_and_the_other_runs(tiny_loaded):
    def eight_bit(arg) -> bool:  # a cache (whole-model step) or a cache layer (one decoder layer)
        return isinstance(arg, QuantizedSpanLayer) or (hasattr(arg, "layers") and kv_format_of(arg) != KV16_FORMAT)

    def compiler(fn):
        def step(*args):
            if any(eight_bit(arg) for arg in args):
                raise RuntimeError("no kernel for int8\nlong traceback")
            return fn(*args)
        return step

    decoder = warm_up(tiny_loaded, (64,), compiler=compiler, require_cuda=False, kv_bits=(8, 16))
    status = decoder.status
    assert status.state == "ready" and status.kv_bits == (16,)
    assert "eager fallback for 8-bit KV: RuntimeError: no kernel for int8" in status.reason
    assert not decoder.missing(8)  # not retried after every turn
    assert run(tiny_loaded, 8, decoder).decode_path == "eager-static (8-bit KV step failed to compile)"
    assert run(tiny_loaded, 16, decoder).decode_path == "compiled"


def turn(runner, precision, stop=None):
    settings = GenerationSettings(system_prompt="", max_new_tokens=6, temperature=0.0)
    events = list(runner.run_turn([Message(Role.USER, "What is the capital of France?")], SummaryState(),
                                  settings, stop or threading.Event(), kv_precision=precision))
    done = [e for e in events if isinstance(e, TurnCompleted)]
    assert done, events
    return done[0].finished


def test_the_runner_compiles_the_missing_format_after_the_turn(tiny_loaded):
    runner = TurnRunner(tiny_loaded, FakeProbe(total=8 * GiB, kind="cpu"), decode_compiler=lambda fn: fn)
    seen = []
    assert runner.warm_up(seen.append, KV_16).kv_bits == (16,)
    assert [s.compiling_kv_bits for s in seen] == [(16,), ()]
    assert runner.compile_missing(seen.append) is None and len(seen) == 2  # no turn yet: nothing missing
    first = turn(runner, KV_8)
    assert first.decode_path == "eager-static (8-bit KV step not compiled yet)"
    assert runner.uncompiled_kv_bits == 8
    status = runner.compile_missing(seen.append)
    assert status.state == "ready" and status.kv_bits == (16, 8)
    assert [(s.state, s.compiling_kv_bits) for s in seen[2:]] == [("compiling", (8,)), ("ready", ())]
    assert runner.uncompiled_kv_bits is None and runner.compile_missing(seen.append) is None
    assert turn(runner, KV_8).decode_path == "compiled"


def test_the_warm_up_compiles_the_formats_the_open_chat_may_use(tiny_loaded):
    runner = TurnRunner(tiny_loaded, FakeProbe(total=8 * GiB, kind="cpu"))
    foresight = runner.foresight
    assert foresight.kv8_available
    foresight.auto_context = foresight.max_positions  # the whole context fits at 16-bit
    assert runner.warm_up_kv_bits(KV_16) == (16,)
    assert runner.warm_up_kv_bits(KV_8) == (8, 16)  # the open chat's first
    assert runner.warm_up_kv_bits(KV_AUTO) == (16,)  # auto stays 16-bit while everything fits
    foresight.auto_context = foresight.max_positions - 1  # the fit plan: 16-bit does not hold it all
    assert runner.warm_up_kv_bits(KV_AUTO) == (16, 8)
    foresight.prefill_model_kv8 = None  # a model whose attention cannot read 8-bit KV
    assert runner.warm_up_kv_bits(KV_8) == runner.warm_up_kv_bits(KV_AUTO) == (16,)


def test_an_8bit_chat_warms_up_8bit_first_and_runs_compiled_at_once(tiny_loaded):
    runner = TurnRunner(tiny_loaded, FakeProbe(total=8 * GiB, kind="cpu"), decode_compiler=lambda fn: fn)
    seen = []
    runner.warm_up(seen.append, KV_8)
    assert [(s.state, s.compiling_kv_bits, s.kv_bits) for s in seen] == [
        ("compiling", (8, 16), ()), ("ready", (), (16, 8))]
    assert turn(runner, KV_8).decode_path == "compiled" and runner.uncompiled_kv_bits is None
