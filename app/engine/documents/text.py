"""Plain text, Markdown and source code: read in blocks, tell text from binary, decode.

UTF-8, UTF-8 with a BOM and UTF-16/UTF-32 with a BOM (Windows Notepad's "Unicode") are decoded
as they are. Text in an older encoding (old Notepad's "ANSI": cp949 on a Korean Windows,
Windows-1252 on a Western one) is decoded from the encoding detected (charset-normalizer), and
the document says which (`ExtractedDocument.encoding`) so the window can tell the user, when the
detection is confident: cp949 when the bytes read as Korean (Hangul) text, Korean first (a short
line is ambiguous to charset-normalizer: "안녕" came out as big5), else cp1251 or KOI8-R when the
bytes read as running Cyrillic text in it (app.engine.documents.cyrillic; asked before
charset-normalizer's multi-byte pick: "Привет" in cp1251 came out as big5, KOI8-R "Привет, мир!"
as shift_jis_2004), else charset-normalizer's multi-byte pick ("shift_jis", "gb18030") when it
reads the text cleanly, else Windows-1252 (a superset of Latin-1's letters) when that reads
cleanly (charset-normalizer's own single-byte pick is not to be trusted: Latin-1 French came out
as mac_latin2, "cafť"). Anything else, or a decoded text with replacement or control characters,
is refused with a one-line message rather than decoded by a guess that could silently garble the
text the model then answers from: the message names charset-normalizer's guess only when it is a
multi-byte encoding, else the family, single-byte. Binary files (a NUL byte without a UTF-16/32
BOM, or a known magic number) are refused as such. No torch, no Qt.
"""

from __future__ import annotations

import codecs
import threading
import unicodedata
from pathlib import Path

