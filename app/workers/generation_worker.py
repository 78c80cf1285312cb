"""The generation worker: a plain QObject living in its own QThread.

It owns the loaded model and everything that touches it (tokenizer, KV cache, memory
projection); the GUI thread never does. Commands arrive as queued `*_requested` signals and are
served one at a time, so a summary queued behind a chat turn runs after it (one GPU job at a
time). Stop is *not* a queued slot — the worker's event loop is busy while generating — but a
`threading.Event` set directly from the GUI thread and polled before every decode step.
"""

import logging
import threading
import traceback
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot

from app.core.conversation import Message
from app.core.history import SummaryState, plan_summary
from app.core.settings import GenerationSettings
from app.engine.memory_probe import release_memory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnRequest:
    """One chat turn. messages: the whole conversation (copies), oldest first, ending with the
    new user message — or with a partial assistant answer when continue_final (C17).
    override_memory: the user chose "send anyway" after a memory refusal."""

    request_id: int
    messages: tuple[Message, ...]
    summary: SummaryState
    settings: GenerationSettings
    continue_final: bool = False
    override_memory: bool = False


@dataclass(frozen=True)
class TurnRecord:
    """What one turn cost: tokens, projected vs measured peak (bytes), outcome."""

    request_id: int
    prompt_tokens: int
    prefill_tokens: int
    new_tokens: int
    projected_peak: int | None
    measured_peak: int
    outcome: str  # "eos", "length", "stopped", "stop_string", "failed", "oom"


