"""What the window shows about work that belongs to one chat while the user is in another (a
tester's report, CPU, embedded model): another chat's summary in progress, a message sent while
it is written, an answer still being written elsewhere, and a chat deleted right after Stop.

The window is real; the worker is a FakeWorker whose part the test plays (make_fake_window), so
the order of events is the one a slow CPU gives: the summary runs after its turn has ended here.
Screenshots go to $HEADROOM_SCREENSHOT_DIR (else the test's folder)."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.core.conversation import MessageStatus, Role
from app.core.history import SummaryState
from tests.chat.conftest import finished, record


def shot(qtbot, window, tmp_path, name: str) -> None:
    qtbot.wait(50)  # laid out, as the user sees it
    folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
    window.grab().save(str(folder / f"{name}.png"))


def send(qtbot, window, text: str) -> int:
    """Type `text` and press Enter; returns the request id the worker received."""
    window.composer.editor.setFocus()
    qtbot.keyClicks(window.composer.editor, text)
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    return window.chat.worker.last_id


def answered(qtbot, window, question: str, answer: str = "Sure.") -> tuple[int, int]:
    """A turn sent and answered; returns (its conversation id, its request id)."""
    rid = send(qtbot, window, question)
    window.chat.worker.token_streamed.emit(rid, answer)
    window.chat.worker.reply_finished.emit(rid, finished(answer), record())
    return window.chat.conversation_id, rid


class Clock:
    """QElapsedTimer's part SummaryFlow reads, at a fixed time (milliseconds)."""

    def __init__(self, elapsed_ms: int):
        self.elapsed_ms = elapsed_ms

    def start(self) -> None:
        pass

    def elapsed(self) -> int:
        return self.elapsed_ms


def test_a_summary_in_progress_shows_only_in_its_own_chat(qtbot, make_fake_window, tmp_path):
    window = make_fake_window()
    window.resize(1000, 640)
    bar, block = window.chat_bar, window.chat_view.summary_block
    trip, rid = answered(qtbot, window, "Plan a trip to Lisbon")
    window.chat.worker.summary_started.emit(rid, 1)  # after the answer: its evicted turns are folded
    assert bar.summary_busy.isVisible() and bar.summary_stop_button.isVisible() and block.isVisible()

    window.new_chat_action.trigger()  # the summary of "Plan a trip" goes on, not shown here
    shot(qtbot, window, tmp_path, "summary-not-in-a-new-chat")
    assert not bar.summary_busy.isVisible() and not bar.summary_stop_button.isVisible()
    assert bar.summarize_button.isVisible() and not block.isVisible()
    other, _rid = answered(qtbot, window, "Unrelated question")
    window.sidebar.open_requested.emit(other)
    assert not bar.summary_busy.isVisible()  # nor in another stored chat

    window.chat.summaries._writing_clock = Clock(65_000)  # it has run for 65 s by now
    window.sidebar.open_requested.emit(trip)  # back in its chat: shown again, counting on
    assert bar.summary_busy.isVisible() and block.isVisible() and not bar.summarize_button.isVisible()
    assert bar.summary_seconds() == 65 and bar.summary_busy_label.text() == "Summarizing earlier turns… 1 min 5 s"
    shot(qtbot, window, tmp_path, "summary-back-in-its-chat")

    window.sidebar.open_requested.emit(other)
    window.chat.worker.summary_finished.emit(rid, SummaryState("A trip to Lisbon.", 1, 6), "kept 6 tokens")
    window.sidebar.open_requested.emit(trip)
    assert not bar.summary_busy.isVisible() and bar.summarize_button.isVisible()
    assert window.chat.summary.content == "A trip to Lisbon."  # saved with its own chat


