"""The turn vocabulary: what a backend yields for one chat turn, whichever engine answers.

A turn is DocumentsFitted (when documents are attached), TurnPlanned, then TurnRefused, or
PrefillProgress… (a long prompt only), TextDelta… and TurnCompleted or TurnFailed, then the
summary events when turns were evicted (app.engine.summary_flow). The local backend
(app.engine.local.turn_runner), the remote one (app.engine.remote.backend), the generation
worker, the headless runs and the window all speak it. Pure Python: no torch, no Qt.
"""

from dataclasses import dataclass

from app.core.history import SummaryState, SummaryVerdict, WindowResult
from app.core.plural import counted
from app.engine.memory.admission import AdmissionDecision, TurnProjection
from app.engine.memory.sample import MemorySample


@dataclass(frozen=True)
class TextDelta:
    """New text to append to the reply; never ends inside a multi-byte character."""

    text: str


@dataclass(frozen=True)
class PrefillProgress:
    """The prompt is being read: `done_tokens` of the `total_tokens` this turn prefills (those
    after the prefix already in the KV cache) have gone through the model. Yielded between prefill
    chunks once the prefill has run long enough to matter (app.engine.local.generation
    .PREFILL_PROGRESS_AFTER_S), after each chunk but the last; the first TextDelta (or
    ReplyFinished) follows the last chunk. On CUDA a chunk counts once its kernels are queued
    (no sync just to report progress)."""

    done_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class ReplyFinished:
    """The reply ended. stop_reason: "eos" (end-of-turn token), "stop_string", "length"
    (max_new_tokens), or "stopped" (the user pressed Stop).

    prefill_tokens: prompt tokens run through the model this turn (those after the prefix
    already in the session's KV cache). reused_tokens: prompt tokens served from that cache.
    cached_tokens: tokens the session's cache holds after the turn. decode_path: "compiled"
    (CUDA graph), "eager-static" (preallocated cache) or "eager" (dynamic cache), followed by
    the reason in brackets when the step is compiled for another KV format only
    ("eager-static (8-bit KV step not compiled yet)").
    ttft_s: seconds from the start of the turn to the first new token.
    decode_tokens_per_s: new tokens after the first over the seconds they took.
    """

    text: str
    stop_reason: str
    prompt_tokens: int
    prefill_tokens: int
    new_tokens: int
    ttft_s: float
    decode_tokens_per_s: float
    reused_tokens: int = 0
    cached_tokens: int = 0
    decode_path: str = "eager"


@dataclass(frozen=True)
class TurnPlan:
    """A turn, decided before it starts.

    window: the history that fits (or fits=False: the newest message alone is too long).
    prompt_ids: token ids to prefill (empty when the window does not fit). decision: admission
    (memory and positions, prompt + max_new_tokens beyond the model's positions, transformers #530). projection: the
    projected peak (None when the window does not fit). capacity_tokens: slots of the static KV
    cache the turn runs with (CUDA), None for a dynamic cache or a refused window. kv_bits: the
    KV cache precision the turn runs with (16 = the compute dtype, 8 = 8-bit codes with scales,
    issue 16) — the chat's choice, or what "auto" picked.
    """

    window: WindowResult
    prompt_ids: tuple[int, ...]
    projection: TurnProjection | None
    decision: AdmissionDecision
    sample: MemorySample
    capacity_tokens: int | None = None
    kv_bits: int = 16

    @property
    def admitted(self) -> bool:
        return self.window.fits and self.decision.admitted


