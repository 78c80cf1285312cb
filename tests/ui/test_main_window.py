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


def test_conversations_survive_a_restart_of_the_window(qtbot, make_window, tiny_model_dir, tmp_path):
    db = tmp_path / "chats.sqlite3"
    window = make_window(max_new_tokens=6, store_path=db)
    open_and_wait(qtbot, window, tiny_model_dir)
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        send(qtbot, window, "Remember the word zebra")
    answer = window.conversation.messages[-1].content
    first_id = window.conversation_id
    window.close()

    again = make_window(store_path=db)  # a new window on the same database: a restart
    assert again.sidebar.ids() == [first_id]
    again.sidebar.open_requested.emit(first_id)
    assert [m.content for m in again.conversation.messages] == ["Remember the word zebra", answer]
    assert [b.text for b in again.chat_view.bubbles()] == ["Remember the word zebra", answer]


def test_regenerate_replaces_the_last_answer_in_window_and_store(qtbot, make_window, tiny_model_dir):
    window = make_window(max_new_tokens=6, temperature=1.0)
    open_and_wait(qtbot, window, tiny_model_dir)
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        send(qtbot, window, "hello")
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        window.chat_view.regenerate_requested.emit(1)
    stored = window.store.load_conversation(window.conversation_id).conversation.messages
    assert len(stored) == len(window.conversation.messages) == 2
    assert stored[1].content == window.conversation.messages[1].content
    assert len(window.chat_view.bubbles()) == 2


def test_continue_extends_a_stopped_answer_in_place(qtbot, make_window, real_model_folder):
    window = make_window(max_new_tokens=300)
    open_and_wait(qtbot, window, real_model_folder)
    send(qtbot, window, "Write a long poem about the sea.")
    qtbot.waitUntil(lambda: len(window.conversation.messages[-1].content) > 30, timeout=60000)
    with qtbot.waitSignal(window.turn_finished, timeout=10000):
        window.composer.stop_requested.emit()
    partial = window.conversation.messages[-1].content
    window.settings = type(window.settings)(type(window.settings.generation)(max_new_tokens=5, temperature=0.0))
    with qtbot.waitSignal(window.turn_finished, timeout=60000) as finished:
        window.chat_view.continue_requested.emit(1)
    assert finished.args == ["complete"]
    assert len(window.conversation.messages) == 2 and len(window.chat_view.bubbles()) == 2
    continued = window.conversation.messages[-1].content
    assert continued.startswith(partial) and len(continued) > len(partial)
    stored = window.store.load_conversation(window.conversation_id).conversation.messages
    assert stored[-1].content == continued
