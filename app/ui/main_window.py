"""The main window: transcript, composer, toolbar, status bar; wires the generation worker.

Only this (GUI) thread touches the conversation and the widgets. Model loading is an
`async` slot awaiting a background thread, so the window never blocks (qasync).
"""

import asyncio
import functools
import itertools
import threading
from pathlib import Path

from PySide6.QtCore import QThread, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QToolBar, QVBoxLayout, QWidget
from qasync import asyncSlot

from app.core.conversation import Conversation, MessageStatus, Role
from app.core.history import SummaryState
from app.core.settings import Settings, save_settings
from app.engine.foresight import copy_messages
from app.ui.chat_view import ChatView
from app.ui.composer import Composer
from app.ui.settings_dialog import SettingsDialog
from app.ui.status_bar import ModelStatusBar
from app.workers.generation_worker import GenerationWorker, TurnRequest


class MainWindow(QMainWindow):
    """Signals: model_ready(object LoadReport), load_failed(str), turn_finished(str status)."""

    model_ready = Signal(object)
    load_failed = Signal(str)
    turn_finished = Signal(str)

    def __init__(self, settings: Settings, device_preference: str = "auto"):
        super().__init__()
        self.setWindowTitle("Headroom")
        self.resize(900, 700)
        self.settings = settings
        self.device_preference = device_preference
        self.conversation = Conversation()
        self.summary = SummaryState()
        self.report = None
        self._request_ids = itertools.count(1)
        self._active_request: int | None = None
        self._load_cancel: threading.Event | None = None
        self._model_swapped: asyncio.Future | None = None

        self.chat_view = ChatView()
        self.composer = Composer()
        self.status = ModelStatusBar()
        self.setStatusBar(self.status)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.chat_view, 1)
        layout.addWidget(self.composer)
        self.setCentralWidget(central)
        self._build_toolbar()

        self.worker = GenerationWorker()
        self.worker_thread = QThread(self)
        self.worker_thread.setObjectName("generation")
        self.worker.moveToThread(self.worker_thread)
        self.worker.token_streamed.connect(self._on_token_streamed)
        self.worker.reply_finished.connect(self._on_reply_finished)
        self.worker.generation_failed.connect(self._on_generation_failed)
        self.worker.model_changed.connect(self._on_model_changed)
        self.worker.turn_refused.connect(self._on_turn_refused)
        self.worker_thread.start()

        self.composer.send_requested.connect(self._on_send_requested)
        self.composer.stop_requested.connect(self._on_stop_requested)
        self.status.cancel_load_requested.connect(self._on_cancel_load_requested)

    # ----- toolbar -------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        bar = QToolBar("Main")
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        self.addToolBar(bar)
        self.new_chat_action = QAction("New chat", self, shortcut=QKeySequence.StandardKey.New)
        self.open_action = QAction("Open model…", self, shortcut=QKeySequence.StandardKey.Open)
        self.settings_action = QAction("Settings…", self)
        for action in (self.new_chat_action, self.open_action, self.settings_action):
            bar.addAction(action)
        self.new_chat_action.triggered.connect(self._on_new_chat_triggered)
        self.open_action.triggered.connect(self._on_open_triggered)
        self.settings_action.triggered.connect(self._on_settings_triggered)

    @Slot()
    def _on_new_chat_triggered(self) -> None:
        self.worker.request_stop()
        self.conversation = Conversation()
        self.summary = SummaryState()
        self.chat_view.clear()

    @Slot()
    def _on_open_triggered(self) -> None:
        dialog = QFileDialog(self, "Open model — an HF folder, or pick a .gguf file")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter("GGUF models (*.gguf);;Model config (config.json)")
        if dialog.exec():
            chosen = Path(dialog.selectedFiles()[0])
            # picking a folder's config.json opens the folder
            self.open_model(chosen.parent if chosen.name == "config.json" else chosen)

    @Slot()
    def _on_settings_triggered(self) -> None:
        dialog = SettingsDialog(self.settings.generation, self)
        if dialog.exec():
            self.settings = Settings(dialog.result_settings(), self.settings.last_model_path)
            save_settings(self.settings)

    # ----- model loading ---------------------------------------------------------------------
    @asyncSlot(object)
    async def open_model(self, path: Path) -> None:
        """Load `path` off the GUI thread, with progress and cancel; errors show inline."""
        from app.engine.loader import LoadCancelled, ModelLoadError, load_model

        if self._load_cancel is not None:
            self._load_cancel.set()  # a newer request replaces a load in progress
        cancel = self._load_cancel = threading.Event()
        self.worker.request_stop()
        self.composer.set_can_send(False)
        self.status.show_progress(f"Opening {Path(path).name}…", 0.0)
        await self._swap_model(None)  # free the old model before loading the next (C05)
        loop = asyncio.get_event_loop()

        def progress(text: str, fraction: float) -> None:
            loop.call_soon_threadsafe(self.status.show_progress, text, fraction)

        try:
            loaded = await loop.run_in_executor(
                None, functools.partial(load_model, Path(path), progress, cancel,
                                        device_preference=self.device_preference))
        except LoadCancelled:
            self.chat_view.add_notice("Loading cancelled.")
            self.status.show_report(None)
        except ModelLoadError as exc:
            self.chat_view.add_notice(f"Could not open the model: {exc}", "error")
            self.status.show_report(self.report)
            self.load_failed.emit(str(exc))
        else:
            if cancel.is_set():
                return
            await self._swap_model(loaded)
            del loaded  # the worker owns the model now
            self.settings = Settings(self.settings.generation, str(path))
            save_settings(self.settings)
        finally:
            if self._load_cancel is cancel:
                self._load_cancel = None
                self.status.end_progress()

    async def _swap_model(self, loaded) -> None:
        self._model_swapped = asyncio.get_event_loop().create_future()
        self.worker.model_change_requested.emit(loaded)
        await self._model_swapped

    @Slot(object)
    def _on_model_changed(self, report) -> None:
        self.report = report
        self.status.show_report(report)
        self.composer.set_can_send(report is not None)
        if self._model_swapped is not None and not self._model_swapped.done():
            self._model_swapped.set_result(report)
        if report is not None:
            self.model_ready.emit(report)

    @Slot()
    def _on_cancel_load_requested(self) -> None:
        if self._load_cancel is not None:
            self._load_cancel.set()
            self.status.show_progress("Cancelling after the current step…", self.status.progress.value() / 100)

    # ----- chat turns ----------------------------------------------------------------------
    @Slot(str)
    def _on_send_requested(self, text: str) -> None:
        self.conversation.add(Role.USER, text)
        self.chat_view.add_message(Role.USER, text)
        self._start_turn()

    def _start_turn(self, continue_final: bool = False, override_memory: bool = False) -> None:
        request = TurnRequest(next(self._request_ids), copy_messages(self.conversation.messages),
                              self.summary, self.settings.generation, continue_final, override_memory)
        if not continue_final:
            self.conversation.add(Role.ASSISTANT, "", MessageStatus.STREAMING)
        self._active_request = request.request_id
        self.chat_view.begin_stream()
        self.composer.set_generating(True)
        self.worker.turn_requested.emit(request)

    @Slot()
    def _on_stop_requested(self) -> None:
        # A direct call, not a signal into the worker: the worker's event loop is busy
        # generating, so a queued slot would only run after the reply ends.
        self.worker.request_stop()

    @Slot(int, str)
    def _on_token_streamed(self, request_id: int, text: str) -> None:
        if request_id == self._active_request:
            self.conversation.messages[-1].content += text
            self.chat_view.append_stream(text)

    @Slot(int, object, object)
    def _on_reply_finished(self, request_id: int, finished, record) -> None:
        if request_id != self._active_request:
            return
        status = MessageStatus.STOPPED if finished.stop_reason == "stopped" else MessageStatus.COMPLETE
        self._end_turn(status)
        self.status.show_speed(finished.ttft_s, finished.decode_tokens_per_s, finished.new_tokens)

    @Slot(int, str, str)
    def _on_generation_failed(self, request_id: int, reason: str, _partial: str) -> None:
        if request_id != self._active_request:
            return
        self._end_turn(MessageStatus.FAILED, reason)
        self.chat_view.add_notice(f"The reply failed: {reason}", "error")

    @Slot(int, object)
    def _on_turn_refused(self, request_id: int, decision) -> None:
        if request_id != self._active_request:
            return
        self.conversation.messages.pop()  # the reply placeholder: nothing ran
        self.chat_view.end_stream(MessageStatus.FAILED, "not started")
        self._active_request = None
        self.composer.set_generating(False)
        self.chat_view.add_notice(f"This turn was not started: {decision.reason}", "error")
        self.turn_finished.emit("refused")

    def _end_turn(self, status: MessageStatus, detail: str = "") -> None:
        message = self.conversation.messages[-1]
        message.status = status
        self.chat_view.end_stream(status, detail)
        self._active_request = None
        self.composer.set_generating(False)
        self.turn_finished.emit(status.value)

    # ----- shutdown --------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        """Stop any reply (it ends within one token), then join the worker thread."""
        if self._load_cancel is not None:
            self._load_cancel.set()
        self.worker.request_stop()
        self.worker_thread.quit()
        self.worker_thread.wait()
        super().closeEvent(event)
