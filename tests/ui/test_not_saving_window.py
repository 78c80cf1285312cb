"""The window while conversations are not being saved (new-user trial): a data folder that cannot
be written was said once at start, then New chat took the notice away and nothing showed that
the session's chats would be gone after a restart; a full disk opened the crash dialog when a
message was sent, emptied the message box and lost the message."""

import sqlite3

from app.chat import open_chat
from app.core.settings import GenerationSettings, Settings
from app.core.store import Store
from app.ui import main_window
from app.ui.main_window import MainWindow
from app.ui.notice import Notice
from app.ui.window_state import WindowState
from tests.helpers.fake_worker import FakeWorker


def fake_window(qtbot, monkeypatch, store, tmp_path):
    """A MainWindow on `store`, its Chat on a FakeWorker (as make_fake_window), Send usable."""
    monkeypatch.setattr(main_window, "open_chat", lambda *args, **kw: open_chat(*args, worker=FakeWorker(), **kw))
    window = MainWindow(Settings(GenerationSettings(max_new_tokens=16)), store=store,
                        window_state=WindowState(tmp_path / "session.ini"))
    qtbot.addWidget(window)
    window.show()
    window.composer.set_can_send(True)
    return window


def test_a_session_that_is_not_saved_says_so_for_as_long_as_it_lasts(qtbot, qasync_loop, monkeypatch, tmp_path):
    path = tmp_path / "headroom.sqlite3"
    Store(path).close()
    window = fake_window(qtbot, monkeypatch, Store(path, read_only=True), tmp_path)
    try:
        assert window.windowTitle() == "Headroom — not saving"
        assert window.saving_badge.isVisible() and window.saving_badge.text() == "Not saving"
        assert str(path) in window.saving_badge.toolTip()
        window.new_chat_action.trigger()
        window.composer.editor.setPlainText("Hello")
        window.composer.send_button.click()
        assert window.windowTitle() == "Headroom — not saving" and window.saving_badge.isVisible()
    finally:
        window.close()


def test_a_message_the_full_disk_cannot_take_goes_back_to_the_message_box(qtbot, qasync_loop, monkeypatch,
                                                                          tmp_path):
    window = fake_window(qtbot, monkeypatch, Store(tmp_path / "headroom.sqlite3"), tmp_path)
    real = Store.append_message

    def full(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    try:
        assert window.windowTitle() == "Headroom" and not window.saving_badge.isVisible()
        monkeypatch.setattr(Store, "append_message", full)
        window.composer.editor.setPlainText("Kept, not sent")
        window.composer.send_button.click()
        assert window.composer.editor.toPlainText() == "Kept, not sent"
        assert window.chat_view.bubbles() == [] and window.chat.worker.requests == []
        notices = [n.text() for n in window.chat_view.findChildren(Notice)]
        assert any(n.startswith("Could not save: the disk is full (") for n in notices)
        assert window.windowTitle() == "Headroom — not saving" and window.saving_badge.isVisible()
        assert "the disk is full" in window.saving_badge.toolTip()

        monkeypatch.setattr(Store, "append_message", real)
        window.composer.send_button.click()
        assert [b.shown_text() for b in window.chat_view.bubbles()][:1] == ["Kept, not sent"]
        assert window.windowTitle() == "Headroom" and not window.saving_badge.isVisible()
    finally:
        window.close()
