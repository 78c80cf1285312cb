"""Search across chats as users of other chat apps expect it: a substring, case-insensitive in
every script ("über" finds "ÜBER", "CAFÉ" finds "café", "strasse" finds "Straße"), and blind to
how a text was encoded: "é" typed as one character or as "e" + combining acute, Hangul as
syllables or as conjoining jamo (text pasted from macOS file names, some IMEs) are one text.

Both sides are compared after `fold`: NFC, Python's str.casefold (full Unicode case folding),
NFC again (Unicode canonical equivalence, then caseless matching; UAX #15, Unicode §3.13). One
departure from full folding: the Turkish i's are one letter, as search engines match them: the
dotted capital "İ" is "i" (CaseFolding.txt's Turkic mapping, status T), not "i" + U+0307 combining
dot above (status F), so "istanbul" finds "İSTANBUL" (new-user trial: only "İSTANBUL" found
"İstanbul"); and the dotless "ı" is "i" too, so "ığdır" finds "IĞDIR" and "diyarbakır" finds
"DİYARBAKIR" (new-user re-trial: "I" folds to "i", never to "ı").
SQLite's LIKE folds ASCII letters only, and lower()/upper() need the ICU extension that
Python's sqlite3 does not ship, so a text is matched in two steps (`match`):

1. LIKE (in C) with the query's *inert* runs in order: characters that a text can hold in one
   way only, apart from ASCII case, which LIKE ignores (CJK, digits, most punctuation, 18 of the
   26 ASCII letters): no other character folds into them (not "s", which "ß" folds into, nor
   "é", which "É" does), none is composed of others (not "é", which may be stored as "e" + accent),
   none is left bare by another's decomposition ("豈" U+8C48, which the compatibility ideograph
   U+F900 is canonically). Any text whose folded form holds the query holds these runs in that
   order, so no match is lost. Hangul syllables are kept in the runs, since they are nearly
   always stored whole; a text that fails LIKE but holds the jamo that one of the query's
   syllables must hold when decomposed (`_piece`: its final, else its vowel) goes to step 2.
2. Only for rows that pass, and only when LIKE alone cannot decide (the query has a character
   that is not inert, or an end that could compose with the text around it: "cafe" is in
   "cafe" + U+0301 as stored, not in its folded "café"), the text is folded in Python
   (`CONTAINS`, registered on each connection by `register`).

A query of inert characters and Hangul whose ends compose with nothing ("서울", "100%") is
decided by LIKE alone, as before. Measured with tests/benchmarks/search_chats.py (2-core CPU;
2,000 chats of ten messages; min of 15): with 1,500-character Korean answers "서울" 52 ms (50
with casefold alone, which missed decomposed text), "zzz" 16 ms (16), "strasse" 67–74 ms with
every chat a hit (67); with ~1 kB English answers "서울" 28 ms (17: the two jamo it looks for
are two more scans of every text), "python" 42 ms (42). Before normalization: folding every row
in Python instead took 120 ms for "zzz", and a stored folded column doubled the file for no gain.
"""

import sqlite3
import unicodedata
from functools import cache
from itertools import groupby

CONTAINS = "headroom_folded_contains"
"""SQL: headroom_folded_contains(text, folded_query) → 1 when fold(text) holds folded_query."""

_FOLDED_FROM_OTHERS = frozenset("afiklnst")
"""The ASCII letters that a non-ASCII character folds into ("ß" → "ss", "ﬁ" → "fi", "ı" → "i",
Kelvin sign → "k"); tests/core/test_store_search.py checks this against every code point."""

_MARKS = ("Mn", "Mc", "Me", "Lm")  # caseless, yet some fold results hold them ("ŉ" → U+02BC + "n")

_DOTTED_I = "i\u0307"  # casefold("İ"), and str.lower()'s: fold makes it "i"
_DOTLESS_I = "\u0131"  # "ı", which casefold keeps (its capital is "I"): fold makes it "i"

# every canonical decomposition is of a code point in these ranges (Unicode 14; tested)
_DECOMPOSED_RANGES = ((0, 0x20000), (0x2F800, 0x2FA20))


