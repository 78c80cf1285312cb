"""The Qt binding itself must not corrupt the interpreter (PySide6 6.12.0 on Python 3.11 drops a
reference to None on every void call; the app then aborts with `none_dealloc` after minutes)."""

import sys

from PySide6.QtWidgets import QLabel


def test_void_calls_keep_none_refcount(qtbot):
    label = QLabel("x")
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for _ in range(2000):
        label.setText("y")
        label.repaint()
    assert sys.getrefcount(None) - before > -100  # noise from other threads, not -4000
