"""BM25 ranking of a document's chunks against the user's message and recent turns, through
bm25s (MIT; numpy only; Lù 2024, "BM25S: Orders of magnitude faster lexical search via eager
sparse scoring", arXiv:2407.03618). Fully offline: no embedding model.

Terms: lower-cased word runs of letters/digits; identifiers are also split at "_" and camelCase
humps (`max_new_tokens` → max_new_tokens, max, new, tokens) so prose finds code; Hangul, kana and
CJK runs also yield character bigrams, since Korean attaches particles to words ("캐시가",
"캐시를") and whole-word terms would rarely match. English stopwords (bm25s's list) are dropped.
No torch, no Qt.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from app.core.chunking import Chunk

# BM25 parameters: Lucene's defaults k1=1.2, b=0.75 (Robertson & Zaragoza 2009 give 1.2–2.0).
K1, B = 1.2, 0.75
# Recent turns count for less than the message itself: their terms are given this weight by
# being repeated less (the message's terms are listed `MESSAGE_WEIGHT` times).
MESSAGE_WEIGHT = 2

_WORD = re.compile(r"\w+", re.UNICODE)
_HUMP = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_CJK = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u9fff\uac00-\ud7af]+")


@functools.cache
def _stopwords() -> frozenset[str]:
    """bm25s's English list, loaded on first use (importing bm25s takes numpy: ~0.3 s)."""
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def terms(text: str) -> list[str]:
    """Index terms of `text`, in order, with repeats (see the module docstring)."""
    out: list[str] = []
    stop = _stopwords()
    for word in _WORD.findall(text):
        lower = word.lower()
        if _CJK.search(word):
            for run in _CJK.findall(word):
                out.extend(run[i:i + 2] for i in range(max(1, len(run) - 1)))
            if len(word) > 1:
                out.append(lower)
            continue
        if lower in stop or (len(lower) < 2 and not lower.isdigit()):
            continue
        out.append(lower)
        parts = [p.lower() for p in _HUMP.findall(word)] if ("_" in word or not word.islower()) else []
        if len(parts) > 1:
            out.extend(p for p in parts if p not in stop and len(p) > 1)
    return out


def query_terms(message: str, recent_turns: Sequence[str] = ()) -> list[str]:
    """Terms of the message (weighted `MESSAGE_WEIGHT`) and of the recent turns (weight 1)."""
    recent = [t for turn in recent_turns for t in terms(turn)]
    return terms(message) * MESSAGE_WEIGHT + recent


class ChunkIndex:
    """A BM25 index over one document's chunks, built once (when the file is attached) and
    asked once per message. Building runs `terms` over the whole text; asking is a sparse sum."""

    def __init__(self, chunks: Sequence[Chunk]):
        import bm25s

        self.size = len(chunks)
        corpus = [terms(c.text) for c in chunks]
        self._vocabulary = frozenset(t for doc in corpus for t in doc)
        self._bm25 = bm25s.BM25(k1=K1, b=B) if chunks else None
        if self._bm25 is not None:
            self._bm25.index(corpus, show_progress=False)

    def scores(self, query: Sequence[str]) -> list[float]:
        """BM25 score of each chunk for the query terms, in chunk order; all 0.0 when no query
        term occurs in the document; [] for a document without chunks."""
        asked = [t for t in query if t in self._vocabulary]
        if self._bm25 is None or not asked:
            return [0.0] * self.size
        return [float(s) for s in self._bm25.get_scores(asked)]


def bm25_scores(chunks: Sequence[Chunk], query: Sequence[str]) -> list[float]:
    """BM25 score of each chunk's text (lead-in included) for the query terms, in chunk order
    (a `ChunkIndex` built for this one call)."""
    return ChunkIndex(chunks).scores(query)
