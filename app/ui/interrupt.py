"""Ctrl+C in the terminal that started Headroom closes the window, as its close button does.

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


def close_on_interrupt(close: Callable[[], object], parent: QObject) -> Callable[[], None]:
    """Make SIGINT call ``close`` (on the Qt event loop, soon after the signal) until the returned
    function is called, which puts the previous handler and wake-up fd back. ``parent`` owns the
    notifier. Only from the main thread (Python's signal rule); does nothing (returns a no-op)
    where SIGINT cannot be handled."""
    try:
        reader, writer = socket.socketpair()
        for end in (reader, writer):
            end.setblocking(False)
        previous_fd = signal.set_wakeup_fd(writer.fileno())
        previous_handler = signal.signal(signal.SIGINT, lambda *_: QTimer.singleShot(0, close))
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
        signal.signal(signal.SIGINT, previous_handler)
        signal.set_wakeup_fd(previous_fd)
        reader.close()
        writer.close()

    return restore
