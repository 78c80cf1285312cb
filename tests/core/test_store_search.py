"""Search across chats (app.core.store_search through Store.list_conversations): case-insensitive
in every script, and the LIKE prefilter never loses a match."""

import sys
import unicodedata

import pytest

from app.core.conversation import Message, Role
from app.core.store import Store
from app.core.store_search import _DECOMPOSED_RANGES, fold, inert, match

TRIAL = "Ünïcode Straße ÜBER café"  # new-user trial: `über`, `CAFÉ`, `STRASSE` did not find it


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "headroom.sqlite3") as s:
        yield s


def chat(store: Store, text: str, title: str = "") -> int:
    cid = store.create_conversation(title)
    store.append_message(cid, Message(Role.USER, text))
    return cid


def found(store: Store, query: str) -> list[int]:
    return [info.id for info in store.list_conversations(query)]


@pytest.mark.parametrize("query", ["über", "CAFÉ", "STRASSE", "strasse", "ÜBER", "straße", "café", "ünïcode",
                                   "ÜNÏCODE STRASSE", "sTrAßE üBeR"])
def test_search_ignores_case_in_every_script(store, query):
    cid = chat(store, TRIAL)
    chat(store, "nothing of the kind")
    assert found(store, query) == [cid]


def test_titles_fold_case_too_and_greek_final_sigma_matches(store):
    greek = chat(store, "λόγος", title="ΟΔΥΣΣΕΥΣ")
    korean = chat(store, "서울 여행 계획", title="Über Seoul")
    assert found(store, "οδυσσευς") == [greek]  # final ς and Σ fold alike
    assert found(store, "ΟΔΥΣΣΕΥΣ") == [greek]
    assert found(store, "ΛΌΓΟΣ") == [greek]
    assert found(store, "über seoul") == [korean]
    assert found(store, "서울") == [korean]
    assert found(store, "여행 계") == [korean]
    assert found(store, "서울여행") == []


def test_turkish_dotted_capital_i_matches_plain_i_both_ways(store):
    """New-user trial: "istanbul" did not find a chat titled "…İstanbul…" (casefold makes "İ" "i" +
    U+0307 combining dot above) while "İSTANBUL" did; nor did "İSTANBUL" find "istanbul"."""
    titled = chat(store, "plans for the trip", title="Trip to İstanbul")
    plain = chat(store, "istanbul in spring")
    lowered = chat(store, "İzmir".lower())  # str.lower() keeps the dot: "i" + U+0307 + "zmir"
    chat(store, "nothing of the kind")
    for query in ("istanbul", "İSTANBUL", "İstanbul", "ISTANBUL", "i\u0307stanbul", nfd("İSTANBUL")):
        assert found(store, query) == [plain, titled], query
    assert found(store, "izmir") == found(store, "İZMİR") == found(store, "İzmir") == [lowered]
    assert found(store, "\u0131stanbul") == [plain, titled]  # dotless ı too (re-trial)
    assert found(store, "stanbul") == [plain, titled] and found(store, "\u0307") == []  # no bare dot left


def test_turkish_dotless_i_matches_every_i(store):
    """New-user re-trial: "ığdır" did not find "IĞDIR", "IŞIK" not "ışık", "diyarbakır" not "DİYARBAKIR":
    casefold keeps "ı" and makes "I" "i". Search engines match ı, i, I and İ as one letter; so does fold."""
    igdir = chat(store, "IĞDIR")
    isik = chat(store, "ışık", title="Işık")
    diyarbakir = chat(store, "DİYARBAKIR")
    chat(store, "nothing of the kind")
    assert found(store, "ığdır") == found(store, "iğdir") == found(store, "IĞDIR") == [igdir]
    assert found(store, "IŞIK") == found(store, "ışık") == found(store, "işik") == [isik]
    assert found(store, "diyarbakır") == found(store, "DIYARBAKIR") == found(store, "diyarbakir") == [diyarbakir]
    assert found(store, "ır") == [diyarbakir, igdir]


