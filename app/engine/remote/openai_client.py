"""HTTP client for an OpenAI-compatible server (vLLM, `transformers serve`): model list,
streamed chat completions, vLLM's `/tokenize` and Prometheus `/metrics`. No Qt; blocking httpx,
used from the generation worker's thread (chat) and the server monitor's thread (metrics).

Protocol: https://platform.openai.com/docs/api-reference/chat/create-chat-completion (SSE
`data:` lines, `[DONE]` at the end; `transformers serve` ends without it). vLLM extensions:
`max_model_len` in `/v1/models`, `POST /tokenize` ({"count", "max_model_len", "tokens"}),
`stream_options.include_usage` (docs.vllm.ai, "OpenAI-Compatible Server").

Every failure is a RemoteError whose text is one line for the user. The API key goes out in
the Authorization header only; it is not part of any message, repr or log line.
"""

import functools
import json
import logging
import queue
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from app.core.backend_settings import RemoteSettings, without_credentials
from app.core.reasoning import CLOSE_TAG, OPEN_TAG
from app.engine.remote.errors import (
    RETRY_STATUSES,
    RemoteError,
    retry_delay,
    server_message,
    status_error,
    transport_error,
)

log = logging.getLogger(__name__)

_POLL_S = 0.05  # how often a waiting stream looks at the stop event (Stop lands within this)


@dataclass(frozen=True)
class ServerModel:
    """One entry of `/v1/models`. max_model_len: tokens (vLLM only; None when not given)."""

    id: str
    max_model_len: int | None


@dataclass(frozen=True)
class StreamEnd:
    """The stream ended. finish_reason: the server's ("stop", "length", …) or "stopped" (the user
    pressed Stop and the stream was closed). Token counts come from the server's usage, if sent."""

    finish_reason: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


SAMPLING_DEFAULTS = {"top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
                     "frequency_penalty": 0.0, "seed": None}
"""Sampler fields of GenerationSettings and the value that means "off" (not sent)."""


def sampling_body(settings) -> dict:
    """The chat-completions fields for the samplers beyond temperature and top_p, from a
    GenerationSettings: only those the user turned on, so a plain OpenAI endpoint, which answers
    HTTP 400 to fields it does not know, sees today's request unless asked for more.

    presence_penalty, frequency_penalty, seed: OpenAI's own parameters; top_k, min_p,
    repetition_penalty: vLLM's extra sampling parameters (docs.vllm.ai, "OpenAI-Compatible Server",
    Extra Parameters), also read by `transformers serve` where it supports them."""
    body = {}
    for name, off in SAMPLING_DEFAULTS.items():
        value = getattr(settings, name, off)
        if value != off:
            body[name] = value
    return body


def api_roots(base_url: str) -> tuple[str, str]:
    """(API root ending in /v1, server root) for a URL given with or without /v1, without any user name
    or password before "@" (RemoteSettings.check refuses those; a client made anyway, e.g. the
    metrics poller's, neither sends nor logs them)."""
    url = without_credentials(base_url.strip()).rstrip("/")
    return (url, url[:-3]) if url.endswith("/v1") else (url + "/v1", url)


