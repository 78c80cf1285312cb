"""Fold evicted turns into the rolling summary, written by the model itself.

The request and the acceptance rule come from app.core.history (`plan_summary`,
`finish_summary`): the summary has a token cap, must shrink the history it replaces, and a
rejected summary is never retried on the same turns (no re-summarize loop).
"""

import threading

from app.core.history import SummaryPlan, SummaryState, SummaryVerdict
from app.engine.local.generation import SamplingParams, stream_chat_reply
from app.engine.summary_flow import judge_summary_stream


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
