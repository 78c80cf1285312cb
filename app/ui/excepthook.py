"""The one error funnel for unexpected exceptions: log with traceback, show a non-fatal
dialog. Expected failures (bad model, OOM) never get here — they travel on signals.

Three doors lead in: `sys.excepthook` (exceptions in Qt slots and virtual methods, and in
qasync's async slots, which call it themselves), `threading.excepthook` (Python threads), and
the asyncio loop's exception handler (a task nobody awaited, a failing callback). Cancelling
async work is not an error and is dropped silently on every door (exceptions swallowed in async slots, qasync #126).
"""

import asyncio
import logging
import sqlite3
import sys
import threading
import traceback

from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot
from PySide6.QtWidgets import QApplication

from app.ui.crash_dialog import DATABASE_DAMAGED, CrashDialog

log = logging.getLogger("headroom.crash")


class _Funnel(QObject):
    """Lives in the GUI thread; a hook may run in any thread, so it emits and the dialog is shown
    here (a queued connection from other threads). `watch_saving(chat)` lets the dialog say
    whether the conversations are being saved (it says "saved" only while they are).

    Signals: error_reported(str summary, str details).
    """

    error_reported = Signal(str, str)
    database_damaged = Signal(str)  # DATABASE_DAMAGED, emitted before the error that showed it

    def __init__(self, log_file, parent):
        super().__init__(parent)
        self.log_file = log_file
        self.dialog: CrashDialog | None = None
        self.not_saving = ""  # why the conversations are not being saved now ("": they are)
        self.error_reported.connect(self._on_error_reported)
        self.database_damaged.connect(self._on_saving_changed)

    def watch_saving(self, chat) -> None:
        """Follow `chat`'s saving state (app.chat.Chat: not_saving now, saving_changed later), so
        the dialog never says the conversations are saved while the window says "not saving"."""
        self._on_saving_changed(chat.not_saving)
        chat.saving_changed.connect(self._on_saving_changed)

    @Slot(str)
    def _on_saving_changed(self, why: str) -> None:
        if self.not_saving == DATABASE_DAMAGED:  # until a restart, whatever the chat says
            return
        self.not_saving = why
        if self.dialog is not None:
            self.dialog.set_not_saving(why)

    @Slot(str, str)
    def _on_error_reported(self, summary: str, details: str) -> None:
        if self.dialog is None:
            self.dialog = CrashDialog(self.log_file)
            self.dialog.set_not_saving(self.not_saving)
        if not self.dialog.isVisible():
            self.dialog.clear()
        self.dialog.add_error(summary, details)
        self.dialog.show()  # never exec(): a nested event loop would stall qasync and the stream
        self.dialog.raise_()


_DAMAGED_DATABASE = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (https://sqlite.org/rescode.html)


def _damaged_database(exc_type, exc) -> bool:
    return issubclass(exc_type, sqlite3.DatabaseError) and (
        getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _DAMAGED_DATABASE


def _summary(exc_type, exc) -> str:
    """The dialog's first line: "Type: message", or, for the conversation database found damaged
    while Headroom runs (a page past what start-up checks, read later), what to do about it
    (new-user re-trial: "DatabaseError: database disk image is malformed" at each click)."""
    if _damaged_database(exc_type, exc):
        return QCoreApplication.translate(
            "Excepthook", "The conversation database is damaged ({0}). Restart Headroom: it keeps the damaged file "
                          "aside and starts a new one with the conversations that can still be read.").format(exc)
    return f"{exc_type.__name__}: {exc}"


def install_excepthook(log_file=None) -> _Funnel:
    """Route uncaught exceptions of this process to the log ("headroom.crash", ERROR, with the
    traceback) and to a CrashDialog. Needs a QApplication. log_file: shown in the dialog.
    Returns the funnel; its `dialog` is the CrashDialog once an error has been shown."""
    funnel = _Funnel(log_file, QApplication.instance())

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        if issubclass(exc_type, asyncio.CancelledError):
            return  # cancelled work is not a crash (exceptions swallowed in async slots, qasync #126)
        log.error("unhandled exception", exc_info=(exc_type, exc, tb))
        try:
            if _damaged_database(exc_type, exc):
                funnel.database_damaged.emit(DATABASE_DAMAGED)
            funnel.error_reported.emit(_summary(exc_type, exc),
                                       "".join(traceback.format_exception(exc_type, exc, tb)))
        except RuntimeError:  # the QApplication is gone (shutting down): the log has it
            pass

    def thread_hook(args):
        if args.exc_type is not SystemExit:
            hook(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = hook
    threading.excepthook = thread_hook
    return funnel


def install_loop_exception_handler(loop: asyncio.AbstractEventLoop) -> None:
    """Send asyncio's own error reports for `loop` through `sys.excepthook` (logged and shown)
    instead of asyncio's plain log line; a CancelledError is ignored, a report without an
    exception is logged as a warning."""

    def handler(_loop, context):
        exc = context.get("exception")
        if isinstance(exc, asyncio.CancelledError):
            return
        if exc is None:
            log.warning("asyncio: %s", context.get("message", context))
            return
        sys.excepthook(type(exc), exc, exc.__traceback__)

    loop.set_exception_handler(handler)
