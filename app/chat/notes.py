"""Pinned notes of the open conversation (issue 17, item 5): kept with the conversation in the
Store and sent in every prompt (app.core.pinned_notes), edited by the user, pinned from a
message, or accepted from what a new summary proposes (app.core.note_proposals: the user
accepts or dismisses each proposal; nothing is pinned without them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from app.chat import saving
from app.core.conversation import Role
from app.core.note_proposals import propose_notes
from app.core.pinned_notes import add_note, estimate_tokens
from app.core.reasoning import without_reasoning

if TYPE_CHECKING:
    from app.chat.chat import Chat


class NotesFlow(QObject):
    """Keeps chat.pinned_notes in step with the Store, and the notes proposed for the open
    conversation. No signals of its own: the Chat's notes_changed and notes_proposed are
    emitted here."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self.proposals: list[str] = []  # offered, not yet accepted or dismissed
        self._dismissed: set[str] = set()  # this conversation's, not offered again
        # both are kept with the conversation in the Store as they change, so they are offered
        # again when it is opened again, also after a restart (trials: gone after a switch and
        # back, then after a restart)

    def propose(self, summary: str) -> None:
        """Offer the facts of a new `summary` of the open conversation as notes to pin."""
        fresh = propose_notes(summary, self._chat.pinned_notes, self._dismissed, offered=self.proposals)
        self.proposals += [p for p in fresh if p not in self.proposals]
        self._save_proposals()
        self._chat.notes_proposed.emit(list(self.proposals))

    @Slot(str)
    def accept(self, text: str) -> None:
        """Pin a proposed note (the user accepted it)."""
        if text in self.proposals:
            self.proposals.remove(text)
            self.edit(add_note(self._chat.pinned_notes, text))
            self._save_proposals()
            self._chat.notes_proposed.emit(list(self.proposals))

    @Slot(str)
    def dismiss(self, text: str) -> None:
        """Drop a proposed note; it is not proposed again in this conversation."""
        if text in self.proposals:
            self.proposals.remove(text)
            self._dismissed.add(text)
            self._save_proposals()
            self._chat.notes_proposed.emit(list(self.proposals))

    def forget_proposals(self) -> None:
        """Another conversation opens: the proposals were this one's (the Store keeps them for
        when it opens again)."""
        self._dismissed = set()
        if self.proposals:
            self.proposals = []
            self._chat.notes_proposed.emit([])

    def restore_proposals(self) -> None:
        """The open conversation's undecided proposals (and what was dismissed), from the Store."""
        chat = self._chat
        if chat.conversation_id is None:
            return
        self.proposals, self._dismissed = chat.store.note_proposals(chat.conversation_id)
        if self.proposals:
            chat.notes_proposed.emit(list(self.proposals))

    def _save_proposals(self) -> None:
        """Write the proposals to the open conversation (none yet: a summary needs its messages,
        which are stored first, so there is always one)."""
        chat = self._chat
        if chat.conversation_id is not None:  # not kept: offered again when the chat is opened again
            chat.save(lambda: chat.store.set_note_proposals(chat.conversation_id, self.proposals, self._dismissed),
                      "", quiet=True)

    @Slot(str)
    def edit(self, text: str) -> None:
        """Adopt the user's notes ("" removes them) and save them with the conversation."""
        chat = self._chat
        chat.pinned_notes = text.strip()
        chat.save(self.save, saving.not_kept())
        self.show_notes()

    @Slot(int)
    def pin(self, index: int) -> None:
        """Add the text of the message at `index` to the notes (an answer's without its reasoning)."""
        message = self._chat.conversation.messages[index]
        text = without_reasoning(message.content) if message.role is Role.ASSISTANT else message.content
        self.edit(add_note(self._chat.pinned_notes, text or message.content))

    def save(self) -> None:
        """Write the notes to the open conversation's row (none yet: written when it is made).
        Raises SAVE_ERRORS (app.chat.saving) when the Store cannot be written."""
        chat = self._chat
        if chat.conversation_id is not None:
            chat.store.set_pinned_notes(chat.conversation_id, chat.pinned_notes)

    def show_notes(self) -> None:
        """Emit notes_changed with the notes and their estimated size in tokens."""
        chat = self._chat
        chat.notes_changed.emit(chat.pinned_notes, estimate_tokens(chat.pinned_notes))