class GenerationWorker(QObject):
    """Runs one GPU job at a time in the worker thread.

    Signals in (queued into the worker thread):
        model_change_requested(object): a LoadedModel to adopt, or None to unload.
        turn_requested(object): a TurnRequest.
    Signals out:
        model_changed(object): the adopted model's LoadReport, or None after unload.
        foresight_changed(object): ForesightSnapshot for the "what if" view (None after unload).
        turn_planned(int, object): request id, TurnPlan (window, projection, decision).
        turn_refused(int, object): request id, AdmissionDecision — the turn did not start.
        token_streamed(int, str): request id, new text (never half a character).
        reply_finished(int, object, object): request id, engine ReplyFinished, TurnRecord.
        generation_failed(int, str, str): request id, one-line reason, partial answer text.
        summary_started(int): request id of the turn whose evicted history is being folded.
        summary_finished(int, object, str): request id, new SummaryState, verdict text.
        summary_failed(int, str): request id, reason.
    """

    model_change_requested = Signal(object)
    turn_requested = Signal(object)

    model_changed = Signal(object)
    foresight_changed = Signal(object)
    turn_planned = Signal(int, object)
    turn_refused = Signal(int, object)
    token_streamed = Signal(int, str)
    reply_finished = Signal(int, object, object)
    generation_failed = Signal(int, str, str)
    summary_started = Signal(int)
    summary_finished = Signal(int, object, str)
    summary_failed = Signal(int, str)

    def __init__(self, probe_factory=None):
        super().__init__()
        self._loaded = None
        self._foresight = None
        self._probe_factory = probe_factory
        self._stop = threading.Event()
        self.model_change_requested.connect(self._on_model_change_requested)
        self.turn_requested.connect(self._on_turn_requested)

    def request_stop(self) -> None:
        """Thread-safe: ends the current reply or summary before its next decode step."""
        self._stop.set()

    # ----- model -------------------------------------------------------------------------------
    @Slot(object)
    def _on_model_change_requested(self, loaded) -> None:
        from app.engine.foresight import Foresight
        from app.engine.memory_probe import pick_probe

        self._loaded = self._foresight = None
        release_memory()  # the old model is gone before the new one is announced (C05)
        self._loaded = loaded
        if loaded is not None:
            probe = self._probe_factory() if self._probe_factory else pick_probe()
            self._foresight = Foresight(loaded, probe)
        self.model_changed.emit(loaded.report if loaded is not None else None)
        self.foresight_changed.emit(self._foresight.snapshot() if self._foresight else None)

    # ----- turns -------------------------------------------------------------------------------
    @Slot(object)
    def _on_turn_requested(self, request: TurnRequest) -> None:
        self._stop.clear()
        if self._loaded is None:
            self.generation_failed.emit(request.request_id, "no model is loaded", "")
            return
        settings = request.settings
        try:
            plan = self._foresight.plan(list(request.messages), request.summary, settings.system_prompt,
                                        settings.max_new_tokens, settings.context_tokens,
                                        request.continue_final)
        except ValueError as exc:  # e.g. nothing left to answer
            self.generation_failed.emit(request.request_id, str(exc), "")
            return
        self.turn_planned.emit(request.request_id, plan)
        memory_override = (request.override_memory and plan.window.fits
                           and plan.decision.cause == "memory")
        if not plan.admitted and not memory_override:
            self.turn_refused.emit(request.request_id, plan.decision)  # nothing ran
            return
        if self._generate(request, plan):
            self._summarize_evicted(request, plan)

    def _generate(self, request: TurnRequest, plan) -> bool:
        from app.engine.generation import ReplyFinished, SamplingParams, TextDelta, stream_reply

        settings, loaded, foresight = request.settings, self._loaded, self._foresight
        params = SamplingParams(settings.max_new_tokens, settings.temperature, settings.top_p)
        partial: list[str] = []
        error = outcome = None
        foresight.begin_measurement()
        try:
            for event in stream_reply(loaded.model, loaded.tokenizer, list(plan.prompt_ids), params,
                                      loaded.stop_ids, self._stop, loaded.prompt_format.stop_strings,
                                      foresight.chunk):
                if isinstance(event, TextDelta):
                    partial.append(event.text)
                    self.token_streamed.emit(request.request_id, event.text)
                elif isinstance(event, ReplyFinished):
                    peak = foresight.end_measurement(plan.projection, event.prefill_tokens, event.new_tokens)
                    record = TurnRecord(request.request_id, event.prompt_tokens, event.prefill_tokens,
                                        event.new_tokens, plan.projection.peak, peak, event.stop_reason)
                    self.reply_finished.emit(request.request_id, event, record)
        except Exception as exc:  # every failure ends the stream with an event (C19)
            # log text, not exc_info: a kept LogRecord would pin the frames and their tensors
            log.error("generation failed\n%s", traceback.format_exc())
            outcome = "oom" if type(exc).__name__ == "OutOfMemoryError" else "failed"
            error = _describe_failure(exc)
        if error is None:
            self.foresight_changed.emit(foresight.snapshot())
            return True
        # Outside the except block: the exception and its frames (which reference inputs,
        # logits and the cache) are already gone, so memory can really be returned (C03).
        release_memory()
        now = foresight.probe.sample().allocated
        if outcome == "oom":
            error += (f"; allocated memory is back to {now / 2**20:,.0f} MiB "
                      f"(post-load baseline {foresight.baseline_allocated / 2**20:,.0f} MiB)")
        self.generation_failed.emit(request.request_id, error, "".join(partial))
        return False

    def _summarize_evicted(self, request: TurnRequest, plan) -> None:
        """Fold turns the window evicted into the rolling summary, after the reply."""
        from app.engine.summarize import summarize

        fmt = self._loaded.prompt_format
        try:
            summary_plan = plan_summary(plan.window, request.summary,
                                        system_prompt=request.settings.system_prompt,
                                        count_tokens=self._foresight.count_tokens,
                                        system_allowed=fmt.system_role)
        except ValueError as exc:
            self.summary_failed.emit(request.request_id, str(exc))
            return
        if summary_plan is None:
            return
        self.summary_started.emit(request.request_id)
        self._stop.clear()
        error = None
        try:
            state, verdict = summarize(self._loaded, summary_plan, self._foresight.count_tokens,
                                       self._stop, self._foresight.chunk)
        except Exception as exc:  # a failed summary never loses the conversation
            log.error("summary failed\n%s", traceback.format_exc())
            error = _describe_failure(exc)
        if error is not None:
            release_memory()
            self.summary_failed.emit(request.request_id, error)
            return
        self.summary_finished.emit(request.request_id, state, verdict.reason)


def _describe_failure(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "OutOfMemoryError":
        return ("the GPU ran out of memory during this reply; the cache and inputs were released — "
                "try a shorter message, a lower max_new_tokens or a new chat")
    lines = str(exc).strip().splitlines()
    return f"{name}: {lines[0]}" if lines else name

