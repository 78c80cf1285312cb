"""The remote backend against a real OpenAI-compatible server (`transformers serve` on the
default SmolLM2 model, CPU, 127.0.0.1): streaming, Stop, a summary through the server, the
history policy with the server's context, and the server's own refusals."""

import threading
import time

import httpx

from app.core.backend_settings import RemoteSettings
from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine import events as ev
from app.engine.events import TextDelta
from app.engine.local import turn_runner as tr
from app.engine.remote.backend import RemoteBackend

QUESTION = [Message(Role.USER, "What is the capital of France?")]


def backend_for(server, **kwargs) -> RemoteBackend:
    return RemoteBackend(RemoteSettings(server.base_url, server.model, **kwargs))


def run(backend, messages, settings, stop=None, on_text=None):
    events = []
    for event in backend.run_turn(messages, SummaryState(), settings, stop or threading.Event()):
        events.append(event)
        if isinstance(event, TextDelta) and on_text is not None:
            on_text(event, events)
    return events


def of(events, kind):
    return [e for e in events if isinstance(e, kind)]


def test_both_backends_satisfy_the_protocol(openai_server, tiny_loaded):
    from app.engine.backend import Backend
    from app.engine.memory.probe import CpuProbe

    local, remote = tr.TurnRunner(tiny_loaded, CpuProbe()), backend_for(openai_server)
    assert isinstance(local, Backend) and isinstance(remote, Backend)
    assert (local.kind, remote.kind) == ("local", "remote")
    assert local.report is tiny_loaded.report and remote.report is None  # not connected yet


def test_connect_reads_the_server_and_counts_with_the_local_tokenizer(openai_server):
    backend = backend_for(openai_server)
    settings = GenerationSettings(max_new_tokens=16)
    assert backend.count_window(QUESTION, SummaryState(), settings) is None  # nothing connects just to count
    report = backend.connect()
    window = backend.count_window(QUESTION, SummaryState(), settings)
    assert window == backend.plan(QUESTION, SummaryState(), settings).window and window.prompt_tokens > 5
    assert report.served_models == (openai_server.model,)
    assert report.counting.method == "local tokenizer" and openai_server.model in report.counting.detail
    # transformers serve does not report max_model_len: the local config.json's 8,192 is used
    assert (report.context_tokens, report.context_source) == (8192, "local config.json")
    assert report.summary().startswith("remote · SmolLM2-135M-Instruct.Q4_1.gguf.hf @ 127.0.0.1:")


def test_streams_the_answer_and_counts_the_prompt_as_the_server_does(openai_server):
    backend = backend_for(openai_server)
    events = run(backend, QUESTION, GenerationSettings(max_new_tokens=40, temperature=0.0))
    plan = of(events, ev.TurnPlanned)[0].plan
    (done,) = of(events, ev.TurnCompleted)
    finished = done.finished
    assert finished.text == "The capital of France is Paris."  # greedy, as the local model answers
    assert "".join(e.text for e in of(events, TextDelta)) == finished.text
    assert len(of(events, TextDelta)) > 3  # streamed, not one piece
    assert finished.stop_reason == "eos" and finished.decode_path == "remote"
    # our window count (local tokenizer + template) equals the server's usage.prompt_tokens
    assert plan.window.prompt_tokens == finished.prompt_tokens == 27
    assert finished.new_tokens == 8 and done.record.outcome == "eos"
    assert plan.projection is None and plan.decision.admitted and "local config.json" in plan.decision.reason
    assert not of(events, ev.SummaryStarted)  # nothing evicted


def test_stop_closes_the_stream_and_the_server_stops_generating(openai_server):
    backend = backend_for(openai_server)
    stop = threading.Event()
    story = [Message(Role.USER, "Tell me a very long story about a dragon and a knight.")]

    def press_stop(_event, events):
        if len(of(events, TextDelta)) == 3:
            stop.set()

    events = run(backend, story, GenerationSettings(max_new_tokens=1000, temperature=0.0), stop, press_stop)
    (done,) = of(events, ev.TurnCompleted)
    assert done.finished.stop_reason == "stopped" and 3 <= done.finished.new_tokens < 20
    assert done.finished.text == "".join(e.text for e in of(events, TextDelta))
    # the server generates one request at a time: had it kept writing the 1,000-token story
    # (~100 s at 10 tok/s), the next answer would wait behind it
    started = time.monotonic()
    again = run(backend, QUESTION, GenerationSettings(max_new_tokens=40, temperature=0.0))
    assert of(again, ev.TurnCompleted)[0].finished.text == "The capital of France is Paris."
    assert time.monotonic() - started < 45


