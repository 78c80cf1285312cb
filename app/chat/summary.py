"""The summary of earlier turns, kept in step with the worker's summary events, the user's edits,
and the Store.

The worker folds the oldest turns into a summary when the history outgrows the context window;
this adopts it as the chat's SummaryState, saves each new or edited one with the open
conversation, says what it covers (turns folded, tokens, its token cap) on summary_changed, and
reports a failed summary in an error notice. Its verdict is said in the status bar, or in the
transcript when the model's summary was not used (`_IN_PASSING`).

A summary being written belongs to the conversation whose turn (or "Summarize now") asked for
it: the worker writes it after that turn's answer, while the user may already be in another
chat. Its progress (summarizing_changed) is shown only while that conversation is open, and again
when the user comes back to it; a turn sent meanwhile elsewhere waits for it in the worker
(TurnFlow.show_waiting says so in its answer bubble).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QElapsedTimer, QObject, Slot

from app.chat import saving
from app.chat.error_text import plain_failure, summary_verdict_text
from app.core.history import NO_ROOM, SummaryState, foldable_turns, summary_reserve, without_unanswered

if TYPE_CHECKING:
    from app.chat.chat import Chat
    from app.core.conversation import Message

DEFAULT_POSITIONS = 2048  # the context assumed before a model says its own (tokens)
# The verdicts said in passing, in the status bar: the model's summary taken (app.core.history.
# accept_summary, maybe "(left out …)"), a cancel, "Summarize now" with nothing to fold
# (app.engine.summary_flow). Any other says the model's summary was not used and what stands in
# for it (the previous one, an extract): that changes what the assistant remembers, so it is a
# line in the transcript, readable in full (new-user trial 9: cut to "Summary: t" in the bar).
_IN_PASSING = re.compile(r"^(history \d+ → \d+ tokens( \(left out [^()]+\))?|summary cancelled|nothing to fold: .*)$")


translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls
log = logging.getLogger(__name__)


class SummaryFlow(QObject):
    """Adopts, shows and saves the chat's SummaryState (chat.summary). No signals of its own: the
    Chat's summary_changed and summarizing_changed are emitted here (summarizing_changed(True):
    a summary of the conversation shown is being written)."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        # request id → (conversation id, the path's Message objects) when the request was sent
        # (objects: the reply then being written has its id by the time its summary ends): a
        # summary that ends after the user switched branch or conversation is saved where it
        # belongs and adopted only if the path shown still holds what it folded
        self._origins: dict[int, tuple[int | None, list]] = {}
        # the summary the worker is writing now: (request id, its conversation's id, and the
        # Conversation shown when it started, for a chat not saved yet), None when none is
        self._writing: tuple[int, int | None, object] | None = None
        self._writing_clock = QElapsedTimer()
        # conversations told that their context has no room for a summary: said once per chat
        self._no_room_said: set[int | None] = set()
        chat.worker.summary_started.connect(self._on_summary_started)
        chat.worker.summary_finished.connect(self._on_summary_finished)
        chat.worker.summary_failed.connect(self._on_summary_failed)
        for changed in (chat.conversation_cleared, chat.conversation_loaded, chat.versions_changed,
                        chat.messages_truncated, chat.turn_ended, chat.summary_changed, chat.presets_changed):
            changed.connect(self.show_foldable)  # presets_changed: also after the settings are edited

    def summary_cap(self) -> int:
        """The summary's token budget: a reserve out of the context window in use, in tokens —
        the last turn's own budget (which knows the "auto" context that fits), else the local
        model's positions or the remote server's context, capped by settings."""
        chat = self._chat
        plan = getattr(chat, "turns", None) and chat.turns.last_plan
        if plan is not None:
            return plan.window.budget.summary_reserve
        positions = (chat.report.max_positions if chat.report else None) or DEFAULT_POSITIONS
        remote_report = chat.backend.remote_report
        if chat.settings.backend.is_remote and remote_report is not None:
            positions = remote_report.context_tokens
        context = chat.models.turn_settings().context_tokens  # the open model's own, if set
        return summary_reserve(min(positions, context) if context > 0 else positions)

    def foldable_turns(self) -> int:
        """The turns "Summarize now" would fold now (app.core.history.foldable_turns of
        `fold_messages`: those before the newest `summary_keep_turns` that the summary does not
        fold yet)."""
        chat = self._chat
        return len(foldable_turns(self.fold_messages(), chat.summary, chat.settings.generation.summary_keep_turns))

    def fold_messages(self) -> list[Message]:
        """The messages "Summarize now" works on, counted here and sent to the worker: the chat
        shown without a message left unanswered at its end (a refused paste: the next Send
        withdraws it), so that it is neither one of the turns kept verbatim nor a newest turn too
        long for any window, which folded nothing."""
        return without_unanswered(self._chat.conversation.messages)

    @Slot()
    def show_foldable(self, *_changed) -> None:
        """Emit foldable_changed for the chat shown."""
        chat = self._chat
        chat.foldable_changed.emit(self.foldable_turns(), chat.folded_turns(),
                                   max(chat.settings.generation.summary_keep_turns, 1))

    def show_summary(self) -> None:
        """Emit summary_changed for chat.summary, with the number of turns it folds."""
        chat = self._chat
        chat.summary_changed.emit(chat.summary.content, chat.folded_turns(), chat.summary.tokens,
                                  self.summary_cap())

    @Slot(str)
    def edit(self, text: str) -> None:
        """Adopt the user's edit of the summary ("" removes it) and save it."""
        chat = self._chat
        chat.summary = SummaryState(text, chat.summary.folded_through if text else -1,
                                    len(text.split()) * 4 // 3)  # recounted by the next turn's plan
        if chat.conversation_id is not None:
            chat.save(lambda: chat.store.save_summary(chat.conversation_id, chat.summary), saving.summary_not_kept())
        self.show_summary()

    def expect(self, request_id: int) -> None:
        """Remember the conversation and path a request (that may fold turns) was sent for."""
        chat = self._chat
        self._origins[request_id] = (chat.conversation_id, list(chat.conversation.messages))

    @property
    def writing_for(self) -> int | None:
        """The id of the conversation whose summary the worker is writing now (None: no summary
        is being written, or it is an unsaved chat's)."""
        return self._writing[1] if self._writing is not None else None

    @property
    def writing(self) -> bool:
        """Whether the worker is writing a summary now (the next request waits behind it)."""
        return self._writing is not None

    def writing_ms(self) -> int:
        """Milliseconds since the summary being written started (0 when none is)."""
        return self._writing_clock.elapsed() if self._writing is not None else 0

    def writing_here(self) -> bool:
        """Whether the summary being written is the conversation shown's."""
        if self._writing is None:
            return False
        _rid, conversation_id, conversation = self._writing
        chat = self._chat
        if conversation_id is None:  # a chat with no row yet: the same chat, not another new one
            return conversation is chat.conversation
        return conversation_id == chat.conversation_id

    def show_summarizing(self) -> None:
        """Emit summarizing_changed: whether a summary of the conversation shown is being written
        (after a switch of conversation, and when a summary starts or ends)."""
        self._chat.summarizing_changed.emit(self.writing_here())

    @Slot(int, int)
    def _on_summary_started(self, request_id: int, _folded: int) -> None:
        chat = self._chat
        conversation_id = self._origins.get(request_id, (chat.conversation_id, None))[0]
        self._writing = (request_id, conversation_id, chat.conversation)
        self._writing_clock.start()
        self.show_summarizing()
        chat.turns.show_waiting()  # a turn sent meanwhile waits behind it

    @Slot(int, object, str)
    def _on_summary_finished(self, request_id: int, state, verdict: str) -> None:
        chat = self._chat
        if verdict.startswith(NO_ROOM):
            self._on_no_room(request_id)
            return
        here = (chat.conversation_id, [m.id for m in chat.conversation.messages])
        conversation_id, messages = self._origins.get(request_id, (chat.conversation_id, chat.conversation.messages))
        path = [m.id for m in messages]
        self._origins = {rid: origin for rid, origin in self._origins.items() if rid > request_id}
        folded = state.folded_through + 1
        if conversation_id is not None and len(path) >= folded and None not in path[:folded]:
            chat.save(lambda: chat.store.save_summary(conversation_id, state, path[folded - 1] if folded else None),
                      saving.summary_not_kept())
        self._end_writing()
        if conversation_id == here[0] and path[:folded] == here[1][:folded]:
            new = state.content and state.content != chat.summary.content
            chat.summary = state
            self.show_summary()
            if new:  # its facts may be pinned, one by one, if the user wants them
                chat.notes.propose(state.content)
        shown_here = conversation_id == here[0]  # another chat's goes to the bar: not in this transcript
        kind = "status" if _IN_PASSING.match(verdict) or not shown_here else "info"
        chat.announce(translate("Summary", "Summary: {0}").format(summary_verdict_text(verdict)), kind)

    def _on_no_room(self, request_id: int) -> None:
        """The context has no room for a summary request (app.core.history.plan_summary): the
        oldest turns left the window unsummarized, nothing was written or is saved. A limit of a
        small context, not a failure (new-user trial: an error notice after every turn of a
        64-token model): said once per chat in its transcript, afterwards only in the status bar."""
        chat = self._chat
        conversation_id = self._origins.get(request_id, (chat.conversation_id, None))[0]
        self._origins = {rid: origin for rid, origin in self._origins.items() if rid > request_id}
        self._end_writing()
        kind = "status"  # another chat's (the user switched), or said already
        if conversation_id == chat.conversation_id and conversation_id not in self._no_room_said:
            kind = "info"
            self._no_room_said.add(conversation_id)
        chat.announce(translate("Summary", "Older turns leave the window without a summary: this model's context "
                                           "is too small to write one."), kind)

    def _end_writing(self) -> None:
        self._writing = None
        self.show_summarizing()
        self._chat.turns.show_waiting()  # a turn waiting behind it runs next

    @Slot(int, str)
    def _on_summary_failed(self, _request_id: int, reason: str) -> None:
        self._end_writing()
        log.warning("summary failed: %s", reason)  # the engine's words stay in the log
        self._chat.announce(plain_failure(reason, "summary").line(), "error")
