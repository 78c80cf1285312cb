"""The remote backend: chat turns answered by an OpenAI-compatible server (vLLM on a GPU box,
`transformers serve`, …) with the same history policy as the local model.

A turn is the same event stream as app.engine.local.turn_runner's (TurnPlanned, TextDelta…,
TurnCompleted / TurnFailed / TurnRefused, then the summary events), so the worker, the
transcript and the store cannot tell the backends apart except by the report that says which
one answered. What differs is below the events: the window is budgeted against the server's
context (vLLM's `max_model_len`), tokens are counted as app.engine.remote.tokens chooses,
there is no memory projection (the server owns its KV cache; its `/metrics` are shown
instead), and a prompt the server still refuses comes back as a one-line error.
"""

import logging
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from app.core.backend_settings import BackendSettingsError, RemoteSettings
from app.core.conversation import Message
from app.core.history import (
    DEFAULT_MODEL_CONTEXT,
    SummaryState,
    TokenBudget,
    next_turn_window,
    select_window,
    summary_reserve,
)
from app.core.settings import GenerationSettings
from app.engine.events import (
    ReplyFinished,
    SummaryFailed,
    TextDelta,
    TurnCompleted,
    TurnEvent,
    TurnFailed,
    TurnPlan,
    TurnPlanned,
    TurnRecord,
    TurnRefused,
    describe_failure,
    window_refusal,
)
from app.engine.memory.admission import AdmissionDecision
from app.engine.remote.errors import RemoteError
from app.engine.remote.openai_client import OpenAIClient, StreamEnd, sampling_body
from app.engine.remote.tokens import TokenCounting, choose_counter
from app.engine.summary_flow import fold_now, judge_summary_stream, summary_events

log = logging.getLogger(__name__)

# finish_reason (OpenAI) → ReplyFinished.stop_reason (ours)
_STOP_REASONS = {"stop": "eos", "length": "length", "stopped": "stopped"}


@dataclass(frozen=True)
class RemoteReport:
    """What answers remote turns, read back from the server (the remote LoadReport).

    name: the served model name. display: "model @ host:port". context_tokens: the model's
    context in tokens and context_source where it came from ("server max_model_len", "local
    config.json" or "not reported: assumed 2,048"). counting: how prompt tokens are counted.
    served_models: the ids the server lists. connect_seconds: time to read all that.
    """

    name: str
    base_url: str
    display: str
    context_tokens: int
    context_source: str
    counting: TokenCounting
    served_models: tuple[str, ...]
    connect_seconds: float

    @property
    def kind(self) -> str:
        return "remote"

    def summary(self) -> str:
        """One line for the status bar."""
        return (f"remote · {self.display} · context {self.context_tokens:,} tokens · "
                f"tokens counted by {self.counting.method}")


