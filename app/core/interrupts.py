"""Ctrl+C remembered as well as raised.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives, and libraries
do not always let it through: transformers and accelerate turn one raised in the middle of an
import into an ImportError, and the half-imported module left behind fails the next import as a
"circular import" with no trace of Ctrl+C (new-user trials: Ctrl+C 0.3 s after `--ask` was said
as a damaged default model; 2.3 s after the window's start it was swallowed and the window opened
anyway). `note_interrupts` makes SIGINT set a flag before raising as usual, so whoever sees the
after-effect can ask `interrupted()` and end as the interruption it was.
"""

from __future__ import annotations

import signal
import threading

_pressed = threading.Event()


def note_interrupts() -> None:
    """From the main thread, at start. Left off where SIGINT is ignored (nohup, a background job)
    or already handled by someone else."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_ctrl_c)


def _on_ctrl_c(signum, frame) -> None:
    _pressed.set()
    if _in_weakref_callback(frame):  # raised there, it is printed as "Exception ignored in …" and lost
        threading.Timer(0.05, signal.raise_signal, (signal.SIGINT,)).start()  # raised again, outside it
        return
    raise KeyboardInterrupt


def _in_weakref_callback(frame) -> bool:
    """Whether `frame` is importlib's module-lock weakref callback (`_get_module_lock.<locals>.cb`),
    which Python runs with exceptions printed and dropped (new-user trial: Ctrl+C 1 s into `--ask`
    printed that traceback, once in ~40 tries)."""
    code = getattr(frame, "f_code", None)
    return code is not None and code.co_name == "cb" and "importlib" in code.co_filename


def defer_interrupts() -> None:
    """From now on the first Ctrl+C is only remembered and a second one raises: for the window's
    start, whose threads would be left running by a KeyboardInterrupt (Qt then aborts the process:
    "QThread: Destroyed while thread … is still running"); the window closes itself once it is up
    when `interrupted()`."""
    if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _on_ctrl_c):
        signal.signal(signal.SIGINT, _remember_first)


def _remember_first(signum, frame) -> None:
    if _pressed.is_set():
        raise KeyboardInterrupt
    _pressed.set()


def interrupted() -> bool:
    """Whether Ctrl+C came since the start (or since `forget`)."""
    return _pressed.is_set()


def forget() -> None:
    """Clear the flag (tests)."""
    _pressed.clear()