def test_a_message_sent_while_another_chat_is_summarized_says_that_it_waits(qtbot, make_fake_window, tmp_path):
    """Send is accepted while the worker writes another chat's summary; the answer bubble says
    what it waits for until the worker begins it, and nothing of the message is lost."""
    window = make_fake_window()
    window.resize(1000, 640)
    worker = window.chat.worker
    _trip, rid = answered(qtbot, window, "Plan a trip to Lisbon")
    worker.summary_started.emit(rid, 1)
    window.new_chat_action.trigger()
    waiting = send(qtbot, window, "What is 2 + 2?")
    bubble = window.chat_view.bubbles()[-1]
    shot(qtbot, window, tmp_path, "send-waits-for-another-chats-summary")
    assert bubble.role is Role.ASSISTANT and bubble.status is MessageStatus.STREAMING
    assert ("Waiting for the summary of “Plan a trip to Lisbon” to be written; this answer starts right after it. "
            "Stop cancels it.") in bubble.shown_text()
    assert window.composer.stop_button.isVisible()

    worker.summary_finished.emit(rid, SummaryState("A trip to Lisbon.", 1, 6), "kept 6 tokens")
    assert "Waiting" not in bubble.shown_text()  # the worker takes the turn next
    worker.token_streamed.emit(waiting, "4.")
    worker.reply_finished.emit(waiting, finished("4."), record())
    QApplication.processEvents()
    stored = window.chat.store.load_conversation(window.chat.conversation_id).conversation.messages
    assert [(m.content, m.status) for m in stored] == [("What is 2 + 2?", MessageStatus.COMPLETE),
                                                       ("4.", MessageStatus.COMPLETE)]


def test_stop_cancels_a_turn_waiting_for_a_summary_and_the_summary_goes_on(qtbot, make_fake_window):
    window = make_fake_window()
    worker = window.chat.worker
    trip, rid = answered(qtbot, window, "Plan a trip to Lisbon")
    worker.summary_started.emit(rid, 1)
    window.new_chat_action.trigger()
    waiting = send(qtbot, window, "What is 2 + 2?")
    qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    assert worker.cancelled_turns == [waiting] and worker.stops == 0  # the summary is not stopped
    assert not window.chat.turns.active and window.composer.send_button.isVisible()
    bubble = window.chat_view.bubbles()[-1]
    assert bubble.status is MessageStatus.STOPPED and "Waiting" not in bubble.shown_text()
    stored = window.chat.store.load_conversation(window.chat.conversation_id).conversation.messages
    assert [(m.role, m.content, m.status) for m in stored] == [
        (Role.USER, "What is 2 + 2?", MessageStatus.COMPLETE), (Role.ASSISTANT, "", MessageStatus.STOPPED)]

    window.sidebar.open_requested.emit(trip)  # the summary still runs in its own chat
    assert window.chat_bar.summary_busy.isVisible()
    qtbot.mouseClick(window.chat_bar.summary_stop_button, Qt.MouseButton.LeftButton)
    assert worker.stops == 1 and worker.cancelled_turns == [waiting]  # its own Stop stops it


def test_a_turn_sent_in_the_chat_being_summarized_waits_too_and_is_said_again_on_return(qtbot, make_fake_window):
    window = make_fake_window()
    worker = window.chat.worker
    trip, rid = answered(qtbot, window, "Plan a trip to Lisbon")
    worker.summary_started.emit(rid, 1)
    waiting = send(qtbot, window, "And a day in Sintra?")
    assert "Waiting for the summary of earlier turns" in window.chat_view.bubbles()[-1].shown_text()
    window.new_chat_action.trigger()
    window.sidebar.open_requested.emit(trip)  # back: the answer still waits, and says so
    assert "Waiting for the summary of earlier turns" in window.chat_view.bubbles()[-1].shown_text()
    worker.token_streamed.emit(waiting, "Yes")  # the worker began it
    QApplication.processEvents()
    assert "Waiting" not in window.chat_view.bubbles()[-1].shown_text()


