"""Folding evicted turns into the rolling summary, the same for every backend.

The history policy (app.core.history: `plan_summary`, `finish_summary`) decides what is folded
and whether the summary written is accepted; here it is driven as part of a turn's event stream.
Pure Python: the local and the remote backend pass in how a summary is written.
"""

import logging
import threading
import traceback
from collections.abc import Iterator

from app.core.history import (
    SummaryPlan,
    SummaryState,
    SummaryVerdict,
    WindowResult,
    finish_summary,
    plan_summary,
)
from app.core.reasoning import without_reasoning
from app.core.settings import GenerationSettings
from app.engine.events import (
    ReplyFinished,
    SummaryFailed,
    SummaryFinished,
    SummaryStarted,
    TurnEvent,
    describe_failure,
)

log = logging.getLogger(__name__)


def summary_events(window, summary: SummaryState, settings: GenerationSettings, stop_event: threading.Event,
                   count_tokens, system_allowed: bool, write_summary,
                   after_failure=None) -> Iterator[TurnEvent]:
    """Fold the turns `window` evicted into the summary; shared by every backend, so the history
    policy is the same whichever engine answered.

    write_summary(summary_plan, stop_event) → (SummaryState, SummaryVerdict) generates and judges
    it (app.engine.local.summarize). Yields nothing when there is nothing to fold; one SummaryFinished
    that keeps `summary`, its verdict starting with NO_ROOM, when the context has no room for a
    summary request (the evicted turns just leave: a limit, not a failure); else SummaryStarted
    then SummaryFinished or SummaryFailed (one line; exceptions never escape).
    after_failure(): cleanup after a failed summary (the local backend releases memory)."""
    try:
        summary_plan = plan_summary(window, summary, system_prompt=settings.system_prompt,
                                    count_tokens=count_tokens, system_allowed=system_allowed)
    except ValueError as exc:
        yield SummaryFailed(str(exc))
        return
    if summary_plan is None:
        return
    if isinstance(summary_plan, SummaryVerdict):  # no room for a summary: nothing is written
        yield SummaryFinished(summary, summary_plan)
        return
    yield SummaryStarted(len(summary_plan.folded))
    stop_event.clear()  # Stop on the reply must not cancel the summary queued behind it
    error = None
    try:
        state, verdict = write_summary(summary_plan, stop_event)
    except Exception as exc:  # a failed summary never loses the conversation
        log.error("summary failed\n%s", traceback.format_exc())
        error = describe_failure(exc)
    if error is not None:
        if after_failure is not None:
            after_failure()
        yield SummaryFailed(error)
        return
    yield SummaryFinished(state, verdict)


def judge_summary_stream(events, plan: SummaryPlan, count_tokens) -> tuple[SummaryState, SummaryVerdict]:
    """Consume a reply stream (TextDelta… then one ReplyFinished, from any backend) and judge the
    summary it wrote with `finish_summary`. A "stopped" reply is a cancelled summary: the previous
    state stands. Exceptions from the stream propagate."""
    text = ""
    for event in events:
        if isinstance(event, ReplyFinished):
            if event.stop_reason == "stopped":
                return plan.previous, SummaryVerdict(False, "summary cancelled")
            text = without_reasoning(event.text)  # a reasoning model's summary is its answer
    return finish_summary(plan, text, count_tokens)


def fold_now(events: Iterator[TurnEvent], window: WindowResult, summary: SummaryState,
             settings: GenerationSettings) -> Iterator[TurnEvent]:
    """The summary events of "Summarize now" for its `window` (select_window with fold_at=0);
    when there was nothing to fold, one SummaryFinished that keeps `summary` and says why: only
    the turns kept verbatim, or nothing new, or a newest turn too long for the context (then no
    summary helps: `plan_summary`; it was said as "the last 2 turns stay as they are")."""
    said = False
    for event in events:
        said = True
        yield event
    if said:
        return
    if not window.fits:
        reason = f"nothing to fold: the newest turn alone is {window.over_by} tokens over the context"
    else:
        reason = f"nothing to fold: the last {settings.summary_keep_turns} turns stay as they are"
    yield SummaryFinished(summary, SummaryVerdict(False, reason))