from app.engine.documents.cyrillic import cyrillic_encoding
from app.engine.documents.source import (
    BINARY,
    EMPTY,
    MIXED_UTF8,
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
SNIFF_LEGACY = 1 << 16  # bytes charset-normalizer looks at to tell an older encoding
MAX_CHAOS = 0.1  # charset-normalizer's mess ratio a reading may have (it drops readings over 0.2)
SHORT_NON_ASCII = 64  # fewer bytes over 0x7F than this: too short for charset-normalizer to tell
KOREAN_CODECS = frozenset({"cp949", "euc_kr", "johab", "iso2022_kr"})
_TEXT_CONTROLS = frozenset("\t\n\r\f\v\x1b")
_HIGH_BYTES = bytes(range(0x80, 0x100))

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
    """(text, encoding) with newlines normalised; `encoding` is a Python codec name ("utf-8",
    "utf-8-sig", "utf-16", "cp949", "cp1252", …). Raises DocumentError EMPTY for a file with no
    text, NOT_UTF8 for text in an encoding that cannot be told with confidence (see the module):
    `detail` is the guessed encoding when it is a multi-byte one ("cp949"), SINGLE_BYTE for a
    single-byte code page, "" when there is no guess; facts["byte"]: the offset of the first byte
    that is not UTF-8."""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        text, encoding = _legacy(data, name, exc.start)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise DocumentError(EMPTY, name, "the file has no text")
    return text, encoding


def legacy_encoding(data: bytes) -> str | None:
    """The encoding of `data` (text that is not UTF-8, no BOM) when it can be told with
    confidence (see the module), else None. Looks at the first 64 KiB; a Python codec name."""
    from charset_normalizer import from_bytes
    from charset_normalizer.md import mess_ratio
    from charset_normalizer.utils import is_multi_byte_encoding

    head = _whole_characters(data[:SNIFF_LEGACY])
    best = from_bytes(head).best()
    if best is not None and best.encoding.startswith("utf"):  # no BOM and not UTF-8: never UTF-16/32
        best = None
    korean = _reading(head, "cp949")
    if korean is not None and _hangul_share(korean) >= 0.8 and (
            best is None or best.encoding in KOREAN_CODECS or _non_ascii(head) < SHORT_NON_ASCII):
        return "cp949"
    cyrillic = cyrillic_encoding(head)
    if cyrillic is not None:
        return cyrillic
    if best is not None and is_multi_byte_encoding(best.encoding) and best.chaos <= MAX_CHAOS:
        return best.encoding
    western = _reading(head, "cp1252")
    if western is not None and mess_ratio(western, 1.0) <= MAX_CHAOS:
        return "cp1252"
    return None


def estimated_chars(head: bytes, size: int) -> int:
    """≈ characters (newlines normalised) of a text file of `size` bytes that starts with `head`
    (its first 64 KiB): the characters per byte of `head` decoded as the whole file would be (its
    BOM's encoding, UTF-8, or the older encoding detected; undecodable bytes count one each)
    times `size`. Exact for a file of one encoding width (ASCII: `size`); reads nothing more."""
    encoding = next((enc for bom, enc in _BOMS if head.startswith(bom)), None)
    if encoding is None:
        try:
            head.decode("utf-8")
            encoding = "utf-8"
        except UnicodeDecodeError as exc:  # a character cut at the end of `head` is still UTF-8
            utf8 = exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
            encoding = "utf-8" if utf8 else legacy_encoding(head) or "latin-1"
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    text = decoder.decode(head, final=False)
    consumed = len(head) - len(decoder.getstate()[0])
    chars = len(text) - text.count("\r\n")
    return round(size * chars / consumed) if consumed else size


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


def _legacy(data: bytes, name: str, byte: int) -> tuple[str, str]:
    """(text, encoding) of text in an older encoding told with confidence and decoding cleanly,
    else the NOT_UTF8 error (`byte`: the first byte that is not UTF-8)."""
    encoding = legacy_encoding(data)
    text = _reading(data, encoding) if encoding is not None else None
    if text is not None and not _looks_wrong(text):
        return text, encoding
    if _mostly_utf8(data):
        raise DocumentError(NOT_UTF8, name, f"mostly UTF-8, but byte {byte} is not: the file may be damaged or mix "
                            "encodings; fix or remove those bytes and attach it again", MIXED_UTF8, byte=byte)
    raise _not_utf8(data, name, byte)


def _mostly_utf8(data: bytes) -> bool:
    """Whether `data` (not valid UTF-8) is UTF-8 text with some bytes that are not: in its first
    64 KiB, more bytes are in whole UTF-8 characters that people write (`_WRITTEN`) than there are
    pieces that are not UTF-8. Asked only once no older encoding reads the file: the refusal then
    says what is wrong with it.
    New-user trial: "Hello café", three stray bytes and "끝" was said to be Latin-1 text, to be
    saved as UTF-8, which it already was."""
    text = data[:SNIFF_LEGACY].decode("utf-8", errors="replace")
    whole = sum(len(c.encode()) for c in text if any(low <= ord(c) <= high for low, high in _WRITTEN))
    return whole > text.count("\ufffd")


# characters people write beyond ASCII (not the private-use or rare-script ones bytes of another encoding
# form by chance): Latin-1 to Cyrillic, punctuation and symbols, CJK and kana, Hangul, emoji
_WRITTEN = ((0xA0, 0x4FF), (0x2000, 0x2BFF), (0x3000, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF))


def _looks_wrong(text: str) -> bool:
    """True when a decoded text holds replacement or control characters (other than tab, newline,
    form feed, escape) in more than 1 character in 200: a wrong guess, or not text at all."""
    bad = sum(1 for c in text if c == "\ufffd" or (unicodedata.category(c) == "Cc" and c not in _TEXT_CONTROLS))
    return bad > len(text) // 200


def _reading(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


def _hangul_share(text: str) -> float:
    """Share of Hangul syllables among the characters that are not ASCII or punctuation."""
    letters = [c for c in text if ord(c) > 0x7F and unicodedata.category(c)[0] in "LN"]
    return sum(1 for c in letters if "\uac00" <= c <= "\ud7a3") / len(letters) if letters else 0.0


def _non_ascii(data: bytes) -> int:
    return len(data) - len(data.translate(None, _HIGH_BYTES))


def _whole_characters(head: bytes) -> bytes:
    """`head` without a trailing byte of a two-byte character cut at the 64 KiB mark."""
    if len(head) < SNIFF_LEGACY:
        return head
    end = len(head)
    while end > len(head) - 4 and head[end - 1] > 0x7F:
        end -= 1
    return head[:end]


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