def test_the_line_about_an_answer_written_elsewhere_lasts_as_long_as_that_answer(qtbot, make_fake_window, tmp_path):
    from app.ui.notice import Notice

    window = make_fake_window()
    window.resize(1000, 640)
    worker, view = window.chat.worker, window.chat_view

    def lines() -> list[str]:
        qtbot.wait(10)  # a notice added shows, one taken away is deleted, on the next turn of the loop
        return [n.text() for n in view.findChildren(Notice) if not n.isHidden() and "still being written" in n.text()]

    first, _rid = answered(qtbot, window, "Old question")
    rid = send(qtbot, window, "Tell me a story")
    worker.token_streamed.emit(rid, "Once")
    window.new_chat_action.trigger()
    assert len(lines()) == 1 and "“Old question”" in lines()[0]
    shot(qtbot, window, tmp_path, "answer-written-elsewhere")
    window.new_chat_action.trigger()  # yet another chat: it still waits, and says so
    assert len(lines()) == 1
    worker.reply_finished.emit(rid, finished("Once"), record())
    qtbot.wait(20)
    assert lines() == [] and view.reply_elsewhere_text() == ""  # the answer has ended: the line goes
    shot(qtbot, window, tmp_path, "answer-written-elsewhere-ended")
    window.sidebar.open_requested.emit(first)
    window.new_chat_action.trigger()
    assert lines() == []  # nor does it come back with a switch


def fake_window_in(language: str, request, qapp, make_fake_window):
    """A fake-worker window (1000 x 640) in ``language`` ("en" or "ko", Hangul fonts installed)."""
    from app.ui.fonts import install_hangul_fallback

    if language == "ko":
        request.getfixturevalue("korean")
    install_hangul_fallback(qapp)
    window = make_fake_window()
    window.resize(1000, 640)
    return window


@pytest.mark.parametrize("language", ["en", "ko"])
def test_enter_in_another_chat_while_an_answer_is_written_says_why_nothing_was_sent(
        request, qtbot, qapp, make_fake_window, tmp_path, language):
    """New-user trial: Enter in another chat while an answer streamed did nothing and said nothing."""
    window = fake_window_in(language, request, qapp, make_fake_window)
    worker, editor = window.chat.worker, window.composer.editor
    rid = send(qtbot, window, "Tell me a story")
    worker.token_streamed.emit(rid, "Once")
    window.new_chat_action.trigger()
    send(qtbot, window, "A question for later")
    assert len(worker.requests) == 1 and editor.toPlainText() == "A question for later"  # kept, not sent
    expected = {"en": "An answer is still being written in “Tell me a story”; send when it finishes, or stop it.",
                "ko": "“Tell me a story”에서 아직 답변을 쓰는 중입니다. 끝나면 보내거나, 답변을 중지하세요."}
    assert window.status.currentMessage() == expected[language]
    shot(qtbot, window, tmp_path, f"enter-while-answer-elsewhere-{language}")
    worker.reply_finished.emit(rid, finished("Once"), record())
    assert window.status.currentMessage() == ""  # it no longer holds: gone with the answer (trial 2)
    qtbot.keyClick(editor, Qt.Key.Key_Return)  # the answer has ended: now it goes
    assert [m.content for m in worker.requests[-1].messages] == ["A question for later"]


def test_enter_in_the_chat_being_answered_says_to_wait_or_stop(qtbot, make_fake_window):
    window = make_fake_window()
    rid = send(qtbot, window, "Tell me a story")
    window.chat.worker.token_streamed.emit(rid, "Once")
    send(qtbot, window, "And then?")
    assert len(window.chat.worker.requests) == 1 and window.composer.editor.toPlainText() == "And then?"
    assert window.status.currentMessage() == "Wait for the answer being written to end, or stop it."


def test_enter_with_no_model_open_says_to_open_one(qtbot, make_fake_window):
    """New-user trial: Enter before any model was open did nothing and said nothing."""
    window = make_fake_window()
    window.composer.set_can_send(False)  # as before a model is loaded
    window.composer.editor.setPlainText("Hello?")
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    assert window.chat.worker.requests == [] and window.composer.editor.toPlainText() == "Hello?"
    assert window.status.currentMessage() == "No model is open yet: open one with Open model…, then send."


