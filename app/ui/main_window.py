"""The main window: transcript, composer, toolbar, status bar; wires the generation worker.

Only this (GUI) thread touches the conversation and the widgets. Model loading is an
`async` slot awaiting a background thread, so the window never blocks (qasync).
"""

import asyncio
import functools
import itertools
import threading
from dataclasses import asdict, fields, replace
from pathlib import Path

from PySide6.QtCore import Qt, QThread, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QSplitter, QToolBar, QVBoxLayout, QWidget
from qasync import asyncSlot

from app.core.conversation import Conversation, MessageStatus, Role
from app.core.history import SummaryState, group_turns
from app.core.settings import GenerationSettings, Settings, save_settings
from app.core.store import Store
from app.engine.foresight import Foresight, copy_messages
from app.engine.memory_probe import pick_probe
from app.ui.admission_dialog import AdmissionDialog
from app.ui.chat_view import ChatView
from app.ui.composer import Composer
from app.ui.conversation_list import ConversationList
from app.ui.settings_dialog import SettingsDialog
from app.ui.status_bar import ModelStatusBar
from app.ui.token_meter import TokenMeter
from app.ui.vram_panel import VramPanel
from app.workers.generation_worker import GenerationWorker, TurnRequest
from app.workers.memory_monitor import MemoryMonitor


