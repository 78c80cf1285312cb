"""The memory side of the open chat: the memory monitor samples the probe the worker chose for
the loaded model's device; the "what if" projection comes from the worker's latest
ForesightSnapshot and the monitor's latest sample; a stopped monitor is said in the status bar;
and the diagnostics report (memory_summary, LoadReport, each turn's projected vs measured peak)
is written on request.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Slot

from app.chat.error_text import os_error_text

if TYPE_CHECKING:
    from app.chat.chat import Chat


translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls
log = logging.getLogger(__name__)


class MemoryFlow(QObject):
    """Keeps chat.monitor on the worker's probe and answers the memory panel's questions. No
    signals of its own: failures go to the Chat's notice."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self._foresight = None  # ForesightSnapshot for the "what if" control
        chat.worker.probe_changed.connect(self._on_probe_changed)
        chat.worker.foresight_changed.connect(self._on_foresight_changed)
        chat.monitor.sampling_failed.connect(self._on_sampling_failed)

    def what_if(self, context_tokens: int, max_new_tokens: int):
        """The TurnProjection of a turn at `context_tokens` of context and `max_new_tokens` new
        tokens on the loaded model, from memory allocated now; None before a model and a sample."""
        latest = self._chat.monitor.latest()
        if self._foresight is None or latest is None:
            return None
        return self._foresight.project(latest.allocated, context_tokens, max_new_tokens)

    def save_diagnostics(self, path: Path) -> bool:
        """Write memory_summary, the LoadReport and the last turns' projected vs measured peaks
        to `path` (owner-only); says where in the status bar, or why not in an error notice."""
        from app.engine.memory.diagnostics import build_report, write_report

        chat = self._chat
        try:
            write_report(Path(path), build_report(chat.report, chat.monitor.history(), chat.turns.turn_records))
        except OSError as exc:
            chat.announce(translate("Memory", "Could not save diagnostics to {0}: {1}").format(
                path, os_error_text(exc)), "error")
            return False
        chat.announce(translate("Memory", "Diagnostics saved to {0}").format(path), "status")
        return True

    @Slot(object)
    def _on_probe_changed(self, probe) -> None:
        self._chat.monitor.set_probe(probe)

    @Slot(object)
    def _on_foresight_changed(self, snapshot) -> None:
        self._foresight = snapshot

    @Slot(str)
    def _on_sampling_failed(self, reason: str) -> None:
        log.warning("memory sampling stopped: %s", reason)
        self._chat.announce(translate("Memory", "Memory sampling stopped; the memory panel keeps its last "
                                      "reading. The details are in the log."), "warning")
