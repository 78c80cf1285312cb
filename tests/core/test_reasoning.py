"""A reply's "<think>…</think>" reasoning told apart from its answer, whole and while it streams."""

import pytest

from app.core.reasoning import (
    ANSWERED,
    NONE,
    THINKING,
    SplitReply,
    copied_text,
    split_reasoning,
    without_reasoning,
)

QWEN3 = "<think>\nThe user asks for the capital of France. That is Paris.\n</think>\n\nThe capital of France is Paris."
# as stored: the "<think>\n" its chat template opened (PromptFormat.reasoning_opening), then the reply
R1_DISTILL = "<think>\nOkay, the capital of France… it is Paris.\n</think>\n\nThe capital of France is **Paris**."


@pytest.mark.parametrize(("text", "split"), [
    (QWEN3, SplitReply("The user asks for the capital of France. That is Paris.",
                       "The capital of France is Paris.", ANSWERED)),
    (R1_DISTILL, SplitReply("Okay, the capital of France… it is Paris.", "The capital of France is **Paris**.",
                            ANSWERED)),
    ("\n\n  <think>hmm</think>Paris.", SplitReply("hmm", "Paris.", ANSWERED)),  # leading whitespace
    ("<think>\n\n</think>\n\nParis.", SplitReply("", "Paris.", ANSWERED)),  # an empty block (thinking off)
    ("<think>\nLet me count: 1, 2", SplitReply("Let me count: 1, 2", "", THINKING)),  # stopped while reasoning
    ("<think>a</think>b</think>c", SplitReply("a", "b</think>c", ANSWERED)),  # the first close ends it
])
def test_reasoning_and_answer_are_told_apart(text, split):
    assert split_reasoning(text) == split


@pytest.mark.parametrize("text", [
    "The capital of France is Paris.",
    "  indented code first\n\nthen prose ",  # no reasoning: the text exactly as written
    "Wrap it like <think>this</think> in your prompt.",  # tags named after text of its own
    "Use <think> to open a block, and </think> to close it.",
    "Close the block with </think> when you are done.",  # a close tag alone is text too
    R1_DISTILL.removeprefix("<think>\n"),  # no opening: whatever came before, it is all answer
    "",
    "<",  # a final reply of "<" is an answer, not half a tag
    "<thi",
])
def test_a_reply_without_reasoning_is_the_answer_unchanged(text):
    assert split_reasoning(text) == SplitReply("", text, NONE)
    assert without_reasoning(text) == text


def test_without_reasoning_is_the_answer_alone():
    assert without_reasoning(QWEN3) == "The capital of France is Paris."
    assert without_reasoning(R1_DISTILL) == "The capital of France is **Paris**."
    assert without_reasoning("<think>\nLet me count: 1, 2") == ""  # stopped inside it: no answer to send


@pytest.mark.parametrize("reply", [QWEN3, "  " + QWEN3, "<think>a < b</think>\n\n<b> is bold in HTML."])
def test_every_streamed_prefix_shows_no_tag_and_never_takes_back_what_it_showed(reply):
    """Streamed a character at a time, no part of a tag is ever shown, the reasoning is shown while
    it is written, and what is shown only grows (no flicker): each shown reasoning and answer is a
    prefix of the next one's, and of the final split."""
    final = split_reasoning(reply)
    shown = SplitReply("", "", NONE)
    for end in range(len(reply) + 1):
        now = split_reasoning(reply[:end], streaming=True)
        for text in (now.reasoning, now.answer):
            assert "<think>" not in text and "</think>" not in text
            assert not text.endswith(("</", "</t", "</th", "</thi", "</thin", "</think"))
        assert now.reasoning.startswith(shown.reasoning.rstrip()) and now.answer.startswith(shown.answer)
        assert final.reasoning.startswith(now.reasoning) and final.answer.startswith(now.answer)
        assert now.state in (NONE, THINKING) if end < reply.index("</think>") + 8 else now.state == ANSWERED
        shown = now
    assert shown == final


def test_streamed_prefixes_of_a_reasoning_block():
    assert split_reasoning("<th", streaming=True) == SplitReply("", "", NONE)  # not yet shown as answer
    assert split_reasoning("<think>", streaming=True) == SplitReply("", "", THINKING)
    assert split_reasoning("<think>\nIt is Paris.\n</thi", streaming=True) == SplitReply("It is Paris.", "", THINKING)
    assert split_reasoning("<think>\nIt is Paris.\n</think>\n", streaming=True) == SplitReply(
        "It is Paris.", "", ANSWERED)
    assert split_reasoning("<think>It is Paris.</think>\n\nThe cap", streaming=True) == SplitReply(
        "It is Paris.", "The cap", ANSWERED)
    # an answer without reasoning streams exactly as written once it cannot be an opening
    assert split_reasoning("a <", streaming=True) == SplitReply("", "a <", NONE)
    assert split_reasoning("Okay, Paris.\n</thi", streaming=True) == SplitReply("", "Okay, Paris.\n</thi", NONE)
    assert split_reasoning("Okay, Paris.\n</think>", streaming=True) == SplitReply(
        "", "Okay, Paris.\n</think>", NONE)


def test_copy_takes_the_answer_or_else_the_reasoning_without_its_tags():
    assert copied_text(QWEN3) == "The capital of France is Paris."
    assert copied_text("<think>\nLet me count: 1, 2") == "Let me count: 1, 2"  # stopped while it reasoned
    assert copied_text("Plain answer.") == "Plain answer."
    assert copied_text("<think></think>") == "<think></think>"  # nothing else to copy
