"""How an attached document enters the prompt, and how many tokens it may take there.

The document goes into the user's message, before the question, as one plain-text block that a
small model can follow and a reader can check (the numbers are the chunk ids of
app.core.chunking, so each cited excerpt can be found again):

    Attached document "manual.pdf" (whole, 2 pages):
    <text>

    Attached document "manual.pdf", excerpts 3, 4, 17 of 120 (chosen for this question):
    [3] Install > Linux (page 12)
    <text>
    [17] …

Adjacent excerpts are printed as one run (the later one without its overlap lead-in, which the
earlier one already holds). The budget: a document may use what the prompt budget
(`TokenBudget.prompt_tokens`) leaves after the system prompt, summary and the user's own message,
but at most `DOCUMENT_SHARE` of that budget, so the newest turns of the conversation still fit;
and no more than the KV cache can hold when admission says so (`kv_tokens`). A document too
large to go whole is sent as excerpts, which take the room the window leaves free of turns, at
least EXCERPTS_MIN_TOKENS and at most EXCERPTS_MAX_TOKENS (`excerpt_budget`). Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from app.core.chunking import Chunk
from app.core.history import TokenBudget

# 3/4 of the prompt budget at most: with SmolLM2's 8192-token context, 1024 new tokens and the
# 512-token summary reserve, a document may take 4992 tokens and 1664 stay for the conversation.
DOCUMENT_SHARE = 0.75
# Excerpts of a document too large to go whole (chunks of app.core.chunking's 128 tokens): the
# room the window leaves, so no turn is pushed out for them, within these bounds. At most 2,048
# (~16 excerpts: the best ones and a page or two around them; chat apps' retrieval sends a few
# chunks), because every token is prefilled before the first one of the answer: the default
# model on the shared 2-core CPU took 15 s for 1,319 prompt tokens, 69 s for 3,931 (quadratic
# attention). At least 1,024 (~8 excerpts), older turns leaving the window if they must, so a
# document asked about in a long chat is still read.
EXCERPTS_MAX_TOKENS = 2048
EXCERPTS_MIN_TOKENS = 1024


@dataclass(frozen=True)
class Citation:
    """One excerpt that went into a prompt: `chunk_id` in document `name`, its section and page;
    `start`/`end`: the character span of the chunk's own text in the document; `text`: what the
    prompt held (the overlap lead-in included). `removed`: the user removed the document since,
    so its words (`text`, `heading`) are gone and only where the excerpt was is kept."""

    name: str
    chunk_id: int
    heading: str
    page: int | None
    start: int
    end: int
    text: str = ""
    removed: bool = False

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: object) -> Citation | None:
        """The citation in `raw` (a dict from to_json); None when it is not usable."""
        if not isinstance(raw, dict):
            return None
        try:
            citation = cls(**{k: raw[k] for k in ("name", "chunk_id", "heading", "page", "start", "end", "text",
                                                  "removed") if k in raw})
        except TypeError:
            return None
        numbers_ok = all(isinstance(n, int) and not isinstance(n, bool)
                         for n in (citation.chunk_id, citation.start, citation.end))
        texts_ok = all(isinstance(t, str) for t in (citation.name, citation.heading, citation.text))
        page_ok = citation.page is None or (isinstance(citation.page, int) and not isinstance(citation.page, bool))
        removed_ok = isinstance(citation.removed, bool)
        return citation if numbers_ok and texts_ok and page_ok and removed_ok else None

    def without_text(self) -> Citation:
        """This excerpt once its document was removed: its words (text, section heading) dropped."""
        return replace(self, heading="", text="", removed=True)

    @property
    def label(self) -> str:
        """"manual.pdf #17, Install > Linux, page 12" (parts that are unknown are left out; ", removed
        attachment" once its document was removed)."""
        parts = [f"{self.name} #{self.chunk_id}", self.heading, f"page {self.page}" if self.page else "",
                 "removed attachment" if self.removed else ""]
        return ", ".join(p for p in parts if p)


def without_document(sources: Sequence[Citation], name: str) -> tuple[Citation, ...]:
    """`sources` with the excerpts of document `name` reduced to where they were
    (Citation.without_text), in the same order: what an answer keeps once that file is removed."""
    return tuple(c.without_text() if c.name == name and not c.removed else c for c in sources)


def cite(name: str, chunk: Chunk) -> Citation:
    return Citation(name, chunk.id, chunk.heading, chunk.page, chunk.start, chunk.end, chunk.text)


def whole_block(name: str, text: str, pages: int = 0) -> str:
    """The block for a document sent whole."""
    extent = f", {pages} pages" if pages > 1 else ""
    return f'Attached document "{name}" (whole{extent}):\n{text.strip()}'


def excerpts_block(name: str, chosen: Sequence[Chunk], total_chunks: int) -> str:
    """The block for the `chosen` chunks (any order; printed in document order)."""
    ordered = sorted(chosen, key=lambda c: c.id)
    ids = ", ".join(str(c.id) for c in ordered)
    noun = "excerpt" if len(ordered) == 1 else "excerpts"
    lines = [f'Attached document "{name}", {noun} {ids} of {total_chunks} (chosen for this question):']
    previous: Chunk | None = None
    for chunk in ordered:
        adjacent = previous is not None and previous.id + 1 == chunk.id
        page = f" (page {chunk.page})" if chunk.page else ""
        lines.append(f"[{chunk.id}] {chunk.heading}{page}".rstrip())
        lines.append((chunk.own_text if adjacent else chunk.text).strip())
        previous = chunk
    return "\n".join(lines)


def with_document(message: str, blocks: Sequence[str]) -> str:
    """The user's message with the document blocks before it."""
    if not blocks:
        return message
    return "\n\n".join([*blocks, f"Question: {message}" if message.strip() else ""]).strip()


def document_budget(budget: TokenBudget, base_prompt_tokens: int, *, share: float = DOCUMENT_SHARE,
                    kv_tokens: int | None = None) -> int:
    """Tokens an attached document may add to this turn's prompt (≥ 0).

    `base_prompt_tokens`: the prompt with the system prompt, the summary and the user's message
    but no older turns (as app.core.history.select_window counts it). The document gets
    min(prompt budget − base, share × prompt budget, kv_tokens); `kv_tokens` is the number of
    prompt tokens admission says the KV cache can still take this turn (None: no memory limit,
    e.g. a remote server). Raises ValueError when share is outside (0, 1].
    """
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    room = min(budget.prompt_tokens - base_prompt_tokens, int(budget.prompt_tokens * share))
    if kv_tokens is not None:
        room = min(room, kv_tokens)
    return max(0, room)


def excerpt_budget(document_tokens: int, window_free_tokens: int, *, low: int = EXCERPTS_MIN_TOKENS,
                   high: int = EXCERPTS_MAX_TOKENS) -> int:
    """Tokens the excerpts of a document too large to go whole may take (≥ 0): what the window
    leaves free of turns this turn (`window_free_tokens`: its limit minus its prompt,
    app.core.history.WindowResult) clamped to [low, high], and never more than the document's
    budget (`document_tokens`, from `document_budget`)."""
    return max(0, min(document_tokens, max(low, min(window_free_tokens, high))))
