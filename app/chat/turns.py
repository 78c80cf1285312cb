"""The chat turn, from Send to the transcript: send → the worker's plan and admission decision →
streaming → finished, refused (with the admission remedies the user may pick) or failed.

Owns the request in flight (its id, the reply being written and the conversation it belongs
to), a message sent while Stop takes effect (sent as soon as the turn ends), the pending turn's
TurnPlan, and the per-turn projected vs measured peaks kept for the diagnostics report. The
conversation itself is the Chat's; only the GUI thread runs this code, and the worker only ever
sees copies of the messages.

The user may open another conversation while a reply is written (new-user trial: switching was
refused): the reply goes on into its own conversation (its *home*) and is stored there when it
ends; only the chat shown hears reply_prefill_progressed / reply_streamed / reply_stats, and
opening the home again shows the reply still streaming (ConversationFlow.open_conversation). The
model answers one turn at a time, so the chat shown waits (Stop stays offered) until that reply
ends; a line in it says so while it lasts (reply_elsewhere).

A refused message that the user leaves unanswered (no remedy picked: the dialog left open, a
message sent while Stop took effect, a refusal in a chat not shown, a restart) is withdrawn when
the next message is sent, as Cancel in the remedies dialog does: it leaves the chat and the Store,
its text goes back to the composer, and the new message is sent without it. Left in, it was sent
with every later prompt and folded into the summary (new-user trial: a 180,000-character paste
refused, then summarized, made another chat's first token wait ~19 s).

The worker also writes a conversation's summary after its turn has ended here: a turn sent
meanwhile (in that chat or another) is queued behind it in the worker. Until the worker begins
it, its answer bubble says what it waits for (reply_waiting), and Stop cancels it there and then:
the worker drops it unrun (GenerationWorker.request_cancel_turn) and the summary goes on.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Qt, Slot

from app.chat import saving
from app.chat.conversations import clean_title
from app.chat.error_text import plain_failure, remote_documents_refusal
from app.chat.refusal_text import lowered_max_new_tokens, refusal_line, stored_refusal
from app.chat.stop_text import stop_detail
from app.core.conversation import MessageStatus, ReplyStats, Role, copy_messages
from app.core.kv_precision import KV_8
from app.core.new_tokens import conversation_tokens
from app.core.pinned_notes import with_pinned_notes
from app.engine.documents.fit import WHOLE
from app.workers.generation_worker import TurnRequest

if TYPE_CHECKING:
    from app.chat.chat import Chat


translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class Turns(QObject):
    """The translation context "Turns" for counted words ("the last 1 turn"): lupdate reads
    Turns.tr(text, "", n) as a plural message, never translate(context, text, None, n).
    Never instantiated; no signals."""
log = logging.getLogger(__name__)

PROGRESS_SAVE_S = 1.0
"""Seconds between two saves of the answer being written (`TurnFlow._save_progress`)."""


class TurnFlow(QObject):
    """Runs the chat's turns through its worker. No signals of its own: the Chat's message_added,
    reply_* (reply_waiting and reply_elsewhere included), turn_planned, turn_refused, turn_ended
    and text_withdrawn are emitted here."""

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self._request_ids = itertools.count(1)
        self._active_request: int | None = None
        self._reply = None     # the Message being written by the request in flight
        self._home = None      # the Conversation it belongs to (chat.conversation while shown)
        self._home_id: int | None = None  # that conversation's id in the store
        self._earlier_stats = None  # a continued answer's ReplyStats before this part
        self._begun = False  # the worker has begun the request in flight (said something of it)
        self._waiting_said = False  # reply_waiting said, in the chat shown, that it waits
        # request id → (reply, home, home id, earlier stats) of a reply ended here before the
        # worker ended it (its chat was deleted): the worker's end still completes its stored
        # record (its last text, its stats), so that Undo brings back the answer exactly
        self._detached: dict[int, tuple] = {}
        self._queued_text: str | None = None
        self._documents: tuple = ()  # ExtractedDocuments of the turn in flight (for a refusal's remedies)
        self._refused = None  # the user Message whose turn was refused and whose remedies are offered
        self._saved_at = 0.0  # time.monotonic() of the last save of the answer being written
        self._unsaved_said = False  # a notice said that the answer being written is not saved
        self._save_failed = False  # its last save failed (a full disk): tried again at most every PROGRESS_SAVE_S
        self.last_plan = None         # the pending turn's TurnPlan (window, projection, decision)
        self.turn_records: list = []  # per-turn projected vs measured peaks, for diagnostics
        worker = chat.worker
        worker.turn_planned.connect(self._on_turn_planned)
        worker.prefill_progressed.connect(self._on_prefill_progressed)
        worker.token_streamed.connect(self._on_token_streamed)
        worker.reply_finished.connect(self._on_reply_finished)
        worker.generation_failed.connect(self._on_generation_failed)
        worker.turn_refused.connect(self._on_turn_refused)
        worker.documents_fitted.connect(self._on_documents_fitted)
        # queued: said below the transcript the window shows for the same signal
        chat.conversation_loaded.connect(self._on_conversation_loaded, Qt.ConnectionType.QueuedConnection)

    @property
    def active(self) -> bool:
        """Whether a reply is in flight (planned, streaming or stopping)."""
        return self._active_request is not None

    @property
    def shown(self) -> bool:
        """Whether the reply in flight belongs to the conversation shown (False when none is)."""
        return self.active and self._home is self._chat.conversation

    def home_of(self, conversation_id: int | None):
        """The Conversation a reply in flight is being written into, when it is `conversation_id`'s
        (its messages end with that reply); else None."""
        if self.active and conversation_id is not None and conversation_id == self._home_id:
            return self._home
        return None

    def show_waiting(self) -> None:
        """Say in the answer bubble shown whether the turn in flight waits in the worker for a
        summary being written (reply_waiting; "" once it no longer waits). Nothing when that
        answer is not shown or the worker has begun it."""
        chat = self._chat
        if not self.shown or self._begun:
            return
        text = ""
        if chat.summaries.writing:
            other = chat.summaries.writing_for
            if other is None or other == self._home_id:
                text = translate("Turns", "Waiting for the summary of earlier turns to be written; this answer "
                                          "starts right after it. Stop cancels it.")
            else:
                text = translate("Turns", "Waiting for the summary of “{0}” to be written; this answer starts "
                                          "right after it. Stop cancels it.").format(self._title(other))
        if text or self._waiting_said:
            chat.reply_waiting.emit(text)
        self._waiting_said = bool(text)

    def show_elsewhere(self) -> None:
        """Say in the chat shown whether it waits for an answer still being written in another
        chat (reply_elsewhere: the line, "" when it does not): after each switch of chat and
        when that answer ends."""
        text = ""
        if self.active and not self.shown:
            text = translate("Conversations", "The answer in “{0}” is still being written and will be "
                                              "saved there. Stop ends it; then you can send here.").format(
                self._title(self._home_id))
        self._chat.reply_elsewhere.emit(text)

    def _title(self, conversation_id: int | None) -> str:
        """The title of a stored conversation as the list shows it (clean_title; "" when it has none
        or is gone)."""
        if conversation_id is None:
            return ""
        try:
            return clean_title(self._chat.store.load_conversation(conversation_id).info.title)
        except KeyError:
            return ""

    def _mark_begun(self, request_id: int) -> None:
        """The worker said something of `request_id`: when it is the turn in flight, it no longer waits."""
        if request_id != self._active_request or self._begun:
            return
        self._begun = True
        if self._waiting_said and self.shown:
            self._chat.reply_waiting.emit("")
        self._waiting_said = False

    def _refuse_while_busy(self) -> bool:
        """Say why a command that starts a turn waits, when a reply is in flight; returns whether it did."""
        if self._active_request is None:
            return False
        self._chat.announce(translate("Turns", "Wait for the answer being written to end, or stop it."), "status")
        return True

    @Slot()
    def explain_send_waits(self) -> None:
        """The user tried to send while a reply is in flight, or before anything can answer (the
        text stays in the composer): say in a status line what it waits for and what to do."""
        if not self.active:
            text = (translate("Turns", "The model is still loading; send when it is ready.")
                    if self._chat.models.loading else
                    translate("Turns", "No model is open yet: open one with Open model…, then send."))
            self._chat.announce(text, "status")
            return
        title = self._title(self._home_id) if not self.shown else ""
        if len(title) > 40:  # one status line: the advice after the title must fit
            title = title[:39].rstrip() + "…"
        if title:
            text = translate("Turns", "An answer is still being written in “{0}”; send when it finishes, "
                                      "or stop it.").format(title)
        elif not self.shown:
            text = translate("Turns", "An answer is still being written in another chat; send when it "
                                      "finishes, or stop it.")
        else:
            text = translate("Turns", "Wait for the answer being written to end, or stop it.")
        self._chat.announce(text, "wait")

    # ----- commands ----------------------------------------------------------------------------
    @Slot(str)
    def send(self, text: str) -> None:
        """Add `text` as the user's message and start a turn; while a reply is still stopping it
        waits and starts as soon as that turn ends. A message left unanswered before it (a
        refused turn) is withdrawn first: its text goes back to the composer (text_withdrawn)."""
        chat = self._chat
        if self._active_request is not None:  # sent while Stop takes effect: next in line
            self._queued_text = text
            self.stop()
            return
        reading = chat.attachments.reading if chat.attachments is not None else []
        if reading:  # the message waits for its documents, back in the composer
            chat.announce(translate("Turns", "{0} is still being read: send again when it is ready")
                          .format(", ".join(reading)), "warning")
            chat.text_withdrawn.emit(text)
            return
        if chat.settings.backend.is_remote and chat.attachments is not None and chat.attachments.ready:
            # the server reads no files (trial 15: sent, then "The answer failed"): said before
            # anything is sent, in the transcript (whole: the status bar cut it at 640 px); the text
            # goes back to the composer, the files stay attached
            chat.announce(remote_documents_refusal().line(), "error")
            chat.text_withdrawn.emit(text)
            return
        documents = chat.attachments.take() if chat.attachments is not None else ()
        taken: list = []
        if not chat.save(lambda: taken.extend(self._withdraw_left_unanswered()), saving.not_sent(),
                         undo=lambda: self._put_back(text, documents)):
            return
        withdrawn, withdrawn_documents = taken
        if self._add_user_message(text, documents):
            self._start_turn(documents=documents)
        if withdrawn:  # after the new message left the composer, so that it is not sent with it
            self._put_back(withdrawn, withdrawn_documents)
            if withdrawn_documents:
                chat.announce(translate("Turns", "Your earlier message got no answer, so it was taken out of the "
                                                 "chat; its text and files are back in the message box."), "warning")
            else:
                chat.announce(translate("Turns", "Your earlier message got no answer, so it was taken out of the "
                                                 "chat; its text is back in the message box."), "warning")

    def _withdraw_left_unanswered(self) -> tuple[str, tuple]:
        """Take out of the chat a user message that ends it unanswered (its turn was refused and
        no remedy ran), so that it is neither in the next prompt nor in the summary; returns its
        text and documents ("" when there was none, or when it keeps older answers: one of those
        is shown again)."""
        self._refused = None
        return self._take_back_question()

    def _put_back(self, text: str, documents: tuple) -> None:
        """A withdrawn message back in the composer: its text (text_withdrawn) and the files it
        carried, attached again as they were read (new-user trial: the files were lost)."""
        self._chat.text_withdrawn.emit(text)
        if documents and self._chat.attachments is not None:
            self._chat.attachments.put_back(documents)

    def _add_user_message(self, text: str, documents: tuple, edited: bool = False) -> bool:
        """The user's message, with the documents it carries, shown and stored; returns whether it
        was stored. One that cannot be (a full disk) is not sent: it leaves the chat and its text
        goes back to the composer (text_withdrawn), with its files unless it is an `edited` one
        (they stay with the version it replaced, which is shown again)."""
        chat = self._chat
        message = chat.conversation.add(Role.USER, text)
        message.documents = documents
        chat.message_added.emit(Role.USER, text)
        if documents:
            chat.message_documents.emit(len(chat.conversation.messages) - 1, documents)

        def take_back() -> None:
            chat.conversations.take_back_unsaved(message)
            if edited:
                chat.conversations.show_stored()
            self._put_back(text, () if edited else documents)

        return chat.save(lambda: chat.conversations.persist(message), saving.not_sent(), undo=take_back)

    @Slot(int, str)
    def edit(self, index: int, text: str) -> None:
        """A new version of the user message at `index` with `text` and the same documents,
        answered again; the old version and what followed it stay (switch back with the version
        arrows)."""
        chat = self._chat
        if self._refuse_while_busy():
            return
        documents = chat.conversation.messages[index].documents
        if not chat.save(lambda: chat.conversations.cut_to(index), saving.not_sent(),
                         undo=lambda: self._put_back(text, ())):
            return
        if self._add_user_message(text, documents, edited=True):
            self._start_turn(documents=documents)

    @Slot(int)
    def regenerate(self, index: int) -> None:
        """A new version of the answer at `index` (its question's documents sent again); the old one stays."""
        if self._refuse_while_busy():
            return
        messages = self._chat.conversation.messages
        question = messages[index - 1] if index > 0 and messages[index - 1].role is Role.USER else None
        if not self._chat.save(lambda: self._chat.conversations.cut_to(index), saving.unchanged()):
            return  # the answer stays shown, as the Store still has it
        self._start_turn(documents=question.documents if question is not None else ())

    @Slot(int)
    def continue_reply(self, _index: int) -> None:
        """Extend the last (stopped) answer in place (continue after Stop, text-generation-webui #7565)."""
        if self._refuse_while_busy():
            return
        self._chat.conversation.messages[-1].status = MessageStatus.STREAMING
        self._start_turn(continue_final=True)

    @Slot()
    def retry(self) -> None:
        """Ask the last question again after its answer failed (or was cut off by a crash): the
        same user message, not sent twice; the failed answer goes when it has no text, else it
        stays as an older version. Nothing happens while a reply is in flight or when the last
        answer did not fail."""
        chat = self._chat
        messages = chat.conversation.messages
        if (self._active_request is not None or len(messages) < 2 or messages[-1].role is not Role.ASSISTANT
                or messages[-1].status is not MessageStatus.FAILED):
            return
        failed = messages[-1]
        question = messages[-2] if messages[-2].role is Role.USER else None

        def write() -> None:
            if not failed.content.strip() and failed.id is not None and chat.conversation_id is not None:
                chat.store.delete_message(failed.id)  # not worth a version; the Store's path moves up
                chat.conversations.drop_from(len(messages) - 1)
            else:
                chat.conversations.cut_to(len(messages) - 1)

        if not chat.save(write, saving.unchanged()):
            return
        self._start_turn(documents=question.documents if question is not None else ())  # sent again, as Regenerate

    @Slot()
    def summarize_now(self) -> None:
        """Fold all but the newest `summary_keep_turns` turns into the summary now (the worker
        answers on its summary_* signals); refused with a notice while a reply is in flight or
        while there is nothing to fold. A message left unanswered at the end (refused) is not
        sent: the turns counted and folded are those of SummaryFlow.fold_messages."""
        chat = self._chat
        if self._active_request is not None:
            chat.announce(translate("Turns", "Wait for the reply to end before summarizing."), "status")
            return
        if not chat.summaries.foldable_turns():  # the button is disabled then; a call from elsewhere
            keep = chat.settings.generation.summary_keep_turns
            chat.announce(Turns.tr("Nothing to summarize yet: the last {0} turns always stay as they are.", "", keep)
                          .format(f"{keep:,}"), "status")
            return
        request = TurnRequest(next(self._request_ids), copy_messages(chat.summaries.fold_messages()), chat.summary,
                              self._with_notes(chat.settings.generation), backend=chat.settings.backend,
                              summarize_only=True)
        chat.summaries.expect(request.request_id)
        chat.worker.turn_requested.emit(request)

    @Slot()
    def stop(self) -> None:
        """End the reply in flight within one token (the summary being written, when no reply is
        in flight). A turn the worker has not begun (queued behind a summary) ends here at once,
        as a stopped answer with no text, and is dropped by the worker unrun: the summary it
        waited for goes on."""
        # Direct calls, not signals into the worker: the worker's event loop is busy
        # generating, so a queued slot would only run after the reply ends.
        if self._active_request is not None and not self._begun:
            self._chat.worker.request_cancel_turn(self._active_request)
            self._end_turn(MessageStatus.STOPPED, translate("Turns", "before it started"))
            return
        self._chat.worker.request_stop()

    @Slot()
    def stop_summary(self) -> None:
        """End the summary being written within one token (its Stop, in the chat it belongs to);
        a turn queued behind it then runs."""
        self._chat.worker.request_stop()

    def apply_remedy(self, choice: str, decision) -> None:
        """Apply the remedy the user picked for a refused turn ("lower_max_new_tokens", "trim",
        "kv8": this chat's KV cache in 8 bits from now on, "override"; "attach": the message as a
        text file attached to the next one, `_withdraw_as_file`; anything else gives up) and
        send it again. Nothing happens when that message is no longer the one waiting (another
        message was sent meanwhile, and it was withdrawn or answered), nor once the chat is closed
        (its Store too: the message stays, refused, and is said again at the next start)."""
        messages = self._chat.conversation.messages
        if (self._refused is None or self.active or self._chat.closed or not messages
                or messages[-1] is not self._refused):
            return
        self._refused = None
        settings = self._chat.models.turn_settings()
        documents = self._documents
        question = messages[-1]
        if question.id is not None:  # its turn runs after all, or it is withdrawn
            with contextlib.suppress(KeyError):
                self._chat.save(lambda: self._chat.store.note_refusal(question.id, None), "", quiet=True)
        lowered = lowered_max_new_tokens(decision) if choice == "lower_max_new_tokens" else None
        if lowered:
            if decision.cause != "memory":
                # the context itself cannot hold that many new tokens: every later turn would be
                # refused the same way, so the chat keeps the lower value (memory changes per turn);
                # at most a quarter of the context, so the history keeps room (lowered_max_new_tokens)
                chat = self._chat
                generation = replace(chat.settings.generation, max_new_tokens=lowered)
                chat.settings = replace(chat.settings, generation=generation)
                chat.presets.settings_edited()
                chat.announce(translate("Turns", "Max new tokens is now {0} (Settings), so the conversation "
                                                 "keeps {1} tokens of the {2}-token context.").format(
                    f"{lowered:,}", f"{conversation_tokens(lowered, decision.context_limit):,}",
                    f"{decision.context_limit:,}"),
                    "status")
            self._start_turn(settings=replace(settings, max_new_tokens=lowered), documents=documents)
        elif choice == "trim" and decision.trim_tokens and self.last_plan is not None:
            # a smaller context for this turn: the oldest turns leave the window (and are summarized)
            context = len(self.last_plan.prompt_ids) - decision.trim_tokens + settings.max_new_tokens
            self._start_turn(settings=replace(settings, context_tokens=max(context, settings.max_new_tokens + 1)),
                             documents=documents)
        elif choice == "kv8" and decision.kv8_needed_bytes is not None:
            self._chat.conversations.set_kv_precision(KV_8)
            self._start_turn(documents=documents)
        elif choice == "override":
            self._start_turn(override_memory=True, documents=documents)
        elif choice == "attach":
            self._withdraw_as_file()
        else:
            self._withdraw_unanswered()

    def _start_turn(self, continue_final: bool = False, override_memory: bool = False,
                    settings=None, documents: tuple = ()) -> None:
        chat = self._chat
        messages = copy_messages(chat.conversation.messages)
        if not continue_final:
            chat.conversation.add(Role.ASSISTANT, "", MessageStatus.STREAMING)
        self._reply, self._home, self._home_id = chat.conversation.messages[-1], chat.conversation, chat.conversation_id
        self._begun = self._waiting_said = self._unsaved_said = self._save_failed = False
        # Continue extends an answer: its stats so far, to which the continuation's are added
        self._earlier_stats = self._reply.stats if continue_final else None
        self._documents = documents
        chat.reply_started.emit(continue_final)
        chat.conversations.show_versions()
        settings = self._with_notes(settings or chat.models.turn_settings())
        request = TurnRequest(next(self._request_ids), messages, chat.summary, settings, continue_final,
                              override_memory, backend=chat.settings.backend, conversation_key=chat.cache_key,
                              documents=documents, kv_precision=chat.kv_precision)
        self._active_request = request.request_id
        chat.summaries.expect(request.request_id)
        chat.worker.turn_requested.emit(request)
        self.show_waiting()  # a summary being written goes first

    def _with_notes(self, settings):
        """`settings` with the pinned notes in the system prompt: counted in the budget, never evicted."""
        return replace(settings, system_prompt=with_pinned_notes(settings.system_prompt, self._chat.pinned_notes))

    def _withdraw_unanswered(self) -> None:
        """A refused message the user gives up on goes back into the composer, not into history."""
        text, documents = self._take_back_question()
        if text:
            self._put_back(text, documents)

    def _take_back_question(self) -> tuple[str, tuple]:
        """The user message that ends the chat taken out of it (ConversationFlow.withdraw_last):
        its text and documents; ("", ()) when the chat does not end with one."""
        messages = self._chat.conversation.messages
        if not messages or messages[-1].role is not Role.USER:
            return "", ()
        return self._chat.conversations.withdraw_last()

    def _withdraw_as_file(self) -> None:
        """A message too long for the context ("Attach as a file" in the remedies dialog) leaves
        the chat, and its text is attached to the next message as a text file, with the files it
        carried; the message box stays empty for the question (an attached file is searched for
        the passages a question needs: app.engine.documents.turn). Text over what a file may
        bring goes back to the message box as it was, with the reason."""
        chat = self._chat
        text, documents = self._take_back_question()
        if not text:
            return
        if chat.attachments is None:
            self._put_back(text, documents)
            return
        name, refused = chat.attachments.attach_text(text, documents)
        if refused:
            self._put_back(text, ())
            chat.announce(translate("Attachments", "Could not attach {0}: {1}").format(name, refused), "error")
            return
        chat.announce(translate("Turns", "Your message is attached as {0}. Write your question about it and "
                                         "send it.").format(name), "status")

    # ----- events from the worker --------------------------------------------------------------
    @Slot(int, object)
    def _on_turn_planned(self, request_id: int, plan) -> None:
        self._mark_begun(request_id)
        self.last_plan = plan
        if request_id != self._active_request or self.shown:  # the meter and panel show the chat shown
            self._chat.turn_planned.emit(plan)

    @Slot(int, int, int)
    def _on_prefill_progressed(self, request_id: int, done_tokens: int, total_tokens: int) -> None:
        self._mark_begun(request_id)
        if request_id == self._active_request and self.shown:
            self._chat.reply_prefill_progressed.emit(done_tokens, total_tokens)

    @Slot(int, str)
    def _on_token_streamed(self, request_id: int, text: str) -> None:
        self._mark_begun(request_id)
        if request_id in self._detached:  # the last text before its stop took effect
            self._detached[request_id][0].content += text
        elif request_id == self._active_request:
            self._reply.content += text
            if self.shown:
                self._chat.reply_streamed.emit(text)
            self._save_progress()

    def _save_progress(self) -> None:
        """The answer written so far into the store, as streaming: its first piece at once, then at
        most every PROGRESS_SAVE_S. A crash or a power cut then keeps what was written, and the next
        start shows it cut off, with Retry (Store.mark_interrupted); before, the answer lived only
        in memory until it ended, so a killed process lost it and left its question unanswered
        (new-user trial: kill -9 mid-answer)."""
        reply, now = self._reply, time.monotonic()
        if (reply.id is not None or self._save_failed) and now - self._saved_at < PROGRESS_SAVE_S:
            return
        self._saved_at = now
        home, home_id = self._home, self._home_id

        def write() -> None:
            if reply.id is None:  # its row: a new version, the sidebar and version arrows follow
                self._chat.conversations.persist(reply, home, home_id)
            else:  # later only its text, on the token path: no sidebar or version recount each second
                self._chat.store.update_message(reply.id, content=reply.content, status=reply.status)

        with contextlib.suppress(KeyError):  # its chat deleted meanwhile (stop_for_delete ends it)
            self._save_reply(write)

    def _save_reply(self, write, final: bool = False) -> bool:
        """Store the answer of the turn in flight with `write` (`final`: as it ended); returns
        whether it was. Not stored (a full disk), it stays shown and a notice says so, once per
        answer; its end tries again, and in a chat no longer shown says that it was lost."""
        shown = self.shown
        quiet = self._unsaved_said or not (shown or final)
        then = "" if quiet else saving.answer_kept_shown() if shown else saving.answer_lost(self._title(self._home_id))
        saved = self._chat.save(write, then, quiet=quiet)
        self._save_failed = not saved
        self._unsaved_said = self._unsaved_said or (not saved and not quiet)
        return saved

    @Slot(int, object, object)
    def _on_reply_finished(self, request_id: int, finished, record) -> None:
        if request_id in self._detached:
            self._complete_detached(request_id, finished)
            return
        if request_id != self._active_request:
            return
        self.turn_records.append(record)
        reply = self._reply
        reply.stats = self._stats(finished)
        if self._earlier_stats is not None:  # the line under a continued answer counts all of it
            reply.stats = self._earlier_stats.continued_by(reply.stats)
        if finished.stop_reason == "length":  # cut off by max_new_tokens: offer Continue
            self._end_turn(MessageStatus.STOPPED, stop_detail(reply.stats), finished)
        else:
            self._end_turn(MessageStatus.STOPPED if finished.stop_reason == "stopped"
                           else MessageStatus.COMPLETE, finished=finished)

    def _say_measures(self, reply, finished) -> None:
        """The ended answer's figures, for the chat shown (one not shown says them when opened)."""
        self._chat.reply_measured.emit(finished.ttft_s, finished.decode_tokens_per_s, finished.new_tokens)
        self._chat.reply_stats.emit(reply.stats)
        if reply.sources:
            self._chat.reply_sources.emit(reply.sources)

    def _complete_detached(self, request_id: int, finished) -> None:
        """The worker's end of a reply already ended here (stop_for_delete): its stats, and the text
        that came meanwhile, are stored with it (the deleted chat can still be restored)."""
        reply, home, home_id, earlier = self._detached.pop(request_id)
        reply.stats = self._stats(finished)
        if earlier is not None:
            reply.stats = earlier.continued_by(reply.stats)
        with contextlib.suppress(KeyError):  # purged meanwhile: nothing left to complete
            self._chat.save(lambda: self._chat.conversations.persist(reply, home, home_id), "", quiet=True)

    @Slot(int, object)
    def _on_documents_fitted(self, request_id: int, fits) -> None:
        """The excerpts retrieved into this turn's prompt become the answer's sources (a document
        sent whole has none: all of it was there)."""
        self._mark_begun(request_id)
        if request_id == self._active_request and self._reply is not None:
            self._reply.sources = tuple(c for fit in fits for c in fit.citations if fit.mode != WHOLE)

    def _stats(self, finished) -> ReplyStats:
        """The ReplyStats of the answer that just ended (engine ReplyFinished + what answered)."""
        chat = self._chat
        if chat.settings.backend.is_remote:
            remote = chat.backend.remote_report or chat.settings.backend.remote
            kv, backend = "", translate("Turns", "remote: {0}").format(remote.display)
        else:
            report = chat.report
            kv = report.compute_dtype if report is not None else ""
            if self.last_plan is not None and getattr(self.last_plan, "kv_bits", 16) == 8:
                kv = "int8"
            backend = f"{report.name} · {report.device}" if report is not None else ""
        return ReplyStats(finished.prompt_tokens, finished.prefill_tokens, finished.reused_tokens,
                          finished.new_tokens, finished.ttft_s, finished.decode_tokens_per_s,
                          finished.decode_path, kv, backend, stop_reason=finished.stop_reason)

    @Slot(int, str, str)
    def _on_generation_failed(self, request_id: int, reason: str, _partial: str) -> None:
        self._detached.pop(request_id, None)  # ended here already, as stopped: it stays so
        if request_id != self._active_request:
            return
        log.warning("reply failed: %s", reason)  # the engine's words stay in the log
        plain = plain_failure(reason, "reply")
        self._reply.failure = reason  # kept with it: said again when the chat is opened again
        self._end_turn(MessageStatus.FAILED, plain.what)
        self._chat.announce(plain.line(), "retry")

    @Slot(int, object)
    def _on_turn_refused(self, request_id: int, decision) -> None:
        self._detached.pop(request_id, None)
        if request_id != self._active_request:
            return
        chat = self._chat
        reply, home, shown = self._reply, self._home, self.shown
        if reply.id is None:  # a fresh placeholder: nothing ran, nothing to keep
            home.messages.remove(reply)
            chat.reply_ended.emit(MessageStatus.FAILED, "")
            if shown:
                chat.messages_truncated.emit(len(home.messages))
                chat.conversations.show_versions()
        else:  # a refused "continue": the partial answer stays as it was
            reply.status = MessageStatus.STOPPED
            chat.reply_ended.emit(MessageStatus.STOPPED, "")
        self._forget_reply()
        log.info("turn refused: %s", decision.reason)
        question = home.messages[-1] if home.messages else None
        if question is not None and question.role is Role.USER and question.id is not None:
            with contextlib.suppress(KeyError):  # its chat deleted meanwhile
                # said again when reopened (not kept: it is said now, and the indicator says why)
                chat.save(lambda: chat.store.note_refusal(question.id, stored_refusal(decision)), "", quiet=True)
        # "refused" goes when a remedy runs the turn; about a chat no longer shown it stays an error
        chat.announce(refusal_line(decision), "refused" if shown else "error")
        chat.turn_ended.emit("refused")
        if self._queued_text:
            self._send_queued()
            return
        if not shown:  # its chat is no longer shown: its message stays, unanswered, with no dialog here
            return
        projection = self.last_plan.projection if self.last_plan is not None else None
        self._refused = home.messages[-1]
        chat.turn_refused.emit(decision, projection)

    @Slot(list)
    def _on_conversation_loaded(self, _messages: list) -> None:
        """A conversation whose last answer failed (or was cut off when Headroom stopped) offers Retry."""
        messages = self._chat.conversation.messages
        if (self._active_request is None and messages and messages[-1].role is Role.ASSISTANT
                and messages[-1].status is MessageStatus.FAILED):
            if messages[-1].failure:  # said as when it failed (trial 15: the reason was gone after a restart)
                self._chat.announce(plain_failure(messages[-1].failure, "reply").line(), "retry")
                return
            self._chat.announce(translate("Turns", "The last answer did not finish: Headroom stopped, or the "
                                                   "model failed, while it was being written."), "retry")

    # ----- ending a turn -----------------------------------------------------------------------
    def _end_turn(self, status: MessageStatus, detail: str = "", finished=None) -> None:
        """`finished` (ReplyFinished, when the worker ended it) is said before turn_ended: a message
        queued while stopping starts at turn_ended, and its bubble must not take the stopped
        answer's stats line (new-user trial: Esc, then Enter at once)."""
        chat = self._chat
        message, home, home_id = self._reply, self._home, self._home_id
        message.status = status
        if status is not MessageStatus.FAILED:  # a failed answer continued or answered again
            message.failure = ""
        self._save_reply(lambda: chat.conversations.persist(message, home, home_id), final=True)
        chat.reply_ended.emit(status, detail)
        if finished is not None and self.shown:
            self._say_measures(message, finished)
        self._forget_reply()
        chat.turn_ended.emit(status.value)
        self._send_queued()

    def _forget_reply(self) -> None:
        shown = self.shown
        self._active_request = self._reply = self._home = self._home_id = None
        self._begun = self._waiting_said = False
        if not shown:  # the chat shown no longer waits for it
            self.show_elsewhere()

    def _send_queued(self) -> None:
        text, self._queued_text = self._queued_text, None
        if text:
            self.send(text)

    def discard_queued(self) -> None:
        """Forget a message sent while Stop takes effect: it must not start a turn now."""
        self._queued_text = None

    def keep_partial_as_stopped(self) -> None:
        """End the reply in flight, if any, keeping its partial answer as stopped."""
        if self._active_request is not None:
            self._end_turn(MessageStatus.STOPPED)

    def stop_for_delete(self, conversation_id: int) -> None:
        """Before `conversation_id` is deleted: a reply in flight into it stops (within one token)
        and its partial answer is kept, as stopped (the conversation can still be restored)."""
        if self.home_of(conversation_id) is not None:
            self.discard_queued()
            if self._begun:  # its end, with its stats, still comes from the worker: kept with it
                self._detached[self._active_request] = (self._reply, self._home, self._home_id,
                                                        self._earlier_stats)
                self._chat.worker.request_stop()
            else:  # still queued: the worker drops it
                self._chat.worker.request_cancel_turn(self._active_request)
            self.keep_partial_as_stopped()
