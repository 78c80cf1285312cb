"""Loops in generated text: what greedy decoding of a small model falls into.

A summary is written greedily (temperature 0), and a small model then often repeats itself: the
same sentence again and again, or one phrase looping inside a sentence until the token cap (a
trial on SmolLM2-135M-Instruct wrote one sentence three times; the summary was accepted and
offered as three pinned notes). `without_repeats` keeps what was said once: each sentence at its
first occurrence, and the text before a loop of a phrase. Pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# a sentence ends at . ! ? (or their full-width forms) followed by space, or at a line break
_SENTENCES = re.compile(r"[^.!?。！？\n]*(?:[.!?。！？]+|\n+|$)")
LOOP_NGRAM_WORDS = 4
"""Words of the phrase that marks a loop (characters × 2 for text without spaces: CJK, Korean
runs without spaces are rare but happen in summaries)."""
LOOP_REPEAT_FRACTION = 0.8
"""A loop starts at the first phrase already said from which on at least this fraction of the
phrases were said before: a phrase said twice in a text that goes on is not a loop."""


@dataclass(frozen=True)
class Cleaned:
    """text: what was said once; sentences_dropped: repeated sentences left out; loop_cut: the
    characters of a phrase loop cut from the end (0 when none); sentences_kept: the sentences
    said once (before the loop cut)."""

    text: str
    sentences_dropped: int = 0
    loop_cut: int = 0
    sentences_kept: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.sentences_dropped or self.loop_cut)

    def describe(self) -> str:
        """"left out 2 repeated sentences and a loop of 180 characters", or ""."""
        parts = []
        if self.sentences_dropped:
            s = "s" if self.sentences_dropped > 1 else ""
            parts.append(f"{self.sentences_dropped} repeated sentence{s}")
        if self.loop_cut:
            parts.append(f"a loop of {self.loop_cut} characters")
        return "left out " + " and ".join(parts) if parts else ""


def without_repeats(text: str) -> Cleaned:
    """``text`` with each sentence after its first occurrence left out (compared without case,
    spacing or final punctuation), then cut before a phrase loop (`loop_start`); stripped."""
    kept, seen, dropped = [], set(), 0
    for sentence in _SENTENCES.findall(text):
        plain = _plain(sentence)
        if plain and plain in seen:
            dropped += 1
            continue
        seen.add(plain)
        kept.append(sentence)
    deduped = "".join(kept).strip()
    said = len(seen - {""})
    cut = loop_start(deduped)
    if cut is None:
        return Cleaned(deduped, dropped, 0, said)
    return Cleaned(deduped[:cut].rstrip(" ,;:-"), dropped, len(deduped) - cut, said)


def loop_start(text: str) -> int | None:
    """Character index where a phrase loop starts in ``text``, or None: the first phrase (n
    words, or 2n characters in text without spaces) said before from which on at least
    LOOP_REPEAT_FRACTION of the phrases, and at least 2n of them, were said before (a phrase
    said again at the very end is not a loop)."""
    units = [(m.start(), m.group()) for m in re.finditer(r"\S+", text)]
    n = LOOP_NGRAM_WORDS
    if len(units) < 2 * n:  # too few words: a script without spaces, or too short to loop
        units = [(i, ch) for i, ch in enumerate(text) if not ch.isspace()]
        n = 2 * LOOP_NGRAM_WORDS
    words = [u.lower().strip(".,;:!?。、，！？\"'()") for _, u in units]
    keys = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    if len(keys) < 2:
        return None
    seen: set = set()
    repeated = []
    for key in keys:
        repeated.append(key in seen)
        seen.add(key)
    tail_repeats = 0  # repeats among keys[i:], walking back
    start = None
    for i in range(len(keys) - 1, -1, -1):
        tail_repeats += repeated[i]
        tail = len(keys) - i
        if repeated[i] and tail >= 2 * n and tail_repeats >= LOOP_REPEAT_FRACTION * tail:
            start = i
    return None if start is None else units[start][0]


def _plain(sentence: str) -> str:
    return " ".join(sentence.lower().split()).rstrip(".!?。！？ ")
