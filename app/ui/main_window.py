"""The main window: transcript, composer, toolbar, status bar; wires the generation worker.

Only this (GUI) thread touches the conversation and the widgets. Model loading is an
`async` slot awaiting a background thread, so the window never blocks (qasync).
"""

import asyncio
import functools
import importlib
import itertools
import threading
from dataclasses import fields, replace
from pathlib import Path

from PySide6.QtCore import Qt, QThread, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QSplitter, QToolBar, QVBoxLayout, QWidget
from qasync import asyncSlot

from app.core.backend_settings import BackendSettings, conversation_settings
from app.core.conversation import Conversation, MessageStatus, Role
from app.core.history import SummaryState, group_turns
from app.core.settings import GenerationSettings, Settings, save_settings
from app.core.store import Store
from app.engine.foresight import Foresight, copy_messages
from app.engine.memory_probe import pick_probe
from app.ui.about_dialog import AboutDialog
from app.ui.admission_dialog import AdmissionDialog
from app.ui.chat_view import ChatView
from app.ui.composer import Composer
from app.ui.conversation_list import ConversationList
from app.ui.session_state import SessionState
from app.ui.settings_dialog import SettingsDialog
from app.ui.status_bar import ModelStatusBar
from app.ui.token_meter import TokenMeter
from app.ui.vram_panel import VramPanel
from app.workers.generation_worker import GenerationWorker, TurnRequest
from app.workers.memory_monitor import MemoryMonitor
from app.workers.server_monitor import ServerMonitor