def window_refusal(window: WindowResult, max_new_tokens: int) -> AdmissionDecision:
    """The refusal for a window that does not fit (the newest turn alone is too long with the
    system message): only a shorter message, system prompt or pinned notes, or a smaller
    max_new_tokens helps, older turns are gone already. Shared by the local and the remote
    backend, so both explain it with the same numbers (tokens). When the system message is what
    is too long (`_system_is_the_cause`), reason_kind "system" (the system prompt) or "notes"
    (the pinned notes, when they are most of it) names it, with facts "system" and "notes" (its
    share and the notes' of it), instead of asking to shorten the message (new-user trial: "hi"
    was told to shorten by 16,848 tokens under a 24,000-token system prompt) — unless shortening
    them cannot make it fit and shortening the message can (the template's frame stays: a 20-token
    system message beside an 11-token question, 22 left, is 9 over, and only the question can lose
    9). Otherwise reason_kind "message", with facts "shorten_by" (0 when no shorter message fits:
    what an empty one needs, "empty_message", takes the whole room) and "system_too" (then
    shortening the system prompt as well can make it fit)."""
    budget = window.budget
    room = budget.context_tokens - budget.summary_reserve - window.prompt_tokens
    # offer only what can work: a message cannot be shortened by more than it holds, and what an
    # empty one needs stays (new-user trial 11: 20 of the 6 tokens left, told to shorten by 25)
    empty = max(window.empty_message_tokens, window.system_tokens)
    shorten_by = window.over_by if window.over_by < window.prompt_tokens - empty else 0
    if _system_is_the_cause(window):
        decision = _system_refusal(window, max_new_tokens, room)
        if decision.facts["shorten_by"] or not shorten_by:  # else the message is what can be shortened
            return decision
    remedies = [f"shorten it by {counted(shorten_by, 'token')}"] if shorten_by else []
    if room >= 1:
        remedies.append(f"lower max_new_tokens to {room:,}")
    system_too = not shorten_by and _system_and_message_can_fit(window)
    if shorten_by or not empty:
        advice = " or ".join(remedies) or "use a larger context or a smaller max_new_tokens"
    else:
        remedies = ["shorten the system prompt as well", *remedies] if system_too else remedies
        advice = (f"even an empty message needs {empty:,}, so shortening it cannot make it fit: "
                  f"{' or '.join([*remedies, 'use a larger context'])}")
    return AdmissionDecision(
        False, "positions",
        f"the new message needs {counted(window.prompt_tokens, 'prompt token')}, but the "
        f"context of {counted(budget.context_tokens, 'token')} minus max_new_tokens {max_new_tokens:,} and "
        f"the summary reserve {budget.summary_reserve:,} leaves {max(window.limit_tokens, 0):,}: "
        f"{advice}",
        context_limit=budget.context_tokens, max_new_tokens_fit=room if room >= 1 else None,
        remedies=(f"lower max_new_tokens to {room:,}",) if room >= 1 else (), reason_kind="message",
        facts=dict(message=window.prompt_tokens, context=budget.context_tokens, max_new_tokens=max_new_tokens,
                   summary_reserve=budget.summary_reserve, room=max(window.limit_tokens, 0),
                   shorten_by=shorten_by, empty_message=empty, system_too=system_too))


def _system_and_message_can_fit(window: WindowResult) -> bool:
    """Whether shortening the system prompt (to one character: its template's frame stays, and the
    pinned notes) and the message (to one token) together makes `window` fit: what a refusal can
    offer when neither alone can (shortening the message fails only when the system message alone
    takes the whole room, and then a shorter system prompt alone fails too)."""
    system = window.system_tokens
    if not system:
        return False
    system_cut = max(system - window.notes_tokens - window.frame_tokens, 0)
    return window.over_by <= system_cut + max(window.prompt_tokens - system - 1, 0)


def _system_is_the_cause(window: WindowResult) -> bool:
    """Whether the system message (system prompt, pinned notes) is what makes `window` too long:
    it takes at least as much as the newest turn, which alone would fit the room. A room of
    nothing (max_new_tokens as large as the context) is no system prompt's fault."""
    message = window.prompt_tokens - window.system_tokens
    return window.system_tokens > 0 and 0 < message <= window.limit_tokens and window.system_tokens >= message


