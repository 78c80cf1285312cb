"""BM25 ranking and fitting a document into a budget: whole when it fits, else the chunks that
hold the asked fact, cited, never over the budget."""

import pytest

from app.core.chunking import chunk_document
from app.core.document_prompt import excerpts_block
from app.engine.documents.fit import RETRIEVED, WHOLE, fit_document
from app.engine.documents.rank import bm25_scores, query_terms, terms


def words(text: str) -> int:
    return len(text.split())


FILLER = ("The {0} chapter describes general procedures that every operator follows daily, "
          "including inspection, cleaning and logging of routine observations.")
FACTS = {
    7: "The coolant pump on line seven must be replaced every 1400 operating hours.",
    19: "Badge readers at the north gate reject cards issued before March 2019.",
    31: "The backup generator fuel tank holds 870 litres of diesel.",
}


def manual(sections: int = 40) -> str:
    parts = []
    for i in range(sections):
        body = " ".join(FILLER.format(f"{i}th") for _ in range(3))
        parts.append(f"## Section {i}\n\n{body}\n\n{FACTS.get(i, '')}\n")
    return "# Plant manual\n\n" + "\n".join(parts)


def test_terms_split_identifiers_drop_stopwords_and_bigram_korean():
    assert terms("The max_new_tokens of KVCache") == ["max_new_tokens", "max", "new", "tokens", "kvcache",
                                                      "kv", "cache"]
    assert {"캐시", "시가"} <= set(terms("캐시가 부족합니다"))
    assert "캐시" in terms("KV 캐시를 줄이려면")  # same bigram despite another particle
    assert query_terms("pump hours", ["generator"]) == ["pump", "hours", "pump", "hours", "generator"]


def test_bm25_ranks_the_chunk_with_the_fact_first():
    chunks = chunk_document(manual(), words, max_tokens=80, overlap_tokens=10)
    scores = bm25_scores(chunks, query_terms("How many litres does the generator fuel tank hold?"))
    best = chunks[max(range(len(chunks)), key=scores.__getitem__)]
    assert "870 litres" in best.text and best.heading == "Plant manual > Section 31"
    assert bm25_scores(chunks, ["nonexistentterm"]) == [0.0] * len(chunks)
    assert bm25_scores([], ["pump"]) == []


def test_small_document_goes_whole():
    text = "# Note\n\nThe pump needs service every 1400 hours.\n"
    chunks = chunk_document(text, words)
    fit = fit_document("note.md", chunks, 100, query_terms("pump?"), words)
    assert fit.mode == WHOLE and fit.block == 'Attached document "note.md" (whole):\n' + text.strip()
    assert fit.tokens == words(fit.block) <= 100 and fit.saved_tokens == 0
    assert [c.chunk_id for c in fit.citations] == [1]


@pytest.mark.parametrize(("question", "section", "fact"), [
    ("When must the coolant pump be replaced?", 7, "1400 operating hours"),
    ("Which cards do the badge readers at the north gate reject?", 19, "March 2019"),
    ("How many litres does the generator fuel tank hold?", 31, "870 litres"),
])
def test_large_document_is_retrieved_within_budget_with_the_fact_cited(question, section, fact):
    chunks = chunk_document(manual(), words, max_tokens=80, overlap_tokens=10)
    budget = 300
    fit = fit_document("manual.md", chunks, budget, query_terms(question), words)
    assert fit.mode == RETRIEVED and 0 < fit.tokens <= budget < fit.whole_tokens
    assert fact in fit.block
    assert any(c.heading == f"Plant manual > Section {section}" for c in fit.citations)
    assert [c.id for c in fit.chunks] == sorted(c.id for c in fit.chunks)
    assert fit.block == excerpts_block("manual.md", fit.chunks, len(chunks))
    assert fit.saved_tokens == fit.whole_tokens - fit.tokens > 1000


def test_the_hits_come_first_then_their_surroundings_fill_the_room_and_a_no_match_query_takes_the_start():
    """New-user trial: one chunk held the question's words and it was all that was sent (1 of
    118 excerpts) while the turn had room for dozens."""
    chunks = chunk_document(manual(), words, max_tokens=80, overlap_tokens=10)
    diesel = [c.id for c in chunks if "diesel" in c.text]
    assert len(diesel) == 1  # one chunk holds the word: it used to be all that was sent
    fit = fit_document("manual.md", chunks, 2000, query_terms("diesel"), words)
    ids = [c.id for c in fit.chunks]
    assert fit.mode == RETRIEVED and diesel[0] in ids and fit.tokens <= 2000
    assert len(ids) > 10 and ids == list(range(ids[0], ids[-1] + 1))  # one run around the hit
    nearest_left_out = min(abs(c.id - diesel[0]) for c in chunks if c.id not in ids)
    assert max(abs(i - diesel[0]) for i in ids) <= nearest_left_out  # nearest first, both sides
    assert 2000 - fit.tokens < max(c.tokens for c in chunks) + 10  # the room is used
    bounded = fit_document("manual.md", chunks, 2000, query_terms("diesel"), words, excerpt_tokens=500)
    assert diesel[0] in [c.id for c in bounded.chunks] and 300 < bounded.tokens <= 500
    small = fit_document("manual.md", chunks, 2000, query_terms("diesel"), words, excerpt_tokens=110)
    assert [c.id for c in small.chunks] == diesel  # room for one: the hit, not its context
    fit = fit_document("manual.md", chunks, 300, query_terms("zebra"), words)
    assert fit.chunks and fit.chunks[0].id == 1 and fit.tokens <= 300