def test_undo_of_a_chat_deleted_right_after_stop_restores_its_answer_exactly(qtbot, make_fake_window, tmp_path):
    """Delete is pressed before the Stop has reached the worker: the worker's end (the last
    text, the stats) still goes into the deleted chat, so that Undo brings it back as it was."""
    from app.ui.reply_stats_text import stats_line

    window = make_fake_window()
    window.resize(1000, 640)
    worker = window.chat.worker
    rid = send(qtbot, window, "Tell me a long story")
    worker.token_streamed.emit(rid, "Once upon")
    qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    cid = window.chat.conversation_id
    window.sidebar.delete_requested.emit(cid)  # at once, while the worker stops
    assert not window.chat.turns.active and window.chat.conversation_id is None
    worker.token_streamed.emit(rid, " a time")  # the worker's last token before its stop took effect
    worker.reply_finished.emit(rid, finished("Once upon a time", "stopped"), record("stopped"))
    qtbot.mouseClick(window.sidebar.undo_button, Qt.MouseButton.LeftButton)
    item = window.sidebar.item_for(cid)
    qtbot.mouseClick(window.sidebar.list_widget.viewport(), Qt.MouseButton.LeftButton,
                     pos=window.sidebar.list_widget.visualItemRect(item).center())
    assert window.chat.conversation_id == cid
    answer = window.chat_view.bubbles()[-1]
    shot(qtbot, window, tmp_path, "undo-delete-after-stop")
    assert answer.text == "Once upon a time" and answer.status is MessageStatus.STOPPED
    assert answer.stats is not None and answer.stats_label.isVisible()
    assert answer.stats_label.text() == stats_line(answer.stats)
    assert answer.stats_label.text().startswith("3 tokens · TTFT 250 ms · 10.0 tok/s")


def test_the_status_bar_shows_the_open_chats_last_answer_stats(qtbot, make_fake_window, tmp_path):
    """Trial 8: a new, empty chat still showed the previous chat's TTFT, tok/s and tokens. The
    per-answer stats belong to the chat shown: its last answer's, or none."""
    from tests.chat.conftest import finished as ended

    window = make_fake_window()
    window.resize(1000, 640)
    speed, worker = window.status.speed_label, window.chat.worker
    assert speed.text() == ""
    trip, _rid = answered(qtbot, window, "Plan a trip to Lisbon")
    assert speed.text() == "TTFT 250 ms · 10.0 tok/s · 3 tokens"

    window.new_chat_action.trigger()
    shot(qtbot, window, tmp_path, "status-bar-new-chat")
    assert speed.text() == ""  # no answer here yet
    rid = send(qtbot, window, "Count to five")
    worker.token_streamed.emit(rid, "1 2 3 4 5")
    worker.reply_finished.emit(rid, ended("1 2 3 4 5", new_tokens=9), record())
    other = window.chat.conversation_id
    assert speed.text() == "TTFT 250 ms · 10.0 tok/s · 9 tokens"

    window.sidebar.open_requested.emit(trip)  # back: that chat's own last answer
    assert speed.text() == "TTFT 250 ms · 10.0 tok/s · 3 tokens"
    shot(qtbot, window, tmp_path, "status-bar-back-in-a-chat")
    window.sidebar.open_requested.emit(other)
    assert speed.text() == "TTFT 250 ms · 10.0 tok/s · 9 tokens"

    window.composer.set_can_send(True)  # a stored chat's backend is applied: no model in the fake, so not
    rid = send(qtbot, window, "And to ten")  # an answer that ends while another chat is shown
    worker.token_streamed.emit(rid, "6 7")
    window.sidebar.open_requested.emit(trip)
    worker.reply_finished.emit(rid, ended("6 7", new_tokens=2), record())
    assert speed.text() == "TTFT 250 ms · 10.0 tok/s · 3 tokens"  # still this chat's
    window.sidebar.open_requested.emit(other)
    assert speed.text() == "TTFT 250 ms · 10.0 tok/s · 2 tokens"