def test_literal_characters_still_match_themselves_only(store):
    percent = chat(store, "Is 100% of the REFUND taxable?")
    quoted = chat(store, "He said \"don't\" — it's 'fine'")
    slash = chat(store, r"C:\Users\ann and a_b")
    regex = chat(store, "match ^a.*b$ [x] (y)+ {2} | z? ÄÖ\\d")
    assert found(store, "100%") == [percent]
    assert found(store, "1%") == []  # % is literal, not a wildcard
    assert found(store, "a_i") == []  # so is _
    assert found(store, "a_B") == [slash]
    assert found(store, "\"DON'T\"") == [quoted]
    assert found(store, "it's 'FINE'") == [quoted]
    assert found(store, r"c:\users\ANN") == [slash]
    assert found(store, "\\") == [regex, slash]
    assert found(store, "^A.*B$ [X] (Y)+ {2} | Z? äö\\D") == [regex]
    assert found(store, ".*") == [regex]


def test_a_read_only_copy_and_a_session_only_store_search_alike(tmp_path):
    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        cid = chat(store, TRIAL)
    with Store(path, read_only=True) as copy:
        assert found(copy, "strasse") == [cid]
    with Store.session_only(path) as memory:
        cid = chat(memory, TRIAL)
        assert found(memory, "über") == [cid]


@pytest.mark.skipif(sys.maxunicode < 0x10FFFF, reason="needs every code point")
def test_inert_characters_come_only_from_themselves_in_every_fold():
    """The prefilter's soundness, against this Python's Unicode tables: an inert character in a
    folded text comes from that character (or its other ASCII case) in the text, never from a
    decomposition; a Hangul syllable comes from itself, or from jamo; and folding twice changes
    nothing."""
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        folded = fold(char)
        assert fold(folded) == folded, hex(code)
        for part in folded:
            if inert(part) and part != char:
                assert char.isascii() and part.isascii(), (hex(code), part)
            assert not ("\uac00" <= part <= "\ud7a3") or part == char, hex(code)
        if inert(char):
            assert unicodedata.normalize("NFD", char) == char, hex(code)
        decomposition = unicodedata.decomposition(char)
        if decomposition and decomposition[0] != "<":  # the ranges _composition_tables reads
            assert any(start <= code < stop for start, stop in _DECOMPOSED_RANGES), hex(code)
        if not ("\u1100" <= char <= "\u11ff" or "\uac00" <= char <= "\ud7a3"):  # jamo come only as themselves
            pieces = unicodedata.normalize("NFD", unicodedata.normalize("NFD", char).casefold())
            assert not any("\u1100" <= piece <= "\u11ff" for piece in pieces), hex(code)


@pytest.mark.parametrize(("query", "pattern", "exact"), [
    ("서울", "%서울%", True), ("100%", "%100\\%%", True), ("STRASSE", "%r%e%", False),
    ("ÜBER", "%ber%", False), ("ß", "%%", False), ("a_b", "%\\_b%", False),
    ("서", "%서%", False),  # a syllable without final: "서" + final jamo is another syllable
    ("cafe", "%c%e%", False),  # "e" + accent in the text is "é"
    ("\u8c48", "%%", False),  # the compatibility ideograph U+F900 is canonically this one
    ("\u1100\u1161\u11a8", "%각%", True),  # typed as jamo: the syllable
])
def test_the_like_pattern_keeps_the_inert_runs_in_order(query, pattern, exact):
    condition, (like, alone, folded, *again) = match("content", query)
    assert (like, alone, folded) == (pattern, exact, fold(query))
    assert condition.count("?") == 3 + len(again) and again[-1:] in ([], [folded])


def test_a_syllable_stored_decomposed_is_looked_for_by_the_jamo_it_must_hold():
    """"서" decomposed holds its vowel ㅓ; "울" holds its final ㄹ, after "우" or after ㅇ + ㅜ."""
    condition, (*_, pieces_of_seoul, final_of_ul, folded) = match("content", "서울")
    assert (pieces_of_seoul, final_of_ul, folded) == ("%\u1165%", "%\u11af%", "서울")


def test_fold_is_casefold():
    assert fold("Straße ÜBER") == "strasse über"
    assert fold("ABC") == "abc"
    assert fold("İSTANBUL") == fold("İstanbul") == fold("istanbul") == fold(nfd("İstanbul")) == "istanbul"
    assert fold("ığdır") == fold("IĞDIR") == "iğdir" and fold("ı\u0307") == "i"


