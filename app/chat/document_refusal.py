"""Why a file cannot be attached, said in the window's language: an engine DocumentError (kind,
detail, facts: app.engine.documents.source, no Qt) turned into the reason the error notice shows.
The engine keeps its own English line (str(error)) for the log. Also the note on a text file that
was attached but read from an older encoding (`legacy_note`).

Sizes are in the unit they reach (app.engine.memory.units.format_bytes: "100 MiB"), counts are
grouped ("2,000,000"); encoding names (cp949) are facts and stay as they come. A reader's own
English words (pypdf's "Stream has ended unexpectedly", the OS's "Permission denied") are not put
in the sentence (new-user trial 10: English inside the Korean one): they are in the engine's line,
which the chat logs.
"""

from __future__ import annotations

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QObject

from app.chat.error_text import os_error_text
from app.engine.documents.source import (
    BINARY,
    CANCELLED,
    DAMAGED,
    EMPTY,
    ENCRYPTED,
    MISNAMED,
    MIXED_UTF8,
    NO_TEXT_LAYER,
    NOT_UTF8,
    SINGLE_BYTE,
    TOO_LARGE,
    UNREADABLE,
    DocumentError,
)
from app.engine.memory.units import format_bytes

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class DocumentRefusal(QObject):
    """The translation context "DocumentRefusal" for counted words ("1 page"): lupdate reads
    DocumentRefusal.tr(text, "", n) as a plural message, never translate(context, text, None, n).
    Never instantiated; no signals."""


# What a binary file looks like (app.engine.documents.text.binary_kind's phrases)
LOOKS_LIKE = {
    "a PNG image": QT_TRANSLATE_NOOP("DocumentRefusal", "a PNG image"),
    "a JPEG image": QT_TRANSLATE_NOOP("DocumentRefusal", "a JPEG image"),
    "a GIF image": QT_TRANSLATE_NOOP("DocumentRefusal", "a GIF image"),
    "a ZIP archive": QT_TRANSLATE_NOOP("DocumentRefusal", "a ZIP archive"),
    "a gzip archive": QT_TRANSLATE_NOOP("DocumentRefusal", "a gzip archive"),
    "a 7-Zip archive": QT_TRANSLATE_NOOP("DocumentRefusal", "a 7-Zip archive"),
    "a Linux program": QT_TRANSLATE_NOOP("DocumentRefusal", "a Linux program"),
    "a Windows program": QT_TRANSLATE_NOOP("DocumentRefusal", "a Windows program"),
    "an old Office file": QT_TRANSLATE_NOOP("DocumentRefusal", "an old Office file"),
    "a GGUF model": QT_TRANSLATE_NOOP("DocumentRefusal", "a GGUF model"),
    "an SQLite database": QT_TRANSLATE_NOOP("DocumentRefusal", "an SQLite database"),
    "an MP3 file": QT_TRANSLATE_NOOP("DocumentRefusal", "an MP3 file"),
    "binary data": QT_TRANSLATE_NOOP("DocumentRefusal", "binary data"),
}

# The language (or script) an older encoding detected is used for (Python's codec names): the
# multi-byte ones charset-normalizer names, and the single-byte ones app.engine.documents.text reads
_KOREAN = QT_TRANSLATE_NOOP("DocumentRefusal", "Korean")
_JAPANESE = QT_TRANSLATE_NOOP("DocumentRefusal", "Japanese")
_SIMPLIFIED = QT_TRANSLATE_NOOP("DocumentRefusal", "Simplified Chinese")
_TRADITIONAL = QT_TRANSLATE_NOOP("DocumentRefusal", "Traditional Chinese")
_WESTERN = QT_TRANSLATE_NOOP("DocumentRefusal", "Western European")
_CYRILLIC = QT_TRANSLATE_NOOP("DocumentRefusal", "Cyrillic")
ENCODING_LANGUAGES = {
    **dict.fromkeys(("cp949", "euc_kr", "johab", "iso2022_kr"), _KOREAN),
    **dict.fromkeys(("shift_jis", "cp932", "euc_jp", "iso2022_jp", "shift_jis_2004", "shift_jisx0213",
                     "euc_jis_2004", "euc_jisx0213"), _JAPANESE),
    **dict.fromkeys(("gb2312", "gbk", "gb18030", "hz"), _SIMPLIFIED),
    **dict.fromkeys(("big5", "big5hkscs", "cp950"), _TRADITIONAL),
    **dict.fromkeys(("cp1252", "latin_1", "iso8859_1", "iso8859_15"), _WESTERN),
    **dict.fromkeys(("cp1251", "koi8_r"), _CYRILLIC),
}
UNICODE_ENCODINGS = frozenset({"utf-8", "utf-8-sig", "utf-16", "utf-32"})  # what needs no word


