"""Ctrl+C remembered as well as raised (app.core.interrupts)."""

import os
import signal

import pytest

from app.core import interrupts


@pytest.fixture
def sigint():
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # a CI runner may start pytest ignoring it
    interrupts.forget()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
        interrupts.forget()


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # Python's handler runs right after this call


def test_noted_ctrl_c_is_raised_and_remembered(sigint):
    interrupts.note_interrupts()
    assert not interrupts.interrupted()
    with pytest.raises(KeyboardInterrupt):
        ctrl_c()
    assert interrupts.interrupted()


def test_while_the_window_starts_the_first_ctrl_c_is_only_remembered_the_second_raises(sigint):
    interrupts.note_interrupts()
    interrupts.defer_interrupts()
    ctrl_c()  # no KeyboardInterrupt in the middle of the window's construction
    assert interrupts.interrupted()
    with pytest.raises(KeyboardInterrupt):
        ctrl_c()  # pressed again: the user means it


def test_an_ignored_sigint_is_left_ignored(sigint):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # nohup, a background job
    interrupts.note_interrupts()
    interrupts.defer_interrupts()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_ctrl_c_inside_importlibs_weakref_callback_is_raised_again_outside_it(sigint):
    """New-user trial: Ctrl+C landing in importlib's module-lock callback printed "Exception ignored in:
    <function _get_module_lock.<locals>.cb> … KeyboardInterrupt": Python drops what a weakref callback
    raises. It is raised again a moment later, where it counts."""
    import time
    import types

    interrupts.note_interrupts()
    callback = types.SimpleNamespace(f_code=types.SimpleNamespace(co_name="cb",
                                                                  co_filename="<frozen importlib._bootstrap>"))
    interrupts._on_ctrl_c(signal.SIGINT, callback)  # no raise: it would be printed and lost
    assert interrupts.interrupted()
    with pytest.raises(KeyboardInterrupt):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.01)
