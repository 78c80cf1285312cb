"""Pinned notes of the open conversation (issue 17, item 5): kept with the conversation in the
Store and sent in every prompt (app.core.pinned_notes), edited by the user or pinned from a
message."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from app.core.pinned_notes import add_note, estimate_tokens

if TYPE_CHECKING:
    from app.chat.chat import Chat


class NotesFlow(QObject):
    """Keeps chat.pinned_notes in step with the Store. No signals of its own: the Chat's
    notes_changed is emitted here."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat

    @Slot(str)
    def edit(self, text: str) -> None:
        """Adopt the user's notes ("" removes them) and save them with the conversation."""
        chat = self._chat
        chat.pinned_notes = text.strip()
        self.save()
        self.show_notes()

    @Slot(int)
    def pin(self, index: int) -> None:
        """Add the text of the message at `index` to the notes."""
        self.edit(add_note(self._chat.pinned_notes, self._chat.conversation.messages[index].content))

    def save(self) -> None:
        """Write the notes to the open conversation's row (none yet: written when it is made)."""
        chat = self._chat
        if chat.conversation_id is not None:
            chat.store.set_pinned_notes(chat.conversation_id, chat.pinned_notes)

    def show_notes(self) -> None:
        """Emit notes_changed with the notes and their estimated size in tokens."""
        chat = self._chat
        chat.notes_changed.emit(chat.pinned_notes, estimate_tokens(chat.pinned_notes))