def test_evicted_turns_are_summarized_through_the_server(openai_server):
    backend = backend_for(openai_server)
    history = []
    for topic in ["my cat Tom", "my garden in Lyon", "the bakery on Rue Cler"]:
        history += [Message(Role.USER, f"Let me tell you about {topic}. " + "It is lovely. " * 25),
                    Message(Role.ASSISTANT, f"Thank you for telling me about {topic}. " + "How nice. " * 25)]
    history.append(Message(Role.USER, "What did I tell you about first?"))
    settings = GenerationSettings(max_new_tokens=32, temperature=0.0, context_tokens=512)
    events = run(backend, history, settings)
    plan = of(events, ev.TurnPlanned)[0].plan
    assert plan.window.evicted and plan.window.budget.context_tokens == 512
    assert plan.window.prompt_tokens <= plan.window.limit_tokens
    (started,) = of(events, ev.SummaryStarted)
    # the oldest evicted turns that fit the summary request are folded now, the rest next time
    assert 1 <= started.folded_turns <= len(plan.window.evicted)
    (finished,) = of(events, ev.SummaryFinished)
    state = finished.state
    assert state.folded_through == plan.window.evicted[started.folded_turns - 1].last_position
    assert state.content and 0 < state.tokens <= 64  # the reserve of a 512-token context
    assert not of(events, ev.SummaryFailed)


def test_a_message_longer_than_the_context_is_refused_before_the_server_sees_it(openai_server):
    backend = backend_for(openai_server)
    long = [Message(Role.USER, "word " * 3000)]
    events = run(backend, long, GenerationSettings(max_new_tokens=64, context_tokens=1024))
    (refused,) = of(events, ev.TurnRefused)
    assert refused.decision.cause == "positions" and "shorten it by" in refused.decision.reason
    assert not of(events, TextDelta) and not of(events, ev.TurnCompleted)


def test_wrong_model_name_and_wrong_url_are_one_line_failures(openai_server):
    wrong_model = RemoteBackend(RemoteSettings(openai_server.base_url, "no-such-model"))
    (failed,) = of(run(wrong_model, QUESTION, GenerationSettings()), ev.TurnFailed)
    assert failed.reason == (f"127.0.0.1:{openai_server.port} does not serve 'no-such-model'; it serves "
                             f"{openai_server.model!r}: set that name in Settings")
    wrong_path = RemoteBackend(RemoteSettings(f"http://127.0.0.1:{openai_server.port}/api/v1", openai_server.model))
    (failed,) = of(run(wrong_path, QUESTION, GenerationSettings()), ev.TurnFailed)
    assert failed.reason.startswith(f"HTTP 404 from 127.0.0.1:{openai_server.port}: Not Found — check the URL")


def test_a_url_the_client_cannot_parse_is_a_one_line_failure_not_a_crash():
    """New-user re-trial: "http://[::1:9/v1" in settings.json raised ValueError out of the client's
    constructor at each send, before the check could say why (the error dialog, twice)."""
    for url in ("http://[::1:9/v1", "http://[zz]:8000/v1", "http://999.1.1.1:80/v1"):
        backend = RemoteBackend(RemoteSettings(url, "m"))
        (failed,) = of(run(backend, QUESTION, GenerationSettings()), ev.TurnFailed)
        assert failed.reason == f"the server URL {url!r} is not an http(s) URL such as http://gpu-box:8000/v1"
        backend.close()


def test_the_servers_context_refusal_is_a_clear_error(openai_server):
    """vLLM refuses with HTTP 400 when its own count disagrees with ours; transformers serve
    never refuses, so the refusal comes from a transport that answers as vLLM does."""
    message = "This model's maximum context length is 8192 tokens. However, you requested 8300 tokens."

    def handler(request):
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": openai_server.model, "max_model_len": 8192}]})
        return httpx.Response(400, json={"error": {"message": message, "code": 400}})

    backend = RemoteBackend(RemoteSettings(openai_server.base_url, openai_server.model),
                            transport=httpx.MockTransport(handler))
    events = run(backend, QUESTION, GenerationSettings(max_new_tokens=40))
    assert of(events, ev.TurnPlanned)[0].plan.decision.context_limit == 8192  # server max_model_len
    (failed,) = of(events, ev.TurnFailed)
    assert failed.reason == f"the server refused the prompt as too long for its context (HTTP 400): {message}"
    assert failed.partial == ""


def test_continue_needs_a_server_that_can_continue(openai_server):
    """Continue sends vLLM's continue_final_message; transformers serve rejects unknown fields
    (HTTP 422), which comes back as a reason that names the limitation, the partial answer intact."""
    backend = backend_for(openai_server)
    stopped = [*QUESTION, Message(Role.ASSISTANT, "The capital of")]
    events = list(backend.run_turn(stopped, SummaryState(), GenerationSettings(max_new_tokens=20),
                                   threading.Event(), continue_final=True))
    (failed,) = of(events, ev.TurnFailed)
    assert failed.reason.startswith("this server cannot continue a stopped answer (vLLM can): "
                                    f"127.0.0.1:{openai_server.port} answered HTTP 422: Unexpected fields")
    assert "continue_final_message" in failed.reason and failed.partial == ""
