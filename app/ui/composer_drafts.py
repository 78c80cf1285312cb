"""A draft per chat: what was typed in the composer and not sent stays with its conversation.

Switching to another conversation (or to a new chat) puts the composer's text aside under the
conversation it was typed in and brings back the one kept for the conversation opened. The
drafts are written (to the window's WindowState) SAVE_AFTER_MS after typing stops, at once when
the box empties (a message sent), and by the window as it closes, so they come back after a
restart, a crash or a kill included. A new chat's draft is kept as well (under "new") until that
chat gets its id with its first message, and again once that chat is dropped (its only message
refused and taken back into the composer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Slot

if TYPE_CHECKING:
    from app.chat.chat import Chat
    from app.ui.composer import Composer

NEW_CHAT = None  # the key of a chat not saved yet
# new-user trial: a draft typed 3 s before a kill -9 was gone after the restart (written only at
# close); one write per pause, never one per key: session.ini is rewritten whole each time
SAVE_AFTER_MS = 1500


class ComposerDrafts(QObject):
    """Keeps the `composer`'s text per conversation of `chat`. No signals; connects itself to
    the chat's conversation_cleared, conversation_loaded and conversations_listed."""

    def __init__(self, chat: Chat, composer: Composer, drafts: dict[int | None, str] | None = None,
                 save: Callable[[dict[int | None, str]], None] | None = None):
        """drafts: conversation id (None: a new chat) → text, as `drafts()` returned them; save:
        called with `drafts()` after typing stops (None: never, the owner saves them)."""
        super().__init__(composer)
        self._chat = chat
        self._editor = composer.editor
        self._drafts = {key: text for key, text in (drafts or {}).items() if text}
        self._save = save
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(SAVE_AFTER_MS)
        self._save_timer.timeout.connect(self._on_save_timer_timeout)
        self._key: int | None = NEW_CHAT  # the conversation whose draft the composer holds
        # the window starts on a new chat: its draft is in the composer, so the first switch (to the
        # conversation the window reopens) puts it aside instead of dropping it
        self._editor.setPlainText(self._drafts.pop(NEW_CHAT, ""))
        chat.conversation_cleared.connect(self._on_switched)
        chat.conversation_loaded.connect(self._on_switched)
        chat.conversations_listed.connect(self._on_conversations_listed)
        self._editor.textChanged.connect(self._on_text_changed)

    def drafts(self) -> dict[int | None, str]:
        """Every unsent draft, the open conversation's included (id → text; None: a new chat)."""
        drafts = dict(self._drafts)
        drafts.pop(self._key, None)
        text = self._editor.toPlainText()
        if text.strip():
            drafts[self._key] = text
        return drafts

    def stop_saving(self) -> None:
        """Write nothing more: the window saves the drafts itself as it closes (only those of
        conversations that still exist)."""
        self._save = None
        self._save_timer.stop()

    @Slot()
    def _on_text_changed(self) -> None:
        if self._save is None:
            return
        if self._editor.document().isEmpty():  # sent (or all erased): must not come back after a crash
            self._on_save_timer_timeout()
        else:
            self._save_timer.start()

    @Slot()
    def _on_save_timer_timeout(self) -> None:
        self._save_timer.stop()
        if self._save is not None:
            self._save(self.drafts())

    @Slot()
    @Slot(list)
    def _on_switched(self, *_args) -> None:
        """Another conversation (or an empty chat) is open: the text typed so far stays with
        the one it was typed in, and the opened one's draft comes back."""
        text = self._editor.toPlainText()
        if text.strip():
            self._drafts[self._key] = text
        else:
            self._drafts.pop(self._key, None)
        self._key = self._chat.conversation_id
        self._editor.setPlainText(self._drafts.pop(self._key, ""))
        self._editor.moveCursor(self._editor.textCursor().MoveOperation.End)

    @Slot(list, object)
    def _on_conversations_listed(self, _rows: list, current_id) -> None:
        """A new chat got its id with its first message: its draft is that conversation's now.
        A chat dropped while shown (its only message, refused, was taken back: the text is in
        the composer again) is a new chat again, and so is its draft."""
        if current_id == self._chat.conversation_id and (self._key is NEW_CHAT or current_id is NEW_CHAT):
            # kept under the dropped chat's id, the draft was lost at the next switch or at quit
            # (new-user trial: a refused 100 KB paste, Cancel, another chat, back: the box was empty)
            self._key = current_id
