"""Opening a model: the Open-model dialog, loading off the GUI thread with progress and Cancel,
handing the model to the worker, and showing what is actually active (its LoadReport).

The open model is freed before the next one loads (C05), so a failed load reopens the previous
one. A chosen model's opt-ins (trust_remote_code, pickle) and the recent-models list are saved
in settings. Loading is an `async` slot awaiting a background thread (qasync): the window never
blocks, and closing it cancels the load.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Slot
from qasync import asyncSlot

from app.core.settings import save_settings

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


class ModelOpener(QObject):
    """Loads models for `window` and adopts the worker's LoadReport as window.report. No signals
    of its own: the window's model_ready(object LoadReport) and load_failed(str) are emitted here."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self._window = window
        self._load_cancel: threading.Event | None = None
        self._model_swapped: asyncio.Future | None = None

    @Slot()
    def _on_open_triggered(self) -> None:
        from app.engine.loading.catalog import Catalog
        from app.ui.open_model_dialog import OpenModelDialog

        w = self._window
        catalog = Catalog.for_this_machine(  # the open model is freed before the next loads (C05)
            w.device_preference, w.report.weight_bytes if w.report else 0,
            w.settings.generation.context_tokens)
        dialog = OpenModelDialog(catalog, w.settings, w)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.model_chosen.connect(self._on_model_chosen)
        dialog.open()

    @Slot(str, object)
    def _on_model_chosen(self, path: str, permissions) -> None:
        w = self._window
        w.settings = w.settings.with_permissions(permissions)
        save_settings(w.settings)
        self.open_model(Path(path))

    @asyncSlot(object)
    async def open_model(self, path: Path) -> None:
        """Load `path` off the GUI thread, with progress and cancel; errors show inline."""
        w = self._window
        w.own_current_task()
        if not Path(path).exists():  # checked before the current model is unloaded
            w.chat_view.add_notice(f"Could not open the model: no model at {path}.", "error")
            w.load_failed.emit(f"no model at {path}")
            return
        if self._load_cancel is not None:
            self._load_cancel.set()  # a newer request replaces a load in progress
        cancel = self._load_cancel = threading.Event()
        w.worker.request_stop()
        w.composer.set_can_send(False)
        w.status.show_progress(f"Opening {Path(path).name}…", 0.0)
        await self._swap_model(None)  # free the old model before loading the next (C05)
        # transformers takes 1–2 s to import: in a worker thread, so the first paint does not wait
        await asyncio.get_event_loop().run_in_executor(None, importlib.import_module, "app.engine.loading.loader")
        from app.engine.loading.loader import LoadCancelled, ModelLoadError, load_model

        loop = asyncio.get_event_loop()

        def progress(text: str, fraction: float) -> None:
            loop.call_soon_threadsafe(w.status.show_progress, text, fraction)

        allowed = w.settings.permissions_for(path)  # this model's opt-ins, off by default
        try:
            loaded = await loop.run_in_executor(
                None, functools.partial(load_model, Path(path), progress, cancel,
                                        trust_remote_code=allowed.trust_remote_code,
                                        device_preference=w.device_preference,
                                        allow_pickle=allowed.allow_pickle))
        except LoadCancelled:
            replaced = self._load_cancel is not cancel  # a newer open is already under way
            again = "" if replaced else self._reopen_hint(path)
            w.chat_view.add_notice(f"Loading cancelled.{again}")
            w.status.show_report(None)
            if again:  # the old model was freed first (C05): bring it back
                asyncio.get_event_loop().call_soon(self.open_model, Path(w.settings.last_model_path))
        except ModelLoadError as exc:
            again = self._reopen_hint(path)
            w.chat_view.add_notice(f"Could not open the model: {str(exc).rstrip('.')}.{again}", "error")
            w.status.show_report(None)
            w.load_failed.emit(str(exc))
            if again:  # the old model was freed first (C05): bring it back
                asyncio.get_event_loop().call_soon(self.open_model, Path(w.settings.last_model_path))
        else:
            if cancel.is_set():
                return
            await self._swap_model(loaded)
            del loaded  # the worker owns the model now
            w.settings = w.settings.with_recent_model(path)
            save_settings(w.settings)
        finally:
            if self._load_cancel is cancel:
                self._load_cancel = None
                w.status.end_progress()

    def _reopen_hint(self, path: Path) -> str:
        """" Reopening <name>." when the last model that opened is another one, else ""."""
        previous = self._window.settings.last_model_path
        return f" Reopening {Path(previous).name}." if previous and Path(previous) != Path(path) else ""

    async def _swap_model(self, loaded) -> None:
        self._model_swapped = asyncio.get_event_loop().create_future()
        self._window.worker.model_change_requested.emit(loaded)
        await self._model_swapped

    @Slot(object)
    def _on_model_changed(self, report) -> None:
        w = self._window
        w.report = report
        w.vram_panel.show_projection(None, report.weight_bytes if report else 0)
        if report is not None:
            w.vram_panel.set_what_if_limits(report.max_positions or 2048, 32768)
        w.status.show_report(report)
        w.backend_controller.refresh_can_send()
        if self._model_swapped is not None and not self._model_swapped.done():
            self._model_swapped.set_result(report)
        if report is not None:
            w.model_ready.emit(report)

    @Slot(object)
    def _on_decode_status_changed(self, status) -> None:
        self._window.status.show_decode_status(status)

    @Slot()
    def _on_cancel_load_requested(self) -> None:
        if self.cancel_load():
            status = self._window.status
            status.show_progress("Cancelling after the current step…", status.progress.value() / 100)

    def cancel_load(self) -> bool:
        """Ask a load in progress to stop after its current step; False when none is running."""
        if self._load_cancel is None:
            return False
        self._load_cancel.set()
        return True
