"""Ctrl+C in the terminal closes the window instead of a KeyboardInterrupt traceback (new-user trial)."""

import os
import signal

from PySide6.QtCore import QObject

from app.ui.interrupt import close_on_interrupt


def test_sigint_asks_the_window_to_close_and_the_old_handler_comes_back(qtbot):
    before = signal.getsignal(signal.SIGINT)
    closed = []
    owner = QObject()
    restore = close_on_interrupt(lambda: closed.append(True), owner)
    try:
        os.kill(os.getpid(), signal.SIGINT)  # as the terminal sends it: no KeyboardInterrupt here
        qtbot.waitUntil(lambda: closed == [True], timeout=3000)
    finally:
        restore()
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterm_and_sighup_close_the_window_too(qtbot):
    """Trial 4: `kill` (or a logout) ended the process on the spot; the drafts were lost."""
    before = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGHUP)}
    closed = []
    owner = QObject()
    restore = close_on_interrupt(lambda: closed.append(True), owner)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        qtbot.waitUntil(lambda: closed == [True], timeout=3000)
        os.kill(os.getpid(), signal.SIGHUP)
        qtbot.waitUntil(lambda: closed == [True, True], timeout=3000)
    finally:
        restore()
    assert {number: signal.getsignal(number) for number in before} == before
