"""The one call the chat flow makes to send a message with attached documents.

    attachment = prepare_attachment(extract_file(path), count_tokens)       # once, in a worker
    prepared = compose_message(text, [attachment], budget_tokens, count_tokens, recent_turns)
    prepared.text        # what goes into the user message sent to the model
    prepared.citations   # the excerpts it holds (chunk ids, headings, pages), for the transcript

`budget_tokens` comes from app.core.document_prompt.document_budget (prompt budget, history and
what admission lets the KV cache take); `excerpt_tokens` (document_prompt.excerpt_budget) bounds
what the excerpts of a document too large to go whole may take. Several attachments share both:
the smallest are placed first, each given an equal share of what is left; a document that fits
its share goes whole, a larger one is retrieved into its share, and what a document leaves
unused passes on to the next.
Pure functions, no Qt, no torch (BM25 through numpy); nothing here touches the chat or the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.core.chunking import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS, Chunk, chunk_document
from app.core.document_prompt import Citation, whole_block, with_document
from app.engine.documents.fit import WHOLE, DocumentFit, fit_document
from app.engine.documents.rank import ChunkIndex, query_terms
from app.engine.documents.source import ExtractedDocument

CountText = Callable[[str], int]
# Tokens kept back from the budget for the "\n\n" joins and "Question: " around the blocks, and
# for BPE merges across them (counted: the wrapper is 4–6 tokens with SmolLM2's tokenizer).
WRAPPER_TOKENS = 8


@dataclass(frozen=True)
class Attachment:
    """A document ready to be fitted: its chunks (app.core.chunking), page count and BM25 index.
    whole_tokens: tokens of its "whole" block, the cost of pasting it."""

    name: str
    kind: str
    chunks: tuple[Chunk, ...]
    pages: int
    whole_tokens: int
    index: ChunkIndex = field(compare=False, repr=False)


@dataclass(frozen=True)
class PreparedMessage:
    """text: the user message to send (the blocks, then "Question: " + the message). fits: how
    each attachment went in, in the order given. tokens: the blocks' tokens, ≤ the budget."""

    text: str
    fits: tuple[DocumentFit, ...]
    tokens: int
    budget_tokens: int

    @property
    def citations(self) -> tuple[Citation, ...]:
        """Excerpts sent, all attachments; empty for documents sent whole (nothing to point at)."""
        return tuple(c for f in self.fits if f.mode != WHOLE for c in f.citations)

    @property
    def retrieved(self) -> bool:
        return any(f.mode != WHOLE for f in self.fits)


def prepare_attachment(doc: ExtractedDocument, count_tokens: CountText, *,
                       max_tokens: int = DEFAULT_CHUNK_TOKENS,
                       overlap_tokens: int = DEFAULT_OVERLAP_TOKENS) -> Attachment:
    """Chunk an extracted document with the model's token counter and index it for BM25 (about as
    long as tokenizing it twice: see tests/benchmarks/retrieval.py; run it off the UI thread)."""
    chunks = chunk_document(doc.text, count_tokens, max_tokens=max_tokens, overlap_tokens=overlap_tokens,
                            page_starts=doc.page_starts)
    whole = count_tokens(whole_block(doc.name, doc.text, doc.pages))
    return Attachment(doc.name, doc.kind, tuple(chunks), doc.pages, whole, ChunkIndex(chunks))


def compose_message(message: str, attachments: Sequence[Attachment], budget_tokens: int,
                    count_tokens: CountText, recent_turns: Sequence[str] = (),
                    excerpt_tokens: int | None = None) -> PreparedMessage:
    """The message with each attachment whole or retrieved (see the module docstring). The query
    for retrieval is the message (weighted double) plus `recent_turns` (the last few messages'
    text). `excerpt_tokens`: what retrieved excerpts may take, all attachments together (None:
    the budget). Raises ValueError on a negative budget."""
    if budget_tokens < 0:
        raise ValueError(f"negative document budget: {budget_tokens}")
    if not attachments:
        return PreparedMessage(message, (), 0, budget_tokens)
    query = query_terms(message, recent_turns)
    left = max(0, budget_tokens - WRAPPER_TOKENS)
    excerpts_left = left if excerpt_tokens is None else max(0, min(excerpt_tokens, budget_tokens) - WRAPPER_TOKENS)
    order = sorted(range(len(attachments)), key=lambda i: attachments[i].whole_tokens)
    fits: dict[int, DocumentFit] = {}
    for n, i in enumerate(order):
        a = attachments[i]
        share, excerpts = left // (len(order) - n), excerpts_left // (len(order) - n)
        fits[i] = fit_document(a.name, a.chunks, share, query, count_tokens, a.pages, a.index, a.whole_tokens,
                               excerpt_tokens=excerpts)
        left -= fits[i].tokens
        excerpts_left = max(0, excerpts_left - fits[i].tokens)
    ordered = tuple(fits[i] for i in range(len(attachments)))
    text = with_document(message, [f.block for f in ordered if f.block])
    return PreparedMessage(text, ordered, sum(f.tokens for f in ordered), budget_tokens)


def composed_tokens(whole_tokens: Sequence[int], budget_tokens: int, excerpt_tokens: int | None = None) -> int:
    """≈ the tokens `compose_message` gives attachments whose whole blocks take `whole_tokens`,
    without chunking or ranking them: the same order, shares and bounds; one that goes whole
    counts its whole block, one retrieved counts the excerpt share it may fill (its excerpts take
    at most that). For the context meter, before the message is written. Raises ValueError on a
    negative budget."""
    if budget_tokens < 0:
        raise ValueError(f"negative document budget: {budget_tokens}")
    if not whole_tokens:
        return 0
    left = max(0, budget_tokens - WRAPPER_TOKENS)
    excerpts_left = left if excerpt_tokens is None else max(0, min(excerpt_tokens, budget_tokens) - WRAPPER_TOKENS)
    total = 0
    ordered = sorted(whole_tokens)
    for n, whole in enumerate(ordered):
        share, excerpts = left // (len(ordered) - n), excerpts_left // (len(ordered) - n)
        tokens = whole if whole <= share else min(share, excerpts)
        total += tokens
        left -= tokens
        excerpts_left = max(0, excerpts_left - tokens)
    return total


def describe_fit(fit: DocumentFit) -> str:
    """One English line for logs and the status line ("report.pdf: whole file, 812 tokens";
    "manual.pdf: too large for this turn (251,310 tokens): 18 of 1,044 excerpts, 4,960 tokens").
    The window shows its own translated sentence built from the same fields."""
    if fit.mode == WHOLE:
        return f"{fit.name}: whole file, {fit.tokens:,} tokens"
    return (f"{fit.name}: too large for this turn ({fit.whole_tokens:,} tokens): {len(fit.chunks)} of "
            f"{fit.total_chunks:,} excerpts, {fit.tokens:,} tokens")
