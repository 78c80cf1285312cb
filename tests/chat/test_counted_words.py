"""The chat's counted texts read in their number: "Imported 1 preset", "Shorten it by 1 token.",
"1 character", "1,200 tokens" in English (singular forms from headroom_en.ts, the sources being
written in the plural); Korean keeps one wording ("프리셋 1개", "1 토큰", "1자")."""

import json
from types import SimpleNamespace

import pytest

from app.chat.attachments import _size_text, fit_line
from app.chat.refusal_text import refusal_advice, refusal_reason, remedy_labels
from app.core.settings import GenerationSettings, Settings
from app.core.store_attachments import FitNote
from app.engine.memory.admission import AdmissionDecision


def _import(chat, tmp_path, count: int) -> str:
    path = tmp_path / f"{count}.json"
    path.write_text(json.dumps({"presets": [{"name": f"Mine {i}", "values": {"temperature": 0.3}}
                                            for i in range(count)]}), encoding="utf-8")
    assert chat.presets.import_file(path)
    return chat.recorded.of("notice")[-1][0]


def test_imported_presets_are_counted(chat, tmp_path):
    assert _import(chat, tmp_path, 1) == "Imported 1 preset"
    assert _import(chat, tmp_path, 2).startswith("Imported 2 presets (Mine 0 → Mine 0 (2)")


def test_imported_presets_in_korean(korean, chat, tmp_path):
    assert _import(chat, tmp_path, 1) == "프리셋 1개를 가져왔습니다"


@pytest.mark.parametrize(("keep", "notice"), [
    (1, "Nothing to summarize yet: the last turn always stays as it is."),
    (2, "Nothing to summarize yet: the last 2 turns always stay as they are."),
    (1_200, "Nothing to summarize yet: the last 1,200 turns always stay as they are."),
])
def test_nothing_to_summarize_counts_the_turns_kept(make_chat, keep, notice):
    chat = make_chat(settings=Settings(GenerationSettings(summary_keep_turns=keep)))
    chat.turns.summarize_now()
    assert chat.recorded.of("notice")[-1] == (notice, "status")


def test_nothing_to_summarize_in_korean(korean, make_chat):
    chat = make_chat(settings=Settings(GenerationSettings(summary_keep_turns=1)))
    chat.turns.summarize_now()
    assert chat.recorded.of("notice")[-1][0] == "아직 요약할 것이 없습니다. 마지막 턴 1개는 항상 그대로 남습니다."


def _message_refusal(tokens: int, fit: int | None = None) -> AdmissionDecision:
    return AdmissionDecision(False, "positions", "", trim_tokens=tokens, max_new_tokens_fit=fit,
                             reason_kind="message", facts={"shorten_by": tokens})


@pytest.mark.parametrize(("tokens", "count"), [(1, "1 token"), (2, "2 tokens"), (1_200, "1,200 tokens")])
def test_a_refusal_counts_what_to_shorten_and_trim(tokens, count):
    assert refusal_advice(_message_refusal(tokens)) == f"Shorten it by {count}."
    assert refusal_advice(_message_refusal(tokens, fit=100)) == f"Shorten it by {count} or lower max new tokens."
    assert remedy_labels(_message_refusal(tokens))["trim"] == f"Trim older turns (drop at least {count})"


def test_a_refusal_in_korean(korean):
    assert refusal_advice(_message_refusal(1)) == "메시지를 1 토큰 줄이세요."
    assert refusal_advice(_message_refusal(1_200, fit=100)) == (
        "메시지를 1,200 토큰 줄이거나 최대 새 토큰 수를 낮추세요.")
    assert remedy_labels(_message_refusal(1))["trim"] == "이전 턴 줄이기 (최소 1 토큰 제거)"


def _context_refusal(kind: str, context: int) -> AdmissionDecision:
    """A refusal of `kind` ("positions", "message", "system", "notes") for a context of `context` tokens."""
    facts = dict(prompt=5, limit=context, message=5, system=4, notes=3, context=context, max_new_tokens=1,
                 summary_reserve=0, room=0)
    return AdmissionDecision(False, "positions", "", reason_kind=kind, facts=facts)


@pytest.mark.parametrize(("context", "count"), [(1, "1 token"), (2, "2 tokens"), (1_200, "1,200 tokens")])
def test_a_refusal_counts_the_context_it_names(context, count):
    """A context of 1 (Settings allows it) read "the context of 1 tokens"."""
    assert f"more than the context limit of {count};" in refusal_reason(_context_refusal("positions", context))
    for kind in ("message", "system", "notes"):
        assert f"but the context of {count} minus max new tokens" in refusal_reason(_context_refusal(kind, context))


def test_a_refusal_names_the_context_in_korean(korean):
    assert "컨텍스트 한도 1 토큰을 넘습니다" in refusal_reason(_context_refusal("positions", 1))
    for kind in ("message", "system", "notes"):
        assert "1 토큰 컨텍스트에서" in refusal_reason(_context_refusal(kind, 1))


def _document(characters: int, pages: int = 1):
    return SimpleNamespace(text="x" * characters, pages=pages, encoding="utf-8")


@pytest.mark.parametrize(("tokens", "count"), [(1, "1 token"), (2, "2 tokens"), (1_200, "1,200 tokens")])
def test_an_attachment_counts_its_characters_and_tokens(tokens, count):
    assert _size_text(_document(tokens)) == count.replace("token", "character")
    assert fit_line("a.txt", FitNote("whole", tokens, tokens, 0, 0)) == f"a.txt: whole file, {count}"
    assert fit_line("a.pdf", FitNote("retrieved", tokens, 90_000, 1, 40)) == (
        f"a.pdf: too large for this turn (90,000 tokens): retrieving 1 of 40 excerpts, {count}")


def test_an_attachment_in_korean(korean):
    assert _size_text(_document(1)) == "1자"
    assert _size_text(_document(1_200, pages=3)) == "1,200자, 3쪽"
    assert fit_line("a.txt", FitNote("whole", 1, 1, 0, 0)) == "a.txt: 파일 전체, 1 토큰"


@pytest.mark.parametrize(("pages", "count"), [(1, "1 page of images or a blank page"),
                                              (2, "2 pages of images or blank pages"),
                                              (1_200, "1,200 pages of images or blank pages")])
def test_a_pdf_without_text_counts_its_pages(pages, count):
    """New-user trial 11: a one-page scan was refused for its "1 pages of images or blank pages"."""
    from app.chat.document_refusal import refusal_reason as document_refusal
    from app.engine.documents.source import NO_TEXT_LAYER, DocumentError

    error = DocumentError(NO_TEXT_LAYER, "scan.pdf", "", str(pages))
    assert document_refusal(error) == f"this PDF has no text layer ({count}); Headroom does not read scanned pages"


def test_a_pdf_without_text_counts_its_pages_in_korean(korean):
    from app.chat.document_refusal import refusal_reason as document_refusal
    from app.engine.documents.source import NO_TEXT_LAYER, DocumentError

    assert document_refusal(DocumentError(NO_TEXT_LAYER, "scan.pdf", "", "1")) == (
        "텍스트 레이어가 없는 PDF입니다(이미지 또는 빈 페이지 1쪽). Headroom은 스캔한 페이지를 읽지 않습니다")
