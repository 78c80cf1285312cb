"""Search across chats (app.core.store_search through Store.list_conversations): case-insensitive
in every script, and the LIKE prefilter never loses a match."""

import sys

import pytest

from app.core.conversation import Message, Role
from app.core.store import Store
from app.core.store_search import fold, inert, match

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
    folded text comes from that character (or its other ASCII case) in the text, and folding
    twice changes nothing."""
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        folded = char.casefold()
        assert folded.casefold() == folded, hex(code)
        for part in folded:
            if inert(part) and part != char:
                assert char.isascii() and part.isascii(), (hex(code), part)


@pytest.mark.parametrize(("query", "pattern", "exact"), [
    ("서울", "%서울%", True), ("100%", "%100\\%%", True), ("STRASSE", "%r%e%", False),
    ("ÜBER", "%ber%", False), ("ß", "%%", False), ("a_b", "%\\_b%", False)])
def test_the_like_pattern_keeps_the_inert_runs_in_order(query, pattern, exact):
    condition, (like, alone, folded) = match("content", query)
    assert (like, alone, folded) == (pattern, exact, fold(query))
    assert condition.count("?") == 3


def test_fold_is_casefold():
    assert fold("Straße ÜBER") == "strasse über"
    assert fold("ABC") == "abc"


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
