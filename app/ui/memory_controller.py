"""The memory panel's conversation with the rest of the window: the "what if" projection from
the worker's latest ForesightSnapshot and the monitor's latest sample, a stopped monitor
reported in the status bar, and the diagnostics report the panel asks for (memory_summary,
LoadReport, and each turn's projected vs measured peak).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QFileDialog

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


class MemoryController(QObject):
    """Answers `window`'s VramPanel requests from its MemoryMonitor and worker. No signals."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self._window = window
        self._foresight = None  # ForesightSnapshot for the "what if" control

    @Slot(object)
    def _on_foresight_changed(self, snapshot) -> None:
        self._foresight = snapshot

    @Slot(str)
    def _on_sampling_failed(self, reason: str) -> None:
        self._window.status.showMessage(f"Memory sampling stopped: {reason}", 15000)

    @Slot(int, int)
    def _on_what_if_changed(self, context_tokens: int, max_new_tokens: int) -> None:
        latest = self._window.monitor.latest()
        if self._foresight is not None and latest is not None:
            self._window.vram_panel.show_what_if(
                self._foresight.project(latest.allocated, context_tokens, max_new_tokens))

    @Slot()
    def _on_diagnostics_requested(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self._window, "Save diagnostics report", "headroom-diagnostics.md")
        if path:
            self.save_diagnostics(Path(path))

    def save_diagnostics(self, path: Path) -> None:
        """memory_summary, LoadReport, and the last turns' projected vs measured peaks."""
        from app.engine.memory.diagnostics import build_report, write_report

        w = self._window
        try:
            write_report(path, build_report(w.report, w.monitor.history(), w.turn_controller.turn_records))
            w.status.showMessage(f"Diagnostics saved to {path}", 8000)
        except OSError as exc:
            w.chat_view.add_notice(f"Could not save diagnostics to {path}: {exc.strerror}", "error")
