"""Extract the text of an attached file: the one entry point a worker calls off the UI thread.

    doc = extract_file(path, progress=lambda f: ..., cancel=threading.Event())

The format is decided by content, not by the name: "%PDF-" → PDF (app.engine.documents.pdf), a
ZIP with word/document.xml → DOCX (app.engine.documents.docx), anything else must be text
(app.engine.documents.text), labelled "markdown"/"code"/"text" by its suffix, except a file named
.pdf or .docx: one that is not that format is refused (new-user trial: a text file named .pdf was
attached as text, with no word that it was not a PDF). Every failure is a
`DocumentError` with a one-line message: a file over `MAX_FILE_BYTES`, text over
`MAX_TEXT_CHARS` (a text file over 4 × that many bytes is refused from its first 64 KiB, with its
character count estimated from them, not read whole), a binary file, a PDF that needs a password
or has no text layer, text whose encoding cannot be told, an unreadable path. Nothing here
touches the chat, so a refused file loses nothing already in it. No torch, no Qt.
"""

from __future__ import annotations

import threading
from pathlib import Path

from app.engine.documents.docx import extract_docx, is_docx
from app.engine.documents.pdf import extract_pdf
from app.engine.documents.source import (
    BINARY,
    MISNAMED,
    TOO_LARGE,
    UNREADABLE,
    DocumentError,
    ExtractedDocument,
    Progress,
    report,
)
from app.engine.documents.text import binary_kind, estimated_chars, extract_text_file
from app.engine.memory.units import MiB, format_bytes

# 64 MiB: a 300-page PDF with figures is ~5-30 MB; its text layer is ~1 MB. Text beyond this is
# millions of tokens, which retrieval can rank but no local context holds (a 100 MB log is refused).
MAX_FILE_BYTES = 64 * MiB
NAMED_FORMATS = {".pdf": "PDF", ".docx": "DOCX"}  # suffixes that promise a format, read by content
MAX_TEXT_CHARS = 2_000_000
"""Text an attachment may bring (~500k tokens, a 600-page book). Ranking a document costs time
and memory in proportion to its text before the turn can start, and Stop cannot interrupt that:
a new-user trial saw a 50 MB text file take the process past 12 GB (2 MB of text: 17 s, +335 MB
on the shared 2-core box)."""


def extract_file(path: str | Path, progress: Progress | None = None,
                 cancel: threading.Event | None = None,
                 max_bytes: int = MAX_FILE_BYTES) -> ExtractedDocument:
    """Text of the file at `path`, with page offsets for PDFs.

    `progress(fraction)` is called from this thread after each block (1 MiB) or page; `cancel`
    is polled at the same points. Raises DocumentError only (kinds in app.engine.documents.source):
    UNREADABLE (missing, a folder, no permission), TOO_LARGE (> `max_bytes`; `detail` = size in
    bytes), MISNAMED (named .pdf or .docx but not that format; `detail` = "PDF" or "DOCX"), and
    those of the format readers (BINARY, NOT_UTF8, ENCRYPTED, NO_TEXT_LAYER, DAMAGED,
    EMPTY, CANCELLED).
    """
    path = Path(path)
    try:
        if not path.is_file():
            raise DocumentError(UNREADABLE, path.name, "not a file that can be read")
        size = path.stat().st_size
        if size > max_bytes:
            raise DocumentError(TOO_LARGE, path.name, f"the file is {format_bytes(size)}; files up to "
                                f"{format_bytes(max_bytes)} can be attached", str(size),
                                bytes=size, limit_bytes=max_bytes)
        with path.open("rb") as f:
            head = f.read(64 << 10)
        report(progress, 0.0)
        if head.startswith(b"%PDF-"):
            return _checked(extract_pdf(path, size, progress, cancel), path.name)
        if head.startswith(b"PK\x03\x04") and is_docx(path):
            return _checked(extract_docx(path, size, progress, cancel), path.name)
        named = NAMED_FORMATS.get(path.suffix.lower())
        if named is not None:  # the name promises a format the content does not have
            raise DocumentError(MISNAMED, path.name, f"its name says {named}, but it is not a {named} file; if it "
                                "holds text, rename it to .txt and attach it again", named)
        if size > 4 * MAX_TEXT_CHARS:  # over the limit in any encoding (at most 4 bytes a character)
            what = binary_kind(head)
            if what is not None:  # a 50 MB archive is binary, not too much text
                raise DocumentError(BINARY, path.name, f"not a text file (looks like {what})", what)
            # its count from the first 64 KiB: size // 4 said 13.1 million for a 52.4-million-character log
            raise _too_much_text(path.name, estimated_chars(head, size))
        return _checked(extract_text_file(path, size, progress, cancel), path.name)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DocumentError(UNREADABLE, path.name, f"the file cannot be read ({reason})", reason,
                            errno=exc.errno) from None


def _checked(document: ExtractedDocument, name: str) -> ExtractedDocument:
    """`document`, or TOO_LARGE when its text is over MAX_TEXT_CHARS."""
    if len(document.text) > MAX_TEXT_CHARS:
        raise _too_much_text(name, len(document.text))
    return document


def _too_much_text(name: str, chars: int) -> DocumentError:
    return DocumentError(TOO_LARGE, name, f"its text is about {chars:,} characters; up to {MAX_TEXT_CHARS:,} "
                         "can be attached (split it, or attach the part you need)", str(chars),
                         chars=chars, limit_chars=MAX_TEXT_CHARS)

