"""Which engine answers a conversation: the local model (transformers, in this process) or a
remote OpenAI-compatible server (vLLM, `transformers serve`).

Frozen dataclasses passed as a snapshot with every turn, like GenerationSettings. Each
conversation keeps its own choice in the store's `settings_json` under the key "backend"
(a JSON object, so no SQL migration: rows written before it have no key and read as local,
which is what answered them). The API key is never part of these settings: it lives in the OS
keyring or an owner-only file (app.core.secrets), looked up by the server's base URL.
"""

import math
import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any
from urllib.parse import urlsplit

LOCAL, REMOTE = "local", "remote"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")  # RFC 3986's scheme, then "//"
_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~%-]+)(?::\d{1,5})?")  # a URL's host[:port], nothing more
BACKEND_KINDS = (LOCAL, REMOTE)


class BackendSettingsError(ValueError):
    """A remote backend is chosen but its base URL or model name is unusable; one line."""


@dataclass(frozen=True)
class RemoteSettings:
    """An OpenAI-compatible chat-completions server.

    base_url: e.g. "http://gpu-box:8000/v1" ("/v1" is added when missing). model: the name the
    server serves (vLLM: `--served-model-name`, else the path or repo given to `vllm serve`).
    connect_timeout_s: seconds to open a connection. read_timeout_s: seconds to wait for the
    next piece of an answer (a long prefill on a busy server needs a generous value).
    retries: extra attempts after HTTP 429/503 before the stream starts (exponential backoff
    from backoff_s seconds, or the server's Retry-After).
    """

    base_url: str = ""
    model: str = ""
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 120.0
    retries: int = 3
    backoff_s: float = 0.5

    def validated(self) -> "RemoteSettings":
        """Clamp timeouts to 0.5–600 s, retries to 0–10, backoff to 0–30 s; strip whitespace.
        Raises ValueError or TypeError for a value no clamp makes usable: a URL or model name that is
        not text, a boolean or NaN where a number belongs (NaN passed every clamp and reached httpx
        as the timeout), a fraction of a retry."""
        return replace(
            self, base_url=_text(self.base_url), model=_text(self.model),
            connect_timeout_s=_number(self.connect_timeout_s, 0.5, 600.0),
            read_timeout_s=_number(self.read_timeout_s, 0.5, 600.0),
            retries=int(_number(_whole(self.retries), 0, 10)),
            backoff_s=_number(self.backoff_s, 0.0, 30.0),
        )

    def check(self) -> None:
        """Raise BackendSettingsError (one line) when the URL or the model name is unusable. A URL
        with a user name or password before "@" is refused, without repeating it: httpx would send
        it as Basic auth instead of the API key, and the URL is kept in settings.json and the log
        (new-user trial 14: "http://bob:sk-…@host/v1" leaked the key to both, and the server then
        refused the request)."""
        if without_credentials(self.base_url) != self.base_url:  # "bob:pa/ss@host" too: urlsplit ends at "/"
            raise BackendSettingsError(
                "the server URL holds a user name or password before '@': put the key in the API key field")
        try:
            parts = urlsplit(self.base_url)
            port_ok = parts.port is None or parts.port > 0
        except ValueError:  # a port that is no number in 0-65535 ("99999"), a bracket left open
            port_ok = False
        # what httpx refuses later, once a second from the metrics poller (re-trial: "http://[::1]x:80/v1",
        # a tab or a line break in the URL): the host and port as a URL writes them, nothing else
        if (not port_ok or parts.scheme not in ("http", "https") or not parts.hostname
                or not _HOST_PORT.fullmatch(parts.netloc) or any(c.isspace() for c in self.base_url)):
            raise BackendSettingsError(
                f"the server URL {self.base_url or '(empty)'!r} is not an http(s) URL "
                "such as http://gpu-box:8000/v1")
        import httpx  # here: settings are read at start, and the check is asked for only with a remote backend

        try:  # what the client will refuse: an IPv4 address past 255, a control character (a re-trial's fuzzing)
            httpx.URL(self.base_url)
        except (httpx.InvalidURL, ValueError):
            raise BackendSettingsError(f"the server URL {self.base_url!r} is not an http(s) URL such as "
                                       "http://gpu-box:8000/v1") from None
        if not self.model:
            raise BackendSettingsError("no model name is set for the remote server")

    @property
    def display(self) -> str:
        """"model @ host:port" for the status bar (no path, no credentials); an unusable URL as written,
        without them (a port of 99999 raised here, and Headroom ended at every start: new-user trial)."""
        url = without_credentials(self.base_url)
        try:
            parts = urlsplit(url)
            host = parts.hostname or url
            host = f"[{host}]" if parts.hostname and ":" in host else host  # IPv6, as a URL writes it
            host = f"{host}:{parts.port}" if parts.port else host
        except ValueError:
            host = url
        return f"{self.model.rstrip('/').rsplit('/', 1)[-1] or '?'} @ {host}"


