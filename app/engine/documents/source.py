"""What extraction yields, and its one error type.

`ExtractedDocument` (app.core.attached_document, stored with the chat) is the text of an attached
file plus where each page starts, so a chunk can be cited by page. `DocumentError` is the only
exception extraction raises: `kind` is a stable key the window maps to a translated sentence (the
engine has no Qt, so no `tr()` here), `str(error)` is the same sentence in English, one line,
naming the file. No torch, no Qt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.core.attached_document import ExtractedDocument as ExtractedDocument  # what extraction yields

# Called with the fraction done, 0.0 … 1.0, after each page or block; from the extracting thread.
Progress = Callable[[float], None]

# The stable error kinds (the UI's translation keys).
TOO_LARGE = "too-large"
BINARY = "binary"
NOT_UTF8 = "not-utf8"
ENCRYPTED = "encrypted-pdf"
NO_TEXT_LAYER = "no-text-layer"
DAMAGED = "damaged"
EMPTY = "empty"
UNREADABLE = "unreadable"
CANCELLED = "cancelled"
MISNAMED = "misnamed"  # named .pdf or .docx but not that format: detail is the format ("PDF", "DOCX")

SINGLE_BYTE = "single-byte"  # NOT_UTF8's detail for a single-byte code page (Latin-1, Windows-125x, …)
MIXED_UTF8 = "mixed-utf-8"  # NOT_UTF8's detail for UTF-8 text with bytes that are not (damaged, or mixed)


class DocumentError(Exception):
    """A file that cannot be attached. `kind`: one of the constants above; `name`: the file's name;
    `message`: the English reason (logs, the CLI); `detail`: a short fact for the message (an
    encoding guess, a size, a page count), may be ""; `facts`: the numbers and names the window
    needs to say the reason in its own language (app.chat.document_refusal), e.g. TOO_LARGE
    {"bytes": 104857600, "limit_bytes": 67108864} or {"chars": ..., "limit_chars": ...}."""

    def __init__(self, kind: str, name: str, message: str, detail: str = "", **facts):
        super().__init__(f"{name}: {message}")
        self.kind, self.name, self.detail, self.facts = kind, name, detail, facts


def check_cancel(cancel: threading.Event | None, name: str) -> None:
    """Raise DocumentError(CANCELLED) once `cancel` is set (polled per page or block)."""
    if cancel is not None and cancel.is_set():
        raise DocumentError(CANCELLED, name, "reading was cancelled")


def report(progress: Progress | None, fraction: float) -> None:
    if progress is not None:
        progress(min(1.0, max(0.0, fraction)))