class MainWindow(QMainWindow):
    """Signals: model_ready(object LoadReport), load_failed(str), turn_finished(str status)."""

    model_ready = Signal(object)
    load_failed = Signal(str)
    turn_finished = Signal(str)

    def __init__(self, settings: Settings, device_preference: str = "auto", store: Store | None = None):
        super().__init__()
        self.setWindowTitle("Headroom")
        self.resize(1100, 720)
        self.settings = settings
        self.store = store or Store()
        self.store.mark_interrupted()  # replies cut off by a crash become "failed", not "streaming"
        self.conversation_id: int | None = None
        self._search = ""
        self.device_preference = device_preference
        self.conversation = Conversation()
        self.summary = SummaryState()
        self.report = None
        self._request_ids = itertools.count(1)
        self._active_request: int | None = None
        self._queued_text: str | None = None
        self._last_plan = None          # the pending turn's TurnPlan (window, projection, decision)
        self._foresight = None          # ForesightSnapshot for the "what if" control
        self._turn_records: list = []   # per-turn projected vs measured peaks, for diagnostics
        self._load_cancel: threading.Event | None = None
        self._model_swapped: asyncio.Future | None = None

        self.chat_view = ChatView()
        self.composer = Composer()
        self.token_meter = TokenMeter()
        self.sidebar = ConversationList()
        self.status = ModelStatusBar()
        self.setStatusBar(self.status)
        chat = QWidget()
        layout = QVBoxLayout(chat)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.chat_view, 1)
        layout.addWidget(self.composer)
        layout.addWidget(self.token_meter)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.sidebar)
        splitter.addWidget(chat)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([260, 840])
        self.setCentralWidget(splitter)
        self.vram_panel = VramPanel(self, safety_margin=Foresight.safety_margin)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.vram_panel)
        self.monitor = MemoryMonitor(pick_probe(), parent=self)
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
        self.worker.turn_planned.connect(self._on_turn_planned)
        self.worker.foresight_changed.connect(self._on_foresight_changed)
        self.worker.decode_status_changed.connect(self._on_decode_status_changed)
        self.worker.summary_started.connect(self._on_summary_started)
        self.worker.summary_finished.connect(self._on_summary_finished)
        self.worker.summary_failed.connect(self._on_summary_failed)
        self.worker_thread.start()

        self.composer.send_requested.connect(self._on_send_requested)
        self.composer.stop_requested.connect(self._on_stop_requested)
        self.status.cancel_load_requested.connect(self._on_cancel_load_requested)
        self.chat_view.edit_requested.connect(self._on_edit_requested)
        self.chat_view.regenerate_requested.connect(self._on_regenerate_requested)
        self.chat_view.continue_requested.connect(self._on_continue_requested)
        self.chat_view.summary_block.summary_edited.connect(self._on_summary_edited)
        self.chat_view.summary_block.cancel_summary_requested.connect(self._on_stop_requested)
        self.sidebar.open_requested.connect(self._on_open_conversation_requested)
        self.sidebar.new_requested.connect(self._on_new_chat_triggered)
        self.sidebar.rename_requested.connect(self._on_rename_requested)
        self.sidebar.delete_requested.connect(self._on_delete_requested)
        self.sidebar.restore_requested.connect(self._on_restore_requested)
        self.sidebar.search_changed.connect(self._on_search_changed)
        self.sidebar.export_requested.connect(self._on_export_requested)
        self.monitor.sample_taken.connect(self.vram_panel.show_sample)
        self.monitor.sampling_failed.connect(self._on_sampling_failed)
        self.vram_panel.what_if_changed.connect(self._on_what_if_changed)
        self.vram_panel.diagnostics_requested.connect(self._on_diagnostics_requested)
        self.monitor.start()
        self.refresh_sidebar()

    # ----- toolbar -------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        bar = QToolBar("Main")
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        self.addToolBar(bar)
        self.new_chat_action = QAction("New chat", self, shortcut=QKeySequence.StandardKey.New)
        self.open_action = QAction("Open model…", self, shortcut=QKeySequence.StandardKey.Open)
        self.settings_action = QAction("Settings…", self)
        self.memory_action = self.vram_panel.toggleViewAction()
        for action in (self.new_chat_action, self.open_action, self.settings_action, self.memory_action):
            bar.addAction(action)
        self.new_chat_action.triggered.connect(self._on_new_chat_triggered)
        self.open_action.triggered.connect(self._on_open_triggered)
        self.settings_action.triggered.connect(self._on_settings_triggered)

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
            if self.conversation_id is not None:  # the open conversation keeps its own settings
                self.store.update_settings(self.conversation_id, asdict(self.settings.generation))

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
            previous = self.settings.last_model_path
            again = f" Reopening {Path(previous).name}." if previous and Path(previous) != Path(path) else ""
            self.chat_view.add_notice(f"Could not open the model: {exc}.{again}", "error")
            self.status.show_report(None)
            self.load_failed.emit(str(exc))
            if again:  # the old model was freed first (C05): bring it back
                asyncio.get_event_loop().call_soon(self.open_model, Path(previous))
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
        self.vram_panel.show_projection(None, report.weight_bytes if report else 0)
        if report is not None:
            self.vram_panel.set_what_if_limits(report.max_positions or 2048, 32768)
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

    # ----- conversations ---------------------------------------------------------------------
    def refresh_sidebar(self) -> None:
        self.sidebar.set_conversations(self.store.list_conversations(self._search), self.conversation_id)

    def _reset_conversation(self) -> None:
        self._queued_text = None
        if self._active_request is not None:  # a reply in flight is kept, as stopped
            self.worker.request_stop()
            self._end_turn(MessageStatus.STOPPED)
        self.conversation, self.summary, self.conversation_id = Conversation(), SummaryState(), None
        self.chat_view.clear()
        self.token_meter.reset()

    @Slot()
    def _on_new_chat_triggered(self) -> None:
        self._reset_conversation()
        self.refresh_sidebar()

    @Slot(int)
    def _on_open_conversation_requested(self, conversation_id: int) -> None:
        if self._active_request is not None:
            self.chat_view.add_notice("Stop the current reply before switching conversations.")
            return
        stored = self.store.load_conversation(conversation_id)
        self._reset_conversation()
        self.conversation, self.summary = stored.conversation, stored.summary
        self.conversation_id = conversation_id
        if stored.settings:  # this conversation's own generation settings
            known = {f.name for f in fields(GenerationSettings)}
            generation = GenerationSettings(**{k: v for k, v in stored.settings.items() if k in known})
            self.settings = replace(self.settings, generation=generation.validated())
        self.chat_view.load_messages(self.conversation.messages)
        self._show_summary()
        self.refresh_sidebar()

    @Slot(int, str)
    def _on_rename_requested(self, conversation_id: int, title: str) -> None:
        self.store.rename_conversation(conversation_id, title)
        self.refresh_sidebar()

    @Slot(int)
    def _on_delete_requested(self, conversation_id: int) -> None:
        title = next((i.title for i in self.store.list_conversations() if i.id == conversation_id), "")
        self.store.delete_conversation(conversation_id)
        if conversation_id == self.conversation_id:
            self._reset_conversation()
        self.refresh_sidebar()
        self.sidebar.show_undo(conversation_id, title)

    @Slot(int)
    def _on_restore_requested(self, conversation_id: int) -> None:
        self.store.restore_conversation(conversation_id)
        self.refresh_sidebar()

    @Slot(str)
    def _on_search_changed(self, text: str) -> None:
        self._search = text
        self.refresh_sidebar()

    @Slot(int, str)
    def _on_export_requested(self, conversation_id: int, fmt: str) -> None:
        suffix = ".md" if fmt == "markdown" else ".json"
        path, _ = QFileDialog.getSaveFileName(self, "Export conversation", f"conversation{suffix}")
        if path:
            self.export_conversation(conversation_id, fmt, Path(path))

    def export_conversation(self, conversation_id: int, fmt: str, path: Path) -> None:
        text = (self.store.export_markdown(conversation_id) if fmt == "markdown"
                else self.store.export_json(conversation_id))
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.chat_view.add_notice(f"Could not export to {path}: {exc.strerror}", "error")

    def _persist(self, message) -> None:
        """Commit a message as it completes (a new row, or the final state of an old one)."""
        if self.conversation_id is None:
            title = self.conversation.messages[0].content.strip().splitlines()[0][:60]
            self.conversation_id = self.store.create_conversation(title, asdict(self.settings.generation))
            self.refresh_sidebar()
        if message.id is None:
            self.store.append_message(self.conversation_id, message)
        else:
            self.store.update_message(message.id, content=message.content, status=message.status)

    # ----- summary -------------------------------------------------------------------------
    def _summary_cap(self) -> int:
        from app.engine.foresight import summary_reserve

        positions = (self.report.max_positions if self.report else None) or 2048
        context = self.settings.generation.context_tokens
        return summary_reserve(min(positions, context) if context > 0 else positions)

    def _show_summary(self) -> None:
        folded = sum(1 for t in group_turns(self.conversation.messages)
                     if t.last_position <= self.summary.folded_through)
        self.chat_view.summary_block.set_summary(self.summary.content, folded, self.summary.tokens,
                                                 self._summary_cap())

    @Slot(int, int)
    def _on_summary_started(self, _request_id: int, _folded: int) -> None:
        self.chat_view.summary_block.set_summarizing(True)

    @Slot(int, object, str)
    def _on_summary_finished(self, _request_id: int, state, verdict: str) -> None:
        self.summary = state
        if self.conversation_id is not None:
            self.store.save_summary(self.conversation_id, state)
        self.chat_view.summary_block.set_summarizing(False)
        self._show_summary()
        self.status.showMessage(f"Summary: {verdict}", 8000)

    @Slot(int, str)
    def _on_summary_failed(self, _request_id: int, reason: str) -> None:
        self.chat_view.summary_block.set_summarizing(False)
        self.chat_view.add_notice(f"The summary of earlier turns failed: {reason}", "error")

    @Slot(str)
    def _on_summary_edited(self, text: str) -> None:
        self.summary = SummaryState(text, self.summary.folded_through if text else -1,
                                    len(text.split()) * 4 // 3)  # recounted by the next turn's plan
        if self.conversation_id is not None:
            self.store.save_summary(self.conversation_id, self.summary)
        self._show_summary()

    # ----- chat turns ----------------------------------------------------------------------
    @Slot(str)
    def _on_send_requested(self, text: str) -> None:
        if self._active_request is not None:  # sent while Stop takes effect: next in line
            self._queued_text = text
            self.worker.request_stop()
            return
        message = self.conversation.add(Role.USER, text)
        self.chat_view.add_message(Role.USER, text)
        self._persist(message)
        self._start_turn()

    @Slot(int, str)
    def _on_edit_requested(self, index: int, text: str) -> None:
        message = self.conversation.messages[index]
        message.content = text
        self._persist(message)
        self._drop_from(index + 1)
        self._start_turn()

    @Slot(int)
    def _on_regenerate_requested(self, index: int) -> None:
        self._drop_from(index)
        self._start_turn()

    @Slot(int)
    def _on_continue_requested(self, _index: int) -> None:
        self.conversation.messages[-1].status = MessageStatus.STREAMING
        self._start_turn(continue_final=True)

    def _drop_from(self, index: int) -> None:
        """Forget messages from `index` on (edit / regenerate), and a summary that folded any."""
        del self.conversation.messages[index:]
        self.chat_view.truncate(index)
        if self.conversation_id is not None:
            self.store.truncate_messages(self.conversation_id, index)
        if self.summary.folded_through >= index:
            self.summary = SummaryState()
            self._show_summary()

    def _start_turn(self, continue_final: bool = False, override_memory: bool = False,
                    settings=None) -> None:
        if not continue_final:
            messages = copy_messages(self.conversation.messages)
            self.conversation.add(Role.ASSISTANT, "", MessageStatus.STREAMING)
            self.chat_view.begin_stream()
        else:
            messages = copy_messages(self.conversation.messages)
            self.chat_view.continue_stream()
        request = TurnRequest(next(self._request_ids), messages, self.summary,
                              settings or self.settings.generation, continue_final, override_memory)
        self._active_request = request.request_id
        self.composer.set_generating(True)
        self.worker.turn_requested.emit(request)

    @Slot()
    def _on_stop_requested(self) -> None:
        # A direct call, not a signal into the worker: the worker's event loop is busy
        # generating, so a queued slot would only run after the reply ends.
        self.worker.request_stop()

    @Slot(int, object)
    def _on_turn_planned(self, request_id: int, plan) -> None:
        self._last_plan = plan
        self.vram_panel.show_projection(plan.projection, self.report.weight_bytes if self.report else 0)
        window = plan.window
        folded = sum(1 for t in group_turns(self.conversation.messages)
                     if t.last_position <= self.summary.folded_through)
        self.token_meter.set_counts(window.prompt_tokens, window.limit_tokens, len(window.kept), folded)

    @Slot(int, str)
    def _on_token_streamed(self, request_id: int, text: str) -> None:
        if request_id == self._active_request:
            self.conversation.messages[-1].content += text
            self.chat_view.append_stream(text)

    @Slot(int, object, object)
    def _on_reply_finished(self, request_id: int, finished, record) -> None:
        if request_id != self._active_request:
            return
        self._turn_records.append(record)
        if finished.stop_reason == "length":  # cut off by max_new_tokens: offer Continue
            self._end_turn(MessageStatus.STOPPED, "max new tokens reached")
        else:
            self._end_turn(MessageStatus.STOPPED if finished.stop_reason == "stopped"
                           else MessageStatus.COMPLETE)
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
        reply = self.conversation.messages[-1]
        if reply.id is None:  # a fresh placeholder: nothing ran, nothing to keep
            self.conversation.messages.pop()
            self.chat_view.end_stream(MessageStatus.FAILED)
            self.chat_view.truncate(len(self.conversation.messages))
        else:  # a refused "continue": the partial answer stays as it was
            reply.status = MessageStatus.STOPPED
            self.chat_view.end_stream(MessageStatus.STOPPED)
        self._active_request = None
        self.composer.set_generating(False)
        self.chat_view.add_notice(f"This turn was not started: {decision.reason}", "error")
        self.turn_finished.emit("refused")
        if self._queued_text:
            self._send_queued()
            return
        projection = self._last_plan.projection if self._last_plan is not None else None
        self.admission_dialog = AdmissionDialog(decision, projection, self)
        self.admission_dialog.remedy_chosen.connect(
            lambda choice: self._on_remedy_chosen(choice, decision))
        self.admission_dialog.open()  # window-modal, never blocks the event loop

    def _on_remedy_chosen(self, choice: str, decision) -> None:
        """Apply the remedy the user picked for a refused turn and send it again."""
        settings = self.settings.generation
        if choice == "lower_max_new_tokens" and decision.max_new_tokens_fit:
            self._start_turn(settings=replace(settings, max_new_tokens=decision.max_new_tokens_fit))
        elif choice == "trim" and decision.trim_tokens and self._last_plan is not None:
            # a smaller context for this turn: the oldest turns leave the window (and are summarized)
            context = len(self._last_plan.prompt_ids) - decision.trim_tokens + settings.max_new_tokens
            self._start_turn(settings=replace(settings, context_tokens=max(context, settings.max_new_tokens + 1)))
        elif choice == "override":
            self._start_turn(override_memory=True)
        else:
            self._withdraw_unanswered()

    def _withdraw_unanswered(self) -> None:
        """A refused message the user gives up on goes back into the composer, not into history."""
        messages = self.conversation.messages
        if not messages or messages[-1].role is not Role.USER:
            return
        text = messages[-1].content
        self._drop_from(len(messages) - 1)
        if not self.composer.editor.toPlainText().strip():
            self.composer.editor.setPlainText(text)

    def _end_turn(self, status: MessageStatus, detail: str = "") -> None:
        message = self.conversation.messages[-1]
        message.status = status
        self._persist(message)
        self.chat_view.end_stream(status, detail)
        self._active_request = None
        self.composer.set_generating(False)
        self.turn_finished.emit(status.value)
        self._send_queued()

    def _send_queued(self) -> None:
        text, self._queued_text = self._queued_text, None
        if text:
            self._on_send_requested(text)

    # ----- memory panel ----------------------------------------------------------------------
    @Slot(object)
    def _on_foresight_changed(self, snapshot) -> None:
        self._foresight = snapshot

    @Slot(object)
    def _on_decode_status_changed(self, status) -> None:
        self.status.show_decode_status(status)

    @Slot(str)
    def _on_sampling_failed(self, reason: str) -> None:
        self.status.showMessage(f"Memory sampling stopped: {reason}", 15000)

    @Slot(int, int)
    def _on_what_if_changed(self, context_tokens: int, max_new_tokens: int) -> None:
        latest = self.monitor.latest()
        if self._foresight is not None and latest is not None:
            self.vram_panel.show_what_if(self._foresight.project(latest.allocated, context_tokens, max_new_tokens))

    @Slot()
    def _on_diagnostics_requested(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save diagnostics report", "headroom-diagnostics.md")
        if path:
            self.save_diagnostics(Path(path))

    def save_diagnostics(self, path: Path) -> None:
        """memory_summary, LoadReport, and the last turns' projected vs measured peaks."""
        from app.engine.diagnostics import build_report, write_report

        try:
            write_report(path, build_report(self.report, self.monitor.history(), self._turn_records))
            self.status.showMessage(f"Diagnostics saved to {path}", 8000)
        except OSError as exc:
            self.chat_view.add_notice(f"Could not save diagnostics to {path}: {exc.strerror}", "error")

    # ----- shutdown --------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        """Stop any reply (it ends within one token), then join the worker thread."""
        if self._load_cancel is not None:
            self._load_cancel.set()
        self.monitor.stop()
        self.worker.request_stop()
        self.worker_thread.quit()
        self.worker_thread.wait()
        if self._active_request is not None:  # the partial answer is kept as stopped
            self._end_turn(MessageStatus.STOPPED)
        self.store.purge_deleted(older_than_s=7 * 24 * 3600)
        self.store.close()
        super().closeEvent(event)
