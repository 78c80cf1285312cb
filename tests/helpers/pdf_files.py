"""Write small PDFs with pypdf alone (it has no text API, so the page content stream is written by
hand: PDF 1.7 §9.4 text objects, BT /F1 11 Tf … Tj ET, with the standard Helvetica font).

`write_text_pdf(path, pages)` makes a PDF whose text layer holds each page's lines;
`write_image_pdf(path, n)` makes pages that carry only an image (a scanned document's shape).
Text is limited to Latin-1 (the standard fonts' WinAnsi encoding).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject

PAGE_W, PAGE_H, MARGIN, LEADING = 612, 792, 54, 13  # US Letter in points, 11 pt text


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _font() -> DictionaryObject:
    return DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"), NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
    })


def _stream(writer: PdfWriter, content: bytes, extra: dict | None = None):
    stream = DecodedStreamObject()
    stream.set_data(content)
    for key, value in (extra or {}).items():
        stream[NameObject(key)] = value
    return writer._add_object(stream)


def write_text_pdf(path: Path, pages: Sequence[Sequence[str]], password: str | None = None) -> Path:
    """One PDF page per item of `pages`, each line drawn 13 pt below the previous one (lines past
    the page's bottom are still drawn, off the page, but stay in the text layer). `password`:
    encrypt with this user password (AES-128 through pypdf's writer)."""
    writer = PdfWriter()
    font = writer._add_object(_font())
    for lines in pages:
        page = writer.add_blank_page(PAGE_W, PAGE_H)
        ops = [f"BT /F1 11 Tf {LEADING} TL {MARGIN} {PAGE_H - MARGIN} Td"]
        ops += [f"({_escape(line)}) Tj T*" for line in lines]
        ops.append("ET")
        content = "\n".join(ops).encode("latin-1", "replace")
        page[NameObject("/Contents")] = _stream(writer, content)
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    if password is not None:
        writer.encrypt(password, algorithm="AES-128")
    with path.open("wb") as f:
        writer.write(f)
    return path


def write_image_pdf(path: Path, pages: int = 3) -> Path:
    """`pages` pages each showing one 8×8 grey image and no text (a scan without OCR)."""
    writer = PdfWriter()
    image = _stream(writer, bytes(range(0, 256, 4)), {
        "/Type": NameObject("/XObject"), "/Subtype": NameObject("/Image"),
        "/Width": NumberObject(8), "/Height": NumberObject(8),
        "/ColorSpace": NameObject("/DeviceGray"), "/BitsPerComponent": NumberObject(8),
    })
    for _ in range(pages):
        page = writer.add_blank_page(PAGE_W, PAGE_H)
        page[NameObject("/Contents")] = _stream(writer, b"q 400 0 0 500 100 150 cm /Im1 Do Q")
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/XObject"): DictionaryObject({NameObject("/Im1"): image}),
            NameObject("/ProcSet"): ArrayObject([NameObject("/PDF"), NameObject("/ImageB")])})
    with path.open("wb") as f:
        writer.write(f)
    return path