class MainWindow(QMainWindow):
    """Signals: model_ready(object LoadReport), load_failed(str), turn_finished(str status)."""

    model_ready = Signal(object)
    load_failed = Signal(str)
    turn_finished = Signal(str)

    def __init__(self, settings: Settings, device_preference: str = "auto", store: Store | None = None,
                 session: SessionState | None = None):
        """store: conversations (default: the user data folder's). session: layout, last open
        conversation and notices already shown (default: session.ini in the config folder)."""
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
        self._tasks: set[asyncio.Task] = set()  # async slots in flight, cancelled on close
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
        self.splitter = splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setObjectName("sidebarSplitter")
        splitter.addWidget(self.sidebar)
        splitter.addWidget(chat)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([260, 840])
        self.setCentralWidget(splitter)
        self.vram_panel = VramPanel(self, safety_margin=Foresight.safety_margin)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.vram_panel)
        self.monitor = MemoryMonitor(pick_probe(), parent=self)
        self._build_toolbar()
        self._build_help_menu()

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
        self.worker.backend_chosen.connect(self._on_backend_chosen)
        self.worker_thread.start()
        self._remote_report = None      # RemoteReport of the server that answered last
        self.server_monitor = ServerMonitor(parent=self)  # a remote server's /metrics, ≈1 Hz
        self.server_monitor.metrics_sampled.connect(self.vram_panel.show_server_metrics)

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
        self._apply_backend()
        self.refresh_sidebar()
        self._closed = False
        self.session = session or SessionState()
        self._restore_session()

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
        from app.engine.model_catalog import Catalog
        from app.ui.open_model_dialog import OpenModelDialog

        catalog = Catalog.for_this_machine(  # the open model is freed before the next loads (C05)
            self.device_preference, self.report.weight_bytes if self.report else 0,
            self.settings.generation.context_tokens)
        dialog = OpenModelDialog(catalog, self.settings, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.model_chosen.connect(self._on_model_chosen)
        dialog.open()

    @Slot(str, object)
    def _on_model_chosen(self, path: str, permissions) -> None:
        self.settings = self.settings.with_permissions(permissions)
        save_settings(self.settings)
        self.open_model(Path(path))

    @Slot()
    def _on_settings_triggered(self) -> None:
        from app.core.secrets import load_api_key

        backend = self.settings.backend
        key_stored = bool(backend.remote.base_url and load_api_key(backend.remote.base_url))
        dialog = SettingsDialog(self.settings.generation, self, backend, key_stored)
        if dialog.exec():
            self.apply_settings(dialog.result_settings(), dialog.result_backend(), dialog.entered_api_key())

    def apply_settings(self, generation: GenerationSettings, backend: BackendSettings,
                       api_key: str | None = None) -> None:
        """Adopt edited settings: saved as the defaults for new chats and, for the open
        conversation, as its own. api_key: store it for the backend's URL (None: unchanged,
        "": forget it); it goes to the keyring or an owner-only file, never to settings.json."""
        from app.core.secrets import save_api_key

        self.settings = replace(self.settings, generation=generation, backend=backend)
        save_settings(self.settings)
        if api_key is not None and backend.remote.base_url:
            try:
                where = save_api_key(backend.remote.base_url, api_key)
                self.status.showMessage("API key " + ("forgotten" if not api_key else
                                        "stored in the OS keyring" if where == "keyring" else
                                        "stored in api_keys.json (owner-only)"), 8000)
            except OSError as exc:
                self.chat_view.add_notice(f"Could not store the API key: {exc.strerror}", "error")
        if self.conversation_id is not None:  # the open conversation keeps its own settings
            self.store.update_settings(self.conversation_id, conversation_settings(generation, backend))
        self._apply_backend()

    def _apply_backend(self) -> None:
        """Show and watch the current backend: a remote server's metrics in the memory panel;
        sending needs a loaded model only for the local backend."""
        backend = self.settings.backend
        self.server_monitor.watch(backend.remote if backend.is_remote else None)
        self.vram_panel.show_remote(backend.remote.display if backend.is_remote else None)
        self._refresh_can_send()

    def _refresh_can_send(self) -> None:
        self.composer.set_can_send(self.report is not None or self.settings.backend.is_remote)

    @Slot(int, object)
    def _on_backend_chosen(self, _request_id: int, report) -> None:
        if getattr(report, "kind", "local") == "remote":
            self._remote_report = report
        self.status.show_backend(report)

    # ----- model loading ---------------------------------------------------------------------
    @asyncSlot(object)
    async def open_model(self, path: Path) -> None:
        """Load `path` off the GUI thread, with progress and cancel; errors show inline."""
        self._own_current_task()
        if self._load_cancel is not None:
            self._load_cancel.set()  # a newer request replaces a load in progress
        cancel = self._load_cancel = threading.Event()
        self.worker.request_stop()
        self.composer.set_can_send(False)
        self.status.show_progress(f"Opening {Path(path).name}…", 0.0)
        await self._swap_model(None)  # free the old model before loading the next (C05)
        # transformers takes 1–2 s to import: in a worker thread, so the first paint does not wait
        await asyncio.get_event_loop().run_in_executor(None, importlib.import_module, "app.engine.loader")
        from app.engine.loader import LoadCancelled, ModelLoadError, load_model

        loop = asyncio.get_event_loop()

        def progress(text: str, fraction: float) -> None:
            loop.call_soon_threadsafe(self.status.show_progress, text, fraction)

        allowed = self.settings.permissions_for(path)  # this model's opt-ins, off by default
        try:
            loaded = await loop.run_in_executor(
                None, functools.partial(load_model, Path(path), progress, cancel,
                                        trust_remote_code=allowed.trust_remote_code,
                                        device_preference=self.device_preference,
                                        allow_pickle=allowed.allow_pickle))
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
            self.settings = self.settings.with_recent_model(path)
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
        self._refresh_can_send()
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
            # no "backend" key: written before remote backends existed, so answered locally
            self.settings = replace(self.settings, generation=generation.validated(),
                                    backend=BackendSettings.from_json(stored.settings.get("backend")))
            self._apply_backend()
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
            self.conversation_id = self.store.create_conversation(
                title, conversation_settings(self.settings.generation, self.settings.backend))
            self.refresh_sidebar()
        if message.id is None:
            self.store.append_message(self.conversation_id, message)
        else:
            self.store.update_message(message.id, content=message.content, status=message.status)

    # ----- summary -------------------------------------------------------------------------
    def _summary_cap(self) -> int:
        from app.engine.foresight import summary_reserve

        positions = (self.report.max_positions if self.report else None) or 2048
        if self.settings.backend.is_remote and self._remote_report is not None:
            positions = self._remote_report.context_tokens
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
                              settings or self.settings.generation, continue_final, override_memory,
                              backend=self.settings.backend)
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

    # ----- help, start-up notices, session ----------------------------------------------------
    def _build_help_menu(self) -> None:
        help_menu = self.menuBar().addMenu("&Help")
        self.about_action = help_menu.addAction("About Headroom")
        self.about_action.triggered.connect(self._on_about_triggered)

    @Slot()
    def _on_about_triggered(self) -> None:
        from app.core.logs import current_log_file
        from app.engine.environment import read_environment

        log_file = current_log_file()
        self.about_dialog = AboutDialog(read_environment(), self.report,
                                        log_file.parent if log_file else None, self)
        self.about_dialog.open()  # window-modal, never blocks the event loop

    @asyncSlot()
    async def check_environment(self) -> None:
        """Read GPU, driver and bitsandbytes facts off the GUI thread (nvidia-smi can take
        seconds) and explain, once, what will not be used and what still works."""
        from app.engine.environment import read_environment
        from app.engine.startup_notices import startup_notices

        self._own_current_task()
        env = await asyncio.get_event_loop().run_in_executor(
            None, functools.partial(read_environment, probe_gpu=True))
        self.show_startup_notices(startup_notices(env, self.device_preference))

    def show_startup_notices(self, notices) -> list:
        """Add to the transcript each StartupNotice not shown at an earlier start, and remember
        it in the session file; returns the notices shown now."""
        seen = self.session.shown_notices()
        fresh = [n for n in notices if n.key not in seen]
        for notice in fresh:
            self.chat_view.add_notice(notice.text)
        if fresh:
            self.session.remember_notices(n.key for n in fresh)
        return fresh

    def _own_current_task(self) -> None:
        """Track the running async slot's task so closing the window can cancel it (silently:
        C29) instead of leaving it pending when the event loop ends."""
        task = asyncio.current_task(asyncio.get_event_loop())  # qasync's loop, running or not
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _restore_session(self) -> None:
        """Put back the layout and the conversation that was open at the last close (when it
        still exists: it may have been deleted, or the database replaced)."""
        conversation_id = self.session.restore_window(self, self.splitter)
        if conversation_id in {info.id for info in self.store.list_conversations()}:
            self._on_open_conversation_requested(conversation_id)

    # ----- shutdown --------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        """Stop any reply (it ends within one token), keep its partial answer as stopped, join
        the worker thread, and remember the layout and the open conversation."""
        if self._closed:  # a second close (tests, quit after close) finds everything done
            super().closeEvent(event)
            return
        self._closed = True
        self._queued_text = None  # a message sent while stopping must not start a turn now
        if self._load_cancel is not None:
            self._load_cancel.set()
        for task in list(self._tasks):  # a load or start-up check in flight ends here
            task.cancel()
        self.monitor.stop()
        self.server_monitor.shutdown()
        self.worker.request_stop()
        self.worker_thread.quit()
        self.worker_thread.wait()
        if self._active_request is not None:  # the partial answer is kept as stopped
            self._end_turn(MessageStatus.STOPPED)
        self.session.save_window(self, self.splitter, self.conversation_id)
        self.store.purge_deleted(older_than_s=7 * 24 * 3600)
        self.store.close()
        super().closeEvent(event)
