"""Failures of a remote OpenAI-compatible server, each as one line for the user.

The server's own words are kept where it gives them: OpenAI and current vLLM answer
{"error": {"message": …}}, older vLLM {"message": …}, FastAPI apps (transformers serve)
{"detail": …}. A context-length refusal (vLLM: HTTP 400 "This model's maximum context length
is … tokens" or "… is longer than the maximum model length …") is recognised and named as such.
"""

import json

import httpx

RETRY_STATUSES = (429, 503)  # busy / overloaded: worth another try before the stream starts
MAX_RETRY_AFTER_S = 30.0
_CONTEXT_WORDS = ("context length", "maximum context", "max_model_len", "model length", "too long")


class RemoteError(Exception):
    """A remote request failed. str(exc) is one line for the user. kind: "config" (URL or model
    name unusable), "unreachable", "lost" (the connection ended after the answer had begun), "timeout",
    "auth", "not_found", "context_length", "busy", "server", "protocol". status: the HTTP status, None
    when there was no HTTP answer."""

    def __init__(self, message: str, kind: str, status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status


def transport_error(exc: BaseException, host: str, base_url: str, connect_timeout_s: float,
                    read_timeout_s: float, mid_stream: bool = False) -> RemoteError:
    """The RemoteError for an httpx transport failure (no HTTP answer, or a stream cut off)."""
    name = type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return RemoteError(f"no answer from {host} within {connect_timeout_s:g} s "
                           "(connect timeout): is the host up and the port open?", "timeout")
    if isinstance(exc, httpx.ReadTimeout):
        return RemoteError(f"{host} sent nothing for {read_timeout_s:g} s (read timeout)", "timeout")
    if isinstance(exc, httpx.ConnectError):
        detail = str(exc).lower()
        if "name or service" in detail or "nodename" in detail or "getaddrinfo" in detail:
            return RemoteError(f"cannot resolve the host in {base_url}: check the URL", "unreachable")
        return RemoteError(f"cannot connect to {host} ({first_line(exc) or name}): is the server "
                           "running and the URL right?", "unreachable")
    if mid_stream or isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return RemoteError(f"the connection to {host} broke mid-answer ({name}): "
                           "the server stopped or the network dropped", "lost")
    return RemoteError(f"request to {host} failed: {name}: {first_line(exc)}", "unreachable")


def status_error(status: int, text: str, host: str, model: str, retries: int = 0) -> RemoteError:
    """The RemoteError for an HTTP error status with body `text` (after `retries` retries)."""
    message = server_message(text)
    lowered = message.lower()
    if status in (400, 413, 422) and any(word in lowered for word in _CONTEXT_WORDS):
        return RemoteError(f"the server refused the prompt as too long for its context "
                           f"(HTTP {status}): {message}", "context_length", status)
    if status in (401, 403):
        return RemoteError(f"{host} refused the API key (HTTP {status}): set the key in Settings", "auth", status)
    if status == 404:
        return RemoteError(f"HTTP 404 from {host}: {message or 'not found'} — check the URL "
                           f"(usually …/v1) and the model name {model!r}", "not_found", status)
    if status in RETRY_STATUSES:
        return RemoteError(f"{host} is busy (HTTP {status}) after {retries} "
                           f"retr{'y' if retries == 1 else 'ies'}: try again shortly", "busy", status)
    return RemoteError(f"{host} answered HTTP {status}: {message or 'no detail'}", "server", status)


def server_message(text: str) -> str:
    """The human part of an error body: OpenAI {"error": {"message"}}, vLLM's older
    {"message"}, FastAPI's {"detail"}, or the first line of plain text (≤ 300 characters)."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        for value in ((error or {}).get("message") if isinstance(error, dict) else error,
                      body.get("message"), body.get("detail")):
            if value:
                return first_line(value)[:300]
    return first_line(text)[:300]


def first_line(value: object) -> str:
    lines = str(value).strip().splitlines()
    return lines[0] if lines else ""


def retry_delay(retry_after: str | None, backoff: float) -> float:
    """Seconds to wait: the server's Retry-After (seconds form, capped) or the backoff."""
    try:
        return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER_S) if retry_after else backoff
    except ValueError:  # the HTTP-date form: use our own backoff
        return backoff