def test_fold_composes_what_was_decomposed():
    assert fold(nfd("CAFÉ")) == fold("café") == "café"
    assert fold(nfd("서울")) == "서울" and fold("\uf900") == "\u8c48"


def nfd(text: str) -> str:
    """`text` as macOS file names and some IMEs store it: "e" + U+0301, Hangul as conjoining jamo."""
    return unicodedata.normalize("NFD", text)


def test_search_is_blind_to_how_a_text_was_encoded(store):
    """"é" stored as "e" + U+0301 was not found by "é", nor Hangul stored as jamo by syllables."""
    decomposed = chat(store, nfd("Un café à Paris"))
    composed = chat(store, "Un CAFÉ à Paris")
    assert nfd("café") != "café"
    for query in ("café", nfd("café"), "CAFÉ", nfd("CAFÉ À")):
        assert found(store, query) == [composed, decomposed], query
    assert found(store, "cafe") == []  # the same answer for both: "cafe" is not in "café"
    jamo = chat(store, nfd("서울 여행 계획"))
    syllables = chat(store, "서울에서 만나요")
    mixed = chat(store, "서" + nfd("울") + " 지하철")  # half typed, half pasted
    for query in ("서울", nfd("서울")):
        assert found(store, query) == [mixed, syllables, jamo], query
    assert found(store, "계") == [jamo] and found(store, "여행 계획") == [jamo]
    assert found(store, "서우") == []  # "서우" + final ㄹ is "서울": not there in any of them
    compatibility = chat(store, "\uf900 and \u2126")  # CJK compatibility ideograph, Ohm sign
    assert found(store, "\u8c48") == [compatibility] and found(store, "ω") == [compatibility]


def test_only_the_branch_shown_is_searched(store):
    """New-user trial: a question edited away still matched, and its chat opened with no match
    in sight and no hint. What search finds is what the chat shows (as its count and exports)."""
    cid = store.create_conversation("Trip")
    first = Message(Role.USER, "Tell me about PARIS")
    store.append_message(cid, first)
    store.append_message(cid, Message(Role.ASSISTANT, "Paris is the capital of France."))
    edited = Message(Role.USER, "Tell me about Lyon")
    store.append_message(cid, edited, parent_id=None)  # Edit: a new version of the first message
    store.append_message(cid, Message(Role.ASSISTANT, "Lyon lies on the Rhône."))
    other = chat(store, "Paris in spring")
    assert found(store, "paris") == [other]  # only the edited-away branch held it
    assert found(store, "lyon") == [cid]
    assert found(store, "RHÔNE") == [cid]
    store.set_active_message(cid, first.id)  # back to the first version: found again
    assert set(found(store, "paris")) == {other, cid}
    assert found(store, "lyon") == []
    store.append_message(cid, Message(Role.USER, "And Lyon?"))  # both branches match now,
    assert found(store, "lyon") == [cid]  # the version not shown first (found first, then checked)
    assert [info.message_count for info in store.list_conversations("lyon")] == [3]
    store.rename_conversation(other, "Lyon or Paris")
    assert found(store, "lyon") == [other, cid]  # a title counts whatever the branch


def test_a_message_with_damaged_bytes_is_read_and_searched(store):
    """New-user re-trial: 4 bytes of a message's text overwritten (0xAB, not UTF-8) passed the page
    check and made search raise "user-defined function raised exception"; reading the chat raised too.
    A damaged byte reads as U+FFFD, and the rest of the text is found."""
    cid = chat(store, "question 40-0 about Straße")
    other = chat(store, "nothing of the kind")
    store._conn.execute("UPDATE messages SET content = CAST(X'7175657374696F6E20AB2D30206162F6757420537472612E' "
                        "AS TEXT) WHERE conversation_id = ?", (cid,))
    assert store.load_conversation(cid).conversation.messages[0].content == "question \ufffd-0 ab\ufffdut Stra."
    assert found(store, "question") == [cid] and found(store, "QUESTION") == [cid]
    assert found(store, "kind") == [other]
