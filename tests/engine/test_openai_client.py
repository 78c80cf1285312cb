"""The OpenAI-compatible client's protocol edges: retries, refusals, broken streams, /tokenize,
/metrics. Answers are served by httpx.MockTransport with the bodies vLLM really sends (its
protocol.py ErrorResponse / TokenizeResponse, its Prometheus names); the happy path against a
real server is in test_remote_backend.py."""

import json
import threading
import time

import httpx
import pytest

from app.core.backend_settings import RemoteSettings
from app.core.reasoning import ANSWERED, THINKING, SplitReply, split_reasoning
from app.engine.remote.openai_client import OpenAIClient, RemoteError, StreamEnd, api_roots
from app.engine.remote.server_metrics import metrics_from_text, parse_prometheus
from app.engine.remote.tokens import approximate_tokens, choose_counter, server_counter
from tests.helpers.openai_server import free_port

SETTINGS = RemoteSettings("http://gpu-box:8000/v1", "meta-llama/Llama-3.1-8B-Instruct", retries=3, backoff_s=0.01)


def sse(*chunks, done=True) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + (["data: [DONE]\n\n"] if done else [])
    return "".join(lines).encode()


def delta(text=None, finish=None, usage=None):
    chunk = {"choices": [{"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}]}
    return chunk | ({"usage": usage} if usage else {})


def client_for(handler, settings=SETTINGS, key="") -> OpenAIClient:
    return OpenAIClient(settings, key, httpx.MockTransport(handler))


def collect(client, stop=None, **kwargs):
    return list(client.stream_chat([{"role": "user", "content": "hi"}], 16, 0.0, 1.0,
                                   stop or threading.Event(), **kwargs))


def test_urls_with_and_without_v1():
    assert api_roots("http://h:8000/v1/") == ("http://h:8000/v1", "http://h:8000")
    assert api_roots("http://h:8000") == ("http://h:8000/v1", "http://h:8000")


def test_stream_pieces_then_end_with_the_servers_usage():
    seen = {}

    def handler(request):
        seen["body"] = json.loads(request.content)
        seen["auth"] = request.headers.get("authorization")
        return httpx.Response(200, content=sse(delta("Par"), delta("is."), delta(finish="stop"),
                                               {"choices": [], "usage": {"prompt_tokens": 27, "completion_tokens": 3}}))

    items = collect(client_for(handler, key="sk-abc"))
    assert items == ["Par", "is.", StreamEnd("stop", 27, 3)]
    assert seen["body"]["stream"] is True and seen["body"]["max_tokens"] == 16
    assert seen["body"]["stream_options"] == {"include_usage": True}
    assert seen["auth"] == "Bearer sk-abc"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])  # llama.cpp / vLLM / LM Studio; Ollama
def test_a_servers_separate_reasoning_comes_as_think_text_before_the_answer(field):
    def thought(text):
        return {"choices": [{"index": 0, "delta": {field: text, "content": None}, "finish_reason": None}]}

    def handler(_request):
        return httpx.Response(200, content=sse(thought("The user greets"), thought(" me."), delta("Hello!"),
                                               thought("late, after the answer"), delta(finish="stop")))

    items = collect(client_for(handler))
    assert items == ["<think>\n", "The user greets", " me.", "\n</think>\n\n", "Hello!", StreamEnd("stop", None, None)]
    assert split_reasoning("".join(items[:-1])) == SplitReply("The user greets me.", "Hello!", ANSWERED)


def test_a_stream_cut_inside_the_reasoning_leaves_it_open():
    def handler(_request):
        body = {"choices": [{"index": 0, "delta": {"reasoning_content": "Let me"}, "finish_reason": "length"}]}
        return httpx.Response(200, content=sse(body))

    items = collect(client_for(handler))
    assert items == ["<think>\n", "Let me", StreamEnd("length", None, None)]
    assert split_reasoning("".join(items[:-1])).state == THINKING


def test_429_and_503_are_retried_before_the_stream_starts():
    statuses = iter([429, 503])
    calls = []

    def handler(request):
        calls.append(time.monotonic())
        status = next(statuses, 200)
        if status != 200:
            return httpx.Response(status, headers={"Retry-After": "0"}, json={"error": {"message": "busy"}})
        return httpx.Response(200, content=sse(delta("ok", finish="stop")))

    assert collect(client_for(handler)) == ["ok", StreamEnd("stop")]
    assert len(calls) == 3


def test_busy_after_the_last_retry_is_one_line():
    def handler(request):
        return httpx.Response(503, json={"error": {"message": "overloaded"}})

    with pytest.raises(RemoteError) as info:
        collect(client_for(handler, RemoteSettings(SETTINGS.base_url, SETTINGS.model, retries=2, backoff_s=0.0)))
    assert info.value.kind == "busy" and info.value.status == 503
    assert str(info.value) == "gpu-box:8000 is busy (HTTP 503) after 2 retries: try again shortly"


def test_stop_lands_at_once_even_when_pieces_arrive_faster_than_they_are_read():
    def handler(request):  # 200 pieces already buffered: a fast server (vLLM at 100+ tok/s)
        return httpx.Response(200, content=sse(*[delta(f"w{i} ") for i in range(200)], delta(finish="stop")))

    stop, items = threading.Event(), []
    for item in client_for(handler).stream_chat([{"role": "user", "content": "hi"}], 256, 0.0, 1.0, stop):
        items.append(item)
        if len(items) == 2:
            stop.set()
    assert items == ["w0 ", "w1 ", StreamEnd("stopped")]


def test_stop_during_backoff_sends_nothing_more():
    stop, calls = threading.Event(), []

    def handler(request):
        calls.append(1)
        stop.set()  # the user presses Stop while we wait to retry
        return httpx.Response(429, headers={"Retry-After": "5"})

    started = time.monotonic()
    assert collect(client_for(handler), stop) == [StreamEnd("stopped")]
    assert len(calls) == 1 and time.monotonic() - started < 2


def test_context_length_refusal_is_reported_as_such():
    message = ("This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
               "(2036 in the messages, 64 in the completion). Please reduce the length of the messages or completion.")

    def handler(request):  # vLLM's ErrorResponse
        return httpx.Response(400, json={"error": {"message": message, "type": "BadRequestError", "code": 400}})

    with pytest.raises(RemoteError) as info:
        collect(client_for(handler))
    assert info.value.kind == "context_length"
    assert str(info.value) == f"the server refused the prompt as too long for its context (HTTP 400): {message}"


def test_bad_key_and_unknown_path():
    def unauthorized(request):
        return httpx.Response(401, json={"error": "Unauthorized"})

    with pytest.raises(RemoteError, match=r"refused the API key \(HTTP 401\)") as info:
        client_for(unauthorized).list_models()
    assert info.value.kind == "auth"

    def html_404(request):
        return httpx.Response(404, text="<html>Not Found</html>")

    with pytest.raises(RemoteError, match="HTTP 404 from gpu-box:8000") as info:
        client_for(html_404).list_models()
    assert info.value.kind == "not_found"


def test_nothing_listening_is_explained_in_one_line():
    port = free_port()  # bound then released: nothing listens there now
    client = OpenAIClient(RemoteSettings(f"http://127.0.0.1:{port}/v1", "m", connect_timeout_s=2))
    with pytest.raises(RemoteError) as info:
        client.list_models()
    assert info.value.kind == "unreachable"
    assert str(info.value).startswith(f"cannot connect to 127.0.0.1:{port} (")
    assert "\n" not in str(info.value) and str(info.value).endswith("is the server running and the URL right?")


def test_error_inside_the_stream_and_a_stream_cut_short():
    def error_chunk(request):  # transformers serve's _StreamError after the stream started
        return httpx.Response(200, content=sse(delta("par"), {"error": "CUDA error: device-side assert"}))

    with pytest.raises(RemoteError, match="failed mid-answer: CUDA error: device-side assert"):
        collect(client_for(error_chunk))

    def cut(request):  # no finish_reason, no [DONE]
        return httpx.Response(200, content=sse(delta("par"), done=False))

    with pytest.raises(RemoteError, match="closed before the answer ended") as info:
        collect(client_for(cut))
    assert info.value.kind == "lost"  # the answer had begun: the server stopped or the network dropped

    def web_page(request):  # HTTP 200 and a page where the stream should be (trial 14: "could not reach")
        return httpx.Response(200, content=b"<html><body>Welcome to nginx!</body></html>",
                              headers={"content-type": "text/html"})

    with pytest.raises(RemoteError, match="sent no answer stream") as info:
        collect(client_for(web_page))
    assert info.value.kind == "protocol"


def test_models_with_and_without_max_model_len():
    def handler(request):
        return httpx.Response(200, json={"object": "list", "data": [
            {"id": "meta-llama/Llama-3.1-8B-Instruct", "object": "model", "max_model_len": 32768},
            {"id": "other", "object": "model"}]})

    models = client_for(handler).list_models()
    assert [(m.id, m.max_model_len) for m in models] == [("meta-llama/Llama-3.1-8B-Instruct", 32768),
                                                         ("other", None)]


def test_server_tokenize_is_used_when_offered(tmp_path):
    bodies = []

    def handler(request):
        assert request.url.path == "/tokenize"
        body = json.loads(request.content)
        bodies.append(body)
        return httpx.Response(200, json={"count": 10 + len(body["messages"]), "max_model_len": 32768,
                                         "tokens": list(range(10 + len(body["messages"])))})

    count, counting = choose_counter(SETTINGS.model, client_for(handler), search_dir=tmp_path)
    assert counting.method == "server /tokenize"
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert count(messages) == 12 and count(messages) == 12
    assert len(bodies) == 2  # the probe, then one request: the repeat came from the cache
    assert bodies[1]["add_generation_prompt"] is True and bodies[1]["model"] == SETTINGS.model


def test_without_tokenize_or_a_local_folder_the_count_is_an_approximation(tmp_path):
    def handler(request):
        return httpx.Response(404, json={"detail": "Not Found"})

    assert server_counter(client_for(handler)) is None
    count, counting = choose_counter(SETTINGS.model, client_for(handler), search_dir=tmp_path)
    assert counting.method == "approximation" and "characters / 4" in counting.detail
    assert count([{"role": "user", "content": "x" * 400}]) == 125 + 8 + 8


def test_approximation_errs_high_on_the_replay_chat(real_loaded):
    """Against the real SmolLM2 tokenizer and template, on the 40-turn replay chat: the estimate
    is never below the real count (the margin holds for English chat)."""
    from pathlib import Path

    from app.engine.local.chat_format import encode_prompt, render_prompt

    tok, fmt = real_loaded.tokenizer, real_loaded.prompt_format
    lines = (Path(__file__).parents[1] / "helpers" / "replay_40_turns.txt").read_text().splitlines()
    for line in filter(None, lines):
        messages = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": line}]
        real = len(encode_prompt(tok, render_prompt(tok, fmt, messages)))
        assert real <= approximate_tokens(messages) <= 2.5 * real + 40, line


VLLM_METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.375
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.125
vllm:iteration_tokens_total_bucket{le="1.0",model_name="m"} 3.0
"""


def test_vllm_metrics_are_read():
    metrics = metrics_from_text(VLLM_METRICS)
    assert metrics.available and metrics.kv_metric == "vllm:kv_cache_usage_perc"
    assert (metrics.kv_cache_usage, metrics.requests_running, metrics.requests_waiting) == (0.375, 3, 4)
    old = metrics_from_text("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n")  # vLLM before V1
    assert old.kv_cache_usage == 0.5 and old.kv_metric == "vllm:gpu_cache_usage_perc"
    assert old.requests_running is None
    assert parse_prometheus("a 1\nb{x=\"}\"} 2 1700000000\n# c 3\nd NaN\n") == {"a": [1.0], "b": [2.0]}


def test_a_server_without_metrics_says_so():
    assert metrics_from_text(None).reason == ("the server reports no memory figures "
                                              "(it has no /metrics endpoint)")
    other = metrics_from_text("process_cpu_seconds_total 12.5\n")
    assert not other.available and "no KV-cache or queue figures" in other.reason


def test_stop_lands_while_a_server_accepted_but_never_answers():
    """A server that accepts the connection and sends nothing: Stop ends the stream and the
    model listing at once, not after the 120 s read timeout (found by a new-user test)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)  # the kernel accepts; nobody ever reads or answers
    try:
        settings = RemoteSettings(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", "x", retries=0)
        client = OpenAIClient(settings)
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()
        started = time.perf_counter()
        events = list(client.stream_chat([{"role": "user", "content": "hi"}], 8, 0.0, 1.0, stop))
        assert events == [StreamEnd("stopped")] and time.perf_counter() - started < 3
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()
        started = time.perf_counter()
        with pytest.raises(RemoteError) as failure:
            client.list_models(stop)
        assert failure.value.kind == "stopped" and "stopped before 127.0.0.1" in str(failure.value)
        assert time.perf_counter() - started < 3
        client.close()
    finally:
        listener.close()


def test_a_client_neither_sends_nor_names_a_password_in_its_url():
    """The metrics poller makes a client from the settings as they are; a "user:key@" in the URL
    (refused by RemoteSettings.check, trial 14) is dropped from every request and every message."""
    seen = []

    def handler(request):
        seen.append((str(request.url), request.headers.get("authorization")))
        return httpx.Response(401, json={"error": {"message": "bad key"}})

    client = OpenAIClient(RemoteSettings("http://bob:sk-URLSECRET@gpu-box:8000/v1", "m"), "sk-typed",
                          httpx.MockTransport(handler))
    assert client.api_root == "http://gpu-box:8000/v1" and client.host == "gpu-box:8000"
    with pytest.raises(RemoteError) as info:
        client.list_models()
    assert seen == [("http://gpu-box:8000/v1/models", "Bearer sk-typed")]
    assert "URLSECRET" not in str(info.value) and "URLSECRET" not in repr(client)
