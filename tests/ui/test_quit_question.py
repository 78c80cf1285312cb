"""Quitting while an answer is being written asks first (product trial: Ctrl+Q quit at once):
Quit stops the answer, keeps its partial text marked stopped and quits; Cancel keeps the window
and the answer going. With nothing generating, Ctrl+Q quits without a question."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QKeySequence
from PySide6.QtWidgets import QApplication

from app.core.conversation import MessageStatus
from tests.ui.test_window_keys import press


class WindowSystemClose(QCloseEvent):
    """The window's own close button: the window system's close event is spontaneous (offscreen
    Qt has no window manager to send one)."""

    def spontaneous(self) -> bool:
        return True


def press_ctrl_q(qtbot, window) -> None:
    press(qtbot, window, "Ctrl+Q")


def streaming_window(qtbot, make_window, model):
    window = make_window(max_new_tokens=1000)  # the real model at ~10 tok/s: streaming for long
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        window.open_model(model)
    window.composer.send_requested.emit("Tell me a long story about a lighthouse keeper.")
    qtbot.waitUntil(lambda: len(window.chat.conversation.messages[-1].content) > 20, timeout=30000)
    return window


def test_nothing_generating_quits_without_a_question(qtbot, make_window):
    window = make_window()
    assert window.menus.quit.shortcut() == QKeySequence("Ctrl+Q")
    press_ctrl_q(qtbot, window)
    assert window.quit_question is None and not window.isVisible() and window.chat.closed


def test_ctrl_q_mid_answer_asks_and_cancel_keeps_the_answer_going(qtbot, make_window, real_model_folder):
    window = streaming_window(qtbot, make_window, real_model_folder)
    press_ctrl_q(qtbot, window)
    box = window.quit_question
    assert box is not None and box.isVisible() and box.isModal()
    assert box.text() == "An answer is still being written. Quit anyway?"
    assert [box.quit_button.text(), box.cancel_button.text()] == ["Quit", "Cancel"]
    assert window.isVisible() and not window.chat.closed  # asked, not closed
    written = len(window.chat.conversation.messages[-1].content)
    qtbot.mouseClick(box.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.quit_question is None, timeout=2000)
    qtbot.waitUntil(lambda: len(window.chat.conversation.messages[-1].content) > written + 10, timeout=30000)
    assert window.isVisible() and window.chat.turns.active  # the answer runs on

    event = WindowSystemClose()  # the window's close button: asked the same way
    QApplication.sendEvent(window, event)
    assert not event.isAccepted() and window.isVisible() and window.quit_question.isVisible()
    window.quit_question.reject()  # Esc / closing the box: Cancel
    qtbot.waitUntil(lambda: window.quit_question is None, timeout=2000)
    assert window.isVisible() and window.chat.turns.active


def test_quit_mid_answer_keeps_the_partial_answer_stopped_and_quits(qtbot, make_window, real_model_folder):
    window = streaming_window(qtbot, make_window, real_model_folder)
    press_ctrl_q(qtbot, window)
    qtbot.mouseClick(window.quit_question.quit_button, Qt.MouseButton.LeftButton)
    assert not window.isVisible() and window.chat.closed and window.chat.thread.isFinished()
    last = window.chat.conversation.messages[-1]
    assert last.status is MessageStatus.STOPPED and len(last.content) > 20
    assert "stopped" in window.chat_view.bubbles()[-1]._header.text()


def test_an_answer_that_ends_while_the_question_is_open_changes_its_words(qtbot, make_fake_window):
    """Trial 11: the answer finished while the question was open, which still said it was being
    written. It says the answer is finished; Quit still quits."""
    from tests.chat.conftest import finished, record
    from tests.ui.test_chat_switch_states import send

    window = make_fake_window()
    rid = send(qtbot, window, "Tell me a story.")
    window.chat.worker.token_streamed.emit(rid, "Once upon")
    press_ctrl_q(qtbot, window)
    box = window.quit_question
    assert box is not None and box.text() == "An answer is still being written. Quit anyway?"
    window.chat.worker.reply_finished.emit(rid, finished("Once upon"), record())
    qtbot.waitUntil(lambda: box.text() == "The answer is finished. Quit now?", timeout=2000)
    assert box.informativeText() == "Nothing is lost: the conversation is saved."
    qtbot.mouseClick(box.quit_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=3000)
    assert window.chat.conversation.messages[-1].status is MessageStatus.COMPLETE  # ended, not stopped by Quit