def fold(text: str) -> str:
    """`text` for caseless comparison under canonical equivalence: NFC(casefold(NFC(text))) with
    "ı" and "i" + U+0307 (combining dot above) as plain "i" before the last NFC (ß → ss, Σ/σ/ς → σ,
    "e" + U+0301 → é, jamo → syllables, İ → i: casefold gives "i" + U+0307, as str.lower() does, which
    "istanbul" never matched; Turkish and every other language read that dot as the i's own; ı → i:
    "IĞDIR" folds to "iğdir", which "ığdır" has to match). ASCII
    text takes the fast path (it is NFC already, and casefold is lower() there). Only matching
    uses it: nothing maps offsets in a folded text back to the shown one."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFC", text).casefold().replace(_DOTLESS_I, "i").replace(_DOTTED_I, "i")
    return unicodedata.normalize("NFC", folded)


@cache
def _composition_tables() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(left bare, first, second): the characters left bare in the fold of another (singletons
    and composition exclusions: "क़" U+0958 folds to "क" + nukta, "Ω" U+2126 to "ω", U+037E to
    ";"); and the first and second characters of the canonical compositions (Hangul's are
    algorithmic: `_starts_composition`, `_ends_composition`). From this Python's unicodedata:
    one pass over 130,000 code points, about 25 ms, on the first search."""
    bare, first, second = set(), set(), set()
    for start, stop in _DECOMPOSED_RANGES:
        for code in range(start, stop):
            char = chr(code)
            parts = unicodedata.decomposition(char)
            if not parts or parts[0] == "<":  # none, or a compatibility one (NFC keeps the character)
                continue
            if unicodedata.normalize("NFC", char) != char:
                bare.update(part for part in fold(char) if part != char)
            elif len(pair := parts.split()) == 2:
                first.add(chr(int(pair[0], 16)))
                second.add(chr(int(pair[1], 16)))
    return frozenset(bare), frozenset(first), frozenset(second)


def _hangul(char: str) -> bool:
    return "\uac00" <= char <= "\ud7a3"


def _starts_composition(char: str) -> bool:
    """Whether `char` composes with a character after it (NFC): "e" + U+0301, a leading jamo
    with a vowel, a syllable without final with a final jamo."""
    if "\u1100" <= char <= "\u1112" or (_hangul(char) and (ord(char) - 0xAC00) % 28 == 0):
        return True
    return char in _composition_tables()[1]


def _ends_composition(char: str) -> bool:
    """Whether `char` composes with a character before it (NFC): combining marks, vowel and
    final jamo."""
    return "\u1161" <= char <= "\u11c2" or char in _composition_tables()[2]


def inert(char: str) -> bool:
    """True when a text whose fold holds `char` holds `char` itself (or its other ASCII case):
    nothing else folds into it, it has no decomposition, no other character's decomposition
    leaves it bare. Conservative: a few inert characters are called not inert, never the reverse."""
    if char in _composition_tables()[0]:
        return False
    if char.isascii():
        return char not in _FOLDED_FROM_OTHERS
    return (char.lower() == char.upper() == char and unicodedata.category(char) not in _MARKS
            and unicodedata.normalize("NFD", char) == char)


def match(column: str, query: str) -> tuple[str, tuple]:
    """The SQL condition, true where fold(`column`) holds fold(query), and its parameters in
    order (the LIKE pattern, ESCAPE '\\'; whether LIKE alone decides; the folded query; with
    Hangul in the query, a LIKE pattern per syllable's piece and the folded query again). %, _
    and \\ in `query` match themselves."""
    folded = fold(query)
    runs = ["".join(chars) for in_like, chars in groupby(folded, lambda c: inert(c) or _hangul(c)) if in_like]
    pattern = "%" + "%".join(run.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") for run in runs) + "%"
    # a literal match is a folded one unless its ends compose with the text around them
    alone = runs == [folded] and not _ends_composition(folded[0]) and not _starts_composition(folded[-1])
    condition = f"{column} LIKE ? ESCAPE '\\' AND (? OR {CONTAINS}(CAST({column} AS BLOB), ?))"
    pieces = sorted({_piece(char) for char in folded if _hangul(char)})
    if not pieces:
        return f"({condition})", (pattern, alone, folded)
    # AND/OR, not CASE: inside a CASE, CONTAINS ran on every row LIKE passed ("서울": 70 ms, not 52)
    held = " OR ".join(f"{column} LIKE ?" for _ in pieces)
    return (f"({condition} OR ({held}) AND {CONTAINS}(CAST({column} AS BLOB), ?))",
            (pattern, alone, folded, *(f"%{piece}%" for piece in pieces), folded))


def _piece(syllable: str) -> str:
    """The jamo that a text holding `syllable` decomposed must hold as it is: its final (a
    syllable with one may be stored as the syllable without it + the final), else its vowel
    (leading jamo + vowel). Unicode §3.12 (Hangul syllable decomposition)."""
    index = ord(syllable) - 0xAC00
    final = index % 28
    return chr(0x11A7 + final) if final else chr(0x1161 + index // 28 % 21)


def _contains(data: bytes | None, folded_query: str) -> bool:
    """Whether the TEXT `data` (passed as a BLOB: a damaged byte made the call raise "user-defined
    function raised exception", re-trial) holds `folded_query` once folded."""
    return data is not None and folded_query in fold(data.decode("utf-8", errors="replace"))


def register(conn: sqlite3.Connection) -> None:
    """Make CONTAINS callable in `conn`'s SQL. Raises sqlite3.NotSupportedError on an SQLite
    older than 3.8.3 (no deterministic functions)."""
    conn.create_function(CONTAINS, 2, _contains, deterministic=True)
