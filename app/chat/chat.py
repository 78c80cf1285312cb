"""The open chat, with no widgets: its settings, its Store, the open conversation (with its id
and summary), the loaded model's LoadReport, and the threads that serve it — the generation
worker's, the server monitor's, a small pool for short reads (BackgroundJobs) — plus the
GUI-thread memory monitor.

A `Chat` lives in the GUI thread; only this thread reads or writes its state, and the worker
only ever sees copies (TurnRequest snapshots). The flows beside it (app.chat.turns,
conversations, summary, models, backend, memory) take a Chat, connect themselves to its
worker's signals, and tell the window what changed through the Chat's past-tense signals.
`app.chat.open_chat` builds a Chat with its flows; this module imports none of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QThread, Signal

from app.chat import saving
from app.chat.error_text import os_error_line
from app.core.conversation import Conversation
from app.core.history import SummaryState, group_turns
from app.core.kv_precision import DEFAULT_KV_PRECISION
from app.core.settings import Settings, save_settings
from app.core.store import Store, StoreNotice, open_store
from app.workers.background_jobs import BackgroundJobs
from app.workers.memory_monitor import MemoryMonitor
from app.workers.server_monitor import ServerMonitor

log = logging.getLogger(__name__)

PURGE_DELETED_AFTER_S = 7 * 24 * 3600  # deleted conversations can be restored for a week


class Chat(QObject):
    """The open chat. Commands are the flows' methods (chat.turns.send, chat.models.open_model,
    …) and announce(); events go out on these signals, all emitted in the GUI thread:

        notice(str text, str kind): every expected error and notice, the one funnel. kind
            "info" or "error": a line in the transcript; "refused": why a turn was not started,
            in the transcript as an error until the turn runs after all; "retry": an error about the last turn,
            in the transcript with Retry (chat.turns.retry); "load": why a model did not open, in
            the transcript as an error until load_notices_withdrawn; "limit": the open model's limit
            on max new tokens, in the transcript until limit_notices_withdrawn; "status": the status bar for 8 s;
            "warning": the status bar for 15 s; "wait": the status bar until the reply in flight
            ends (why a message was not sent yet), at most 8 s.
        message_added(object Role, str text): a message the user sent.
        reply_started(bool continued): a reply bubble opens (continued: the last one reopens).
        reply_prefill_progressed(int done_tokens, int total_tokens): the prompt of the reply being
            written is being read (a long prefill only): tokens read so far of those to read;
            reply_streamed follows once it is read.
        reply_streamed(str): new reply text.
        reply_waiting(str text): the reply bubble opened has not started: the worker first
            writes a summary (this chat's or another's); `text` says so ("": it no longer waits).
        reply_elsewhere(str text): the chat shown waits for an answer still being written in
            another chat; `text` says so, for as long as it lasts ("": it no longer does).
        reply_ended(object MessageStatus, str detail): the reply ended (detail: why it stopped).
        reply_measured(float ttft_s, float tokens_per_s, int new_tokens): the speed of the chat
            shown's last answer: when it ends, and again when the chat is opened (new_tokens: of
            its last part, for an answer extended with Continue).
        reply_unmeasured(): the chat shown has no answer with stats (a new chat): none to show.
        reply_stats(object ReplyStats): how the answer that just ended was made (after reply_ended).
        reply_sources(object): the document excerpts (Citations, text included) the answer that
            just ended was given (after reply_ended; not emitted when it was given none).
        message_documents(int index, object documents): the documents (ExtractedDocuments) kept
            with the message at `index` of the path shown: after it was sent, or one was removed.
        document_noted(int index, str name, str line): how the document `name` of the message
            at `index` went into the turn being run ("report.pdf: whole file, 812 tokens"), for
            the transcript; it belongs to that file and goes when the file is removed.
        message_sources(int index, object sources): the excerpts (Citations) of the answer at
            `index` of the path shown changed: a document they came from was removed, so its
            excerpts keep only where they were (Citation.removed).
        turn_ended(str): "complete", "stopped", "failed" or "refused"; Send is usable again.
        turn_planned(object TurnPlan): the pending turn's window, projection and decision.
        context_counted(int used, int limit, int window_turns, int folded_turns): the next
            prompt's tokens of the prompt limit, the whole turns it keeps, the turns the summary
            folds — from each turn's plan, and recounted when the summary, the notes, the
            version shown, the open conversation, the settings or the model change.
        context_cleared(): nothing to count (an empty chat, no file attached to its first
            message): the meter shows nothing.
        turn_refused(object AdmissionDecision, object TurnProjection | None): remedies to offer.
        text_withdrawn(str): a message taken back from the chat (a refused one given up on or left
            unanswered), for the composer.
        messages_truncated(int index): messages from index on are gone.
        conversation_cleared(): an empty chat is open.
        conversation_loaded(list[Message]): a stored conversation is open.
        conversations_listed(list[ConversationInfo], object current_id): the sidebar's rows.
        conversation_deleted(int id, str title): deleted, restorable (offer Undo).
        notes_changed(str text, int tokens): the pinned notes, ≈ their size in tokens.
        notes_proposed(list[str]): facts a new summary proposes as notes, for the user to
            accept or dismiss each ([]: none to offer).
        presets_changed(list[Preset], str current): the preset library and the chat's pick ("":
            none, or settings changed since).
        versions_changed(list[tuple[int, int]]): per message of the path shown, (its version
            number from 1, how many versions it has); a switcher shows where there are several.
        summary_changed(str content, int folded_turns, int tokens, int cap_tokens).
        summarizing_changed(bool).
        foldable_changed(int foldable_turns, int folded_turns, int keep_turns): how many turns
            "Summarize now" would fold into the summary now (0: it has nothing to do), how many
            the summary folds already, and how many newest turns always stay as they are; when
            the chat shown, its messages, its summary or its settings change.
        load_progressed(str, float): loading stage and fraction; load_ended(): no load runs.
        model_changed(object LoadReport | None); model_loaded(object LoadReport);
        load_failed(str reason).
        load_notices_withdrawn(): a model the user opened after a failed open has opened; the
            "load" notices saying why an earlier one did not are stale.
        limit_notices_withdrawn(): the "limit" notices no longer hold (the context or max new
            tokens changed).
        decode_status_changed(object DecodeStatus).
        can_send_changed(bool): something can answer (a model, or a remote backend).
        backend_changed(object): the remote server's display name, or None for the local model.
        backend_reported(object): the LoadReport or RemoteReport of what answers this chat's
            turns (BackendFlow.name_backend); None while nothing is known to answer.
        attachment_changed(int id, str name, str status): a file attached to the next message
            is being read ("reading 40%"), ready, or gone (status "").
        kv_precision_changed(str): the open chat's KV cache precision ("16-bit", "8-bit",
            "auto"; app.core.kv_precision), on open, on a new chat and when it is changed.
        saving_changed(str why): conversations are not being saved ("": they are again); `why`
            says why and where, for a lasting mark in the window: from start() for a database
            that cannot be written (its copy in memory: nothing this session does is kept) or a
            disk full at start, and when a write fails (a full disk) or succeeds again
            (app.chat.saving).
    """

    notice = Signal(str, str)
    message_added = Signal(object, str)
    reply_started = Signal(bool)
    reply_prefill_progressed = Signal(int, int)
    reply_streamed = Signal(str)
    reply_waiting = Signal(str)
    reply_elsewhere = Signal(str)
    reply_ended = Signal(object, str)
    reply_measured = Signal(float, float, int)
    reply_unmeasured = Signal()
    reply_stats = Signal(object)
    reply_sources = Signal(object)
    message_documents = Signal(int, object)
    document_noted = Signal(int, str, str)
    message_sources = Signal(int, object)
    turn_ended = Signal(str)
    turn_planned = Signal(object)
    context_counted = Signal(int, int, int, int)
    context_cleared = Signal()
    turn_refused = Signal(object, object)
    text_withdrawn = Signal(str)
    messages_truncated = Signal(int)
    conversation_cleared = Signal()
    conversation_loaded = Signal(list)
    conversations_listed = Signal(list, object)
    conversation_deleted = Signal(int, str)
    versions_changed = Signal(list)
    notes_changed = Signal(str, int)
    notes_proposed = Signal(list)
    presets_changed = Signal(list, str)
    summary_changed = Signal(str, int, int, int)
    summarizing_changed = Signal(bool)
    foldable_changed = Signal(int, int, int)
    load_progressed = Signal(str, float)
    load_ended = Signal()
    model_changed = Signal(object)
    model_loaded = Signal(object)
    load_failed = Signal(str)
    load_notices_withdrawn = Signal()
    limit_notices_withdrawn = Signal()
    decode_status_changed = Signal(object)
    can_send_changed = Signal(bool)
    backend_changed = Signal(object)
    backend_reported = Signal(object)
    attachment_changed = Signal(int, str, str)
    kv_precision_changed = Signal(str)
    saving_changed = Signal(str)

    def __init__(self, settings: Settings, store: Store | None = None, device_preference: str = "auto",
                 worker=None, server_monitor: ServerMonitor | None = None, parent=None):
        """store: conversations (default: the user data folder's; a damaged file is moved aside
        and said in a notice at start()). worker: a GenerationWorker-shaped QObject already in
        its thread (tests); default: a GenerationWorker in a new QThread, started by start()."""
        super().__init__(parent)
        self.settings = settings  # the open conversation's (its generation and backend are its own)
        self.defaults = settings  # what settings.json holds: a new chat starts from its generation and backend
        self._store_notice: StoreNotice | None = None  # what open_store met, said at start()
        self._settings_unsaved_said = False
        self.not_saving = ""  # why conversations are not being saved now ("": they are); saving_changed
        self._saves_running = 0  # Chat.save calls in progress (one may run inside another's undo)
        if store is None:
            store, self._store_notice = open_store()
        self.store = store
        try:
            self.store.mark_interrupted()  # replies cut off by a crash become "failed", not "streaming"
        except saving.SAVE_ERRORS as exc:  # a full disk (open_store's notice, said at start()): marked at the next open
            log.warning("interrupted replies not marked: %s", exc)
        self.device_preference = device_preference
        self.conversation = Conversation()
        self.conversation_id: int | None = None
        self.cache_key = "new-0"  # the worker's key for this conversation's kept KV cache
        self.summary = SummaryState()
        self.versions: list[tuple[int, int]] = []  # per message of the path: (number, of how many)
        self.pinned_notes = ""  # kept in every prompt of this conversation
        self.kv_precision = DEFAULT_KV_PRECISION  # this conversation's KV cache precision
        self.preset_name = ""  # the preset this conversation's settings came from
        self.report = None  # LoadReport of the loaded model, None while none is
        self.model_path = None  # the path it was opened from (its per-model settings' key)
        self.thread: QThread | None = None
        if worker is None:
            from app.workers.generation_worker import GenerationWorker

            worker = GenerationWorker(device_preference=device_preference)
            self.thread = QThread(self)
            self.thread.setObjectName("generation")
            worker.moveToThread(self.thread)
        self.worker = worker
        self.monitor = MemoryMonitor(worker.probe, parent=self)  # the worker's probe, ≈4 Hz
        self.jobs = BackgroundJobs(threads=2, parent=self)  # reads off the GUI thread: model plans, documents
        self.server_monitor = server_monitor or ServerMonitor(parent=self)  # a server's /metrics, ≈1 Hz
        # the flows, set by app.chat.open_chat (each connects itself to the worker's signals)
        self.turns = self.conversations = self.summaries = self.notes = self.presets = None
        self.models = self.backend = self.memory = self.attachments = self.context = None
        self._closed = False

    def save_defaults(self, change: Callable[[Settings], Settings]) -> None:
        """Apply `change` to the saved defaults and to the open chat's settings, and save the
        defaults to settings.json. The open chat's own generation settings never become the
        defaults by the way (new-user trial: opening an old chat, then attaching a file, saved that
        chat's max new tokens and context over the user's defaults)."""
        self.defaults = change(self.defaults)
        self.settings = change(self.settings)
        try:
            save_settings(self.defaults)
        except OSError as exc:  # a read-only config folder (trial 4: a traceback dialog at every load)
            log.warning("settings not saved: %s", exc)
            if not self._settings_unsaved_said:  # once: every load and file pick would say it again
                self._settings_unsaved_said = True
                self.announce(QCoreApplication.translate("Chat", "Settings cannot be saved ({0}): changes apply "
                                                                 "until Headroom closes.").format(
                    os_error_line(exc)), "error")

    def start(self, reopen: int | None = None) -> None:
        """Start the worker's thread and the memory sampling, apply the backend, list the
        stored conversations, open `reopen` (the one open at the last close) when it still
        exists, then say what went wrong at start (the Store replaced, the presets unreadable):
        after the reopen, which empties the transcript (trial 7: the presets notice was gone
        before anyone could read it)."""
        if self.thread is not None:
            self.thread.start()
        self.monitor.start()
        self.backend.apply_backend()
        self.conversations.refresh_sidebar()
        self.conversations.reopen(reopen)
        self.presets.show_presets()
        self.summaries.show_foldable()
        said = saving.start_notice_text(self._store_notice) if self._store_notice else ""
        if said:  # in the window's language: the store only says what kind of trouble it met
            log.warning("conversation store: %s (%s)", self._store_notice.kind, self._store_notice.error)
            self.announce(said, "error")
        if self.store.read_only:  # said once above; marked for as long as the session lasts
            self.note_saving(said)
        elif (self._store_notice is not None and self._store_notice.kind == StoreNotice.FULL
              and (self.store.waits_for_room or not self.store.commits)):  # not when room came back since
            # marked as a write that failed mid-session: until one succeeds (trial 10: never again)
            self.note_saving(saving.not_saving_tip(self._store_notice.error, self.store.path))

    def save(self, write: Callable[[], object], then: str, undo: Callable[[], object] | None = None,
             quiet: bool = False, kind: str = "error") -> bool:
        """Run `write` (Store writes); returns whether it completed. On SAVE_ERRORS (a full disk, a
        database locked or made read-only: app.chat.saving) `undo` runs, then a notice of `kind`
        says what was not saved and `then`, what became of the action (none when `quiet`: a
        write retried soon that has said so once, or one nobody waits for), and saving_changed
        says conversations are not being saved until a write completes again: one that committed
        (a flow's save that wrote nothing proves nothing; trial 10: "Saving works again." before
        each "Could not save"). A save made within another's write or undo leaves that to the
        outer one."""
        commits = self.store.commits
        self._saves_running += 1
        try:
            write()
        except saving.SAVE_ERRORS as exc:
            log.warning("not saved: %s", exc)
            if undo is not None:
                undo()
            if self._saves_running == 1:
                self.note_saving(saving.not_saving_tip(exc, self.store.path))
            if not quiet:
                self.announce(saving.not_saved_line(exc, self.store.path, then), kind)
            return False
        finally:
            self._saves_running -= 1
        if not self._saves_running and self.store.commits != commits:
            self.note_saving("")
        return True

    def note_saving(self, why: str) -> None:
        """Conversations are not being saved, for the reason `why` ("": a write succeeded: they
        are). A store that cannot be written stays marked all session (`why` "" gives the
        generic reason), whatever its writes in memory do."""
        if self.store.read_only:
            why = self.not_saving or why or QCoreApplication.translate(
                "Saving", "Your conversations cannot be saved to {0}: chats and changes in this session are "
                          "kept only until Headroom closes.").format(self.store.path)
        if why != self.not_saving:
            if self.not_saving and not why:  # after a notice that said what was not saved
                self.announce(QCoreApplication.translate("Saving", "Saving works again."), "status")
            self.not_saving = why
            self.saving_changed.emit(why)

    def announce(self, text: str, kind: str = "info") -> None:
        """Say `text` through the notice funnel (kinds: see the class docstring)."""
        self.notice.emit(text, kind)

    def folded_turns(self) -> int:
        """How many turns of the open conversation the summary folds."""
        return sum(1 for turn in group_turns(self.conversation.messages)
                   if turn.last_position <= self.summary.folded_through)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop everything, completely: a queued message is dropped, a load cancelled, a reply in
        flight stopped (within one token) and kept as stopped, the monitors stopped, both
        threads joined, deleted conversations older than a week purged, the Store closed.
        A second call does nothing."""
        if self._closed:
            return
        self._closed = True
        self.turns.discard_queued()  # a message sent while stopping must not start now
        self.models.cancel_load()
        self.monitor.stop()
        self.server_monitor.shutdown()
        if self.attachments is not None:
            self.attachments.take()  # cancels reads in progress, so the pool's wait is short
        self.jobs.shutdown()
        self.worker.request_stop()
        if self.thread is not None:
            self.thread.quit()
            self.thread.wait()
        # what the worker said before it stopped (a summary just written, a reply's end) is
        # still queued for this thread: take it in while the store is open, not after
        QCoreApplication.sendPostedEvents(None, QEvent.Type.MetaCall)
        self.turns.keep_partial_as_stopped()
        self.conversations.save_unsaved()  # an answer a full disk kept from the Store, if there is room now
        self.save(lambda: self.store.purge_deleted(older_than_s=PURGE_DELETED_AFTER_S), "", quiet=True)
        self.store.close()
