"""DOCX text through the standard library: a .docx is a ZIP holding word/document.xml (ECMA-376
Part 1, §17: w:body → w:p paragraphs of w:r runs of w:t text; w:tbl tables of w:tr rows of w:tc cells).

Paragraphs become lines; a paragraph styled "Heading N" (or "Title") becomes a Markdown heading
("#" × N) so the chunker splits on it; table rows become "cell | cell" lines. Footnotes, comments,
headers/footers and text boxes are not read. Done without a library: docx2python and python-docx
both bring lxml (a compiled ~10 MB dependency) for what is a 50-line walk over one XML part.
The XML is parsed by expat ≥ 2.4.1, which refuses entity-expansion bombs; the part's uncompressed
size is checked first (ZIP bombs). No torch, no Qt.
"""

from __future__ import annotations

import io
import re
import threading
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from app.engine.documents.source import (
    DAMAGED,
    EMPTY,
    DocumentError,
    ExtractedDocument,
    Progress,
    check_cancel,
    report,
)
from app.engine.documents.text import read_blocks

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
BODY_PART = "word/document.xml"
MAX_PART_BYTES = 256 << 20  # uncompressed document.xml; larger is a ZIP bomb, not a document
_HEADING = re.compile(r"^(?:heading|berschrift|titre|titolo)\s*(\d)$", re.IGNORECASE)


def is_docx(path: Path) -> bool:
    """True for a ZIP whose members include word/document.xml."""
    try:
        with zipfile.ZipFile(path) as z:
            return BODY_PART in z.namelist()
    except zipfile.BadZipFile:
        return False


def extract_docx(path: Path, size: int, progress: Progress | None = None,
                 cancel: threading.Event | None = None) -> ExtractedDocument:
    """Text of the document body. Raises DocumentError DAMAGED (not a readable DOCX), EMPTY,
    CANCELLED."""
    name = path.name
    data = read_blocks(path, size, progress, cancel, 0.3)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            info = z.getinfo(BODY_PART)
            if info.file_size > MAX_PART_BYTES:
                raise DocumentError(DAMAGED, name, "this DOCX expands to more than 256 MiB of XML", "zip bomb",
                                    format="DOCX")
            root = ElementTree.fromstring(z.read(info))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as exc:
        raise DocumentError(DAMAGED, name, f"this DOCX cannot be read ({exc})", str(exc),
                            format="DOCX") from None
    body = root.find(f"{_W}body")
    blocks = list(body) if body is not None else []
    lines: list[str] = []
    for i, block in enumerate(blocks):
        if i % 200 == 0:
            check_cancel(cancel, name)
            report(progress, 0.3 + 0.7 * i / max(len(blocks), 1))
        if block.tag == f"{_W}p":
            lines.append(_paragraph(block))
        elif block.tag == f"{_W}tbl":
            lines.extend(" | ".join(_cell(c) for c in row.iter(f"{_W}tc")) for row in block.iter(f"{_W}tr"))
    report(progress, 1.0)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if not text:
        raise DocumentError(EMPTY, name, "the document has no text")
    return ExtractedDocument(name, "docx", text, (), size, None)


def _paragraph(p: ElementTree.Element) -> str:
    parts = []
    for node in p.iter():
        if node.tag == f"{_W}t":
            parts.append(node.text or "")
        elif node.tag == f"{_W}tab":
            parts.append("\t")
        elif node.tag in (f"{_W}br", f"{_W}cr"):
            parts.append("\n")
    text = "".join(parts)
    level = _heading_level(p)
    return f"{'#' * level} {text}" if level and text.strip() else text


def _heading_level(p: ElementTree.Element) -> int:
    style = p.find(f"{_W}pPr/{_W}pStyle")
    value = (style.get(f"{_W}val") or "") if style is not None else ""
    if value.lower() == "title":
        return 1
    m = _HEADING.match(value)  # style ids: "Heading1"; German Word writes "berschrift1"
    return min(int(m.group(1)), 6) if m else 0


def _cell(tc: ElementTree.Element) -> str:
    return " ".join(_paragraph(p) for p in tc.iter(f"{_W}p")).strip()