def legacy_note(document) -> str:
    """The line that says a text file (an ExtractedDocument) was decoded from an older encoding
    detected (app.engine.documents.text), so the user knows and can check it: "회의록.txt is not
    UTF-8: it was read as Korean text in the cp949 encoding. …"; "" for UTF-8/16/32 and for
    PDF and DOCX (encoding None)."""
    encoding = document.encoding
    if not encoding or encoding.lower() in UNICODE_ENCODINGS:
        return ""
    check = translate("DocumentRefusal", "If its text looks wrong, save it as UTF-8 and attach it again.")
    language = ENCODING_LANGUAGES.get(encoding.lower().replace("-", "_"))
    if language is not None:
        return translate("DocumentRefusal", "{0} is not UTF-8: it was read as {1} text in the {2} encoding. "
                         "{3}").format(document.name, translate("DocumentRefusal", language), encoding, check)
    return translate("DocumentRefusal", "{0} is not UTF-8: it was read as text in the {1} encoding. {2}").format(
        document.name, encoding, check)


def refusal_reason(error: DocumentError) -> str:
    """The reason `error` gives, one line in the window's language ("not a text file (looks like
    binary data)"); an unknown kind falls back to the engine's English line."""
    facts, detail = error.facts, error.detail
    if error.kind == BINARY:
        what = translate("DocumentRefusal", LOOKS_LIKE[detail]) if detail in LOOKS_LIKE else detail
        return translate("DocumentRefusal", "not a text file (looks like {0})").format(what)
    if error.kind == TOO_LARGE and "limit_bytes" in facts:
        return translate("DocumentRefusal", "the file is {0}; files up to {1} can be attached").format(
            format_bytes(facts["bytes"]), format_bytes(facts["limit_bytes"]))
    if error.kind == TOO_LARGE and "limit_chars" in facts:
        return translate("DocumentRefusal", "its text is about {0} characters; up to {1} can be attached "
                         "(split it, or attach the part you need)").format(f"{facts['chars']:,}",
                                                                          f"{facts['limit_chars']:,}")
    if error.kind == NOT_UTF8:
        return _not_utf8(detail)
    if error.kind == MISNAMED:
        return translate("DocumentRefusal", "its name says {0}, but it is not a {0} file; if it holds text, "
                         "rename it to .txt and attach it again").format(detail)
    if error.kind == ENCRYPTED:
        if detail == "cryptography":
            return translate("DocumentRefusal", "this PDF is AES-encrypted and the cryptography package is missing")
        return translate("DocumentRefusal", "this PDF is protected by a password; open it in a PDF reader, save "
                         "an unprotected copy and attach that")
    if error.kind == NO_TEXT_LAYER:  # "1 pages" in English (new-user trial 11)
        pages = int(detail) if detail.isdigit() else 0
        return DocumentRefusal.tr("this PDF has no text layer ({0} pages of images or blank pages); "
                                  "Headroom does not read scanned pages", "", pages).format(f"{pages:,}")
    if error.kind == DAMAGED:
        return _damaged(error)
    if error.kind == EMPTY:
        return translate("DocumentRefusal", "the file has no text")
    if error.kind == UNREADABLE:
        if detail:  # the OS's reason, in the plain words a save failure uses (an unknown errno: the OS's)
            reason = os_error_text(OSError(facts.get("errno"), detail))
            return translate("DocumentRefusal", "the file cannot be read ({0})").format(reason)
        return translate("DocumentRefusal", "not a file that can be read")
    if error.kind == CANCELLED:
        return translate("DocumentRefusal", "reading was cancelled")
    return str(error).removeprefix(f"{error.name}: ")


def _not_utf8(detail: str) -> str:
    """Text in another encoding, in words a person can act on (new-user trial: "looks like cp949,
    byte 0" said nothing useful): the language and encoding it looks like when it is a multi-byte
    one (detail "cp949"), its family when it is a single-byte code page (SINGLE_BYTE: the guess
    among those is unreliable), else that it cannot be told; then how to fix it. The offset of the
    first byte that is not UTF-8 stays in the engine's line, for the log."""
    if detail == MIXED_UTF8:  # saving it as UTF-8 again changes nothing (new-user trial)
        return translate("DocumentRefusal", "it is UTF-8 text with some bytes that are not: the file may be "
                         "damaged or mix encodings; fix or remove those bytes and attach it again")
    fix = translate("DocumentRefusal", "open it in a text editor, save it as UTF-8 and attach it again")
    if detail == SINGLE_BYTE:
        return translate("DocumentRefusal", "it is text in an older single-byte encoding (such as Latin-1 or a "
                         "Windows code page), not UTF-8; {0}").format(fix)
    language = ENCODING_LANGUAGES.get(detail.lower().replace("-", "_"))
    if language is not None:
        return translate("DocumentRefusal", "it is {0} text in the {1} encoding, not UTF-8; {2}").format(
            translate("DocumentRefusal", language), detail, fix)
    if detail:
        return translate("DocumentRefusal", "it is text in the {0} encoding, not UTF-8; {1}").format(detail, fix)
    return translate("DocumentRefusal", "it is not UTF-8 text, and its encoding cannot be told; {0}").format(fix)


def _damaged(error: DocumentError) -> str:
    """A PDF or DOCX its reader cannot parse; detail: the reader's own words (pypdf's, zipfile's:
    English, left to the log), or "zip bomb"."""
    if error.detail == "zip bomb":
        return translate("DocumentRefusal", "this DOCX expands to more than 256 MiB of XML")
    return translate("DocumentRefusal", "this {0} file cannot be read (it may be damaged or incomplete)").format(
        error.facts.get("format", "PDF"))  # the PDF and DOCX readers both say which they are
