"""Fit one document into a token budget: whole if it fits, else the best-ranked chunks that fill it.

    fit = fit_document(doc.name, chunks, budget_tokens, query_terms(message, recent), count_tokens)
    fit.mode   # "whole" or "retrieved"
    fit.block  # the text to put before the question (app.core.document_prompt)
    fit.citations

Whole: the document's text (the chunks' own spans, which tile it) rendered by `whole_block`, if
its exact token count is ≤ the budget. Retrieved, into `excerpt_tokens` (≤ the budget): chunks
that share a term with the query are taken in BM25 order (ties in document order), then the
chunks around them, nearest first, each while its tokens plus its citation line still fit. So
a question whose words one chunk holds gets that chunk with its surroundings, not one excerpt
and an empty budget (new-user trial: 1 of 118 excerpts sent with room for dozens). A query
sharing no term takes the chunks from the start ("summarise this"). The chosen ones are printed
in document order by `excerpts_block`, counted exactly, and the last taken (the farthest
context first) are dropped until the count fits. The block is never longer than the limit; with
a limit too small for any chunk the fit is "retrieved" with no chunks and an empty block.
No torch, no Qt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.core.chunking import Chunk
from app.core.document_prompt import Citation, cite, excerpts_block, whole_block
from app.engine.documents.rank import ChunkIndex

WHOLE, RETRIEVED = "whole", "retrieved"


@dataclass(frozen=True)
class DocumentFit:
    """How a document went into a turn. mode: WHOLE or RETRIEVED. chunks: those sent, document
    order (all of them when whole). block: the prompt text ("" when nothing fits). tokens:
    count_tokens(block). whole_tokens: what the whole document's block costs (the "pasting"
    cost). budget_tokens: the budget it was fitted to. scores: BM25 score per chunk id
    (empty when whole)."""

    name: str
    mode: str
    chunks: tuple[Chunk, ...]
    block: str
    tokens: int
    whole_tokens: int
    budget_tokens: int
    total_chunks: int
    scores: dict[int, float]

    @property
    def citations(self) -> tuple[Citation, ...]:
        return tuple(cite(self.name, c) for c in self.chunks)

    @property
    def saved_tokens(self) -> int:
        """Prompt tokens saved versus pasting the whole document."""
        return self.whole_tokens - self.tokens


def fit_document(name: str, chunks: Sequence[Chunk], budget_tokens: int, query: Sequence[str],
                 count_tokens: Callable[[str], int], pages: int = 0, index: ChunkIndex | None = None,
                 whole_tokens: int | None = None, excerpt_tokens: int | None = None) -> DocumentFit:
    """Whole if the whole block is ≤ `budget_tokens`, else the best chunks for `query` (terms from
    app.engine.documents.rank.query_terms) and their surroundings in min(budget_tokens,
    excerpt_tokens) tokens (None: the budget). `index`: the chunks' BM25 index if already built;
    `whole_tokens`: the whole block's count if already known. Calls `count_tokens` on the whole
    block (unless given), on each chunk's citation line and on each block tried. Raises
    ValueError on a negative budget."""
    if budget_tokens < 0:
        raise ValueError(f"negative document budget: {budget_tokens}")
    whole = whole_block(name, "".join(c.own_text for c in chunks), pages)
    if whole_tokens is None or whole_tokens <= budget_tokens:
        whole_tokens = count_tokens(whole)
    if whole_tokens <= budget_tokens:
        return DocumentFit(name, WHOLE, tuple(chunks), whole, whole_tokens, whole_tokens, budget_tokens,
                           len(chunks), {})
    scores = (index or ChunkIndex(chunks)).scores(query)
    by_id = {c.id: s for c, s in zip(chunks, scores, strict=True)}
    hits = sorted((c for c in chunks if by_id[c.id] > 0), key=lambda c: (-by_id[c.id], c.id))
    ranked = hits + _nearest_first(chunks, hits) if hits else list(chunks)
    limit = budget_tokens if excerpt_tokens is None else max(0, min(budget_tokens, excerpt_tokens))
    chosen: list[Chunk] = []
    used = count_tokens(excerpts_block(name, [], len(chunks)))
    for chunk in ranked:
        if used + chunk.tokens > limit:
            continue  # cannot fit even without its citation line: skip counting that line
        cost = chunk.tokens + _citation_tokens(chunk, count_tokens)
        if used + cost <= limit:
            chosen.append(chunk)
            used += cost
    while chosen:
        block = excerpts_block(name, chosen, len(chunks))
        tokens = count_tokens(block)
        if tokens <= limit:
            kept = tuple(sorted(chosen, key=lambda c: c.id))
            return DocumentFit(name, RETRIEVED, kept, block, tokens, whole_tokens, budget_tokens,
                               len(chunks), by_id)
        chosen.pop()  # the last taken: the farthest context, else the lowest-ranked hit
    return DocumentFit(name, RETRIEVED, (), "", 0, whole_tokens, budget_tokens, len(chunks), by_id)


def _nearest_first(chunks: Sequence[Chunk], hits: Sequence[Chunk]) -> list[Chunk]:
    """The chunks that are not `hits`, by their distance (in chunks) to the nearest hit, ties in
    document order: the context of every hit grows one chunk at a time on both sides. O(n log n)."""
    hit_ids = {c.id for c in hits}
    count = len(chunks)
    distance = [count] * count
    for order in (range(count), range(count - 1, -1, -1)):  # the nearest hit before, then after
        last = None
        for i in order:
            if chunks[i].id in hit_ids:
                last = i
            if last is not None:
                distance[i] = min(distance[i], abs(i - last))
    nearest = sorted(range(count), key=lambda i: (distance[i], i))
    return [chunks[i] for i in nearest if chunks[i].id not in hit_ids]


def _citation_tokens(chunk: Chunk, count_tokens: Callable[[str], int]) -> int:
    """Tokens of the "[17] Install > Linux (page 12)" line plus its newline."""
    page = f" (page {chunk.page})" if chunk.page else ""
    return count_tokens(f"[{chunk.id}] {chunk.heading}{page}\n") + 1
