"""The document block's text, its citations, and the share of the prompt budget it may take."""

import pytest

from app.core.chunking import Chunk
from app.core.document_prompt import (
    DOCUMENT_SHARE,
    EXCERPTS_MAX_TOKENS,
    EXCERPTS_MIN_TOKENS,
    Citation,
    cite,
    document_budget,
    excerpt_budget,
    excerpts_block,
    whole_block,
    with_document,
)
from app.core.history import TokenBudget


def chunk(i: int, text: str, lead: str = "", heading: str = "", page: int | None = None) -> Chunk:
    start = 100 * i
    return Chunk(i, lead + text, start - len(lead), start, start + len(text), heading, page, page, 0)


def test_whole_block_names_the_file_and_pages():
    assert whole_block("a.txt", "  body\n") == 'Attached document "a.txt" (whole):\nbody'
    assert whole_block("r.pdf", "x", pages=3) == 'Attached document "r.pdf" (whole, 3 pages):\nx'


def test_excerpts_print_in_document_order_with_citation_lines_and_one_copy_of_overlap():
    c3 = chunk(3, "third text.", heading="Install > Linux", page=12)
    c4 = chunk(4, "fourth text.", lead="third text. ", heading="Install > Linux", page=12)
    c9 = chunk(9, "ninth text.", lead="eighth tail. ")
    assert excerpts_block("m.pdf", [c9, c4, c3], 20) == (
        'Attached document "m.pdf", excerpts 3, 4, 9 of 20 (chosen for this question):\n'
        "[3] Install > Linux (page 12)\nthird text.\n"
        "[4] Install > Linux (page 12)\nfourth text.\n"
        "[9]\neighth tail. ninth text."
    )
    assert excerpts_block("m.pdf", [c3], 20).startswith('Attached document "m.pdf", excerpt 3 of 20')


def test_citation_label_leaves_out_what_is_unknown():
    assert cite("m.pdf", chunk(3, "t", heading="Install", page=12)).label == "m.pdf #3, Install, page 12"
    assert Citation("n.md", 5, "", None, 0, 1).label == "n.md #5"


def test_message_follows_the_blocks_as_the_question():
    assert with_document("What is x?", []) == "What is x?"
    assert with_document("What is x?", ["B1", "B2"]) == "B1\n\nB2\n\nQuestion: What is x?"
    assert with_document("  ", ["B1"]) == "B1"


def test_document_budget_takes_the_room_left_capped_by_share_and_kv():
    budget = TokenBudget(8192, 1024, 512)  # SmolLM2-135M: prompt budget 6656
    assert budget.prompt_tokens == 6656
    assert document_budget(budget, 100) == int(6656 * DOCUMENT_SHARE) == 4992
    assert document_budget(budget, 3000) == 6656 - 3000
    assert document_budget(budget, 100, kv_tokens=1200) == 1200
    assert document_budget(budget, 7000) == 0
    assert document_budget(TokenBudget(2048, 512, 256), 80, share=1.0) == 2048 - 512 - 256 - 80
    with pytest.raises(ValueError):
        document_budget(budget, 100, share=0)


def test_excerpts_take_what_the_window_leaves_within_their_bounds():
    assert (EXCERPTS_MIN_TOKENS, EXCERPTS_MAX_TOKENS) == (1024, 2048)
    assert excerpt_budget(4992, 6500) == 2048  # a new chat on SmolLM2: the cap
    assert excerpt_budget(4992, 1500) == 1500  # a longer chat: only what no turn needs
    assert excerpt_budget(4992, 40) == 1024  # a full window: older turns leave for the least
    assert excerpt_budget(4992, -40) == 1024
    assert excerpt_budget(300, 6500) == 300  # never past the document's own budget
    assert excerpt_budget(4992, 6500, high=10_000) == 4992 and excerpt_budget(4992, 0, low=0) == 0
