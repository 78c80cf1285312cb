"""The backend protocol: what the generation worker needs from whatever answers a turn.

Two implementations:

- local: app.engine.local.turn_runner.TurnRunner — the model opened in this process (transformers),
  with memory projection and admission on this machine's device;
- remote: app.engine.remote.backend.RemoteBackend — an OpenAI-compatible server (vLLM), with
  the server's context as the budget and its `/metrics` as the memory view.

Both yield the same TurnEvent stream and apply the same history policy (token-budget window,
rolling summary of evicted turns through the same backend), so stop, persistence and the
transcript behave the same whichever answered. The worker picks one per request from the
request's BackendSettings snapshot.
"""

import threading
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from app.core.backend_settings import BackendSettings
from app.core.conversation import Message
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine.events import TurnEvent


@runtime_checkable
class Backend(Protocol):
    """kind: "local" or "remote". report: what answers (a LoadReport or a RemoteReport; both
    have `summary()` for the status bar; None for a remote backend not yet connected)."""

    kind: str

    @property
    def report(self): ...

    def run_turn(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
                 stop_event: threading.Event, continue_final: bool = False,
                 override_memory: bool = False, conversation_key: str = "") -> Iterator[TurnEvent]:
        """Plan, admit, stream and summarize one turn; never raises for a failed generation.
        conversation_key: which conversation's kept state to use ("" = none in particular)."""
        ...

    def summarize_now(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
                      stop_event: threading.Event) -> Iterator[TurnEvent]:
        """Fold all but the newest settings.summary_keep_turns turns into the summary now: the
        summary events only (SummaryStarted, then SummaryFinished or SummaryFailed); never raises."""
        ...

    def count_window(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings):
        """The WindowResult the next turn's prompt would keep of `messages` (None where it cannot
        be counted yet); nothing runs. Raises ValueError when there is no turn."""
        ...


class RemoteBackends:
    """The worker's remote backends, one per server settings (+ key) seen; a change of URL,
    model or key makes a new one and closes the old. Use from the worker thread only."""

    def __init__(self, api_key_lookup, transport=None, search_dir=None):
        """api_key_lookup(base_url) → key or "" (app.core.secrets.load_api_key)."""
        self._lookup = api_key_lookup
        self._transport = transport
        self._search_dir = search_dir
        self._key = None
        self._backend = None

    def get(self, settings: BackendSettings):
        """The RemoteBackend for `settings.remote` (not yet connected when new)."""
        from app.engine.remote.backend import RemoteBackend

        remote = settings.remote
        api_key = self._lookup(remote.base_url) if remote.base_url else ""
        key = (remote, hash(api_key))  # the key itself is not kept here
        if self._backend is None or key != self._key:
            self.close()
            self._backend = RemoteBackend(remote, api_key, self._transport, self._search_dir)
            self._key = key
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
        self._backend = self._key = None