def _system_refusal(window: WindowResult, max_new_tokens: int, room: int) -> AdmissionDecision:
    budget, system, notes = window.budget, window.system_tokens, window.notes_tokens
    message, limit = window.prompt_tokens - system, max(window.limit_tokens, 0)
    kind = "notes" if notes * 2 > system else "system"
    # offer only what can work, as for a message: the notes can all go; the system prompt can be cut
    # to one character, never below its template's frame (window.frame_tokens)
    if kind == "notes":
        shorten_by = window.over_by if window.over_by < notes else 0
    else:
        shorten_by = window.over_by if window.over_by <= system - notes - window.frame_tokens else 0
    named = "the pinned notes" if kind == "notes" else "the system prompt"
    takes = (f"the pinned notes take {notes:,} and the system prompt {system - notes:,}" if kind == "notes"
             else f"the system prompt takes {system:,}")
    remedies = [f"shorten {named} by {counted(shorten_by, 'token')}"] if shorten_by else []
    if room >= 1:
        remedies.append(f"lower max_new_tokens to {room:,}")
    if not shorten_by:  # no shorter system prompt fits (trial: 6 tokens, 15 over), nor does removing the notes
        cannot = "shortening the system prompt" if kind == "system" else "removing the pinned notes"
        advice = f"{cannot} cannot make it fit: {' or '.join([*remedies, 'use a larger context'])}"
    else:
        advice = " or ".join(remedies)
    return AdmissionDecision(
        False, "positions",
        f"{takes} of the {counted(limit, 'prompt token')} that the context of "
        f"{counted(budget.context_tokens, 'token')} minus "
        f"max_new_tokens {max_new_tokens:,} and the summary reserve {budget.summary_reserve:,} leaves, and the "
        f"new message needs {message:,} more: {advice}",
        context_limit=budget.context_tokens, max_new_tokens_fit=room if room >= 1 else None,
        remedies=(f"lower max_new_tokens to {room:,}",) if room >= 1 else (), reason_kind=kind,
        facts=dict(system=system, notes=notes, message=message, context=budget.context_tokens,
                   max_new_tokens=max_new_tokens, summary_reserve=budget.summary_reserve, room=limit,
                   shorten_by=shorten_by))


@dataclass(frozen=True)
class TurnPlanned:
    plan: TurnPlan


@dataclass(frozen=True)
class DocumentsFitted:
    """Documents attached to the turn went into its prompt: one DocumentFit each
    (app.engine.documents.fit: mode "whole" or "retrieved", tokens, excerpts). Before TurnPlanned."""

    fits: tuple


@dataclass(frozen=True)
class TurnRefused:
    """The turn did not start; nothing ran on the device."""

    decision: AdmissionDecision


@dataclass(frozen=True)
class TurnRecord:
    """What one turn cost, as the diagnostics report lists it (app.engine.memory.diagnostics).

    Tokens are counts: prompt_tokens every position of the prompt, prefill_tokens those run
    through the model (the rest came from the cache), new_tokens generated. Peaks are bytes (CUDA
    ``max_memory_allocated`` during the turn, peak RSS on CPU), None when not known; a remote
    turn projects none. admitted: admission control let the turn start (False: refused, or sent
    by override after a refusal). outcome: how it ended ("eos", "length", "stopped",
    "stop_string", "failed", "oom", "refused", …).
    """

    prompt_tokens: int
    prefill_tokens: int
    new_tokens: int
    projected_peak: int | None
    measured_peak: int | None
    outcome: str
    admitted: bool = True

    @property
    def error_fraction(self) -> float | None:
        """(projected − measured) / measured; positive = projection too high. None when unknown
        (no projection, or nothing measured)."""
        if self.projected_peak is None or not self.measured_peak:
            return None
        return (self.projected_peak - self.measured_peak) / self.measured_peak


@dataclass(frozen=True)
class TurnCompleted:
    finished: ReplyFinished
    record: TurnRecord


@dataclass(frozen=True)
class TurnFailed:
    """reason: one line for the user. partial: the text streamed before the failure."""

    reason: str
    partial: str
    record: TurnRecord


@dataclass(frozen=True)
class SummaryStarted:
    folded_turns: int


@dataclass(frozen=True)
class SummaryFinished:
    state: SummaryState
    verdict: SummaryVerdict


@dataclass(frozen=True)
class SummaryFailed:
    reason: str


TurnEvent = (TurnPlanned | TurnRefused | PrefillProgress | TextDelta | TurnCompleted | TurnFailed | SummaryStarted
             | SummaryFinished | SummaryFailed)


def describe_failure(exc: BaseException) -> str:
    """One line for the user."""
    name = type(exc).__name__
    # already one line for the user (app.engine.remote.openai_client, app.engine.local.samplers)
    if name in ("RemoteError", "NonFiniteLogits"):
        return str(exc)
    if name == "OutOfMemoryError":
        return ("the GPU ran out of memory during this reply; the cache and inputs were released — "
                "try a shorter message, a lower max_new_tokens or a new chat")
    lines = str(exc).strip().splitlines()
    return f"{name}: {lines[0]}" if lines else name
