"""Widgets go when Qt deletes their owner, not when Python's cycle collector gets round to them.

A top-level widget kept alive only by a Python reference cycle is freed at whatever moment the
collector runs; once that moment fell inside Qt's own loop over every widget in
QApplication.setStyleSheet, and the loop went on into the freed widget (a segfault in CI, in a
Korean screenshot test's restore of the stylesheet). The culprit was pyqtgraph's "Plot Options"
menu, made without a parent. With the collector off, deleting a whole window must leave no
top-level widget behind."""

import gc

import shiboken6
from PySide6.QtWidgets import QMenu

from app.core.settings import GenerationSettings, Settings
from app.core.store import Store
from app.ui.main_window import MainWindow
from app.ui.window_state import WindowState


def _top_levels(qapp) -> dict[int, str]:
    """The live top-level widgets: their C++ address → class and name or title, for the message."""
    def name(w) -> str:
        title = w.title() if isinstance(w, QMenu) else w.windowTitle()
        return f"{type(w).__name__} {w.objectName() or title!r}"

    return {shiboken6.getCppPointer(w)[0]: name(w) for w in qapp.topLevelWidgets() if shiboken6.isValid(w)}


def test_a_deleted_main_window_leaves_no_top_level_widget_behind(qapp, qasync_loop, qtbot, tmp_path):
    gc.collect()
    gc.disable()
    try:
        before = _top_levels(qapp)
        window = MainWindow(Settings(GenerationSettings()), store=Store(tmp_path / "headroom.sqlite3"),
                            window_state=WindowState(tmp_path / "session.ini"))
        window.show()
        qtbot.waitExposed(window)
        qtbot.wait(200)  # the VRAM panel's first sample and the transcript's layout
        made = set(_top_levels(qapp)) - set(before)
        window.close()
        qtbot.wait(50)
        shiboken6.delete(window)
        del window
        left = {address: name for address, name in _top_levels(qapp).items() if address in made}
        assert left == {}
    finally:
        gc.enable()
