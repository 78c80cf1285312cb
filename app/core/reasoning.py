"""The reasoning a model writes before its answer, as `<think>…</think>` (DeepSeek-R1 and its
distills, Qwen3, QwQ, Phi-4-reasoning, …), told apart from the answer.

A reply has reasoning when it begins with "<think>" (after any whitespace): "<think>\nLet me
see…\n</think>\n\nParis." Where the chat template itself opens the block at the end of the
generation prompt (DeepSeek-R1 distills' and QwQ's templates end with "<think>\n"), the engine
stores the reply with that opening in front (PromptFormat.reasoning_opening), so it reads the
same. Tags anywhere else are the answer's own text ("close the block with </think>").

The stored message keeps the whole text; the transcript shows the reasoning folded above the
answer, and later prompts leave it out (as Qwen3's and DeepSeek-R1's own chat templates do).
"""

from typing import NamedTuple

OPEN_TAG, CLOSE_TAG = "<think>", "</think>"

NONE = "none"          # no reasoning: the whole text is the answer
THINKING = "thinking"  # inside an unterminated <think> block: no answer yet
ANSWERED = "answered"  # the reasoning ended with </think>; what follows is the answer


class SplitReply(NamedTuple):
    """A reply's text cut in two: `reasoning` (stripped, "" when none), `answer` (leading
    whitespace removed after a reasoning block; the text unchanged when there is none) and
    `state`: NONE, THINKING or ANSWERED."""

    reasoning: str
    answer: str
    state: str


def split_reasoning(text: str, streaming: bool = False) -> SplitReply:
    """`text` (a reply, whole or as streamed so far) as reasoning and answer.

    streaming=True: `text` may end in the middle of a tag, so a reply of only "<th" (perhaps an
    opening) and a reasoning that ends in "</thin" (perhaps its close) are held back, shown
    neither as answer nor as reasoning; the next piece decides. With streaming=False the text is
    final and nothing is held back.
    """
    lead = text.lstrip()
    if lead.startswith(OPEN_TAG):
        inside = lead[len(OPEN_TAG):]
        end = inside.find(CLOSE_TAG)
        if end < 0:
            shown = _held_back(inside, CLOSE_TAG) if streaming else inside
            return SplitReply(shown.strip(), "", THINKING)
        return SplitReply(inside[:end].strip(), inside[end + len(CLOSE_TAG):].lstrip(), ANSWERED)
    if streaming and OPEN_TAG.startswith(lead):
        return SplitReply("", "", NONE)  # "", "  ", "<thi": perhaps a block opening, perhaps an answer
    return SplitReply("", text, NONE)


def without_reasoning(text: str) -> str:
    """What of a (final) reply goes into a later prompt, a copy or a note: the answer alone; ""
    for a reply stopped inside its reasoning; `text` unchanged when it has no reasoning."""
    return split_reasoning(text).answer


def copied_text(text: str) -> str:
    """What Copy puts on the clipboard for a (final) reply: its answer; its reasoning, without the
    tags, when there is no answer yet (a reply stopped while it reasoned); `text` when both are
    empty (new-user trial 13: Copy last answer gave the reasoning and its raw "<think>" tags)."""
    reasoning, answer, _state = split_reasoning(text)
    return answer or reasoning or text


def _held_back(text: str, tag: str) -> str:
    """`text` without an end that is the start of `tag` ("…</thi" → "…"), which the next
    streamed piece may complete."""
    for length in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:length]):
            return text[:-length]
    return text
