"""Versions and branches in the window (issue 17, item 1), with a real (tiny) model: Edit keeps
the old version, the arrows switch, the engine's next prompt follows, Branch opens a new chat."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication


def open_and_wait(qtbot, window, path):
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        window.open_model(path)


def send(qtbot, window, text):
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        qtbot.keyClicks(window.composer.editor, text)
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)


def prompt_text(window) -> str:
    """What the engine put in the last turn's prompt (the window it selected)."""
    return "\n".join(m["content"] for m in window.chat.turns.last_plan.window.messages)


def test_edit_switch_and_branch_in_the_window(qtbot, make_window, tiny_model_dir):
    window = make_window(max_new_tokens=4)
    open_and_wait(qtbot, window, tiny_model_dir)
    send(qtbot, window, "Remember zebra")
    bubbles = window.chat_view.bubbles()
    bubbles[0].begin_edit()
    bubbles[0].editor.setPlainText("Remember giraffe")
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        qtbot.mouseClick(bubbles[0].save_button, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    first = window.chat_view.bubbles()[0]
    assert first.text == "Remember giraffe" and first.version_label.isVisible()
    assert first.version_label.text() == "2 / 2"

    qtbot.mouseClick(first.older_button, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    first = window.chat_view.bubbles()[0]
    assert first.text == "Remember zebra" and first.version_label.text() == "1 / 2"
    send(qtbot, window, "Which animal?")
    assert "zebra" in prompt_text(window) and "giraffe" not in prompt_text(window)

    source = window.chat.conversation_id
    qtbot.mouseClick(window.chat_view.bubbles()[1].branch_button, Qt.MouseButton.LeftButton)
    assert window.chat.conversation_id != source and len(window.sidebar.ids()) == 2
    assert [b.text for b in window.chat_view.bubbles()][0] == "Remember zebra"
    assert len(window.chat_view.bubbles()) == 2