@pytest.mark.parametrize("language", ["en", "ko"])
def test_undo_of_a_deleted_chat_waits_for_a_late_user_and_fits_in_korean(request, qtbot, qapp, make_fake_window,
                                                                         tmp_path, monkeypatch, language):
    """Trial 8: Undo went before a user who reacted a bit late got to it. It is offered 10 s, and
    for as long as the pointer is on it; the chat's kept KV cache goes only when the offer ends.
    At the sidebar's narrowest, in Korean too, Undo and the title's start are not cut."""
    from PySide6.QtCore import QEvent, QPointF
    from PySide6.QtGui import QEnterEvent

    from app.ui import conversation_list
    from app.ui.fonts import install_hangul_fallback

    if language == "ko":
        request.getfixturevalue("korean")
    install_hangul_fallback(qapp)
    monkeypatch.setattr(conversation_list, "UNDO_MS", 200)
    monkeypatch.setattr(conversation_list, "UNDO_AFTER_HOVER_MS", 200)
    window = make_fake_window()
    window.resize(1000, 640)
    worker, sidebar = window.chat.worker, window.sidebar
    trip, _rid = answered(qtbot, window, "Plan a trip to Lisbon and Porto in spring")
    window.splitter.setSizes([sidebar.minimumWidth(), 800])
    window.sidebar.delete_requested.emit(trip)
    bar = sidebar.undo_bar
    assert bar.isVisible() and worker.forgotten == []
    centre = QPointF(bar.rect().center())
    QApplication.sendEvent(bar, QEnterEvent(centre, centre, centre))  # the pointer reaches it late
    qtbot.wait(500)
    shot(qtbot, window, tmp_path, f"undo-delete-{language}")
    assert bar.isVisible() and worker.forgotten == []
    button, label = sidebar.undo_button, sidebar.undo_label
    assert button.text() == {"en": "Undo", "ko": "실행 취소"}[language]
    assert button.width() >= button.sizeHint().width()  # not cut
    assert label.width() >= label.fontMetrics().horizontalAdvance(label.text()[:4])  # room for the title's start
    assert bar.geometry().right() <= sidebar.width()
    QApplication.sendEvent(bar, QEvent(QEvent.Type.Leave))
    qtbot.waitUntil(bar.isHidden, timeout=2000)
    assert len(worker.forgotten) == 1  # now the kept cache goes; the chat stays deleted, not purged
    assert trip in {i.id for i in window.chat.store.list_conversations(include_deleted=True)}


def test_max_new_tokens_reached_is_said_again_after_reopen_and_restart(qtbot, make_fake_window, tmp_path):
    """Trial 8: "stopped — max new tokens reached" was in the widget only; reopened, the answer
    said just "stopped". The stop reason is kept with the answer's stats."""
    window = make_fake_window(store_path=tmp_path / "kept.sqlite3")
    window.resize(1000, 640)
    rid = send(qtbot, window, "Tell me a long story")
    window.chat.worker.token_streamed.emit(rid, "Once upon a time")
    window.chat.worker.reply_finished.emit(rid, finished("Once upon a time", "length"), record("length"))
    cid = window.chat.conversation_id
    said = "Assistant — stopped: max new tokens reached"
    assert window.chat_view.bubbles()[-1]._header.text() == said
    window.new_chat_action.trigger()
    window.sidebar.open_requested.emit(cid)
    answer = window.chat_view.bubbles()[-1]
    shot(qtbot, window, tmp_path, "max-new-tokens-reopened")
    assert answer.status is MessageStatus.STOPPED and answer._header.text() == said
    window.close()

    again = make_fake_window(store_path=tmp_path / "kept.sqlite3")  # a restart: the chat reopens
    assert again.chat.conversation_id == cid
    assert again.chat_view.bubbles()[-1]._header.text() == said
    stored = again.chat.store.load_conversation(cid).conversation.messages[-1]
    assert stored.stats.stop_reason == "length"


def test_a_failed_answers_header_says_why_again_after_a_restart(qtbot, make_fake_window, tmp_path):
    """Trial 15 (and the check after it): the header read "Assistant — failed: The model ran out of memory
    during this answer." until a restart, then "Assistant — failed". The reason is kept (Message.failure)."""
    window = make_fake_window(store_path=tmp_path / "kept.sqlite3")
    rid = send(qtbot, window, "Tell me a long story")
    window.chat.worker.token_streamed.emit(rid, "Once upon a time")
    window.chat.worker.generation_failed.emit(rid, "CUDA out of memory. Tried to allocate 2.00 GiB", "Once upon a time")
    cid = window.chat.conversation_id
    said = "Assistant — failed: The model ran out of memory during this answer."
    assert window.chat_view.bubbles()[-1]._header.text() == said
    window.close()

    again = make_fake_window(store_path=tmp_path / "kept.sqlite3")  # a restart: the chat reopens
    assert again.chat.conversation_id == cid
    assert again.chat_view.bubbles()[-1]._header.text() == said
