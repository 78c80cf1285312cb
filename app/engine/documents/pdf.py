"""PDF text layer, page by page, through pypdf (BSD-3, pure Python; https://pypdf.readthedocs.io).

Only the text layer is read: a scanned PDF (pages that are images) has none and is refused with
a message saying so, since Headroom does no OCR. A PDF encrypted with an empty user password
(owner-password "protection" only: printing/copying restrictions) opens; one that needs a
password is refused. AES-encrypted files need the `cryptography` package (pypdf[crypto]).
No torch, no Qt.
"""

from __future__ import annotations

import io
import logging
import threading
from pathlib import Path

from app.engine.documents.source import (
    DAMAGED,
    ENCRYPTED,
    NO_TEXT_LAYER,
    DocumentError,
    ExtractedDocument,
    Progress,
    check_cancel,
    report,
)
from app.engine.documents.text import read_blocks

# A page with fewer visible characters than this is "without text" (page numbers, a stray
# header); a PDF with no page above it has no usable text layer.
MIN_PAGE_CHARS = 20
PAGE_SEPARATOR = "\n\n"
_CONTROL = {c: None for c in range(32) if chr(c) not in "\n\t"}
_READ_SHARE = 0.1  # share of the progress bar spent reading bytes; the pages take the rest


def extract_pdf(path: Path, size: int, progress: Progress | None = None,
                cancel: threading.Event | None = None) -> ExtractedDocument:
    """Text of every page, joined by a blank line, with each page's start offset.

    Raises DocumentError: ENCRYPTED (a password is needed), NO_TEXT_LAYER (image-only pages,
    `detail` = page count), DAMAGED (pypdf cannot parse it; `detail` = pypdf's reason), CANCELLED.
    """
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, PyPdfError

    name = path.name
    data = read_blocks(path, size, progress, cancel, _READ_SHARE)
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed-but-readable files warn per object
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt(reader, name)
        parts, starts, offset = [], [], 0
        count = len(reader.pages)
        for i, page in enumerate(reader.pages):
            check_cancel(cancel, name)
            text = _clean(page.extract_text() or "").rstrip()
            starts.append(offset)
            parts.append(text)
            offset += len(text) + len(PAGE_SEPARATOR)
            report(progress, _READ_SHARE + (1 - _READ_SHARE) * (i + 1) / max(count, 1))
    except DependencyError:
        raise DocumentError(ENCRYPTED, name, "this PDF is AES-encrypted and the cryptography "
                            "package is missing", "cryptography") from None
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:  # pypdf raises these on bad files
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DocumentError(DAMAGED, name, f"this PDF cannot be read ({reason})", reason,
                            format="PDF") from None
    if not any(len(p.strip()) >= MIN_PAGE_CHARS for p in parts):
        pages = f"{count} page of images or a blank page" if count == 1 else f"{count} pages of images or blank pages"
        raise DocumentError(NO_TEXT_LAYER, name, f"this PDF has no text layer ({pages}); Headroom does not "
                            "read scanned pages", str(count))
    return ExtractedDocument(name, "pdf", PAGE_SEPARATOR.join(parts), tuple(starts), size, None)


def _decrypt(reader, name: str) -> None:
    """Open an encrypted PDF with the empty user password, else raise ENCRYPTED."""
    from pypdf import PasswordType

    try:
        opened = reader.decrypt("")
    except Exception as exc:  # noqa: BLE001 — pypdf raises several types for unsupported handlers
        if type(exc).__name__ == "DependencyError":
            raise
        opened = PasswordType.NOT_DECRYPTED
    if opened == PasswordType.NOT_DECRYPTED:
        raise DocumentError(ENCRYPTED, name, "this PDF is protected by a password; open it in a PDF "
                            "reader, save an unprotected copy and attach that")


def _clean(text: str) -> str:
    """Normalise newlines and drop NUL/control characters some PDF fonts map glyphs to."""
    return text.replace("\r\n", "\n").replace("\r", "\n").translate(_CONTROL)
