"""The open conversation and the saved ones: which conversation the chat holds, its rows in the
Store, and the sidebar's commands (new, open, rename, delete with undo, search, export).

A conversation gets its row when its first message is committed; each message is committed as
it completes. Opening a conversation adopts its own generation and backend settings.
"""

from __future__ import annotations

import itertools
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Slot

from app.core.backend_settings import BackendSettings, conversation_settings
from app.core.conversation import Conversation
from app.core.history import SummaryState
from app.core.settings import GenerationSettings

if TYPE_CHECKING:
    from app.chat.chat import Chat


translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class ConversationFlow(QObject):
    """Keeps the chat's conversation, summary and conversation_id in step with its Store. No
    signals of its own: the Chat's conversation_*, conversations_listed and messages_truncated
    are emitted here."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self._search = ""
        # conversation id -> key of its kept KV cache in the worker (a chat keeps the key it got
        # when it was opened or started, also after the store gives it an id)
        self._cache_keys: dict[int, str] = {}
        self._new_keys = itertools.count(1)

    def refresh_sidebar(self) -> None:
        """List the stored conversations matching the search text, the open one current."""
        chat = self._chat
        chat.conversations_listed.emit(chat.store.list_conversations(self._search), chat.conversation_id)

    def _reset_conversation(self) -> None:
        chat = self._chat
        chat.turns.stop_for_switch()  # a reply in flight is kept, as stopped
        chat.conversation, chat.summary, chat.conversation_id = Conversation(), SummaryState(), None
        chat.cache_key = f"new-{next(self._new_keys)}"
        chat.conversation_cleared.emit()

    def _activate_cache(self) -> None:
        """Tell the worker which conversation is open, so its kept KV cache (if any) is back on
        the device before the next turn and the previous chat's is parked."""
        chat = self._chat
        chat.worker.conversation_activated.emit(chat.cache_key, chat.settings.generation.kept_chat_cache_mib)

    @Slot()
    def new_conversation(self) -> None:
        """Open an empty chat (a reply in flight is stopped and kept)."""
        self._reset_conversation()
        self._activate_cache()
        self.refresh_sidebar()

    @Slot(int)
    def open_conversation(self, conversation_id: int) -> None:
        """Open a stored conversation with its own settings and summary; refused (with a notice)
        while a reply is in flight."""
        chat = self._chat
        if chat.turns.active:
            chat.announce(translate("Conversations", "Stop the current reply before switching conversations."))
            return
        stored = chat.store.load_conversation(conversation_id)
        self._reset_conversation()
        chat.conversation, chat.summary = stored.conversation, stored.summary
        chat.conversation_id = conversation_id
        chat.cache_key = self._cache_keys.setdefault(conversation_id, f"stored-{conversation_id}")
        if stored.settings:  # this conversation's own generation settings
            known = {f.name for f in fields(GenerationSettings)}
            generation = GenerationSettings(**{k: v for k, v in stored.settings.items() if k in known})
            # no "backend" key: written before remote backends existed, so answered locally
            chat.settings = replace(chat.settings, generation=generation.validated(),
                                    backend=BackendSettings.from_json(stored.settings.get("backend")))
            chat.backend.apply_backend()
        self._activate_cache()
        chat.conversation_loaded.emit(chat.conversation.messages)
        chat.summaries.show_summary()
        self.refresh_sidebar()

    def reopen(self, conversation_id: int | None) -> bool:
        """Open the conversation that was open at the last close, when it still exists (it may
        have been deleted, or the database replaced); returns whether it was opened."""
        if conversation_id not in {info.id for info in self._chat.store.list_conversations()}:
            return False
        self.open_conversation(conversation_id)
        return True

    @Slot(int, str)
    def rename(self, conversation_id: int, title: str) -> None:
        self._chat.store.rename_conversation(conversation_id, title)
        self.refresh_sidebar()

    @Slot(int)
    def delete(self, conversation_id: int) -> None:
        """Delete (restorable for a week); the open conversation closes into an empty chat."""
        chat = self._chat
        title = next((i.title for i in chat.store.list_conversations() if i.id == conversation_id), "")
        chat.store.delete_conversation(conversation_id)
        key = self._cache_keys.pop(conversation_id, None)
        if key is not None:
            chat.worker.conversation_forgotten.emit(key)
        if conversation_id == chat.conversation_id:
            self._reset_conversation()
        self.refresh_sidebar()
        chat.conversation_deleted.emit(conversation_id, title)

    @Slot(int)
    def restore(self, conversation_id: int) -> None:
        """Undo a delete."""
        self._chat.store.restore_conversation(conversation_id)
        self.refresh_sidebar()

    @Slot(str)
    def search(self, text: str) -> None:
        """List only the conversations matching `text` from now on."""
        self._search = text
        self.refresh_sidebar()

    def export_conversation(self, conversation_id: int, fmt: str, path: Path) -> bool:
        """Write the conversation as Markdown (fmt "markdown") or JSON to `path`; a failure to
        write is said in an error notice (returns False)."""
        store = self._chat.store
        text = store.export_markdown(conversation_id) if fmt == "markdown" else store.export_json(conversation_id)
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            self._chat.announce(translate("Conversations", "Could not export to {0}: {1}").format(
                path, exc.strerror), "error")
            return False
        return True

    def persist(self, message) -> None:
        """Commit a message as it completes (a new row, or the final state of an old one)."""
        chat = self._chat
        if chat.conversation_id is None:
            title = chat.conversation.messages[0].content.strip().splitlines()[0][:60]
            chat.conversation_id = chat.store.create_conversation(
                title, conversation_settings(chat.settings.generation, chat.settings.backend))
            self._cache_keys[chat.conversation_id] = chat.cache_key
            self.refresh_sidebar()
        if message.id is None:
            chat.store.append_message(chat.conversation_id, message)
        else:
            chat.store.update_message(message.id, content=message.content, status=message.status)

    def drop_from(self, index: int) -> None:
        """Forget messages from `index` on (edit / regenerate), and a summary that folded any."""
        chat = self._chat
        del chat.conversation.messages[index:]
        chat.messages_truncated.emit(index)
        if chat.conversation_id is not None:
            chat.store.truncate_messages(chat.conversation_id, index)
        if chat.summary.folded_through >= index:
            chat.summary = SummaryState()
            chat.summaries.show_summary()