class OpenAIClient:
    """One server, one connection pool. Not thread-safe: one client per thread."""

    def __init__(self, settings: RemoteSettings, api_key: str = "",
                 transport: httpx.BaseTransport | None = None):
        self.settings = settings
        self.api_root, self.server_root = api_roots(settings.base_url)
        try:
            self.host = urlsplit(self.server_root).netloc or without_credentials(settings.base_url)
        except ValueError:  # "http://[::1:9/v1": RemoteSettings.check says so when the backend connects
            self.host = without_credentials(settings.base_url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s)
        self._http = httpx.Client(headers=headers, timeout=timeout, transport=transport,
                                  follow_redirects=True)

    def __repr__(self) -> str:
        return f"OpenAIClient({self.api_root!r}, model={self.settings.model!r})"

    def close(self) -> None:
        self._http.close()

    # ----- small requests ---------------------------------------------------------------------
    def list_models(self, stop_event: threading.Event | None = None) -> list[ServerModel]:
        """GET /v1/models. Raises RemoteError (unreachable, not an OpenAI API, bad key, …, or
        kind "stopped" when `stop_event` is set before the server answered)."""
        payload = self._json(self._request("GET", f"{self.api_root}/models", stop_event=stop_event))
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise RemoteError(f"{self.api_root}/models did not return a model list: check the URL", "protocol")
        return [ServerModel(str(m.get("id")), m.get("max_model_len") if isinstance(m.get("max_model_len"), int)
                            else None) for m in data if isinstance(m, dict) and m.get("id")]

    def tokenize(self, messages: list[dict]) -> int | None:
        """Prompt tokens for `messages` with the server's own chat template (vLLM `POST /tokenize`,
        generation prompt included); None when the server has no such endpoint (HTTP 404/405).
        Raises RemoteError for any other failure."""
        body = {"model": self.settings.model, "messages": messages, "add_generation_prompt": True}
        response = self._request("POST", f"{self.server_root}/tokenize", json=body, ok=(404, 405))
        if response.status_code in (404, 405):
            return None
        count = self._json(response).get("count")
        return count if isinstance(count, int) else None

    def metrics_text(self) -> str | None:
        """The Prometheus text of GET /metrics, or None when the server does not offer it (HTTP
        404/405). Raises RemoteError when the server cannot be reached or answers an error."""
        response = self._request("GET", f"{self.server_root}/metrics", ok=(404, 405))
        return None if response.status_code in (404, 405) else response.text

    def _request(self, method: str, url: str, ok: tuple[int, ...] = (),
                 stop_event: threading.Event | None = None, **kwargs) -> httpx.Response:
        try:
            response = until_stopped(lambda: self._http.request(method, url, **kwargs), stop_event)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response is None:
            raise RemoteError(f"stopped before {self.host} answered", "stopped")
        if response.status_code >= 400 and response.status_code not in ok:
            raise self._status_error(response.status_code, response.text)
        return response

    def _json(self, response: httpx.Response) -> dict:
        try:
            return response.json()
        except ValueError:
            raise RemoteError(f"{response.request.url} answered with something other than JSON: "
                              "is this an OpenAI-compatible server?", "protocol") from None

    # ----- streaming ----------------------------------------------------------------------------
    def stream_chat(self, messages: list[dict], max_tokens: int, temperature: float, top_p: float,
                    stop_event: threading.Event, continue_final: bool = False,
                    sampling: dict | None = None) -> Iterator[str | StreamEnd]:
        """POST /v1/chat/completions with stream=true; yields text pieces, then one StreamEnd.

        sampling: extra request fields, as `sampling_body` makes them (None or {} = none).

        Retries HTTP 429/503 up to settings.retries times before the stream starts (Retry-After
        or exponential backoff). Setting `stop_event` closes the stream within ~50 ms (the server
        sees the disconnect and stops generating) and ends with StreamEnd("stopped"). Raises
        RemoteError for everything else, including a connection lost mid-answer.
        """
        body = {"model": self.settings.model, "messages": messages, "stream": True,
                "max_tokens": max_tokens, "temperature": temperature, "top_p": top_p,
                "stream_options": {"include_usage": True}} | (sampling or {})
        if continue_final:  # vLLM's extension; a server without it answers 4xx (reported)
            body |= {"continue_final_message": True, "add_generation_prompt": False}
        response = self._open_stream(body, stop_event)
        if response is None:
            yield StreamEnd("stopped")
            return
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(response, lines), name="remote-stream", daemon=True).start()
        complete = False
        try:
            for item in self._read_events(lines, stop_event):
                complete = isinstance(item, StreamEnd) and item.finish_reason != "stopped"
                yield item
        finally:
            if not complete:  # Stop, an error, or a consumer that went away: the server sees it
                _hang_up(response)

    def _open_stream(self, body: dict, stop_event: threading.Event) -> httpx.Response | None:
        url = f"{self.api_root}/chat/completions"
        for attempt in range(self.settings.retries + 1):
            if stop_event.is_set():
                return None
            request = self._http.build_request("POST", url, json=body)
            try:
                response = until_stopped(functools.partial(self._http.send, request, stream=True), stop_event)
            except httpx.HTTPError as exc:
                raise self._transport_error(exc) from None
            if response is None:
                return None
            if response.status_code < 400:
                return response
            text = response.read().decode("utf-8", "replace")
            response.close()
            if response.status_code not in RETRY_STATUSES or attempt == self.settings.retries:
                raise self._status_error(response.status_code, text, attempt)
            delay = retry_delay(response.headers.get("retry-after"), self.settings.backoff_s * 2 ** attempt)
            log.info("%s answered HTTP %d; retry %d/%d in %.1f s", self.host, response.status_code,
                     attempt + 1, self.settings.retries, delay)
            if stop_event.wait(delay):
                return None
        return None  # not reached: the last attempt raised

    def _read_events(self, lines: queue.Queue, stop_event: threading.Event) -> Iterator[str | StreamEnd]:
        finish = None
        usage: dict = {}
        reasoning = _ReasoningText()
        streamed = False  # a "data:" piece came: the answer had begun
        while True:
            if stop_event.is_set():  # checked before every piece: a fast server never leaves the queue empty
                yield StreamEnd("stopped", usage.get("prompt_tokens"), usage.get("completion_tokens"))
                return
            try:
                line = lines.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            if isinstance(line, BaseException):
                raise self._transport_error(line, mid_stream=True)
            if line is _EOF or line.strip() == "data: [DONE]":
                break
            if not line.startswith("data:"):
                continue  # blank separators, ": keep-alive" comments, "event:" lines
            streamed = True
            chunk = _parse_chunk(line[5:].strip(), self.host)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                yield from reasoning.pieces(choice.get("delta") or {})
                finish = choice.get("finish_reason") or finish
        if finish is None and not streamed:  # e.g. a web page (HTTP 200) where the answer's stream should be
            raise RemoteError(f"{self.host} sent no answer stream (no \"data:\" lines): is it an OpenAI-compatible "
                              "server?", "protocol")
        if finish is None:  # the server stopped or restarted, or the network dropped
            raise RemoteError(f"the connection to {self.host} closed before the answer ended", "lost")
        yield StreamEnd(finish, usage.get("prompt_tokens"), usage.get("completion_tokens"))

    # ----- errors ---------------------------------------------------------------------------------
    def _transport_error(self, exc: BaseException, mid_stream: bool = False) -> RemoteError:
        s = self.settings
        return transport_error(exc, self.host, s.base_url, s.connect_timeout_s, s.read_timeout_s, mid_stream)

    def _status_error(self, status: int, text: str, retries: int = 0) -> RemoteError:
        return status_error(status, text, self.host, self.settings.model, retries)


