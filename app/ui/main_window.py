"""The main window: transcript, composer, sidebar, memory dock, toolbar, Help menu and status bar;
builds them, starts the generation worker's thread, and wires every signal to the controller
that handles it.

The window holds the state its controllers share — settings, the Store, the open conversation
(with its id and summary) and the loaded model's LoadReport — and only this (GUI) thread touches
it or the widgets. The controllers, plain QObjects owned by the window, do the work:

    TurnController          send → plan/admission → streaming → finish, refusal or failure
    ConversationController  the Store, the sidebar's actions, export, the restored session
    SummaryController       the summary of earlier turns
    ModelOpener             the Open-model dialog, loading with progress/cancel, the LoadReport
    BackendController       the Settings dialog, local or remote backend, the API key
    MemoryController        the memory panel's "what if" and the diagnostics report
    HelpController          About, and the start-up notices
"""

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt, QThread, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QSplitter, QToolBar, QVBoxLayout, QWidget

from app.core.backend_settings import BackendSettings
from app.core.conversation import Conversation
from app.core.history import SummaryState
from app.core.settings import GenerationSettings, Settings
from app.core.store import Store, open_store
from app.engine.local.turn_planner import Foresight
from app.engine.memory.probe import pick_probe
from app.ui.backend_controller import BackendController
from app.ui.chat_view import ChatView
from app.ui.composer import Composer
from app.ui.conversation_controller import ConversationController
from app.ui.conversation_list import ConversationList
from app.ui.help_controller import HelpController
from app.ui.memory_controller import MemoryController
from app.ui.model_opener import ModelOpener
from app.ui.session_state import SessionState
from app.ui.status_bar import ModelStatusBar
from app.ui.summary_controller import SummaryController
from app.ui.token_meter import TokenMeter
from app.ui.turn_controller import TurnController
from app.ui.vram_panel import VramPanel
from app.workers.generation_worker import GenerationWorker
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
        store_notice = None
        if store is None:
            store, store_notice = open_store()  # a damaged file is moved aside, not fatal
        self.store = store
        self.store.mark_interrupted()  # replies cut off by a crash become "failed", not "streaming"
        self.conversation_id: int | None = None
        self.device_preference = device_preference
        self.conversation = Conversation()
        self.summary = SummaryState()
        self.report = None
        self._tasks: set[asyncio.Task] = set()  # async slots in flight, cancelled on close

        self._build_layout()
        self.vram_panel = VramPanel(self, safety_margin=Foresight.safety_margin)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.vram_panel)
        self.monitor = MemoryMonitor(pick_probe(), parent=self)
        self._build_toolbar()
        self._build_help_menu()
        self.worker = GenerationWorker()
        self.worker_thread = QThread(self)
        self.worker_thread.setObjectName("generation")
        self.worker.moveToThread(self.worker_thread)
        self.server_monitor = ServerMonitor(parent=self)  # a remote server's /metrics, ≈1 Hz

        self.turn_controller = TurnController(self)
        self.conversation_controller = ConversationController(self)
        self.summary_controller = SummaryController(self)
        self.model_opener = ModelOpener(self)
        self.backend_controller = BackendController(self)
        self.memory_controller = MemoryController(self)
        self.help_controller = HelpController(self)
        self._connect_worker()
        self.worker_thread.start()
        self._connect_widgets()

        self.monitor.start()
        self.backend_controller.apply_backend()
        self.conversation_controller.refresh_sidebar()
        self._closed = False
        self.session = session or SessionState()
        self.conversation_controller.restore_session()
        if store_notice:
            self.chat_view.add_notice(store_notice, "error")

    # ----- construction ----------------------------------------------------------------------
    def _build_layout(self) -> None:
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

    def _build_help_menu(self) -> None:
        help_menu = self.menuBar().addMenu("&Help")
        self.about_action = help_menu.addAction("About Headroom")

    # ----- wiring ----------------------------------------------------------------------------
    def _connect_worker(self) -> None:
        """The worker's events, queued into this thread, to the controller that handles each."""
        worker, turns, summary = self.worker, self.turn_controller, self.summary_controller
        worker.token_streamed.connect(turns._on_token_streamed)
        worker.reply_finished.connect(turns._on_reply_finished)
        worker.generation_failed.connect(turns._on_generation_failed)
        worker.turn_refused.connect(turns._on_turn_refused)
        worker.turn_planned.connect(turns._on_turn_planned)
        worker.model_changed.connect(self.model_opener._on_model_changed)
        worker.decode_status_changed.connect(self.model_opener._on_decode_status_changed)
        worker.foresight_changed.connect(self.memory_controller._on_foresight_changed)
        worker.summary_started.connect(summary._on_summary_started)
        worker.summary_finished.connect(summary._on_summary_finished)
        worker.summary_failed.connect(summary._on_summary_failed)
        worker.backend_chosen.connect(self.backend_controller._on_backend_chosen)

    def _connect_widgets(self) -> None:
        """The widgets' and monitors' signals, and the toolbar and menu actions."""
        turns, chats, memory = self.turn_controller, self.conversation_controller, self.memory_controller
        self.new_chat_action.triggered.connect(chats._on_new_chat_triggered)
        self.open_action.triggered.connect(self.model_opener._on_open_triggered)
        self.settings_action.triggered.connect(self.backend_controller._on_settings_triggered)
        self.about_action.triggered.connect(self.help_controller._on_about_triggered)
        self.server_monitor.metrics_sampled.connect(self.vram_panel.show_server_metrics)
        self.composer.send_requested.connect(turns._on_send_requested)
        self.composer.stop_requested.connect(turns._on_stop_requested)
        self.status.cancel_load_requested.connect(self.model_opener._on_cancel_load_requested)
        self.chat_view.edit_requested.connect(turns._on_edit_requested)
        self.chat_view.regenerate_requested.connect(turns._on_regenerate_requested)
        self.chat_view.continue_requested.connect(turns._on_continue_requested)
        self.chat_view.summary_block.summary_edited.connect(self.summary_controller._on_summary_edited)
        self.chat_view.summary_block.cancel_summary_requested.connect(turns._on_stop_requested)
        self.sidebar.open_requested.connect(chats._on_open_conversation_requested)
        self.sidebar.new_requested.connect(chats._on_new_chat_triggered)
        self.sidebar.rename_requested.connect(chats._on_rename_requested)
        self.sidebar.delete_requested.connect(chats._on_delete_requested)
        self.sidebar.restore_requested.connect(chats._on_restore_requested)
        self.sidebar.search_changed.connect(chats._on_search_changed)
        self.sidebar.export_requested.connect(chats._on_export_requested)
        self.monitor.sample_taken.connect(self.vram_panel.show_sample)
        self.monitor.sampling_failed.connect(memory._on_sampling_failed)
        self.vram_panel.what_if_changed.connect(memory._on_what_if_changed)
        self.vram_panel.diagnostics_requested.connect(memory._on_diagnostics_requested)

    # ----- public API (application start-up, tests, scripts) ----------------------------------
    def open_model(self, path: Path) -> asyncio.Task:
        """Load `path` off the GUI thread, with progress and cancel; errors show inline.
        Returns the loading task (ModelOpener.open_model)."""
        return self.model_opener.open_model(path)

    def apply_settings(self, generation: GenerationSettings, backend: BackendSettings,
                       api_key: str | None = None) -> None:
        """Adopt edited settings for new chats and the open conversation (BackendController)."""
        self.backend_controller.apply_settings(generation, backend, api_key)

    def check_environment(self) -> asyncio.Task:
        """Explain, once, what this machine's GPU, driver and bitsandbytes mean; returns the
        task reading them off the GUI thread (HelpController.check_environment)."""
        return self.help_controller.check_environment()

    def show_startup_notices(self, notices) -> list:
        """Show the StartupNotices not shown at an earlier start; returns those shown now."""
        return self.help_controller.show_startup_notices(notices)

    def save_diagnostics(self, path: Path) -> None:
        """memory_summary, LoadReport, and the last turns' projected vs measured peaks."""
        self.memory_controller.save_diagnostics(path)

    @property
    def admission_dialog(self):
        """The AdmissionDialog offered for the last refused turn (None before any)."""
        return self.turn_controller.admission_dialog

    @property
    def about_dialog(self):
        """The last About dialog opened from the Help menu (None before any)."""
        return self.help_controller.about_dialog

    def own_current_task(self) -> None:
        """Track the running async slot's task so closing the window can cancel it (silently:
        C29) instead of leaving it pending when the event loop ends."""
        task = asyncio.current_task(asyncio.get_event_loop())  # qasync's loop, running or not
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----- shutdown --------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        """Stop any reply (it ends within one token), keep its partial answer as stopped, join
        the worker thread, and remember the layout and the open conversation."""
        if self._closed:  # a second close (tests, quit after close) finds everything done
            super().closeEvent(event)
            return
        self._closed = True
        self.turn_controller.discard_queued()  # a message sent while stopping must not start now
        self.model_opener.cancel_load()
        for task in list(self._tasks):  # a load or start-up check in flight ends here
            task.cancel()
        self.monitor.stop()
        self.server_monitor.shutdown()
        self.worker.request_stop()
        self.worker_thread.quit()
        self.worker_thread.wait()
        self.turn_controller.keep_partial_as_stopped()
        self.session.save_window(self, self.splitter, self.conversation_id)
        self.store.purge_deleted(older_than_s=7 * 24 * 3600)
        self.store.close()
        super().closeEvent(event)
