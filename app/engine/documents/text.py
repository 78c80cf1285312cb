"""Plain text, Markdown and source code: read in blocks, tell text from binary, decode.

Accepted encodings are UTF-8, UTF-8 with a BOM, and UTF-16/UTF-32 with a BOM (Windows Notepad's
"Unicode"). Anything else is refused with a one-line message rather than decoded by a guess that
could silently garble the text the model then answers from. The message names charset-normalizer's
guess only when it is a multi-byte East Asian encoding ("cp949", "shift_jis", "gb18030"), which it
tells reliably; for single-byte code pages its guess is not to be trusted (Latin-1 French came
out as cp775, Latin-1 German as cp1250: new-user trial "looks like cp1250"), so the message names
the family, single-byte, with Latin-1 and the Windows code pages as examples. Binary files (a NUL byte without a
UTF-16/32 BOM, or a known magic number) are refused as such. No torch, no Qt.
"""

from __future__ import annotations

import codecs
import threading
from pathlib import Path

from app.engine.documents.source import (
    BINARY,
    EMPTY,
    NOT_UTF8,
    SINGLE_BYTE,
    DocumentError,
    ExtractedDocument,
    Progress,
    check_cancel,
    report,
)

READ_BLOCK = 1 << 20  # 1 MiB per read: progress and cancel are checked between blocks
SNIFF_BYTES = 8192  # git's binary test also looks for a NUL in the first 8000 bytes (xdiff)

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd", ".rst"})
CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".c", ".h", ".cc", ".cpp", ".hpp", ".cu", ".rs", ".go", ".java", ".kt", ".js",
    ".ts", ".tsx", ".jsx", ".rb", ".php", ".cs", ".swift", ".sh", ".bash", ".ps1", ".sql", ".lua",
    ".r", ".jl", ".scala", ".m", ".toml", ".yaml", ".yml", ".json", ".xml", ".html", ".css", ".ini",
    ".cfg", ".ipynb",
})

# BOMs, longest first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
# Magic numbers of common binary files, for "looks like …" (file(1)'s magic database).
_MAGIC = (
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"PK\x03\x04", "a ZIP archive"), (b"\x1f\x8b", "a gzip archive"), (b"7z\xbc\xaf", "a 7-Zip archive"),
    (b"\x7fELF", "a Linux program"), (b"MZ", "a Windows program"), (b"\xd0\xcf\x11\xe0", "an old Office file"),
    (b"GGUF", "a GGUF model"), (b"SQLite format 3", "an SQLite database"), (b"ID3", "an MP3 file"),
)


def kind_for(path: Path) -> str:
    """"markdown", "code" or "text", from the suffix."""
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    return "code" if suffix in CODE_SUFFIXES else "text"


def read_blocks(path: Path, size: int, progress: Progress | None, cancel: threading.Event | None,
                share: float = 1.0) -> bytes:
    """The file's bytes, read `READ_BLOCK` at a time; progress goes from 0 to `share`."""
    parts, done = [], 0
    with path.open("rb") as f:
        while block := f.read(READ_BLOCK):
            check_cancel(cancel, path.name)
            parts.append(block)
            done += len(block)
            report(progress, share * done / max(size, 1))
    return b"".join(parts)


def binary_kind(head: bytes) -> str | None:
    """What a file starting with `head` looks like if it is binary ("a PNG image", "binary data"),
    else None. Text with a UTF-16/32 BOM contains NUL bytes and is not binary."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return None
    return "binary data" if b"\x00" in head[:SNIFF_BYTES] else None


def decode(data: bytes, name: str) -> tuple[str, str]:
    """(text, encoding) with newlines normalised. Raises DocumentError EMPTY for a file with no
    text, NOT_UTF8 for text in another encoding: `detail` is the guessed encoding when it is a
    multi-byte one ("cp949"), SINGLE_BYTE for a single-byte code page, "" when there is no guess;
    facts["byte"]: the offset of the first byte that is not UTF-8."""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _not_utf8(data, name, exc.start) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise DocumentError(EMPTY, name, "the file has no text")
    return text, encoding


def extract_text_file(path: Path, size: int, progress: Progress | None = None,
                      cancel: threading.Event | None = None) -> ExtractedDocument:
    """Read a text, Markdown or source file. Raises DocumentError (BINARY, NOT_UTF8, EMPTY,
    CANCELLED)."""
    data = read_blocks(path, size, progress, cancel)
    what = binary_kind(data[:SNIFF_BYTES])
    if what is not None:
        raise DocumentError(BINARY, path.name, f"not a text file (looks like {what})", what)
    text, encoding = decode(data, path.name)
    return ExtractedDocument(path.name, kind_for(path), text, (), size, encoding)


def _not_utf8(data: bytes, name: str, byte: int) -> DocumentError:
    """The NOT_UTF8 error for `data`, naming its encoding as far as it can be told (see the module)."""
    from charset_normalizer import from_bytes
    from charset_normalizer.utils import is_multi_byte_encoding

    best = from_bytes(data[: 1 << 16]).best()  # the first 64 KiB
    advice = "save it as UTF-8 and attach it again"
    if best is None:
        return DocumentError(NOT_UTF8, name, f"not UTF-8 text (byte {byte}); {advice}", "", byte=byte)
    if is_multi_byte_encoding(best.encoding):
        return DocumentError(NOT_UTF8, name, f"not UTF-8 text (looks like {best.encoding}, byte {byte}); {advice}",
                             best.encoding, byte=byte)
    return DocumentError(NOT_UTF8, name, f"not UTF-8 text (an older single-byte encoding such as Latin-1 or a "
                         f"Windows code page, byte {byte}); {advice}", SINGLE_BYTE, byte=byte)
