"""Issue 18's "done when", in the window on the default model: a 300-page PDF (the retrieval
benchmark's stdlib reference with planted facts, drawn with pypdf) attached to a chat answers a
planted question from the chunk that holds the fact, cites that chunk under the answer, and the
turn stays within the context and the KV budget admission gave it."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.ui.notice import Notice

QUESTION, ANSWER = "What is the default telemetry uplink timeout in Quillon?", "820"


def test_a_300_page_pdf_answers_a_planted_question_with_its_citation(qtbot, make_window, real_model_folder,
                                                                       tmp_path):
    from tests.benchmarks.retrieval import make_documents

    pdf = make_documents(tmp_path)["pdf"]
    window = make_window(max_new_tokens=48, context_tokens=2048)  # a small context: retrieval, not whole
    with qtbot.waitSignal(window.model_ready, timeout=120000):
        window.open_model(real_model_folder)
    window.chat.attachments.add([str(pdf)])
    qtbot.waitUntil(lambda: not window.chat.attachments.reading, timeout=120000)
    [chip] = window.attachment_bar.chips.values()
    assert "300 pages" in chip.text()
    with qtbot.waitSignal(window.turn_finished, timeout=600000) as ended:
        qtbot.keyClicks(window.composer.editor, QUESTION)
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    assert ended.args[0] in ("complete", "stopped")  # "stopped": at max new tokens, the answer given
    QApplication.processEvents()
    notices = [n.text() for n in window.chat_view.findChildren(Notice)]
    assert any(n.startswith("stdlib-reference.pdf: too large for this turn") and "retrieving" in n for n in notices)
    plan = window.chat.turns.last_plan
    assert plan.admitted and plan.window.prompt_tokens <= plan.window.limit_tokens  # within the budget
    assert plan.window.budget.context_tokens == 2048
    question, answer = window.chat_view.bubbles()
    assert question.documents.chips[0].text() == "stdlib-reference.pdf · 300 pages"
    cited = [c for c in answer.sources.sources if f"{ANSWER} milliseconds" in c.text]
    assert cited and cited[0].page is not None  # the chunk with the fact went in and is cited by page
    dialog = answer.sources.open_source(answer.sources.sources.index(cited[0]))
    assert f"{ANSWER} milliseconds" in dialog.text_view.toPlainText()
    dialog.reject()
    assert ANSWER in answer.text, answer.text  # the model read it there
    window.grab().save(str(tmp_path / "pdf_answer.png"))
