"""The window as a person uses it: open a model, type, press Enter, read the answer."""

from PySide6.QtCore import Qt

from app.core.conversation import MessageStatus, Role


def open_and_wait(qtbot, window, path, timeout=60000):
    with qtbot.waitSignal(window.model_ready, timeout=timeout):
        window.open_model(path)


def send(qtbot, window, text):
    qtbot.keyClicks(window.composer.editor, text)
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)


def test_asks_and_reads_paris_in_the_transcript(qtbot, make_window, real_model_path, tmp_path):
    window = make_window()
    open_and_wait(qtbot, window, real_model_path)
    assert "cpu" in window.status.model_label.text() and "sdpa" in window.status.model_label.text()
    with qtbot.waitSignal(window.turn_finished, timeout=60000) as blocker:
        send(qtbot, window, "What is the capital of France?")
    assert blocker.args == ["complete"]
    bubbles = window.chat_view.bubbles()
    assert [b.role for b in bubbles] == [Role.USER, Role.ASSISTANT]
    assert "Paris" in bubbles[1].text
    assert window.composer.editor.toPlainText() == ""
    assert "tok/s" in window.status.speed_label.text()
    assert window.composer.send_button.isEnabled()
    window.grab().save(str(tmp_path / "window.png"))
    assert (tmp_path / "window.png").stat().st_size > 10_000


def test_shift_enter_inserts_a_new_line(qtbot, make_window):
    window = make_window()
    qtbot.keyClicks(window.composer.editor, "line one")
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.composer.editor, "line two")
    assert window.composer.editor.toPlainText() == "line one\nline two"
    assert window.chat_view.bubbles() == []  # nothing sent (and no model loaded yet)


def test_stop_keeps_partial_answer_and_next_turn_starts(qtbot, make_window, real_model_folder):
    # the real model at ~10 tok/s: a 1,000-token story cannot finish before Stop is pressed
    window = make_window(max_new_tokens=1000, temperature=0.0)
    open_and_wait(qtbot, window, real_model_folder)
    send(qtbot, window, "Tell me a very long story about a dragon and a knight.")
    qtbot.waitUntil(lambda: len(window.conversation.messages[-1].content) > 20, timeout=30000)
    with qtbot.waitSignal(window.turn_finished, timeout=10000) as blocker:
        qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["stopped"]
    stopped = window.conversation.messages[-1]
    assert stopped.status is MessageStatus.STOPPED and stopped.content
    assert "stopped" in window.chat_view.bubbles()[-1]._header.text()
    window.settings = type(window.settings)(type(window.settings.generation)(max_new_tokens=8))
    with qtbot.waitSignal(window.turn_finished, timeout=60000):
        send(qtbot, window, "Again")  # the next turn starts at once
    assert len(window.conversation.messages) == 4


def test_bad_model_shows_a_clear_message_and_app_stays_usable(qtbot, make_window, tmp_path,
                                                              tiny_model_dir):
    window = make_window(max_new_tokens=5)
    open_and_wait(qtbot, window, tiny_model_dir)
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf" * 50)
    with qtbot.waitSignal(window.load_failed, timeout=30000) as blocker:
        window.open_model(bad)
    assert "cannot convert broken.gguf" in blocker.args[0]
    notices = [n.text() for n in window.chat_view.findChildren(type(window.chat_view.add_notice("x")))]
    assert any("Could not open the model" in text for text in notices)
    # the old model was released before the failed load; opening a good one works again
    open_and_wait(qtbot, window, tiny_model_dir)
    with qtbot.waitSignal(window.turn_finished, timeout=30000) as finished:
        send(qtbot, window, "hello")
    assert finished.args == ["complete"]
