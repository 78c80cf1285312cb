"""The main window: transcript, composer, sidebar, memory dock, toolbar, Help menu and status bar.

It builds the widgets and one `Chat` (app.chat: the open chat, its worker and its flows) and
wires signals both ways — the widgets' requests to the chat's commands, the chat's past-tense
signals to the widgets. The dialogs it opens for the chat (admission remedies, Open model,
Settings, notes, presets, the file pickers for export and diagnostics) are WindowDialogs', the
memory panel's and the headroom gauge's wiring is MemoryWiring's, the per-chat drafts are
ComposerDrafts'.
Every expected error and notice arrives on the chat's one `notice(text, kind)` signal and is
shown here, in the transcript or the status bar.
"""

import asyncio
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QLineEdit,
    QMainWindow,
    QPlainTextEdit,
    QSplitter,
    QTextEdit,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.chat import open_chat
from app.core.backend_settings import BackendSettings
from app.core.conversation import Role
from app.core.kv_precision import kv8_supported
from app.core.reasoning import copied_text
from app.core.settings import GenerationSettings, Settings
from app.core.store import Store
from app.engine.local.turn_planner import Foresight
from app.ui.attachment_bar import AttachmentBar
from app.ui.chat_bar import ChatBar
from app.ui.chat_view import ChatView
from app.ui.composer import Composer
from app.ui.composer_drafts import ComposerDrafts
from app.ui.conversation_list import ConversationList
from app.ui.headroom_badge import HeadroomBadge
from app.ui.help_menu import HelpMenu
from app.ui.memory_wiring import MemoryWiring
from app.ui.note_proposals import NoteProposals
from app.ui.quit_question import QuitQuestion
from app.ui.saving_badge import SavingBadge
from app.ui.status_bar import ModelStatusBar
from app.ui.tab_order import step
from app.ui.token_meter import TokenMeter
from app.ui.undo_notice import UndoNotice
from app.ui.vram_panel import VramPanel
from app.ui.window_dialogs import WindowDialogs
from app.ui.window_menus import WindowMenus
from app.ui.window_state import WindowState

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls

# notice kinds shown in the status bar, and for how long (ms); the others go to the transcript
STATUS_BAR_MS = {"status": 8000, "warning": 15000, "wait": 8000}
FIRST_SIZE_FRACTION = 0.78  # of the screen's available width and height, at a first start
# px: the sidebar at its 200 px beside a chat column of 436 px, where the chat bar takes two lines
# and every control keeps its whole text; 420 high: the composer, a few lines of transcript and the
# status bar. The memory panel docked beside them widens it (_fit_minimum_width).
MINIMUM_SIZE = (640, 420)
SIDEBAR_FRACTION = 0.2  # of the window's width, at a first start (clamped to 200-280 px)


