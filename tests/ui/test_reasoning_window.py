"""A reasoning model's answer in the real window (FakeWorker plays the model): the reasoning streams
folded under "Thinking…", the answer shows below it as Markdown, the reasoning opens on a click,
Copy takes the answer, and a chat opened again shows the same, folded."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from app.core.conversation import MessageStatus
from tests.chat.conftest import finished, record

REASONING = "The user asks for the capital of France.\n\nI recall that it is **Paris**."
REPLY = f"<think>\n{REASONING}\n</think>\n\nThe capital of France is **Paris**."


def send(qtbot, window, text: str) -> int:
    window.composer.editor.setFocus()
    qtbot.keyClicks(window.composer.editor, text)
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    return window.chat.worker.last_id


def stream(window, rid: int, text: str, piece_chars: int = 3) -> None:
    """`text` streamed a few characters at a time, each flushed as a frame would."""
    for start in range(0, len(text), piece_chars):
        window.chat.worker.token_streamed.emit(rid, text[start:start + piece_chars])
        window.chat_view.flush()


def test_reasoning_streams_folded_and_the_answer_shows_below_it(qtbot, make_fake_window):
    window = make_fake_window()
    rid = send(qtbot, window, "What is the capital of France?")
    bubble = window.chat_view.bubbles()[-1]
    section = bubble.reasoning
    stream(window, rid, "<th")
    assert bubble.shown_text() == "…" and section.isHidden()  # half a tag is not shown as answer

    stream(window, rid, REPLY[3:REPLY.index("</think>") + 4])  # inside the reasoning, "</th" arrived
    assert section.isVisibleTo(bubble) and section.toggle_button.text() == "▸  Thinking…"
    assert not section.body.isVisibleTo(bubble) and bubble.answer == ""
    assert section.body.parts() == []  # folded, it is not laid out at all
    assert bubble.shown_text() == "Thinking…"  # no note "…", no reasoning, no tag
    section.toggle_button.click()  # read it while it is written
    assert section.body.isVisibleTo(bubble) and section.body.plain_text() == (
        "The user asks for the capital of France.\nI recall that it is Paris.")
    section.toggle_button.click()

    stream(window, rid, REPLY[REPLY.index("</think>") + 4:])
    assert section.toggle_button.text() == "▸  Reasoning"
    assert bubble.answer == "The capital of France is **Paris**."
    window.chat.worker.reply_finished.emit(rid, finished(REPLY), record())
    assert bubble.status is MessageStatus.COMPLETE and bubble.text == REPLY  # kept whole
    assert bubble.shown_text() == "Reasoning\nThe capital of France is Paris."
    assert not section.body.isVisibleTo(bubble)

    section.toggle_button.click()
    assert section.toggle_button.text() == "▾  Reasoning" and section.body.isVisibleTo(bubble)
    assert bubble.shown_text() == ("Reasoning\nThe user asks for the capital of France.\nI recall that it is Paris.\n"
                                   "The capital of France is Paris.")
    bubble.copy_action.trigger()
    assert QGuiApplication.clipboard().text() == "The capital of France is **Paris**."
    QGuiApplication.clipboard().clear()
    window.menus.copy_answer.trigger()  # Edit → Copy last answer (Ctrl+Shift+C) the same (new-user trial 13)
    assert QGuiApplication.clipboard().text() == "The capital of France is **Paris**."

    # opened again: the same answer, its reasoning folded
    conversation = window.chat.conversation_id
    window.new_chat_action.trigger()
    window.sidebar.open_requested.emit(conversation)
    reopened = window.chat_view.bubbles()[-1]
    assert reopened.text == REPLY and reopened.reasoning.isVisibleTo(reopened) and not reopened.reasoning.is_expanded()
    assert reopened.shown_text() == "Reasoning\nThe capital of France is Paris."


def test_an_answer_stopped_while_it_reasons_can_be_continued(qtbot, make_fake_window):
    window = make_fake_window()
    rid = send(qtbot, window, "What is the capital of France?")
    stream(window, rid, "<think>\nThe user asks")
    window.chat.worker.reply_finished.emit(rid, finished("<think>\nThe user asks", stop_reason="stopped"), record())
    bubble = window.chat_view.bubbles()[-1]
    assert bubble.status is MessageStatus.STOPPED
    assert bubble.shown_text() == "Reasoning (unfinished)\n(no answer)"
    for copy in (bubble.copy_action, window.menus.copy_answer):  # the reasoning, without its tag
        QGuiApplication.clipboard().clear()
        copy.trigger()
        assert QGuiApplication.clipboard().text() == "The user asks"
    assert bubble.continue_button.isVisibleTo(bubble)
    bubble.continue_button.click()
    assert window.chat.worker.requests[-1].continue_final
    assert window.chat.worker.requests[-1].messages[-1].content == "<think>\nThe user asks"  # raw, to go on from


def test_an_answer_without_reasoning_shows_as_before(qtbot, make_fake_window):
    window = make_fake_window()
    rid = send(qtbot, window, "What is the capital of France?")
    stream(window, rid, "The capital of France is Paris.")
    window.chat.worker.reply_finished.emit(rid, finished("The capital of France is Paris."), record())
    bubble = window.chat_view.bubbles()[-1]
    assert bubble.reasoning.isHidden() and bubble.shown_text() == "The capital of France is Paris."
