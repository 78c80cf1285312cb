"""Facts a new summary proposes as pinned notes (issue 17, item 5): the user accepts or dismisses
each one; nothing is pinned without them.

The proposals are sentences of the summary itself (no second model call: a small local model's
list of "facts" is less faithful than the summary it just wrote, and the sentence is what the
prompt already says). A sentence is offered when it is short enough to pin (≤ MAX_NOTE_CHARS, 3+
words or 8+ characters of a script without spaces) and holds something a later summary may lose:
a number, a name (a capitalised word after the first), or a word of preference or decision. The
best MAX_PROPOSALS are offered in the summary's order, leaving out what the notes already hold,
what the user dismissed and what says nearly the same as a better one (`_alike`: a summary
that circles back restates a fact in other words). Pure Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_PROPOSALS = 3
MAX_NOTE_CHARS = 160
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_LEAD = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+"
                   r"|^(?:The user said|사용자가 한 말|Earlier in this conversation|User|Assistant):\s*", re.IGNORECASE)
_DOUBLED_END = re.compile(r"([?!。？！])[.。]+$")  # "What is 2+2?." from an older extract: a question still
_DECISION = re.compile(r"\b(name|called|prefer|prefers|wants|decided|agreed|always|never|must|deadline|budget|"
                       r"uses|using|lives|works|born|allergic)\b"
                       # Korean has no capitals for names: what a fact says instead (trial 5: a Korean
                       # chat's name, city and plans were never proposed)
                       r"|이름|예산|살아|살고|산다|좋아|싫어|알레르기|마감|결정|항상|절대|채식|친구|동행|여행|호텔|예약",
                       re.IGNORECASE)


def propose_notes(summary: str, notes: str = "", dismissed: Iterable[str] = (),
                  limit: int = MAX_PROPOSALS, offered: Iterable[str] = ()) -> list[str]:
    """Up to `limit` sentences of `summary` worth pinning (see the module docstring), in the
    summary's order; none already in `notes` (case-insensitive) or among `dismissed`, and none
    saying nearly the same as one already `offered` (trial 5: "Jonas Weber will join me; he is
    vegetarian." and "Jonas Weber will join us." side by side, from two summaries)."""
    offered = list(offered)
    held = _plain(notes)
    refused = {_plain(d) for d in dismissed}
    scored = []
    for order, sentence in enumerate(_sentences(summary)):
        plain = _plain(sentence)
        if plain in refused or plain in held or any(plain == _plain(s) for _, _, s in scored):
            continue
        score = _worth(sentence)
        if score > 0:
            scored.append((score, order, sentence))
    best: list[tuple[int, int, str]] = []
    for item in sorted(scored, key=lambda item: (-item[0], item[1])):
        if (len(best) < limit and not any(_alike(item[2], chosen) for _, _, chosen in best)
                and not any(_restates(item[2], earlier) for earlier in offered)):
            best.append(item)
    return [sentence for _, _, sentence in sorted(best, key=lambda item: item[1])]


def _alike(a: str, b: str) -> bool:
    """Nearly the same fact: the words of one hold the other's, or they share 70 % of their
    words (compared without case or punctuation)."""
    words_a, words_b = (set(re.findall(r"\w+", s.lower())) for s in (a, b))
    if not words_a or not words_b:
        return False
    shared = len(words_a & words_b)
    return shared == min(len(words_a), len(words_b)) or shared >= 0.7 * len(words_a | words_b)


def _restates(a: str, b: str) -> bool:
    """`_alike`, or 80 % of the shorter one's words are in the other: a fact offered by an earlier
    summary and told again by a later one with a word changed ("join me" → "join us")."""
    words_a, words_b = (set(re.findall(r"\w+", s.lower())) for s in (a, b))
    shorter = min(len(words_a), len(words_b))
    return _alike(a, b) or (shorter >= 3 and len(words_a & words_b) >= 0.8 * shorter)


def _sentences(summary: str) -> list[str]:
    out = []
    for piece in _SENTENCE_END.split(summary):
        sentence = _DOUBLED_END.sub(r"\1", _LEAD.sub("", piece.strip()).strip())
        words = sentence.split()
        long_enough = len(words) >= 3 or (len(sentence) >= 8 and not sentence.isascii())  # CJK: few spaces
        asked = sentence.endswith(("?", "？"))  # a question is not a fact to keep
        if sentence and len(sentence) <= MAX_NOTE_CHARS and long_enough and not asked:
            out.append(sentence)
    return out


def _worth(sentence: str) -> int:
    """How much a later summary could lose: numbers, names, preferences and decisions."""
    words = sentence.split()
    score = 2 * bool(re.search(r"\d", sentence))
    score += sum(1 for w in words[1:] if w[:1].isupper() and w[:1].isalpha())
    score += 2 * bool(_DECISION.search(sentence))
    return score


def _plain(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!?。")
