"""Chunking on structure: sections start chunks, code fences stay whole, overlap repeats the tail
of the previous chunk, and the chunks' own spans give the document back exactly."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.chunking import chunk_document


def words(text: str) -> int:
    return len(text.split())


def section(title: str, lines: int, level: int = 2) -> str:
    body = "\n".join(f"{title} fact {i} is stated in seven words" for i in range(lines))
    return f"{'#' * level} {title}\n\n{body}\n\n"


DOC = "# Manual\n\n" + section("Install", 3) + section("Usage", 30) + (
    "```python\nfor i in range(3):\n    print(i)\n\n    print('blank line inside the fence')\n```\n\n"
) + section("Limits", 2)


def test_own_spans_tile_the_document_and_ids_count_from_one():
    chunks = chunk_document(DOC, words, max_tokens=40, overlap_tokens=8)
    assert "".join(c.own_text for c in chunks) == DOC
    assert [c.id for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(a.end == b.start for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(c.tokens == words(c.text) for c in chunks)


def test_headings_start_chunks_and_name_their_section_path():
    chunks = chunk_document(DOC, words, max_tokens=40, overlap_tokens=8)
    starts = {c.own_text.splitlines()[0]: c.heading for c in chunks}
    assert starts["## Usage"] == "Manual > Usage"
    assert starts["## Limits"] == "Manual > Limits"
    assert chunks[0].heading == "Manual" and chunks[0].own_text.startswith("# Manual\n\n## Install")


def test_long_sections_split_at_lines_within_the_limit_with_overlap():
    chunks = chunk_document(DOC, words, max_tokens=40, overlap_tokens=8)
    usage = [c for c in chunks if c.heading == "Manual > Usage"]
    assert len(usage) >= 5
    for previous, chunk in zip(usage, usage[1:], strict=False):
        lead = chunk.text[: chunk.start - chunk.lead_start]
        assert lead and previous.own_text.rstrip("\n").endswith(lead.rstrip("\n"))
        assert words(lead) >= 8 and chunk.text.startswith("Usage fact")
    assert all(words(c.own_text) <= 40 + 2 for c in chunks)  # + a heading carried with its text


def test_a_chunk_that_opens_a_section_has_no_lead_in():
    chunks = chunk_document(DOC, words, max_tokens=40, overlap_tokens=8)
    for c in chunks:
        if c.own_text.startswith("#"):
            assert c.lead_start == c.start


def test_code_fence_with_a_blank_line_stays_in_one_chunk():
    chunks = chunk_document(DOC, words, max_tokens=40, overlap_tokens=8)
    holding = [c for c in chunks if "for i in range(3)" in c.own_text]
    assert len(holding) == 1 and "blank line inside the fence')\n```" in holding[0].own_text


def test_setext_headings_and_pages():
    text = "Guide\n=====\n\nfirst page text\n\nSteps\n-----\n\nsecond page text\n"
    pages = (0, text.index("second"))
    chunks = chunk_document(text, words, max_tokens=16, overlap_tokens=0, page_starts=pages)
    assert [c.heading for c in chunks] == ["Guide", "Guide > Steps"]
    assert chunks[0].page == 1 and chunks[-1].last_page == 2


def test_pdf_like_text_without_blank_lines_is_cut_at_lines_and_cites_pages():
    pages = ["\n".join(f"page {p} line {i} holds some plain words" for i in range(20)) for p in range(1, 4)]
    text = "\n\n".join(pages)
    starts = (0, len(pages[0]) + 2, len(pages[0]) + len(pages[1]) + 4)
    chunks = chunk_document(text, words, max_tokens=50, overlap_tokens=7, page_starts=starts)
    assert "".join(c.own_text for c in chunks) == text
    for c in chunks:
        first_line = c.own_text.split("\n", 1)[0]
        assert first_line.startswith(f"page {c.page} line")
    assert chunks[-1].last_page == 3


def test_one_overlong_line_is_cut_at_characters():
    text = "word " * 500
    chunks = chunk_document(text, words, max_tokens=64, overlap_tokens=0)
    assert "".join(c.own_text for c in chunks) == text
    assert len(chunks) >= 8 and all(c.tokens <= 64 + 2 for c in chunks)


def test_blank_text_gives_no_chunks_and_bad_sizes_raise():
    assert chunk_document("\n  \n", words) == []
    with pytest.raises(ValueError):
        chunk_document("x", words, max_tokens=8)
    with pytest.raises(ValueError):
        chunk_document("x", words, max_tokens=64, overlap_tokens=32)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["# H\n", "## Sub\n", "text line here\n", "\n", "```\n", "Title\n", "===\n",
                                 "long " * 30 + "\n"]), max_size=60))
def test_any_markdown_tiles_exactly(parts):
    text = "".join(parts)
    chunks = chunk_document(text, words, max_tokens=24, overlap_tokens=4)
    assert "".join(c.own_text for c in chunks) == (text if text.strip() else "")
    assert all(c.text.endswith(c.own_text) and c.lead_start <= c.start < c.end for c in chunks)
