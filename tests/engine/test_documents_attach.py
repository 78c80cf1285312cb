"""The chat flow's entry point: a message plus attachments in, the text to send and its citations
out, within the budget; several attachments share it."""

import pytest

from app.engine.documents.attach import (
    WRAPPER_TOKENS,
    compose_message,
    describe_fit,
    prepare_attachment,
)
from app.engine.documents.fit import RETRIEVED, WHOLE
from app.engine.documents.source import ExtractedDocument
from tests.helpers.pdf_files import write_text_pdf


def words(text: str) -> int:
    return len(text.split())


def long_pdf_text(pages: int = 30) -> tuple[str, tuple[int, ...]]:
    texts, starts, offset = [], [], 0
    for p in range(1, pages + 1):
        lines = [f"Page {p} routine entry {i}: valves checked, gauges read, nothing unusual." for i in range(12)]
        if p == 23:
            lines[5] = "The spare key for the Thornbury pump house hangs behind the fuse box."
        text = "\n".join(lines)
        starts.append(offset)
        texts.append(text)
        offset += len(text) + 2
    return "\n\n".join(texts), tuple(starts)


def test_no_attachment_sends_the_message_unchanged():
    prepared = compose_message("hello", [], 500, words)
    assert (prepared.text, prepared.fits, prepared.tokens, prepared.citations) == ("hello", (), 0, ())


def test_small_note_goes_whole_and_the_question_follows():
    note = prepare_attachment(ExtractedDocument("note.txt", "text", "Gate code is 2291."), words)
    prepared = compose_message("What is the gate code?", [note], 500, words)
    assert prepared.text == ('Attached document "note.txt" (whole):\nGate code is 2291.\n\n'
                             "Question: What is the gate code?")
    assert prepared.fits[0].mode == WHOLE and prepared.citations == ()
    assert describe_fit(prepared.fits[0]) == "note.txt: whole file, 8 tokens"


def test_long_pdf_is_retrieved_and_cites_the_page_with_the_fact():
    text, starts = long_pdf_text()
    doc = ExtractedDocument("log.pdf", "pdf", text, starts)
    attachment = prepare_attachment(doc, words, max_tokens=64, overlap_tokens=8)
    prepared = compose_message("Where is the spare key for the Thornbury pump house?", [attachment], 300, words,
                               recent_turns=["We talked about the pump house."])
    fit = prepared.fits[0]
    assert fit.mode == RETRIEVED and prepared.retrieved
    assert prepared.tokens <= 300 - WRAPPER_TOKENS < attachment.whole_tokens
    assert "behind the fuse box" in prepared.text
    assert prepared.text.endswith("\n\nQuestion: Where is the spare key for the Thornbury pump house?")
    assert 23 in {c.page for c in prepared.citations}
    assert describe_fit(fit).startswith(f"log.pdf: too large for this turn ({attachment.whole_tokens:,} tokens): ")


def test_two_attachments_share_the_budget_small_one_whole(tmp_path):
    from app.engine.documents.extract import extract_file

    text, _ = long_pdf_text()
    pdf = extract_file(write_text_pdf(tmp_path / "log.pdf", [t.splitlines() for t in text.split("\n\n")]))
    big = prepare_attachment(pdf, words, max_tokens=64, overlap_tokens=8)
    small = prepare_attachment(ExtractedDocument("note.txt", "text", "Thornbury staff: Ada and Bo."), words)
    prepared = compose_message("Thornbury spare key?", [big, small], 400, words)
    assert [f.mode for f in prepared.fits] == [RETRIEVED, WHOLE]  # order given is kept
    assert prepared.tokens <= 400 - WRAPPER_TOKENS
    assert prepared.text.index("log.pdf") < prepared.text.index("note.txt")
    assert "behind the fuse box" in prepared.text
    assert all(c.name == "log.pdf" for c in prepared.citations) and prepared.citations


def test_the_room_for_excerpts_is_shared_like_the_budget(tmp_path):
    text, starts = long_pdf_text()
    doc = ExtractedDocument("log.pdf", "pdf", text, starts)
    one = prepare_attachment(doc, words, max_tokens=64, overlap_tokens=8)
    two = prepare_attachment(ExtractedDocument("log2.pdf", "pdf", text, starts), words, max_tokens=64,
                             overlap_tokens=8)
    question = "Where is the spare key for the Thornbury pump house?"
    little = compose_message(question, [one], 2000, words, excerpt_tokens=200)
    more = compose_message(question, [one], 2000, words, excerpt_tokens=900)
    assert len(little.fits[0].chunks) < len(more.fits[0].chunks)
    assert little.tokens <= 200 - WRAPPER_TOKENS < more.tokens <= 900 - WRAPPER_TOKENS
    assert "behind the fuse box" in little.text and "behind the fuse box" in more.text
    both = compose_message(question, [one, two], 2000, words, excerpt_tokens=900)
    assert both.tokens <= 900 and all(f.chunks for f in both.fits)  # each got its share of the room
    assert all("behind the fuse box" in f.block for f in both.fits)


def test_negative_budget_raises():
    with pytest.raises(ValueError):
        compose_message("x", [], -1, words)


@pytest.mark.parametrize("budget", [0, 40, 120, 400, 5000])
def test_composed_tokens_counts_what_compose_message_gives_without_chunking(budget):
    """The context meter's estimate (before the message is written) against the real thing: equal
    for documents that go whole, an upper bound of at most the excerpt share for one retrieved."""
    from app.engine.documents.attach import composed_tokens

    text, starts = long_pdf_text(8)
    documents = [prepare_attachment(ExtractedDocument("note.txt", "text", "Gate code is 2291."), words),
                 prepare_attachment(ExtractedDocument("memo.md", "markdown", "Lunch at noon. " * 12), words),
                 prepare_attachment(ExtractedDocument("log.pdf", "pdf", text, starts), words)]
    for excerpts in (None, 60):
        prepared = compose_message("Where is the key?", documents, budget, words, excerpt_tokens=excerpts)
        estimate = composed_tokens([d.whole_tokens for d in documents], budget, excerpts)
        whole = sum(f.tokens for f in prepared.fits if f.mode == WHOLE)
        retrieved = [f for f in prepared.fits if f.mode != WHOLE]
        if not retrieved:
            assert estimate == prepared.tokens == whole
        else:
            assert prepared.tokens <= estimate <= whole + sum(f.budget_tokens for f in retrieved)
    assert composed_tokens([], 100) == 0
    with pytest.raises(ValueError):
        composed_tokens([5], -1)


@pytest.mark.parametrize("tiny", ["the", "x"])
def test_a_document_with_no_indexable_word_goes_whole_alone_and_beside_others(tiny):
    """New-user trial 11: a file holding only "the" (or "x") failed the whole answer, and the turn
    when it was one of several attachments. It fits whole, and the others go as they would."""
    word = prepare_attachment(ExtractedDocument(f"{tiny}.txt", "text", tiny), words)
    prepared = compose_message("What does the file say?", [word], 500, words)
    assert [f.mode for f in prepared.fits] == [WHOLE] and tiny in prepared.text
    note = prepare_attachment(ExtractedDocument("note.txt", "text", "Gate code is 2291."), words)
    prepared = compose_message("What does the file say?", [word, note], 500, words)
    assert [f.mode for f in prepared.fits] == [WHOLE, WHOLE] and "Gate code is 2291." in prepared.text
