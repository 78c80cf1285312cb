"""The text of a file attached to a message: what extraction yields (app.engine.documents), what
the store keeps with the message it was sent with (issue 18, item 4), and what a turn fits into
the prompt. Pure data, no Qt, no torch."""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True)
class ExtractedDocument:
    """Text of one attached file.

    name: file name shown in citations. kind: "text", "markdown", "code", "pdf" or "docx".
    text: the extracted text, newlines normalised to "\\n". page_starts: character offset in
    `text` where each page begins (page 1 at index 0); empty for formats without pages.
    size_bytes: the file's size on disk. encoding: the text encoding used ("utf-8", "utf-8-sig",
    "utf-16", …) for text files, None for PDF/DOCX.
    """

    name: str
    kind: str
    text: str
    page_starts: tuple[int, ...] = ()
    size_bytes: int = 0
    encoding: str | None = None

    def page_at(self, offset: int) -> int | None:
        """1-based page holding character `offset`; None for formats without pages."""
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, offset))

    @property
    def pages(self) -> int:
        return len(self.page_starts)
