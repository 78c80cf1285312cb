"""The error funnel (C29): exceptions in slots, async slots, threads and asyncio callbacks are
logged with their traceback and shown in a non-blocking dialog; cancelling is silent.

pytest-qt normally replaces sys.excepthook during a test (and fails it on any exception in a
slot); these tests turn that off and install the project's hook instead.
"""

import asyncio
import logging
import sys
import threading

import pytest
from PySide6.QtCore import QObject, Qt, Signal, Slot, qInstallMessageHandler, qWarning
from PySide6.QtGui import QGuiApplication
from qasync import asyncSlot

from app.ui.application import load_stylesheet
from app.ui.excepthook import install_excepthook, install_loop_exception_handler
from app.ui.qt_messages import install_qt_message_handler

pytestmark = pytest.mark.qt_no_exception_capture


class Sender(QObject):
    """A stand-in for any widget: a signal wired to a slot that fails."""

    clicked = Signal()
    async_clicked = Signal()

    def __init__(self):
        super().__init__()
        self.started = asyncio.Event()
        self.clicked.connect(self._on_clicked)

    @Slot()
    def _on_clicked(self) -> None:
        raise ValueError("the slot broke")

    # (asyncio.sleep needs a *running* loop; under pytest-qt qasync's loop is driven by Qt's
    # loop without being marked running, so these await futures, as the window's slots do)
    @asyncSlot()
    async def fail_later(self) -> None:
        await asyncio.get_event_loop().run_in_executor(None, lambda: None)
        raise KeyError("async slot broke")

    @asyncSlot()
    async def wait_long(self) -> None:
        self.started.set()
        await asyncio.get_event_loop().create_future()  # like the window awaiting the worker


@pytest.fixture
def funnel(qapp):
    hooks = sys.excepthook, threading.excepthook
    funnel = install_excepthook("/tmp/headroom-test.log")
    yield funnel
    sys.excepthook, threading.excepthook = hooks
    if funnel.dialog is not None:
        funnel.dialog.close()
        funnel.dialog.deleteLater()
    funnel.deleteLater()


def crash_records(caplog):
    return [r for r in caplog.records if r.name == "headroom.crash" and r.levelno >= logging.ERROR]


def test_exception_in_a_slot_is_logged_with_traceback_and_shown(qtbot, qapp, funnel, caplog):
    qapp.setStyleSheet(load_stylesheet())  # as the app shows it (for the screenshot)
    sender = Sender()
    sender.clicked.emit()  # returns: the dialog does not block
    [record] = crash_records(caplog)
    assert record.exc_info[0] is ValueError
    logged = logging.Formatter().format(record)
    assert "Traceback (most recent call last)" in logged and "in _on_clicked" in logged
    dialog = funnel.dialog
    assert dialog.isVisible() and not dialog.isModal()
    assert dialog.windowTitle() == "Headroom hit an unexpected error"
    assert dialog.summary.text() == "ValueError: the slot broke"
    assert "/tmp/headroom-test.log" in dialog.findChild(type(dialog.summary), "crashHint").text()
    assert dialog.grab().save("/tmp/headroom-crash.png")
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    copied = QGuiApplication.clipboard().text()
    assert copied == dialog.details_text()
    assert "in _on_clicked" in copied and copied.rstrip().endswith("ValueError: the slot broke")