def test_the_context_is_dropped_before_a_hit_when_the_count_runs_over():
    """The exact count of the block can exceed the sum of the parts (overlaps, joins): what is
    dropped then is the farthest context, never a chunk that matched."""
    chunks = chunk_document(manual(), words, max_tokens=80, overlap_tokens=10)
    counted = []

    def generous(text: str) -> int:  # counts every block tried 5 % over its words
        counted.append(text)
        return words(text) + (words(text) // 20 if text.startswith("Attached") else 0)

    fit = fit_document("manual.md", chunks, 1200, query_terms("diesel litres"), generous)
    hit = next(c.id for c in chunks if "diesel" in c.text)
    assert hit in [c.id for c in fit.chunks] and fit.tokens <= 1200
    assert len([t for t in counted if t.startswith("Attached")]) > 2  # some context was dropped


def test_a_long_paragraph_overlaps_at_sentences_and_adjacent_chunks_print_it_once():
    text = " ".join(f"Sentence {i} reports reading {i * 37} on gauge {i % 7}." for i in range(60))
    chunks = chunk_document(text, words, max_tokens=40, overlap_tokens=10)
    assert len(chunks) > 5 and all(c.lead_start < c.start for c in chunks[1:])
    second = chunks[1]
    lead = second.text[: second.start - second.lead_start].strip()
    assert lead.startswith("Sentence ") and lead.endswith(".") and words(lead) >= 10
    block = excerpts_block("m.md", chunks[:2], len(chunks))
    assert block.count(lead) == 1
    assert excerpts_block("m.md", [chunks[1]], len(chunks)).count(lead) == 1


def test_budget_too_small_for_any_chunk_sends_nothing():
    chunks = chunk_document(manual(), words, max_tokens=80, overlap_tokens=10)
    fit = fit_document("manual.md", chunks, 10, query_terms("pump"), words)
    assert (fit.mode, fit.chunks, fit.block, fit.tokens) == (RETRIEVED, (), "", 0)
    with pytest.raises(ValueError):
        fit_document("manual.md", chunks, -1, [], words)


def test_an_index_built_once_answers_like_a_fresh_one():
    from app.engine.documents.rank import ChunkIndex

    chunks = chunk_document(manual(), words, max_tokens=80, overlap_tokens=10)
    index = ChunkIndex(chunks)
    for question in ("coolant pump hours", "north gate badge", "zebra"):
        assert index.scores(query_terms(question)) == bm25_scores(chunks, query_terms(question))
    fit = fit_document("m.md", chunks, 300, query_terms("generator litres"), words, index=index)
    assert "870 litres" in fit.block
    assert ChunkIndex([]).scores(["pump"]) == []


@pytest.mark.parametrize("text", ["the", "x", "a the of", "!!!"])
def test_a_document_without_one_term_ranks_without_bm25s(text, recwarn):
    """New-user trial 11: a file holding only a stopword or one letter failed the whole answer
    (bm25s: "max() arg is an empty sequence", after a 0/0 warning). Its chunks score 0.0."""
    from app.engine.documents.rank import ChunkIndex

    chunks = chunk_document(text, words)
    assert ChunkIndex(chunks).scores(query_terms("What does the file say?")) == [0.0] * len(chunks)
    assert bm25_scores(chunks, ["file"]) == [0.0] * len(chunks)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    fit = fit_document("the.txt", chunks, 1, query_terms("file"), words)  # too small to go whole
    assert fit.mode == RETRIEVED


def test_a_ranking_that_fails_is_logged_and_leaves_the_chunks_in_document_order(monkeypatch, caplog):
    """One document's retrieval never fails the turn: bm25s failing (indexing or scoring) is
    logged with its traceback, and the chunks go from the start as for a question sharing no term."""
    import bm25s

    from app.engine.documents.rank import ChunkIndex

    chunks = chunk_document(manual(), words, max_tokens=80, overlap_tokens=10)

    def broken(*_args, **_kwargs):
        raise ValueError("max() arg is an empty sequence")

    monkeypatch.setattr(bm25s.BM25, "index", broken)
    with caplog.at_level("WARNING", logger="app.engine.documents.rank"):
        index = ChunkIndex(chunks)
    assert index.scores(query_terms("generator litres")) == [0.0] * len(chunks)
    assert [r.exc_info[0] for r in caplog.records] == [ValueError]
    fit = fit_document("m.md", chunks, 300, query_terms("generator litres"), words, index=index)
    assert fit.mode == RETRIEVED and fit.chunks[0].id == chunks[0].id

    monkeypatch.undo()
    index = ChunkIndex(chunks)
    monkeypatch.setattr(bm25s.BM25, "get_scores", broken)
    caplog.clear()
    with caplog.at_level("WARNING", logger="app.engine.documents.rank"):
        assert index.scores(query_terms("generator litres")) == [0.0] * len(chunks)
    assert [r.exc_info[0] for r in caplog.records] == [ValueError]