@dataclass(frozen=True)
class BackendSettings:
    """kind: "local" (the model opened in this window) or "remote" (`remote` describes it)."""

    kind: str = LOCAL
    remote: RemoteSettings = RemoteSettings()

    @property
    def is_remote(self) -> bool:
        return self.kind == REMOTE

    def validated(self) -> "BackendSettings":
        """An unknown kind falls back to local; the remote part is clamped (see RemoteSettings)."""
        return replace(self, kind=self.kind if self.kind in BACKEND_KINDS else LOCAL,
                       remote=self.remote.validated())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: object) -> "BackendSettings":
        """Read the "backend" object of a settings file or a conversation; anything missing or
        malformed gives its default rather than an error (see `read`)."""
        return cls.read(raw)[0]

    @classmethod
    def read(cls, raw: object) -> tuple["BackendSettings", tuple[str, ...]]:
        """The "backend" object read value by value, and the keys whose values were unusable and gave
        way to their defaults: "kind" (neither "local" nor "remote"), "remote" (not an object),
        "remote.<field>" (see RemoteSettings.validated). The other values are kept: one bad
        "retries" made the whole object local, and the next save wrote the server's URL away. A
        user name or password in the URL is left out (`without_credentials`)."""
        if not isinstance(raw, dict):
            return cls(), ()
        refused = []
        kind = raw.get("kind", LOCAL)
        if kind not in BACKEND_KINDS:
            refused.append("kind")
            kind = LOCAL
        remote_raw = raw.get("remote", {})
        if not isinstance(remote_raw, dict):
            refused.append("remote")
            remote_raw = {}
        kept = {}
        for key in (f.name for f in fields(RemoteSettings)):
            if key in remote_raw:
                try:
                    RemoteSettings(**{key: remote_raw[key]}).validated()
                    kept[key] = remote_raw[key]
                except (TypeError, ValueError, OverflowError):
                    refused.append(f"remote.{key}")
        remote = RemoteSettings(**kept).validated()
        return cls(kind, replace(remote, base_url=without_credentials(remote.base_url))), tuple(refused)


def without_credentials(url: str) -> str:
    """`url` without what stands before its last "@" after the scheme ("http://bob:sk-…@gpu-box:8000/v1"
    → "http://gpu-box:8000/v1"; "bob:pa/ss@gpu-box/v1" → "gpu-box/v1": a password may hold "/", "#"
    or "?", where urlsplit ends the host); any other text as it is. A key written into settings.json's
    URL by hand went on into every conversation's stored settings and its JSON export (new-user
    trial), though the key belongs in the keyring (app.core.secrets). No server's API root holds "@"."""
    scheme = _SCHEME.match(url)
    head, rest = (scheme.group(), url[scheme.end():]) if scheme else ("", url)  # "bob:pa://ss@h": no scheme
    if "@" not in rest:
        return url
    return head + rest.rpartition("@")[2]


def credentials_hidden(url: str) -> str:
    """`url` with what `without_credentials` leaves out shown as "…" ("http://…@gpu-box:8000/v1"): a
    notice or a log line must not repeat the password."""
    kept = without_credentials(url)
    scheme = _SCHEME.match(url)
    return f"{scheme.group()}…@{kept[scheme.end():]}" if scheme else f"…@{kept}"


def _text(value: object) -> str:
    """A URL or model name, stripped; TypeError for anything but text (a number is no server)."""
    if not isinstance(value, str):
        raise TypeError(f"not text: {value!r}")
    return value.strip()


def _number(value: object, low: float, high: float) -> float:
    """`value` (a number or its text) clamped to low–high; ValueError for a boolean or NaN."""
    number = float(value)  # type: ignore[arg-type]
    if isinstance(value, bool) or math.isnan(number):
        raise ValueError(f"not a number: {value!r}")
    return min(max(number, low), high)


def _whole(value: object) -> object:
    """`value` unchanged unless it is a fraction (2.5 retries): ValueError, rather than int()'s truncation."""
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        raise ValueError(f"not a whole number: {value!r}")
    return value


def conversation_settings(generation, backend: BackendSettings) -> dict[str, Any]:
    """What a conversation row stores: the GenerationSettings fields plus "backend"."""
    return {**asdict(generation), "backend": backend.to_json()}
