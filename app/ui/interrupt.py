"""Ctrl+C in the terminal that started Headroom closes the window, as its close button does; so do
SIGTERM (`kill`, a logout, a service manager) and SIGHUP (the terminal closed), which otherwise
ended the process on the spot and lost the drafts and the layout (trial 4).

Without this, Python turns SIGINT into a KeyboardInterrupt inside whatever slot runs next: the
terminal shows a traceback and the app runs on (new-user trial). Python runs its signal handlers
only between bytecodes, and Qt's event loop may sit in C++ for a long time, so the signal also
writes a byte to a socket pair (`signal.set_wakeup_fd`) that a QSocketNotifier watches: the loop
wakes at once and the handler asks the window to close (the window's own close path: the open
chat saved, a reply being written stopped or asked about).
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Callable

from PySide6.QtCore import QObject, QSocketNotifier, QTimer

log = logging.getLogger(__name__)

CLOSING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals that close the window (SIGHUP does not exist on Windows)."""


def close_on_interrupt(close: Callable[[], object], parent: QObject) -> Callable[[], None]:
    """Make SIGINT and the other CLOSING_SIGNALS call ``close`` (on the Qt event loop, soon after
    the signal) until the returned function is called, which puts the previous handlers and
    wake-up fd back. ``parent`` owns the notifier. Only from the main thread (Python's signal
    rule); does nothing (returns a no-op) where the signals cannot be handled."""
    try:
        reader, writer = socket.socketpair()
        for end in (reader, writer):
            end.setblocking(False)
        previous_fd = signal.set_wakeup_fd(writer.fileno())
        previous_handlers = {number: signal.signal(number, lambda *_: QTimer.singleShot(0, close))
                             for number in CLOSING_SIGNALS}
    except (ValueError, OSError) as exc:  # not the main thread, or no socket pair here
        log.info("Ctrl+C is left to Python: %s", exc)
        return lambda: None
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, parent)

    def drain() -> None:  # the byte only woke the loop; the Python handler has run by now
        try:
            while reader.recv(64):
                pass
        except OSError:
            pass

    notifier.activated.connect(drain)

    def restore() -> None:
        notifier.setEnabled(False)
        for number, handler in previous_handlers.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_fd)
        reader.close()
        writer.close()

    return restore
