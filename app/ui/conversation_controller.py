"""The open conversation and the saved ones: which conversation the window shows, its rows in
the Store, and the sidebar's actions (new, open, rename, delete with undo, search, export).

A conversation gets its row when its first message is committed; each message is committed as
it completes. Opening a conversation adopts its own generation and backend settings. The
layout and the conversation open at the last close come back through the window's SessionState.
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QFileDialog

from app.core.backend_settings import BackendSettings, conversation_settings
from app.core.conversation import Conversation
from app.core.history import SummaryState
from app.core.settings import GenerationSettings

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


class ConversationController(QObject):
    """Keeps `window`'s conversation, summary and conversation_id in step with its Store and
    sidebar. No signals."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self._window = window
        self._search = ""

    def refresh_sidebar(self) -> None:
        """List the stored conversations matching the search text, the open one selected."""
        w = self._window
        w.sidebar.set_conversations(w.store.list_conversations(self._search), w.conversation_id)

    def _reset_conversation(self) -> None:
        w = self._window
        w.turn_controller.stop_for_switch()  # a reply in flight is kept, as stopped
        w.conversation, w.summary, w.conversation_id = Conversation(), SummaryState(), None
        w.chat_view.clear()
        w.token_meter.reset()

    @Slot()
    def _on_new_chat_triggered(self) -> None:
        self._reset_conversation()
        self.refresh_sidebar()

    @Slot(int)
    def _on_open_conversation_requested(self, conversation_id: int) -> None:
        w = self._window
        if w.turn_controller.active:
            w.chat_view.add_notice("Stop the current reply before switching conversations.")
            return
        stored = w.store.load_conversation(conversation_id)
        self._reset_conversation()
        w.conversation, w.summary = stored.conversation, stored.summary
        w.conversation_id = conversation_id
        if stored.settings:  # this conversation's own generation settings
            known = {f.name for f in fields(GenerationSettings)}
            generation = GenerationSettings(**{k: v for k, v in stored.settings.items() if k in known})
            # no "backend" key: written before remote backends existed, so answered locally
            w.settings = replace(w.settings, generation=generation.validated(),
                                 backend=BackendSettings.from_json(stored.settings.get("backend")))
            w.backend_controller.apply_backend()
        w.chat_view.load_messages(w.conversation.messages)
        w.summary_controller.show_summary()
        self.refresh_sidebar()

    @Slot(int, str)
    def _on_rename_requested(self, conversation_id: int, title: str) -> None:
        self._window.store.rename_conversation(conversation_id, title)
        self.refresh_sidebar()

    @Slot(int)
    def _on_delete_requested(self, conversation_id: int) -> None:
        w = self._window
        title = next((i.title for i in w.store.list_conversations() if i.id == conversation_id), "")
        w.store.delete_conversation(conversation_id)
        if conversation_id == w.conversation_id:
            self._reset_conversation()
        self.refresh_sidebar()
        w.sidebar.show_undo(conversation_id, title)

    @Slot(int)
    def _on_restore_requested(self, conversation_id: int) -> None:
        self._window.store.restore_conversation(conversation_id)
        self.refresh_sidebar()

    @Slot(str)
    def _on_search_changed(self, text: str) -> None:
        self._search = text
        self.refresh_sidebar()

    @Slot(int, str)
    def _on_export_requested(self, conversation_id: int, fmt: str) -> None:
        suffix = ".md" if fmt == "markdown" else ".json"
        path, _ = QFileDialog.getSaveFileName(self._window, "Export conversation", f"conversation{suffix}")
        if path:
            self.export_conversation(conversation_id, fmt, Path(path))

    def export_conversation(self, conversation_id: int, fmt: str, path: Path) -> None:
        """Write the conversation as Markdown (fmt "markdown") or JSON to `path`; a failure to
        write is shown inline."""
        store = self._window.store
        text = store.export_markdown(conversation_id) if fmt == "markdown" else store.export_json(conversation_id)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            self._window.chat_view.add_notice(f"Could not export to {path}: {exc.strerror}", "error")

    def persist(self, message) -> None:
        """Commit a message as it completes (a new row, or the final state of an old one)."""
        w = self._window
        if w.conversation_id is None:
            title = w.conversation.messages[0].content.strip().splitlines()[0][:60]
            w.conversation_id = w.store.create_conversation(
                title, conversation_settings(w.settings.generation, w.settings.backend))
            self.refresh_sidebar()
        if message.id is None:
            w.store.append_message(w.conversation_id, message)
        else:
            w.store.update_message(message.id, content=message.content, status=message.status)

    def drop_from(self, index: int) -> None:
        """Forget messages from `index` on (edit / regenerate), and a summary that folded any."""
        w = self._window
        del w.conversation.messages[index:]
        w.chat_view.truncate(index)
        if w.conversation_id is not None:
            w.store.truncate_messages(w.conversation_id, index)
        if w.summary.folded_through >= index:
            w.summary = SummaryState()
            w.summary_controller.show_summary()

    def restore_session(self) -> None:
        """Put back the layout and the conversation that was open at the last close (when it
        still exists: it may have been deleted, or the database replaced)."""
        w = self._window
        conversation_id = w.session.restore_window(w, w.splitter)
        if conversation_id in {info.id for info in w.store.list_conversations()}:
            self._on_open_conversation_requested(conversation_id)