_EOF = object()


class _ReasoningText:
    """A stream's text pieces, a reasoning model's included. Servers send its reasoning apart
    from the answer, in the delta's "reasoning_content" (llama.cpp's server, vLLM, LM Studio) or
    "reasoning" (Ollama, OpenRouter, newer vLLM); it is handed on as "<think>…</think>" before
    the answer, as a local model writes it (app.core.reasoning), so it is shown while it streams
    (a minute of reasoning looked like a stalled server) and left out of later prompts. Left
    unclosed when the stream ends inside it, as a local reply stopped there is."""

    def __init__(self):
        self.inside = False
        self.answered = False

    def pieces(self, delta: dict) -> Iterator[str]:
        thought = next((t for t in (delta.get("reasoning_content"), delta.get("reasoning"))
                        if isinstance(t, str) and t), "")
        if thought and not self.answered:  # reasoning after the answer began has nowhere to go
            if not self.inside:
                self.inside = True
                yield OPEN_TAG + "\n"
            yield thought
        text = delta.get("content")
        if isinstance(text, str) and text:
            if self.inside:
                self.inside = False
                yield "\n" + CLOSE_TAG + "\n\n"
            self.answered = True
            yield text


def until_stopped(call, stop_event: threading.Event | None):
    """``call()`` (a blocking HTTP request), abandoned when ``stop_event`` is set first: returns
    its result, raises its exception, or returns None on Stop. A server that accepted the
    connection but never answers would otherwise hold Stop and window close for the whole read
    timeout (120 s). The request goes on in a daemon thread until it ends; a response that
    arrives after Stop is closed there."""
    if stop_event is None:
        return call()
    outcome: queue.Queue = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            outcome.put(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            outcome.put(exc)

    threading.Thread(target=run, name="remote-request", daemon=True).start()
    while True:
        try:
            result = outcome.get(timeout=_POLL_S)
        except queue.Empty:
            if stop_event.is_set():
                threading.Thread(target=_close_late_answer, args=(outcome,), daemon=True).start()
                return None
            continue
        if isinstance(result, BaseException):
            raise result
        return result


def _close_late_answer(outcome: queue.Queue) -> None:
    result = outcome.get()
    if isinstance(result, httpx.Response):
        result.close()


def _pump(response: httpx.Response, lines: queue.Queue) -> None:
    """Reader thread: lines of the SSE body into `lines`, then _EOF or the exception. The
    response is read and closed in this thread only (httpcore's connection state is not
    thread-safe); the consumer hangs up through the socket instead (`_hang_up`)."""
    try:
        for line in response.iter_lines():
            lines.put(line)
        lines.put(_EOF)
    except Exception as exc:  # noqa: BLE001 - handed to the consumer, which decides
        lines.put(exc)
    finally:
        response.close()


def _hang_up(response: httpx.Response) -> None:
    """End the stream now, from the consumer's thread: shutdown() sends FIN at once and wakes
    the reader blocked in recv() (close() from another thread would do neither until the next
    byte arrives), so the server sees the disconnect and stops generating (vLLM aborts the
    request; transformers serve cancels its streamer). Uses httpcore's "network_stream"
    response extension; a stream already closed is left alone."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed by the reader at the end of the stream


def _parse_chunk(data: str, host: str) -> dict:
    try:
        chunk = json.loads(data)
    except ValueError:
        raise RemoteError(f"{host} sent a stream piece that is not JSON", "protocol") from None
    if not isinstance(chunk, dict):
        raise RemoteError(f"{host} sent an unexpected stream piece", "protocol")
    if chunk.get("error"):  # an error after the stream started (vLLM, transformers serve)
        raise RemoteError(f"{host} failed mid-answer: {server_message(json.dumps(chunk))}", "server")
    return chunk


