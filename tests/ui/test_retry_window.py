"""Retry on the notice of a failed answer (new-user trial): one click asks the same question
again, the transcript keeps one copy of it, the notice goes with the failed answer, and a Retry
goes (not greyed) once another turn runs."""

import os
from pathlib import Path

from PySide6.QtCore import Qt
from shiboken6 import isValid

from app.core.conversation import MessageStatus
from app.ui.retry_notice import RetryNotice


def test_retry_on_the_failure_notice_asks_again_without_a_second_copy(qtbot, make_window, tmp_path):
    window = make_window()
    window.composer.set_can_send(True)  # as with a model; without one the turn fails, as any turn may
    qtbot.keyClicks(window.composer.editor, "What is a KV cache?")
    with qtbot.waitSignal(window.turn_finished, timeout=10000):
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    [notice] = window.chat_view.findChildren(RetryNotice)
    assert notice.text() == "No model is loaded. Open a model first (Open model…)."
    qtbot.waitUntil(notice.retry_button.isVisible)  # shown on the next turn of the event loop
    assert notice.retry_button.isEnabled()
    folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    window.chat_view.grab().save(str(folder / "retry-notice.png"))

    with qtbot.waitSignal(window.turn_finished, timeout=10000):
        qtbot.mouseClick(notice.retry_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not isValid(notice))  # gone with the failed answer it was about
    assert [b.text for b in window.chat_view.bubbles()] == ["What is a KV cache?", ""]
    assert window.chat_view.bubbles()[1].status is MessageStatus.FAILED
    stored = window.chat.store.load_conversation(window.chat.conversation_id)
    assert stored.info.message_count == 2  # the question once, the newest failed answer once
    [newest] = window.chat_view.findChildren(RetryNotice)  # about the newest failure
    assert newest.retry_button.isEnabled()
    window.chat_view.begin_stream()  # another turn runs: that Retry no longer applies, and goes
    assert not newest.retry_button.isEnabled() and newest.retry_button.isHidden()
