"""Fold evicted turns into the rolling summary, written by the model itself.

The request and the acceptance rule come from app.core.history (`plan_summary`,
`finish_summary`): the summary has a token cap, must shrink the history it replaces, and a
rejected summary is never retried on the same turns (no re-summarize loop).
"""

import threading

from app.core.history import SummaryPlan, SummaryState, SummaryVerdict, finish_summary
from app.engine.generation import ReplyFinished, SamplingParams, stream_chat_reply


def summarize(loaded, plan: SummaryPlan, count_tokens, stop_event: threading.Event,
              prefill_chunk_tokens: int | None = None) -> tuple[SummaryState, SummaryVerdict]:
    """Generate the summary greedily (at most plan.max_new_tokens) and judge it.

    Returns the new SummaryState (the previous text when rejected or cancelled, with
    folded_through advanced) and the verdict. Cancelled by setting `stop_event`: the partial
    text is discarded. Exceptions from generation (e.g. OutOfMemoryError) propagate.
    """
    params = SamplingParams(max_new_tokens=plan.max_new_tokens, temperature=0.0)
    return judge_summary_stream(stream_chat_reply(loaded, list(plan.request), params, stop_event,
                                                  prefill_chunk_tokens=prefill_chunk_tokens),
                                plan, count_tokens)


def judge_summary_stream(events, plan: SummaryPlan, count_tokens) -> tuple[SummaryState, SummaryVerdict]:
    """Consume a reply stream (TextDelta… then one ReplyFinished, from any backend) and judge the
    summary it wrote with `finish_summary`. A "stopped" reply is a cancelled summary: the previous
    state stands. Exceptions from the stream propagate."""
    text = ""
    for event in events:
        if isinstance(event, ReplyFinished):
            if event.stop_reason == "stopped":
                return plan.previous, SummaryVerdict(False, "summary cancelled")
            text = event.text
    return finish_summary(plan, text, count_tokens)
