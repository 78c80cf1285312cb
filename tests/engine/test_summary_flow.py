"""The summary events of a turn and of "Summarize now" (app.engine.summary_flow), shared by every
backend; the history policy is the real one, counted one token per word (tests/core/test_history.py)."""

import threading

from app.core.conversation import Message, Role
from app.core.history import SummaryState, SummaryVerdict, TokenBudget, select_window
from app.core.settings import GenerationSettings
from app.engine.events import SummaryFinished, SummaryStarted
from app.engine.summary_flow import fold_now, summary_events
from tests.core.test_history import chat, count_words

SETTINGS = GenerationSettings(system_prompt="", summary_keep_turns=2)


def summarize_now(messages, budget):
    """The events "Summarize now" yields for `messages`, as a backend runs it; writes "Folded."."""
    window = select_window(messages, system_prompt="", summary=SummaryState(), budget=budget,
                           count_tokens=count_words, fold_at=0.0, keep_turns=SETTINGS.summary_keep_turns)

    def write(plan, _stop):
        return SummaryState("Folded.", plan.fold_through, 2), SummaryVerdict(True, "history 56 → 2 tokens")

    events = summary_events(window, SummaryState(), SETTINGS, threading.Event(), count_words, True, write)
    return list(fold_now(events, window, SummaryState(), SETTINGS))


def test_summarize_now_folds_all_but_the_turns_kept_verbatim():
    events = summarize_now(chat(*[10] * 8), TokenBudget(300, 50, 30))
    assert events[0] == SummaryStarted(2)
    assert events[1] == SummaryFinished(SummaryState("Folded.", 3, 2), SummaryVerdict(True, "history 56 → 2 tokens"))


def test_summarize_now_says_why_it_folds_nothing():
    kept = summarize_now(chat(*[10] * 4), TokenBudget(300, 50, 30))
    assert kept == [SummaryFinished(SummaryState(), SummaryVerdict(
        False, "nothing to fold: the last 2 turns stay as they are"))]
    # a newest turn too long for the context (the context was lowered): no summary helps, and it was
    # said as "the last 2 turns stay as they are", the reason of another case
    budget = TokenBudget(300, 50, 30)
    messages = [*chat(*[10] * 6), Message(Role.USER, "x " * 400), Message(Role.ASSISTANT, "ok")]
    over_by = select_window(messages, system_prompt="", summary=SummaryState(), budget=budget,
                            count_tokens=count_words).over_by
    assert over_by > 0 and summarize_now(messages, budget) == [SummaryFinished(SummaryState(), SummaryVerdict(
        False, f"nothing to fold: the newest turn alone is {over_by} tokens over the context"))]


def test_no_room_for_a_summary_is_a_finished_verdict_that_keeps_the_summary():
    """A 64-token model's context holds no summary request: one SummaryFinished that keeps the
    summary (no SummaryStarted, no SummaryFailed, nothing written); the turns just leave."""
    previous = SummaryState("old facts", 1, 6)
    messages = chat(3, 3, 3, 3, 3, 3, 3)
    window = select_window(messages, system_prompt="", summary=previous, budget=TokenBudget(40, 5, 5),
                           count_tokens=count_words)
    assert window.fits and window.evicted

    def write(_plan, _stop):
        raise AssertionError("no summary can be written")

    events = list(summary_events(window, previous, SETTINGS, threading.Event(), count_words, True, write))
    assert events == [SummaryFinished(previous, SummaryVerdict(
        False, "no room for a summary: the request takes more than the context of 40 tokens less the summary's "
               "cap of 5"))]
