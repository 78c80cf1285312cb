"""BM25 ranking of a document's chunks against the user's message and recent turns, through
bm25s (MIT; numpy only; Lù 2024, "BM25S: Orders of magnitude faster lexical search via eager
sparse scoring", arXiv:2407.03618). Fully offline: no embedding model.

Terms: lower-cased word runs of letters/digits; identifiers are also split at "_" and camelCase
humps (`max_new_tokens` → max_new_tokens, max, new, tokens) so prose finds code; Hangul, kana and
CJK runs also yield character bigrams, since Korean attaches particles to words ("캐시가",
"캐시를") and whole-word terms would rarely match. English stopwords (bm25s's list) are dropped.
A document with no term left (new-user trial 11: a file holding only "the", or "x") has nothing
to rank: its chunks score 0.0 and go in document order (bm25s cannot index a corpus without a
term: "max() arg is an empty sequence", after a 0/0 average length). A ranking that fails all
the same is logged with its traceback and falls back to document order: one document's
retrieval never fails the turn. No torch, no Qt.
"""

from __future__ import annotations

import functools
import logging
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

log = logging.getLogger(__name__)


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
        self.size = len(chunks)
        corpus = [terms(c.text) for c in chunks]
        self._vocabulary = frozenset(t for doc in corpus for t in doc)
        self._bm25 = _bm25_index(corpus) if self._vocabulary else None  # no term: nothing to rank

    def scores(self, query: Sequence[str]) -> list[float]:
        """BM25 score of each chunk for the query terms, in chunk order; all 0.0 when no query
        term occurs in the document, when it has no term at all or its ranking failed (logged);
        [] for a document without chunks."""
        asked = [t for t in query if t in self._vocabulary]
        if self._bm25 is None or not asked:
            return [0.0] * self.size
        try:
            return [float(s) for s in self._bm25.get_scores(asked)]
        except Exception:  # not expected: the chunks go in document order (module docstring)
            log.warning("BM25 scoring failed; the document's chunks go in document order", exc_info=True)
            return [0.0] * self.size


def _bm25_index(corpus: list[list[str]]):
    """A bm25s.BM25 over `corpus` (terms per chunk, at least one term in all), or None when
    indexing fails (logged with its traceback; the chunks then go in document order)."""
    try:
        import bm25s

        index = bm25s.BM25(k1=K1, b=B)
        index.index(corpus, show_progress=False)
    except Exception:  # not expected: one document's ranking never fails the turn
        log.warning("BM25 indexing failed; the document's chunks go in document order", exc_info=True)
        return None
    return index


def bm25_scores(chunks: Sequence[Chunk], query: Sequence[str]) -> list[float]:
    """BM25 score of each chunk's text (lead-in included) for the query terms, in chunk order
    (a `ChunkIndex` built for this one call)."""
    return ChunkIndex(chunks).scores(query)
