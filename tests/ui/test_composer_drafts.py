"""A draft per chat (new-user trial: the composer's text followed the user into another chat):
what was typed and not sent stays with its conversation, comes back when it is opened again,
and survives a restart. No model is needed."""

from PySide6.QtCore import Qt

from tests.ui.test_session_restore import seed


def typed(qtbot, window, text):
    window.composer.editor.clear()
    if text.isascii() and "\n" not in text:
        qtbot.keyClicks(window.composer.editor, text)
    else:  # QTest types printable Latin-1 only; Korean arrives as the input method commits it
        window.composer.editor.insertPlainText(text)


def composer_text(window) -> str:
    return window.composer.editor.toPlainText()


def test_each_chat_keeps_its_own_draft(qtbot, make_window, tmp_path):
    db = tmp_path / "chats.sqlite3"
    cats, dogs = seed(db)
    window = make_window(store_path=db)
    typed(qtbot, window, "a question for a new chat")
    window.sidebar.open_requested.emit(cats)
    assert composer_text(window) == ""  # the new chat's draft did not follow
    typed(qtbot, window, "고양이는 몇 살까지 살아요?")
    window.sidebar.open_requested.emit(dogs)
    assert composer_text(window) == ""
    typed(qtbot, window, "And dogs?")
    window.sidebar.open_requested.emit(cats)
    assert composer_text(window) == "고양이는 몇 살까지 살아요?"
    assert window.composer.editor.textCursor().atEnd()  # typing goes on where it ended
    window.new_chat_action.trigger()
    assert composer_text(window) == "a question for a new chat"
    window.sidebar.open_requested.emit(dogs)
    assert composer_text(window) == "And dogs?"


def test_drafts_survive_a_restart(qtbot, make_window, tmp_path):
    db = tmp_path / "chats.sqlite3"
    cats, dogs = seed(db)
    window = make_window(store_path=db)
    window.sidebar.open_requested.emit(dogs)
    typed(qtbot, window, "a draft about dogs")
    window.sidebar.open_requested.emit(cats)
    typed(qtbot, window, "a draft about cats\nwith two lines")
    window.close()
    again = make_window(store_path=db)
    assert again.chat.conversation_id == cats  # reopened, with its draft
    assert composer_text(again) == "a draft about cats\nwith two lines"
    again.sidebar.open_requested.emit(dogs)
    assert composer_text(again) == "a draft about dogs"


def test_a_sent_message_leaves_no_draft_behind(qtbot, make_window, tmp_path):
    db = tmp_path / "chats.sqlite3"
    cats, _dogs = seed(db)
    window = make_window(store_path=db)
    window.composer.set_can_send(True)  # as with a model: Enter sends (the turn then fails without one)
    typed(qtbot, window, "Hello")
    with qtbot.waitSignal(window.turn_finished, timeout=10000):
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    new = window.chat.conversation_id
    assert new is not None and composer_text(window) == ""
    typed(qtbot, window, "a follow-up not sent yet")
    window.sidebar.open_requested.emit(cats)
    window.new_chat_action.trigger()
    assert composer_text(window) == ""  # the draft went with the saved chat, not with "new chat"
    window.sidebar.open_requested.emit(new)
    assert composer_text(window) == "a follow-up not sent yet"


def test_a_new_chats_draft_survives_a_restart_that_opens_another_chat(qtbot, make_window, tmp_path):
    """New-user trial 13: typed in a new chat, went back to a saved one, quit; after the restart the
    saved chat opened and the new chat's draft was gone (the first switch dropped it)."""
    db = tmp_path / "chats.sqlite3"
    cats, _dogs = seed(db)
    window = make_window(store_path=db)
    window.sidebar.open_requested.emit(cats)
    window.new_chat_action.trigger()
    typed(qtbot, window, "What is the capital of France?")
    window.sidebar.open_requested.emit(cats)
    window.close()
    again = make_window(store_path=db)
    assert again.chat.conversation_id == cats and composer_text(again) == ""
    again.new_chat_action.trigger()
    assert composer_text(again) == "What is the capital of France?"
    again.close()
    third = make_window(store_path=db)  # still there after a second restart
    third.new_chat_action.trigger()
    assert composer_text(third) == "What is the capital of France?"


def refused_paste(qtbot, window, paste: str):
    """`paste` sent from the composer (Enter) and refused for its length; returns the dialog."""
    from tests.ui.test_refused_turn_window import refused_for_length

    window.composer.editor.setPlainText(paste)  # a paste, not 108,000 key presses
    window.composer.editor.setFocus()
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    window.chat.worker.turn_refused.emit(window.chat.worker.last_id, refused_for_length())
    dialog = window.dialogs.admission_dialog
    qtbot.waitExposed(dialog)
    return dialog