class RemoteBackend:
    """Turns through one server and model. Use from one thread at a time (the worker's)."""

    kind = "remote"

    def __init__(self, settings: RemoteSettings, api_key: str = "", transport=None,
                 search_dir: Path | None = None):
        self.settings = settings
        self.client = OpenAIClient(settings, api_key, transport)
        self.report: RemoteReport | None = None
        self._search_dir = search_dir
        self._count = None

    def close(self) -> None:
        self.client.close()

    def connect(self, stop_event: threading.Event | None = None) -> RemoteReport:
        """Read the served models, the context length and a way to count tokens. Raises
        RemoteError (one line) when the server cannot be used, or kind "stopped" on Stop."""
        started = time.perf_counter()
        try:
            self.settings.check()
        except BackendSettingsError as exc:
            raise RemoteError(str(exc), "config") from None
        models = self.client.list_models(stop_event)
        served = next((m for m in models if m.id == self.settings.model), None)
        if served is None and models:
            names = ", ".join(repr(m.id) for m in models[:5])
            raise RemoteError(f"{self.client.host} does not serve {self.settings.model!r}; it serves {names}: "
                              "set that name in Settings", "not_found")
        self._count, counting = choose_counter(self.settings.model, self.client, self._search_dir)
        if served is not None and served.max_model_len:
            context, source = served.max_model_len, "server max_model_len"
        elif counting.model_positions:
            context, source = counting.model_positions, "local config.json"
        else:
            context, source = DEFAULT_MODEL_CONTEXT, f"not reported: assumed {DEFAULT_MODEL_CONTEXT:,}"
        self.report = RemoteReport(self.settings.model, self.settings.base_url, self.settings.display, context,
                                   source, counting, tuple(m.id for m in models), time.perf_counter() - started)
        log.info("remote backend ready: %s (%s; %s)", self.report.summary(), source, counting.detail)
        return self.report

    def count_tokens(self, messages: list[dict]) -> int:
        """Prompt tokens for chat dicts (connect first)."""
        return self._count(messages)

    def run_turn(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
                 stop_event: threading.Event, continue_final: bool = False,
                 override_memory: bool = False, conversation_key: str = "") -> Iterator[TurnEvent]:
        """Plan, stream and summarize one turn on the server; the same events and guarantees as
        TurnRunner.run_turn (never raises; ends with TurnRefused, TurnFailed or TurnCompleted,
        then the summary events). override_memory and conversation_key have no effect: nothing
        is projected or cached here (the server keeps its own cache)."""
        try:
            if self.report is None:
                self.connect(stop_event)
            plan = self.plan(messages, summary, settings, continue_final)
        except (RemoteError, ValueError) as exc:  # unreachable server, nothing left to answer
            if isinstance(exc, ValueError):  # the traceback, should it be another cause (new-user trial 11)
                log.warning("the turn could not be planned", exc_info=True)
            yield TurnFailed(describe_failure(exc) if isinstance(exc, RemoteError) else str(exc), "",
                             TurnRecord(0, 0, 0, None, 0, "failed"))
            return
        yield TurnPlanned(plan)
        if not plan.admitted:
            yield TurnRefused(plan.decision)
            return
        ok = yield from self._generate(plan, settings, stop_event, continue_final)
        if ok:
            yield from summary_events(plan.window, summary, settings, stop_event, self._count,
                                      self.report.counting.system_role, self._write_summary)

    def summarize_now(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
                      stop_event: threading.Event) -> Iterator[TurnEvent]:
        """Fold every turn but the newest `settings.summary_keep_turns` into the summary now, on
        the server (the same events as TurnRunner.summarize_now)."""
        try:
            if self.report is None:
                self.connect(stop_event)
            plan = self.plan(messages, summary, replace(settings, summary_fold_at=0.0))
        except (RemoteError, ValueError) as exc:
            yield SummaryFailed(describe_failure(exc) if isinstance(exc, RemoteError) else str(exc))
            return
        yield from fold_now(summary_events(plan.window, summary, settings, stop_event, self._count,
                                           self.report.counting.system_role, self._write_summary),
                            plan.window, summary, settings)

    def count_window(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings):
        """The window the next turn would keep (TurnRunner.count_window; after an answer with the
        message not written yet counted as an empty one: app.core.history.next_turn_window), against
        the server's context; None before the server was reached (nothing connects just to count) or
        when counting needs the server and it fails (logged). Raises ValueError when there is no turn."""
        if self.report is None:
            return None
        if not messages:
            raise ValueError("no turn to count: an empty chat")
        try:
            return next_turn_window(messages, lambda counted: self.plan(counted, summary, settings).window)
        except RemoteError as exc:
            log.info("cannot count the next prompt: %s", exc)
            return None

    def plan(self, messages: list[Message], summary: SummaryState, settings: GenerationSettings,
             continue_final: bool = False) -> TurnPlan:
        """The window against the server's context (same policy as the local Foresight.plan);
        prompt_ids stay empty (the server tokenizes), projection and sample are None. Raises
        ValueError when there is no turn to answer."""
        model_context = self.report.context_tokens
        setting = settings.context_tokens
        context = min(model_context, setting) if setting > 0 else model_context
        budget = TokenBudget.for_model(model_context, context, settings.max_new_tokens, summary_reserve(context))
        window = select_window(messages, system_prompt=settings.system_prompt, summary=summary, budget=budget,
                               count_tokens=self._count, system_allowed=self.report.counting.system_role,
                               fold_at=settings.summary_fold_at, keep_turns=settings.summary_keep_turns)
        if not window.fits:
            return TurnPlan(window, (), None, window_refusal(window, settings.max_new_tokens), None)
        decision = AdmissionDecision(
            True, "ok", f"fits the server's context: prompt {window.prompt_tokens:,} + max_new_tokens "
            f"{settings.max_new_tokens:,} ≤ {budget.context_tokens:,} tokens ({self.report.context_source}; "
            f"counted by {self.report.counting.method})", context_limit=budget.context_tokens,
            reason_kind="fits_server")
        return TurnPlan(window, (), None, decision, None)

    def _generate(self, plan: TurnPlan, settings: GenerationSettings, stop_event: threading.Event,
                  continue_final: bool):
        partial: list[str] = []
        error = None
        try:
            for event in self.reply_stream(list(plan.window.messages), settings.max_new_tokens,
                                           settings.temperature, settings.top_p, stop_event, continue_final,
                                           sampling_body(settings)):
                if isinstance(event, TextDelta):
                    partial.append(event.text)
                    yield event
                else:
                    yield TurnCompleted(event, TurnRecord(event.prompt_tokens, event.prefill_tokens,
                                                          event.new_tokens, None, 0, event.stop_reason))
        # every failure ends the stream with an event (a stream that hangs when generation dies, transformers #22576)
        except Exception as exc:
            if not isinstance(exc, RemoteError):
                log.error("remote generation failed\n%s", traceback.format_exc())
            elif exc.kind in ("unreachable", "lost"):
                self.report = None  # the server went away: read it again (it may come back changed)
            error = describe_failure(exc)
            if continue_final and getattr(exc, "status", None) in (400, 422) and exc.kind != "context_length":
                error = f"this server cannot continue a stopped answer (vLLM can): {error}"
        if error is None:
            return True
        log.warning("remote reply failed: %s", error)
        yield TurnFailed(error, "".join(partial), TurnRecord(plan.window.prompt_tokens, 0, 0, None, 0, "failed"))
        return False

    def reply_stream(self, messages: list[dict], max_new_tokens: int, temperature: float, top_p: float,
                     stop_event: threading.Event, continue_final: bool = False, sampling: dict | None = None
                     ) -> Iterator[TextDelta | ReplyFinished]:
        """Stream one reply as the local engine does: TextDelta pieces, then one ReplyFinished
        (TTFT and decode tok/s measured here, in seconds; token counts from the server's usage
        when it sends them). Raises RemoteError."""
        started = time.perf_counter()
        first_at = None
        pieces: list[str] = []
        end = StreamEnd("stopped")
        for item in self.client.stream_chat(messages, max_new_tokens, temperature, top_p, stop_event,
                                            continue_final, sampling):
            if isinstance(item, StreamEnd):
                end = item
                break
            first_at = first_at or time.perf_counter()
            pieces.append(item)
            yield TextDelta(item)
        ended = time.perf_counter()
        new_tokens = end.completion_tokens if end.completion_tokens is not None else len(pieces)
        prompt_tokens = end.prompt_tokens if end.prompt_tokens is not None else self._count(messages)
        first = first_at or ended
        yield ReplyFinished(
            text="".join(pieces), stop_reason=_STOP_REASONS.get(end.finish_reason, end.finish_reason),
            prompt_tokens=prompt_tokens, prefill_tokens=prompt_tokens, new_tokens=new_tokens,
            ttft_s=first - started,
            decode_tokens_per_s=(new_tokens - 1) / (ended - first) if new_tokens > 1 and ended > first else 0.0,
            decode_path="remote")

    def _write_summary(self, summary_plan, stop_event: threading.Event):
        """Greedy, at most summary_plan.max_new_tokens, through the same server."""
        stream = self.reply_stream(list(summary_plan.request), summary_plan.max_new_tokens, 0.0, 1.0, stop_event)
        return judge_summary_stream(stream, summary_plan, self._count)
