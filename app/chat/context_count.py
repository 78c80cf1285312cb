"""How full the context window is, for the meter under the composer: counted by the engine, with
the model's tokenizer and the turn's own history policy, whenever what the next prompt holds
changes — not only when a turn is planned.

A turn's plan carries its window; between turns the chat asks the worker to count the window
the next prompt would keep (GenerationWorker.window_requested: nothing runs, no memory is
projected) after each turn (the answer is in the next prompt), "Summarize now" or an edited
summary, a pinned or edited note, a switched message version, an opened conversation, a preset
or edited settings (system prompt, max new tokens, context), another model (again once it has
loaded: the context set for it, Settings.context_for, needs its path) and a file attached to the
message being written (once read) or removed from it: the count includes what the attached files
would add to the turn (the worker tokenizes each once; never on the GUI thread, never per
keystroke).
Several changes in one step (opening a conversation changes four things) make one count, on
the next turn of the event loop.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Slot

from app.core.conversation import copy_messages
from app.core.pinned_notes import with_pinned_notes
from app.workers.generation_worker import TurnRequest

if TYPE_CHECKING:
    from app.chat.chat import Chat


class ContextCount(QObject):
    """Keeps the chat's context count current. No signals of its own: the Chat's
    context_counted is emitted here."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self._ids = itertools.count(1)
        self._asked: int | None = None  # the count awaited; older answers are stale
        self._soon = QTimer(self)
        self._soon.setSingleShot(True)
        self._soon.setInterval(0)
        self._soon.timeout.connect(self.recount)
        chat.worker.turn_planned.connect(self._on_turn_planned)
        chat.worker.window_counted.connect(self._on_window_counted)
        for changed in (chat.turn_ended, chat.summary_changed, chat.notes_changed, chat.versions_changed,
                        chat.conversation_loaded, chat.presets_changed, chat.model_changed, chat.model_loaded,
                        chat.backend_changed):  # another backend: another context (a check after trial 15)
            changed.connect(self._soon.start)  # model_loaded: its path, so its own context, is known only then
        chat.attachments.ready_changed.connect(self._soon.start)

    @Slot()
    def recount(self) -> None:
        """Ask the worker to count the open conversation's next prompt, unless a turn is in
        flight (its plan counts), nothing can count (no model, no server) or there is nothing
        to count: an empty chat with no file attached to its first message (context_cleared).
        An empty chat with files attached counts them, as its first turn will send them."""
        chat = self._chat
        if chat.turns.active:
            return
        if not chat.conversation.messages and not chat.attachments.ready:
            self._asked = None
            chat.context_cleared.emit()  # a file attached to a first message was removed
            return
        if chat.report is None and not chat.settings.backend.is_remote:
            return
        settings = chat.models.turn_settings()
        settings = replace(settings, system_prompt=with_pinned_notes(settings.system_prompt, chat.pinned_notes))
        request = TurnRequest(next(self._ids), copy_messages(chat.conversation.messages), chat.summary, settings,
                              backend=chat.settings.backend, documents=chat.attachments.ready)
        self._asked = request.request_id
        chat.worker.window_requested.emit(request)

    def _say(self, window) -> None:
        """context_counted for a WindowResult: tokens used of the limit, whole turns kept, turns
        the summary folds."""
        self._chat.context_counted.emit(window.prompt_tokens, window.limit_tokens, len(window.kept),
                                        self._chat.folded_turns())

    @Slot(int, object)
    def _on_turn_planned(self, _request_id: int, plan) -> None:
        self._asked = None  # the turn's own count is newer than any awaited
        self._say(plan.window)

    @Slot(int, object)
    def _on_window_counted(self, request_id: int, window) -> None:
        if request_id != self._asked or window is None or self._chat.turns.active:
            return
        self._asked = None
        self._say(window)