def test_a_refused_paste_cancelled_in_a_new_chat_stays_its_draft(qtbot, make_fake_window, tmp_path):
    """New-user trial: a 108,000-character paste in a new chat, refused, Cancel: the text came back
    to the box and the empty chat was dropped, but its draft was kept under the dropped chat's id
    and lost at the next switch and at quit."""
    db = tmp_path / "chats.sqlite3"
    cats, _dogs = seed(db)
    paste = ("lorem ipsum " * 9000).strip()  # Send strips the ends
    window = make_fake_window(store_path=db)
    window.new_chat_action.trigger()
    dialog = refused_paste(qtbot, window, paste)
    assert window.chat.conversation_id is not None  # the refused message is stored, in its own chat
    qtbot.mouseClick(dialog.buttons["cancel"], Qt.MouseButton.LeftButton)
    assert window.chat.conversation_id is None and composer_text(window) == paste
    window.sidebar.open_requested.emit(cats)
    assert composer_text(window) == ""
    window.new_chat_action.trigger()
    assert composer_text(window) == paste  # back with the new chat, as any new chat's draft
    window.sidebar.open_requested.emit(cats)
    window.close()
    again = make_fake_window(store_path=db)
    assert again.chat.conversation_id == cats
    again.new_chat_action.trigger()
    assert composer_text(again) == paste


def test_closing_the_window_over_the_refusal_dialog_is_quiet_and_keeps_the_paste(
        qtbot, make_fake_window, tmp_path, monkeypatch):
    """New-user trial: Ctrl+C (close_on_interrupt closes the window) while the "does not fit"
    dialog was open raised sqlite3.ProgrammingError (closed database) from its Cancel, with a crash
    dialog on the way out. The paste is kept, as after Cancel."""
    import sys

    db = tmp_path / "chats.sqlite3"
    seed(db)
    raised = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc: raised.append(exc[1]))  # as Qt reports a slot's error
    paste = "A very long pasted log " * 20
    window = make_fake_window(store_path=db)
    window.new_chat_action.trigger()
    dialog = refused_paste(qtbot, window, paste.strip())
    window.close()
    dialog.close()  # what quit does next: it closes every window still open (a no-op once closed)
    assert raised == [] and not dialog.isVisible()
    again = make_fake_window(store_path=db)
    again.new_chat_action.trigger()
    assert composer_text(again) == paste.strip()
    assert [info.title for info in again.chat.store.list_conversations()] == ["About dogs", "About cats"]


def on_disk(tmp_path) -> str:
    """session.ini as the next start reads it (the file, not this process's QSettings cache)."""
    path = tmp_path / "session.ini"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_a_draft_is_on_disk_soon_after_typing_stops_and_gone_once_sent(qtbot, make_window, tmp_path, monkeypatch):
    """New-user trial: a draft typed 3 s before `kill -9` was gone after the restart (written only
    at close or a chat switch). Now it is written SAVE_AFTER_MS after the last key, once per
    pause (never per key), and taken off the disk as soon as the message is sent."""
    from app.ui.composer_drafts import SAVE_AFTER_MS
    from app.ui.window_state import WindowState

    saves = []
    save_drafts = WindowState.save_drafts
    monkeypatch.setattr(WindowState, "save_drafts", lambda self, drafts: (saves.append(dict(drafts)),
                                                                          save_drafts(self, drafts)))
    db = tmp_path / "chats.sqlite3"
    cats, _dogs = seed(db)
    window = make_window(store_path=db)
    window.sidebar.open_requested.emit(cats)
    window.composer.set_can_send(True)  # as with a model: Enter sends (the turn then fails without one)
    saves.clear()
    qtbot.keyClicks(window.composer.editor, "How long do cats live")
    assert saves == [] and "How long do cats live" not in on_disk(tmp_path)  # not while typing
    qtbot.waitUntil(lambda: "How long do cats live" in on_disk(tmp_path), timeout=SAVE_AFTER_MS + 3000)
    assert saves == [{cats: "How long do cats live"}]  # one write for the whole pause
    assert WindowState(tmp_path / "session.ini").drafts() == {cats: "How long do cats live"}
    with qtbot.waitSignal(window.turn_finished, timeout=10000):
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    assert "How long do cats live" not in on_disk(tmp_path)  # at once: no stale draft after a crash
    assert WindowState(tmp_path / "session.ini").drafts() == {}
