"""Cyrillic text in an older single-byte encoding: Windows-1251 (old Notepad's "ANSI" on a
Russian, Ukrainian, Bulgarian or Serbian Windows) or KOI8-R (older Unix mail and web pages).

Every byte over 0x7F is a letter or a sign in both code pages, so decoding alone never fails and
proves nothing: Western cp1252 text read as cp1251 turns "café" into "cafй", Hebrew cp1255 reads
as lower-case Cyrillic words in cp1251 ("щмен" for "שלום") and as capitals in KOI8-R. A reading is
taken only when it looks like running text in a Cyrillic script:

- letters: at least CYRILLIC_WORDS of its Cyrillic letters stand in words of two or more letters
  that are Cyrillic throughout and written in small letters, capitals or with a capital first
  (Western accents read as Cyrillic sit inside Latin words: "cafй"; Korean, Chinese and Japanese
  bytes give words of mixed case: "ѕИіз");
- case: at least half of its Cyrillic letters are small ones, as in running text. This tells the
  two code pages apart (KOI8-R keeps its small letters where Windows-1251 has capitals: a KOI8-R
  file read as cp1251 is nearly all capitals, "рТЙЧЕФ") and refuses a file written all in capitals;
- vowels: VOWEL_SHARE of its Cyrillic letters are vowels, as in Russian (≈ 0.43), Ukrainian,
  Bulgarian and Serbian (0.35–0.45), and at most RARE_SHARE are the rare й, ш, щ, ъ (Hebrew read
  as cp1251 has few vowels and many of these: ש → щ, ת → ъ, י → й; Greek read as cp1251 has almost
  no vowels; Greek capitals read as KOI8-R have too many).

The thresholds come from measured samples (tests/engine/test_documents_extract.py): Russian,
Ukrainian, Bulgarian and Serbian pass in the right code page; Korean cp949, Western cp1252,
Central European cp1250, Turkish, Greek, Hebrew, Arabic, Thai, Chinese and Japanese do not.
Bulgarian dense in ъ (a vowel there, rare in Russian) may be refused.
KOI8-U (Ukrainian letters in KOI8) is not told: its і, ї, є read as box-drawing signs in KOI8-R,
and the file is refused rather than garbled. No torch, no Qt.
"""

from __future__ import annotations

import re

CODECS = ("cp1251", "koi8_r")  # in order of preference; Python codec names
CYRILLIC_WORDS = 0.8  # share of Cyrillic letters that stand in well-formed Cyrillic words
SMALL_SHARE = 0.5  # share of Cyrillic letters that are small letters, at least
VOWEL_SHARE = (0.3, 0.55)  # share of Cyrillic letters that are vowels, from–to
RARE_SHARE = 0.1  # share of Cyrillic letters that are й, ш, щ or ъ, at most
_VOWELS = frozenset("аеёиоуыэюяіїєАЕЁИОУЫЭЮЯІЇЄ")
_RARE = frozenset("йшщъЙШЩЪ")
_WORD = re.compile(r"[^\W\d_]+")  # a run of letters


def cyrillic_encoding(data: bytes) -> str | None:
    """"cp1251" or "koi8_r" when `data` (text that is not UTF-8, no BOM) reads as running Cyrillic
    text in it (see the module), else None. The caller bounds `data` (the first 64 KiB)."""
    for codec in CODECS:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:  # cp1251 leaves 0x98 undefined
            continue
        if _reads_as_cyrillic(text):
            return codec
    return None


def _reads_as_cyrillic(text: str) -> bool:
    letters = [c for c in text if ord(c) > 0x7F and c.isalpha()]
    cyrillic = [c for c in letters if _is_cyrillic(c)]
    if not cyrillic or len(cyrillic) < CYRILLIC_WORDS * len(letters):
        return False
    n = len(cyrillic)
    in_words = sum(len(w) for w in _WORD.findall(text)
                   if len(w) >= 2 and all(_is_cyrillic(c) for c in w) and (w.islower() or w.isupper() or w.istitle()))
    small = sum(1 for c in cyrillic if c.islower())
    vowels = sum(1 for c in cyrillic if c in _VOWELS)
    rare = sum(1 for c in cyrillic if c in _RARE)
    return (in_words >= CYRILLIC_WORDS * n and small >= SMALL_SHARE * n
            and VOWEL_SHARE[0] * n <= vowels <= VOWEL_SHARE[1] * n and rare <= RARE_SHARE * n)


def _is_cyrillic(c: str) -> bool:
    return "\u0400" <= c <= "\u04ff"