class MainWindow(QMainWindow):
    """Signals: model_ready(object LoadReport), load_failed(str), turn_finished(str status)."""

    model_ready = Signal(object)
    load_failed = Signal(str)
    turn_finished = Signal(str)

    def __init__(self, settings: Settings, device_preference: str = "auto", store: Store | None = None,
                 window_state: WindowState | None = None):
        """store: conversations (default: the user data folder's). window_state: layout, last
        open conversation and notices already shown (default: session.ini in the config folder)."""
        super().__init__()
        self.setWindowTitle("Headroom")
        self.setMinimumSize(*MINIMUM_SIZE)
        self._tasks: set[asyncio.Task] = set()  # async slots in flight, cancelled on close
        self._closed = False
        self._wait_notice = ""  # the status line saying why a message waits, while it is shown
        self.quit_question: QuitQuestion | None = None  # open while asking whether to quit mid-answer
        self.window_state = window_state or WindowState()
        self.chat = open_chat(settings, store, device_preference, parent=self)
        self.dialogs = WindowDialogs(self.chat, self)  # admission remedies, Open model, Settings, …
        self._build_layout()
        self.vram_panel = VramPanel(self, safety_margin=Foresight.safety_margin)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.vram_panel)
        self._widened_for_panel: tuple[int, int] | None = None  # (width before, width after) opening it
        for changed in (self.vram_panel.visibilityChanged, self.vram_panel.topLevelChanged):
            changed.connect(self._fit_minimum_width)
        self._build_toolbar()  # and the Help menu
        self.help_menu = HelpMenu(self, self.chat, self.window_state, self.own_current_task)
        self.headroom_badge = HeadroomBadge()
        self.saving_badge = SavingBadge()  # "Not saving", for as long as it lasts
        self.status.addPermanentWidget(self.saving_badge)
        self.status.addPermanentWidget(self.headroom_badge)
        self._connect_chat()
        self._on_model_changed_kv(None)  # named for this machine's device before any model loads
        self._connect_widgets()
        self.drafts = ComposerDrafts(self.chat, self.composer, self.window_state.drafts(),  # one per chat
                                     self.window_state.save_drafts)
        first_start = not self.window_state.has_layout()
        self.chat.start(reopen=self.window_state.restore_window(self, self.splitter))
        if first_start:
            self._first_layout()
        self.headroom_badge.setChecked(not self.vram_panel.isHidden())
        self.composer.editor.setFocus(Qt.FocusReason.OtherFocusReason)  # typing goes to the message

    def _first_layout(self) -> None:
        """Geometry and docks at a first start: ~78 % of the screen, centred; the conversation
        in the middle; the memory panel closed on a CPU-only machine or a small screen (its
        gauge in the status bar opens it), a narrow column beside the chat on a GPU."""
        screen = self.screen().availableGeometry()
        width = max(min(round(screen.width() * FIRST_SIZE_FRACTION), screen.width()), MINIMUM_SIZE[0])
        height = max(min(round(screen.height() * FIRST_SIZE_FRACTION), screen.height()), MINIMUM_SIZE[1])
        self.resize(width, height)
        self.move(screen.center().x() - width // 2, screen.center().y() - height // 2)
        sidebar = min(max(round(width * SIDEBAR_FRACTION), 200), 280)
        self.splitter.setSizes([sidebar, width - sidebar])
        gpu = getattr(self.chat.worker.probe, "kind", "cpu") == "cuda"
        panel = max(round(width * 0.24), self.vram_panel.preferred_width())
        # open beside the chat only where the chat keeps at least half of the window
        self.vram_panel.setVisible(gpu and width - sidebar - panel >= width // 2)
        if not self.vram_panel.isHidden():
            self.resizeDocks([self.vram_panel], [panel], Qt.Orientation.Horizontal)

    @Slot()
    def _fit_minimum_width(self) -> None:
        """With the memory panel docked open, the window is at least MINIMUM_SIZE plus the panel
        at its preferred width: the sidebar and the chat keep the room they have at the minimum
        size (a 640 px window gave the chat 156 px beside the panel and cut every control in it).
        A narrower window widens as the panel opens, and narrows back as it closes or floats, if
        it was not resized meanwhile; closed or floating, the minimum is MINIMUM_SIZE again. Never
        wider than the screen's available width: on a small screen the panel narrows (its
        minimum is lower than its preferred width) and the chat column keeps its minimum width
        (new-user trial 10: at 800 px the message box was 66 px wide beside a 360 px panel)."""
        panel = self.vram_panel
        docked = panel.isVisible() and not panel.isFloating()
        # the panel at its preferred width and its separator: what the docks add to the central
        # widget's minimum
        extra = (self.layout().minimumSize().width() - self.centralWidget().minimumSizeHint().width()
                 - panel.minimumSizeHint().width() + panel.preferred_width()) if docked else 0
        screen = self.screen()
        room = screen.availableGeometry().width() if screen is not None else MINIMUM_SIZE[0] + max(extra, 0)
        minimum = max(MINIMUM_SIZE[0], min(MINIMUM_SIZE[0] + max(extra, 0), room))
        grows = self.width() < minimum
        if grows:
            self._widened_for_panel = (self.width(), minimum)
        self.setMinimumWidth(minimum)
        if grows:  # the room added is the panel's: the chat keeps its width
            self.resizeDocks([panel], [panel.preferred_width()], Qt.Orientation.Horizontal)
        elif (panel.isHidden() or panel.isFloating()) and self._widened_for_panel and self.isVisible():
            # the panel that widened the window is closed (or floats): back to the width before
            # it, unless the window was resized meanwhile (trial 10: it stayed ~1,000 px wide)
            before, widened = self._widened_for_panel
            self._widened_for_panel = None
            if self.width() == widened and not self.isMaximized() and not self.isFullScreen():
                self.resize(before, self.height())

    # ----- construction ----------------------------------------------------------------------
    def _build_layout(self) -> None:
        self.chat_view = ChatView()
        self.chat_bar = ChatBar()
        self.note_proposals = NoteProposals()
        self.composer = Composer()
        self.attachment_bar = AttachmentBar(folders=self.dialogs.folders)  # Attach… starts where it last went
        self.attachment_bar.watch(self.composer.editor)  # files dropped on the message box
        self.composer.add_leading(self.attachment_bar.lend_attach_button())  # the bar keeps the chips only
        self.token_meter = TokenMeter()
        self.sidebar = ConversationList()
        self.status = ModelStatusBar()
        self.setStatusBar(self.status)
        self.undo_notice = UndoNotice()  # "Removed big.txt · Undo", beside the model's name
        self.status.add_notice(self.undo_notice)
        self._column = column = QWidget()
        layout = QVBoxLayout(column)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.chat_view, 1)
        layout.addWidget(self.note_proposals)
        layout.addWidget(self.chat_bar)
        layout.addWidget(self.attachment_bar)
        layout.addWidget(self.composer)
        layout.addWidget(self.token_meter)
        self.splitter = splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setObjectName("sidebarSplitter")
        splitter.addWidget(self.sidebar)
        splitter.addWidget(column)
        splitter.setStretchFactor(1, 1)
        splitter.setCollapsible(1, False)  # the conversation never collapses; the sidebar may
        # the chat column is never narrower than at the window's minimum size, where every control
        # of it reads: beside the memory panel on a small screen, the panel gives way instead
        column.setMinimumWidth(MINIMUM_SIZE[0] - self.sidebar.minimumWidth() - splitter.handleWidth())
        self.setCentralWidget(splitter)

    def _build_toolbar(self) -> None:
        """The menus and their keys (WindowMenus), and a toolbar showing the same actions."""
        self.menus = menus = WindowMenus(self, self.vram_panel.toggleViewAction())
        self.new_chat_action, self.open_action = menus.new_chat, menus.open_model
        self.settings_action, self.memory_action, self.about_action = menus.settings, menus.memory, menus.about
        bar = QToolBar(translate("MainWindow", "Main"))
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        self.addToolBar(bar)
        for action in menus.toolbar_actions():
            bar.addAction(action)

    # ----- wiring ----------------------------------------------------------------------------
    def _connect_chat(self) -> None:
        """The chat's events to the widgets that show them."""
        chat, view, status = self.chat, self.chat_view, self.status
        chat.notice.connect(self._on_notice)
        chat.message_added.connect(view.add_message)
        chat.reply_started.connect(self._on_reply_started)
        chat.reply_prefill_progressed.connect(view.show_prefill_progress)
        chat.reply_streamed.connect(view.append_stream)
        chat.reply_waiting.connect(view.show_reply_waiting)
        chat.reply_elsewhere.connect(view.show_reply_elsewhere)
        chat.reply_ended.connect(self._on_reply_ended)
        chat.reply_measured.connect(status.show_speed)
        chat.reply_unmeasured.connect(status.clear_speed)
        chat.reply_stats.connect(view.show_reply_stats)
        chat.reply_sources.connect(view.show_reply_sources)
        chat.message_documents.connect(view.show_documents)
        chat.document_noted.connect(view.add_document_note)
        chat.message_sources.connect(view.show_sources)
        chat.turn_ended.connect(self.turn_finished)
        chat.turn_ended.connect(self._on_turn_ended)
        chat.context_counted.connect(self.token_meter.set_counts)
        chat.context_cleared.connect(self.token_meter.reset)
        chat.model_changed.connect(self._on_model_changed_kv)
        chat.text_withdrawn.connect(self._on_text_withdrawn)
        chat.messages_truncated.connect(view.truncate)
        chat.conversation_cleared.connect(self._on_conversation_cleared)
        chat.conversation_loaded.connect(view.load_messages)
        chat.conversations_listed.connect(self.sidebar.set_conversations)
        chat.conversation_deleted.connect(self.sidebar.show_undo)
        chat.versions_changed.connect(view.set_versions)
        chat.notes_changed.connect(self.chat_bar.show_notes)
        chat.notes_proposed.connect(self.note_proposals.set_proposals)
        chat.presets_changed.connect(self.chat_bar.set_presets)
        chat.kv_precision_changed.connect(self.chat_bar.set_kv_precision)
        chat.saving_changed.connect(self._on_saving_changed)
        chat.notes_changed.connect(self.token_meter.set_pinned)
        chat.summary_changed.connect(view.show_summary)
        chat.summarizing_changed.connect(self._on_summarizing_changed)
        chat.foldable_changed.connect(self.chat_bar.set_foldable)
        chat.load_progressed.connect(status.show_progress)
        chat.load_ended.connect(status.end_progress)
        chat.model_changed.connect(status.show_report)
        chat.model_loaded.connect(self.model_ready)
        chat.load_failed.connect(self.load_failed)
        chat.load_notices_withdrawn.connect(self.chat_view.withdraw_load_notices)
        chat.limit_notices_withdrawn.connect(self.chat_view.withdraw_limit_notices)
        for opened in (chat.conversation_loaded, chat.reply_started):  # a chat opened, or a new one saved
            opened.connect(lambda *_: self.window_state.save_open_conversation(self.chat.conversation_id))
        chat.decode_status_changed.connect(status.show_decode_status)
        chat.can_send_changed.connect(self.composer.set_can_send)
        chat.backend_changed.connect(status.show_remote)
        chat.backend_changed.connect(self.chat_bar.set_remote_backend)
        chat.backend_reported.connect(status.show_backend)
        chat.attachment_changed.connect(self.attachment_bar.show_attachment)
        self.memory_wiring = MemoryWiring(chat, self.vram_panel, self.headroom_badge, self.memory_action)

    def _connect_widgets(self) -> None:
        """The widgets' requests, and the toolbar and menu actions, to the chat's commands."""
        turns, chats = self.chat.turns, self.chat.conversations
        self.new_chat_action.triggered.connect(chats.new_conversation)
        self.new_chat_action.triggered.connect(self.composer.editor.setFocus)
        self.open_action.triggered.connect(self.dialogs.open_model)
        self.settings_action.triggered.connect(self.dialogs.settings)
        self.about_action.triggered.connect(self.help_menu._on_about_triggered)
        self.menus.export.triggered.connect(self.dialogs.export_open)
        self.menus.quit.triggered.connect(self._on_quit_triggered)
        self.menus.copy_answer.triggered.connect(self._on_copy_answer_triggered)
        self.menus.find.triggered.connect(self._on_find_triggered)
        self.menus.stop.triggered.connect(self.composer.request_stop)
        self.composer.send_requested.connect(turns.send)
        self.composer.stop_requested.connect(turns.stop)
        self.composer.send_blocked.connect(turns.explain_send_waits)
        self.attachment_bar.files_chosen.connect(self.chat.attachments.add)
        self.attachment_bar.remove_requested.connect(self.chat.attachments.remove)
        self.status.cancel_load_requested.connect(self.chat.models.cancel_load)
        self.chat_view.edit_requested.connect(turns.edit)
        self.chat_view.regenerate_requested.connect(turns.regenerate)
        self.chat_view.continue_requested.connect(turns.continue_reply)
        self.chat_view.version_requested.connect(chats.switch_version)
        self.chat_view.branch_requested.connect(chats.branch_to_new_chat)
        self.chat_view.pin_requested.connect(self.chat.notes.pin)
        self.chat_view.document_remove_requested.connect(self.chat.attachments.remove_sent)
        self.chat.attachments.removal_undoable.connect(self.undo_notice.offer)
        self.chat.attachments.removal_final.connect(self.undo_notice.withdraw)
        self.undo_notice.undo_requested.connect(self.chat.attachments.undo_remove)
        self.undo_notice.expired.connect(self.chat.attachments.end_undo)
        self.chat_view.retry_requested.connect(turns.retry)
        self.chat_bar.notes_requested.connect(self.dialogs.notes)
        self.note_proposals.accepted.connect(self.chat.notes.accept)
        self.note_proposals.dismissed.connect(self.chat.notes.dismiss)
        self.chat_bar.summarize_requested.connect(turns.summarize_now)
        self.chat_bar.cancel_summary_requested.connect(turns.stop_summary)
        self.chat_bar.preset_chosen.connect(self.chat.presets.apply)
        self.chat_bar.kv_precision_chosen.connect(self.chat.conversations.set_kv_precision)
        self.chat_bar.presets_requested.connect(self.dialogs.presets)
        self.chat_view.summary_block.summary_edited.connect(self.chat.summaries.edit)
        self.chat_view.summary_block.cancel_summary_requested.connect(turns.stop_summary)
        self.sidebar.open_requested.connect(chats.open_conversation)
        self.sidebar.clicked.connect(self._on_sidebar_clicked)  # typing goes to the message, as in LM Studio
        self.sidebar.new_requested.connect(chats.new_conversation)
        self.sidebar.new_requested.connect(self.composer.editor.setFocus)  # type the new chat's first message
        self.sidebar.rename_requested.connect(chats.rename)
        self.sidebar.delete_requested.connect(chats.delete)
        self.sidebar.restore_requested.connect(chats.restore)
        self.sidebar.undo_ended.connect(chats.end_undo)
        self.sidebar.search_changed.connect(chats.search)
        self.sidebar.export_requested.connect(self.dialogs.export_conversation)
        self.vram_panel.diagnostics_requested.connect(self.dialogs.diagnostics)

    # ----- the chat's events -----------------------------------------------------------------
    @Slot(str, str)
    def _on_notice(self, text: str, kind: str) -> None:
        if kind in STATUS_BAR_MS:
            self.status.showMessage(text, STATUS_BAR_MS[kind])
            self._wait_notice = text if kind == "wait" else ""
        else:
            self.chat_view.add_notice(text, kind)

    @Slot(bool)
    def _on_reply_started(self, continued: bool) -> None:
        (self.chat_view.continue_stream if continued else self.chat_view.begin_stream)()
        self.status.clear_speed()  # the last answer's TTFT and speed are not this one's (new-user trial)
        self.chat_view.set_actions_enabled(False)  # one turn at a time, whichever chat is shown
        self.chat_bar.set_answering(True)
        self.composer.set_generating(True)
        self.menus.stop.setEnabled(True)

    @Slot(object, str)
    def _on_reply_ended(self, status, detail: str) -> None:
        if self._wait_notice and self.status.currentMessage() == self._wait_notice:
            self.status.clearMessage()  # "an answer is still being written" no longer holds
        self.chat_view.end_stream(status, detail)
        self.composer.set_generating(False)
        self.menus.stop.setEnabled(False)
        self._focus_composer_unless_typing()

    @Slot(bool)
    def _on_summarizing_changed(self, summarizing: bool) -> None:
        """A summary of the chat shown is (or is no longer) being written: its progress in the
        chat bar, counting from when it started (the chat may have been opened again meanwhile)."""
        self.chat_view.summary_block.set_summarizing(summarizing)
        self.chat_bar.set_summarizing(summarizing, self.chat.summaries.writing_ms())

    @Slot(str)
    def _on_turn_ended(self, _status: str) -> None:
        self.chat_view.set_actions_enabled(True)
        self.chat_bar.set_answering(False)
        if self.quit_question is not None:
            self.quit_question.answer_ended()

    @Slot()
    def _on_sidebar_clicked(self) -> None:
        """A chat picked with the pointer: the keyboard goes to the message box (picked with the
        keyboard, it stays in the list, for the arrows)."""
        self.composer.editor.setFocus(Qt.FocusReason.MouseFocusReason)

    def _focus_composer_unless_typing(self) -> None:
        """Put the keyboard in the composer, unless the user is typing in another text field
        (search, an inline edit): an answer that ends must not steal their keys."""
        focus = QApplication.focusWidget()
        typing = isinstance(focus, QLineEdit | QPlainTextEdit | QTextEdit) and not focus.isReadOnly()
        if not typing:
            self.composer.editor.setFocus(Qt.FocusReason.OtherFocusReason)

    @Slot(object)
    def _on_model_changed_kv(self, report) -> None:
        """8-bit KV is offered where Headroom's own attention runs: its packed SDPA or its FA2 path
        (as Foresight.prefill_model_kv8 decides), not transformers' eager."""
        self.chat_bar.set_kv8_available(report is None or kv8_supported(report.attention))
        self.chat_bar.set_full_precision_bits(self._full_precision_bits(report))

    def _full_precision_bits(self, report) -> int:
        """The KV cache's full precision in bits: the model's compute dtype once loaded; before
        (a first start loading), the device the model will go to: float32 on the CPU, 16-bit on CUDA."""
        if report is not None:
            return 32 if report.compute_dtype == "float32" else 16
        return 16 if getattr(self.chat.worker.probe, "kind", "cpu") == "cuda" else 32

    @Slot(str)
    def _on_saving_changed(self, why: str) -> None:
        """Conversations are not being saved (why: reason and path; "" once they are again): said
        in the title and the status bar for as long as it lasts, not only in a notice."""
        self.setWindowTitle(self.tr("Headroom — not saving") if why else "Headroom")
        self.saving_badge.show_not_saving(why)

    @Slot(str)
    def _on_text_withdrawn(self, text: str) -> None:
        self.composer.put_back(text)  # beside anything typed meanwhile: nothing the user wrote is lost

    @Slot()
    def _on_conversation_cleared(self) -> None:
        self.chat_view.clear()
        self.token_meter.reset()

    # ----- menu commands ---------------------------------------------------------------------
    @Slot()
    def _on_quit_triggered(self) -> None:
        """File → Quit: close the window, asking first while an answer is being written; the
        chat shuts down in closeEvent, and the application ends with its last primary window
        (QGuiApplication.quitOnLastWindowClosed)."""
        if not self._asked_before_quitting():
            self.close()

    def _asked_before_quitting(self) -> bool:
        """While an answer is being written, ask whether to quit anyway (QuitQuestion, window-
        modal: the answer keeps streaming meanwhile; Quit closes the window, Cancel nothing).
        Returns whether the question is open; False (quit at once) when nothing is generating."""
        if not self.chat.turns.active or self._closed:
            return False
        if self.quit_question is None:
            self.quit_question = QuitQuestion(self)
            self.quit_question.quit_confirmed.connect(self.close)  # a close() call: not asked again
            self.quit_question.destroyed.connect(self._on_quit_question_destroyed)
            self.quit_question.open()
        return True

    @Slot()
    def _on_quit_question_destroyed(self) -> None:
        self.quit_question = None

    @Slot()
    def _on_copy_answer_triggered(self) -> None:
        """Edit → Copy last answer: the last assistant message's markdown source, as its ⋯ → Copy
        gives it (the answer without its reasoning, app.core.reasoning.copied_text)."""
        answers = [m for m in self.chat.conversation.messages if m.role is Role.ASSISTANT and m.content]
        if not answers:
            self.status.showMessage(translate("MainWindow", "No answer to copy yet."), STATUS_BAR_MS["status"])
            return
        QGuiApplication.clipboard().setText(copied_text(answers[-1].content))
        self.status.showMessage(translate("MainWindow", "Copied the last answer."), STATUS_BAR_MS["status"])

    @Slot()
    def _on_find_triggered(self) -> None:
        """Edit → Find: the sidebar's search field, its text selected (the sidebar reopens if
        it was collapsed)."""
        if self.splitter.sizes()[0] == 0:
            self.splitter.setSizes([self.sidebar.sizeHint().width(), max(self.splitter.sizes()[1], 1)])
        self.sidebar.search_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.sidebar.search_edit.selectAll()

    # ----- public API (application start-up, tests, scripts) ----------------------------------
    def open_model(self, path: Path) -> None:
        """Load `path` in the worker, with progress and cancel; errors show inline (ModelFlow)."""
        self.chat.models.open_model(Path(path))

    def apply_settings(self, generation: GenerationSettings, backend: BackendSettings,
                       api_key: str | None = None) -> None:
        """Adopt edited settings for new chats and the open conversation (BackendFlow)."""
        self.chat.backend.apply_settings(generation, backend, api_key)

    @Slot(str)
    def bring_forward(self, model: str = "") -> None:
        """Another launch on this profile asked for this window (SingleInstance): show it on top,
        and open `model` when it named one."""
        self.setWindowState((self.windowState() & ~Qt.WindowState.WindowMinimized) | Qt.WindowState.WindowActive)
        self.show()
        self.raise_()
        self.activateWindow()
        if model:
            self.open_model(Path(model))

    def check_environment(self) -> asyncio.Task:
        """Explain, once, what this machine's GPU, driver and bitsandbytes mean; returns the
        task reading them off the GUI thread (HelpMenu)."""
        return self.help_menu.check_environment()

    def show_startup_notices(self, notices) -> list:
        """Show the StartupNotices not shown at an earlier start; returns those shown now."""
        return self.help_menu.show_startup_notices(notices)

    def save_diagnostics(self, path: Path) -> None:
        """memory_summary, LoadReport, and the last turns' projected vs measured peaks."""
        self.chat.memory.save_diagnostics(path)

    @property
    def about_dialog(self):
        """The last About dialog opened from the Help menu (None before any)."""
        return self.help_menu.about_dialog

    def own_current_task(self) -> None:
        """Track the running async slot's task so closing the window can cancel it (silently:
        exceptions swallowed in async slots, qasync #126) instead of leaving it pending when the event loop ends."""
        task = asyncio.current_task(asyncio.get_event_loop())  # qasync's loop, running or not
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----- keyboard --------------------------------------------------------------------------
    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: A002, N802 (Qt's names)
        """Tab and Shift+Tab in reading order (app.ui.tab_order): the sidebar, the transcript, the
        rest of the column top to bottom (chat bar, Attach…, message box, Send), the status bar."""
        target = step(self, (self.sidebar, self.chat_view, self._column, self.status),
                      QApplication.focusWidget(), next)
        if target is None:
            return super().focusNextPrevChild(next)
        target.setFocus(Qt.FocusReason.TabFocusReason if next else Qt.FocusReason.BacktabFocusReason)
        if self.chat_view.isAncestorOf(target):
            self.chat_view.ensureWidgetVisible(target)  # tabbed into the transcript from outside it
        return True

    # ----- shutdown --------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        """Close the chat completely (Chat.close: threads joined, a reply in flight kept as
        stopped; a remedies dialog still open cancelled first, its message back in the composer)
        and remember the layout, the open conversation and the drafts. The window's own close
        button (a spontaneous event, from the window system) asks first while an answer is being
        written; close() called by the app (Quit after its question, tests, scripts) does not."""
        if event.spontaneous() and self._asked_before_quitting():
            event.ignore()
            return
        if not self._closed:  # a second close (tests, quit after close) finds everything done
            self._closed = True
            for task in list(self._tasks):  # a start-up check in flight ends here
                task.cancel()
            self.dialogs.cancel_remedies()  # its message back in the composer, kept with the drafts below
            self.drafts.stop_saving()
            kept = {info.id for info in self.chat.store.list_conversations(include_deleted=True)} | {None}
            drafts = {key: text for key, text in self.drafts.drafts().items() if key in kept}
            self.chat.close()
            self.window_state.save_window(self, self.splitter, self.chat.conversation_id)
            self.window_state.save_drafts(drafts)  # of conversations that still exist (ids are reused)
        super().closeEvent(event)
