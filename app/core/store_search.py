"""Search across chats as users of other chat apps expect it: a substring, case-insensitive in
every script ("über" finds "ÜBER", "CAFÉ" finds "café", "strasse" finds "Straße").

Both sides are compared after Python's str.casefold (full Unicode case folding). SQLite's LIKE
folds ASCII letters only, and lower()/upper() need the ICU extension that Python's sqlite3 does
not ship, so a text is matched in two steps (`match`):

1. LIKE (in C) with the query's *inert* runs in order: characters no other character folds
   into, apart from ASCII case, which LIKE ignores (Hangul, CJK, digits, punctuation, 14 of
   the 26 ASCII letters; not "s", which "ß" folds into, nor "é", which "É" does). Any text
   whose folded form holds the query holds these runs in that order, so no match is lost.
2. Only for rows that pass, and only when the query has a character that is not inert, the
   text is folded in Python (`CONTAINS`, registered on each connection by `register`).

A query of inert characters only (Hangul, digits, punctuation: "서울", "100%") is exactly the
LIKE search of before. Measured with tests/benchmarks/search_chats.py (2-core CPU; 2,000
chats of ten messages, 1,500-character Korean answers): "서울" 53 ms (48 before), "zzz" 18 ms
(17), "strasse" 70 ms with every chat a hit (none found before); folding every row in Python
instead took 120 ms for "zzz", and a stored folded column doubled the file for no gain.
Text stored decomposed (letter + combining accent) is not composed first: a precomposed query
does not find it, as before.
"""

import sqlite3
import unicodedata
from itertools import groupby

CONTAINS = "headroom_folded_contains"
"""SQL: headroom_folded_contains(text, folded_query) → 1 when fold(text) holds folded_query."""

_FOLDED_FROM_OTHERS = frozenset("afhijklnstwy")
"""The ASCII letters that a non-ASCII character folds into ("ß" → "ss", "ﬁ" → "fi", Kelvin
sign → "k"); tests/core/test_store_search.py checks this against every code point."""

_MARKS = ("Mn", "Mc", "Me", "Lm")  # caseless, yet some fold results hold them ("ǰ" → "j" + caron)


def fold(text: str) -> str:
    """`text` for caseless comparison: str.casefold (ß → ss, Σ/σ/ς → σ). ASCII text takes the
    fast path (casefold is lower() there)."""
    return text.lower() if text.isascii() else text.casefold()


def inert(char: str) -> bool:
    """True when only `char` itself (or its other ASCII case) folds into a string holding it,
    so a folded text holds `char` only where the text has it too. Conservative: a few inert
    characters are called not inert, never the reverse."""
    if char.isascii():
        return char not in _FOLDED_FROM_OTHERS
    return char.lower() == char.upper() == char and unicodedata.category(char) not in _MARKS


def match(column: str, query: str) -> tuple[str, tuple[str, bool, str]]:
    """The SQL condition, true where fold(`column`) holds fold(query), and its three parameters
    in order (the LIKE pattern, ESCAPE '\\'; whether LIKE alone decides; the folded query).
    %, _ and \\ in `query` match themselves."""
    folded = fold(query)
    runs = ["".join(chars) for is_inert, chars in groupby(folded, inert) if is_inert]
    pattern = "%" + "%".join(run.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") for run in runs) + "%"
    condition = f"({column} LIKE ? ESCAPE '\\' AND (? OR {CONTAINS}({column}, ?)))"
    return condition, (pattern, runs == [folded], folded)


def _contains(text: str | None, folded_query: str) -> bool:
    return text is not None and folded_query in fold(text)


def register(conn: sqlite3.Connection) -> None:
    """Make CONTAINS callable in `conn`'s SQL. Raises sqlite3.NotSupportedError on an SQLite
    older than 3.8.3 (no deterministic functions)."""
    conn.create_function(CONTAINS, 2, _contains, deterministic=True)