def test_a_database_damaged_while_running_says_what_to_do(qtbot, funnel, caplog, tmp_path):
    """New-user re-trial: a page damaged while Headroom ran raised "DatabaseError: database disk
    image is malformed" at each click; the dialog says what it is and that a restart recovers what
    still reads (open_store's salvage). Other sqlite3 errors, the program's own, stay as they are."""
    import sqlite3

    class Opener(QObject):
        opened = Signal()

        def __init__(self, error):
            super().__init__()
            self.error = error
            self.opened.connect(self.open)

        @Slot()
        def open(self):
            raise self.error

    path = tmp_path / "not.sqlite3"
    path.write_bytes(b"x" * 4096)
    try:
        sqlite3.connect(path).execute("SELECT 1 FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as exc:  # SQLITE_NOTADB, as a damaged header reads
        damaged = exc
    opener = Opener(damaged)
    opener.opened.emit()
    assert funnel.dialog.summary.text() == (
        "The conversation database is damaged (file is not a database). Restart Headroom: it keeps the damaged "
        "file aside and starts a new one with the conversations that can still be read.")
    # not "…your conversations are saved" under it (re-trial), whatever the chat says until a restart
    assert funnel.dialog.hint.text().startswith("Headroom keeps running, but your conversations may not be saved "
                                                "until it restarts")
    funnel._on_saving_changed("")
    assert "may not be saved until it restarts" in funnel.dialog.hint.text()
    funnel.dialog.close()
    opener = Opener(sqlite3.IntegrityError("UNIQUE constraint failed"))
    opener.opened.emit()
    assert funnel.dialog.summary.text() == "IntegrityError: UNIQUE constraint failed"
    assert len(crash_records(caplog)) == 2  # both logged with their traceback


def test_exception_in_an_async_slot_is_not_swallowed(qtbot, qasync_loop, funnel, caplog):
    install_loop_exception_handler(qasync_loop)
    sender = Sender()
    task = sender.fail_later()
    qtbot.waitUntil(lambda: funnel.dialog is not None and funnel.dialog.isVisible(), timeout=5000)
    assert task.done() and isinstance(task.exception(), KeyError)
    [record] = crash_records(caplog)
    assert "in fail_later" in logging.Formatter().format(record)
    assert funnel.dialog.summary.text() == "KeyError: 'async slot broke'"


def test_cancelling_async_work_is_silent(qtbot, qasync_loop, funnel, caplog):
    install_loop_exception_handler(qasync_loop)
    caplog.set_level(logging.DEBUG)
    sender = Sender()
    task = sender.wait_long()
    qtbot.waitUntil(sender.started.is_set, timeout=5000)
    task.cancel()
    qtbot.waitUntil(task.done, timeout=5000)
    qtbot.wait(50)  # let qasync's done-callback and any loop error report run
    assert task.cancelled()
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert funnel.dialog is None
    # the same for a cancellation that reaches the loop's own error handler
    qasync_loop.call_exception_handler({"message": "cancelled", "exception": asyncio.CancelledError()})
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_asyncio_callback_errors_take_the_same_path(qtbot, qasync_loop, funnel, caplog):
    install_loop_exception_handler(qasync_loop)

    def scheduled_callback():
        raise RuntimeError("callback broke")

    qasync_loop.call_soon(scheduled_callback)
    qtbot.waitUntil(lambda: funnel.dialog is not None and funnel.dialog.isVisible(), timeout=5000)
    assert funnel.dialog.summary.text() == "RuntimeError: callback broke"
    assert "in scheduled_callback" in logging.Formatter().format(crash_records(caplog)[0])


def test_an_exception_in_another_thread_is_shown_by_the_gui_thread(qtbot, funnel, caplog):
    def background_job():
        raise OSError("disk vanished")

    thread = threading.Thread(target=background_job, name="job")
    thread.start()
    thread.join()
    assert crash_records(caplog)[0].threadName == "job"
    qtbot.waitUntil(lambda: funnel.dialog is not None and funnel.dialog.isVisible(), timeout=5000)
    assert funnel.dialog.thread() is QGuiApplication.instance().thread()
    assert funnel.dialog.summary.text() == "OSError: disk vanished"


def test_errors_while_the_dialog_is_open_join_it(qtbot, funnel, caplog):
    sender = Sender()
    sender.clicked.emit()
    sender.clicked.emit()
    dialog = funnel.dialog
    assert dialog.title.text() == "2 unexpected errors inside Headroom"
    assert dialog.details_text().count("ValueError: the slot broke") == 2
    dialog.close()
    sender.clicked.emit()  # after closing, the next error starts afresh in the same dialog
    assert funnel.dialog is dialog and dialog.title.text() == "Something went wrong inside Headroom"
    assert dialog.details_text().count("Traceback") == 1


def test_the_dialog_says_conversations_are_saved_only_while_they_are(qtbot, funnel, tmp_path, monkeypatch):
    """New-user trial: on a read-only data folder (the window titled "Headroom — not saving") the
    crash dialog still said "your conversations are saved". It follows the chat's saving state:
    the one the chat is in when the window is built, and changes while the dialog is open."""
    import sqlite3

    from app.chat import open_chat
    from app.core.settings import Settings
    from app.core.store import Store
    from tests.helpers.fake_worker import FakeWorker

    path = tmp_path / "headroom.sqlite3"
    Store(path).close()
    chat = open_chat(Settings(), Store(path, read_only=True), worker=FakeWorker())
    chat.start()  # says "not saving" before the funnel watches, as the window's start does
    funnel.watch_saving(chat)
    sender = Sender()
    sender.clicked.emit()
    hint = funnel.dialog.hint.text()
    assert "conversations are saved" not in hint and "not being saved now" in hint
    assert "changes since saving stopped may be lost" in hint and "/tmp/headroom-test.log" in hint
    funnel.dialog.close()
    chat.close()

    chat = open_chat(Settings(), Store(tmp_path / "writable.sqlite3"), worker=FakeWorker())
    chat.start()
    funnel.watch_saving(chat)
    sender.clicked.emit()
    assert funnel.dialog.hint.text().startswith("Headroom keeps running and your conversations are saved.")

    def full(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    real = Store.append_message
    monkeypatch.setattr(Store, "append_message", full)
    chat.turns.send("Hi")  # a save fails while the dialog is open: it says so at once
    assert "not being saved now" in funnel.dialog.hint.text()
    monkeypatch.setattr(Store, "append_message", real)
    chat.turns.send("Hi")  # saving works again
    assert funnel.dialog.hint.text().startswith("Headroom keeps running and your conversations are saved.")
    chat.close()


@pytest.mark.no_qt_log
def test_qt_warnings_go_to_the_log(caplog):
    previous = install_qt_message_handler()
    try:
        qWarning("QPainter::begin: Paint device returned engine == 0")
    finally:
        qInstallMessageHandler(previous)
    [record] = [r for r in caplog.records if r.name == "headroom.qt"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "QPainter::begin: Paint device returned engine == 0"
