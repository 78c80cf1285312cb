"""Files attached to the next message: read off the GUI thread, taken by Send, and what became
of each one in the turn.

A file is read by app.engine.documents.extract.extract_file on the chat's BackgroundJobs (with
progress; removing it cancels the read). A file that cannot be attached (too large, binary, an
encrypted or image-only PDF, text in an encoding that cannot be told, a .pdf that is not a PDF) is
said in one error notice and nothing else changes; a text file read from an older encoding
(cp949) is attached with a line that says so. Send takes the documents read so far (TurnFlow.send); the
worker fits them into the message, whole or retrieved (app.engine.documents.turn), and how each
went in is said in the transcript. Attachments belong to the message they were sent with: the
Store keeps them (their extracted text) with it, the transcript shows them on it again when the
chat is reopened, Edit and Regenerate send them again, and `remove_sent` forgets one;
`undo_remove` puts the last one removed back exactly (store, transcript, sources, exports) while
the offer lasts: the window offers Undo for a few seconds, and opening another chat ends the
offer. The removal itself is done at once, so a quit or a crash meanwhile keeps the file
removed, as the user asked. Files attached but not sent stay with their chat, as its draft does:
opening another chat sets them aside, and they come back with their chat.
"""

from __future__ import annotations

import itertools
import logging
import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot

from app.chat import saving
from app.chat.document_refusal import legacy_note, refusal_reason
from app.core.conversation import Message, Role
from app.core.document_prompt import without_document
from app.core.store_attachments import FitNote
from app.engine.documents.extract import MAX_TEXT_CHARS, extract_file
from app.engine.documents.fit import WHOLE
from app.engine.documents.source import TOO_LARGE, DocumentError, ExtractedDocument

if TYPE_CHECKING:
    from app.chat.chat import Chat


log = logging.getLogger(__name__)
translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


class Attachments(QObject):
    """The translation context "Attachments" for counted words ("1 character", "1 token"): lupdate
    reads Attachments.tr(text, "", n) as a plural message, never translate(context, text, None, n).
    Never instantiated; no signals."""


@dataclass
class _Removal:
    """A sent document removed, with what `undo_remove` needs to put it back."""
    conversation_id: int | None
    message: Message  # the very message it was removed from (an edit since replaces it)
    document_index: int
    document: ExtractedDocument
    answer: Message | None  # the answer shown under it, and its sources before
    answer_sources: tuple
    stored: object | None  # the Store's RemovedDocument (None for a message never stored)


@dataclass
class _Attachment:
    name: str
    cancel: threading.Event = field(default_factory=threading.Event)
    document: ExtractedDocument | None = None  # None while it is read


def read_document(path: Path, progress=None, cancel: threading.Event | None = None):
    """The job: the file's ExtractedDocument, or the DocumentError that says why not (returned,
    not raised, so its one-line message reaches the user as written)."""
    try:
        return extract_file(path, progress, cancel)
    except DocumentError as error:
        return error


class AttachmentFlow(QObject):
    """The attachments of the message being written, keyed by their read's ticket. The Chat's
    attachment_changed and notice are emitted here. Signals: removal_undoable(str name) — a sent
    file was removed and `undo_remove` can bring it back; removal_final() — it no longer can
    (another chat opened, or it was undone); ready_changed() — the documents read for the next
    message changed (one read, or one removed): the next prompt's count changes with them."""

    removal_undoable = Signal(str)
    removal_final = Signal()
    ready_changed = Signal()

    def __init__(self, chat: Chat):
        super().__init__(chat)
        self._chat = chat
        self._attached: dict[int, _Attachment] = {}  # the open chat's (chat.cache_key)
        self._key = chat.cache_key
        self._set_aside: dict[str, dict[int, _Attachment]] = {}  # other chats', by their cache_key
        chat.conversation_cleared.connect(self._follow_chat)
        chat.conversation_loaded.connect(self._follow_chat)
        chat.jobs.job_finished.connect(self._on_job_finished)
        chat.jobs.job_failed.connect(self._on_job_failed)
        chat.jobs.job_progressed.connect(self._on_job_progressed)
        chat.worker.documents_fitted.connect(self._on_documents_fitted)
        chat.conversation_cleared.connect(self.end_undo)
        chat.conversation_loaded.connect(self.end_undo)
        self._removal: _Removal | None = None
        self._put_back_tickets = itertools.count(-1, -1)  # below the jobs' tickets (1, 2, …): never the same

    @property
    def reading(self) -> list[str]:
        """Names of the files still being read."""
        return [a.name for a in self._attached.values() if a.document is None]

    @property
    def ready(self) -> tuple[ExtractedDocument, ...]:
        """The documents read so far for the next message (what Send would take), in order."""
        return tuple(a.document for a in self._attached.values() if a.document is not None)

    @Slot(list)
    def add(self, paths: list) -> None:
        """Start reading each file at `paths`; each shows as "reading…" until it is ready."""
        for path in map(Path, paths):
            attachment = _Attachment(path.name)
            ticket = self._chat.jobs.submit(read_document, path, progress=True, cancel=attachment.cancel)
            self._attached[ticket] = attachment
            self._chat.attachment_changed.emit(ticket, attachment.name, translate("Attachments", "reading…"))

    @Slot(int)
    def remove(self, ticket: int) -> None:
        """Forget an attachment (a read in progress is cancelled)."""
        attachment = self._attached.pop(ticket, None)
        if attachment is not None:
            attachment.cancel.set()
            self._chat.attachment_changed.emit(ticket, attachment.name, "")
            if attachment.document is not None:
                self.ready_changed.emit()

    def put_back(self, documents: tuple) -> None:
        """Attach again `documents` (ExtractedDocuments) already read: those of a message taken
        back from the chat (a refused one withdrawn), so that Send sends them with its text again."""
        for document in documents:
            ticket = next(self._put_back_tickets)
            self._attached[ticket] = _Attachment(document.name, document=document)
            self._chat.attachment_changed.emit(ticket, document.name, _size_text(document))
        if documents:
            self.ready_changed.emit()

    def attach_text(self, text: str, documents: tuple = ()) -> tuple[str, str]:
        """Attach `text` (a message too long to send) as a text file, after `documents` (the files
        it carried, attached again); returns (the file's name, "" or why it was not attached: text
        over MAX_TEXT_CHARS, in words; `documents` are attached again either way). The name is
        "pasted text.txt" in the window's language, numbered when one is attached already."""
        base = translate("Attachments", "pasted text")
        taken = {a.name for a in self._attached.values()} | {d.name for d in documents}
        name = next(n for n in (f"{base} {i}.txt" if i > 1 else f"{base}.txt" for i in itertools.count(1))
                    if n not in taken)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if len(text) > MAX_TEXT_CHARS:
            self.put_back(documents)
            return name, refusal_reason(DocumentError(TOO_LARGE, name, "too much text", str(len(text)),
                                                      chars=len(text), limit_chars=MAX_TEXT_CHARS))
        self.put_back((*documents, ExtractedDocument(name, "text", text, (), len(text.encode("utf-8")), "utf-8")))
        return name, ""

    def take(self) -> tuple[ExtractedDocument, ...]:
        """The documents read, for the message being sent; the attachments are cleared."""
        documents = tuple(a.document for a in self._attached.values() if a.document is not None)
        for ticket in list(self._attached):
            self.remove(ticket)
        return documents

    @Slot(int, int)
    def remove_sent(self, index: int, document_index: int) -> None:
        """Forget the `document_index`-th document of the message at `index` of the path shown,
        its stored text included: it is no longer sent when that message is edited or answered
        again, and the answers to it keep their sources' places but not its words (the user
        removes a file for privacy: Store.remove_document; the answer text stays)."""
        chat = self._chat
        message = chat.conversation.messages[index]
        documents = list(message.documents)
        if not 0 <= document_index < len(documents):
            return
        removed = []
        if message.id is not None and not chat.save(
                lambda: removed.append(chat.store.remove_document(message.id, document_index)), saving.unchanged()):
            return  # its text stays stored, so it stays shown too
        stored = removed[0] if removed else None
        gone = documents.pop(document_index)
        answer = self._answer_to(index)
        self._removal = _Removal(chat.conversation_id, message, document_index, gone, answer,
                                 answer.sources if answer is not None else (), stored)
        message.documents = tuple(documents)
        chat.message_documents.emit(index, message.documents)
        if answer is not None:
            sources = without_document(answer.sources, gone.name)
            if sources != answer.sources:
                answer.sources = sources
                chat.message_sources.emit(index + 1, sources)
        self.removal_undoable.emit(gone.name)

    @Slot()
    def undo_remove(self) -> None:
        """Put the document removed last back where it was, in the Store and on screen, with the
        words of its excerpts under the answer; nothing when the offer has ended or the message
        is no longer in the chat shown (an edit replaced it)."""
        chat, removal = self._chat, self._removal
        self.end_undo()
        if removal is None or removal.conversation_id != chat.conversation_id:
            return
        messages = chat.conversation.messages
        index = next((i for i, m in enumerate(messages) if m is removal.message), None)
        if index is None:
            return
        if removal.stored is not None:
            try:
                if not chat.save(lambda: chat.store.restore_document(removal.stored), saving.unchanged()):
                    return
            except KeyError:  # the message was deleted meanwhile: nothing to put it back on
                return
        documents = list(removal.message.documents)
        documents.insert(min(removal.document_index, len(documents)), removal.document)
        removal.message.documents = tuple(documents)
        chat.message_documents.emit(index, removal.message.documents)
        if removal.answer is not None and self._answer_to(index) is removal.answer:
            removal.answer.sources = removal.answer_sources
            chat.message_sources.emit(index + 1, removal.answer_sources)
        chat.announce(translate("Attachments", "{0} is back in this chat").format(removal.document.name), "status")

    @Slot()
    def end_undo(self) -> None:
        """The last removal can no longer be undone (its words leave memory too)."""
        if self._removal is not None:
            self._removal = None
            self.removal_final.emit()

    def _answer_to(self, index: int) -> Message | None:
        """The answer shown right after the message at `index`, if any."""
        messages = self._chat.conversation.messages
        if index + 1 < len(messages) and messages[index + 1].role is Role.ASSISTANT:
            return messages[index + 1]
        return None

    @Slot()
    def _follow_chat(self) -> None:
        """The chat shown changed: its own files not yet sent come back, the chat left's are set
        aside with it (new-user trial: a file attached in one chat went out with the next chat's
        message)."""
        key = self._chat.cache_key
        if key == self._key:
            return
        leaving = self._attached
        if leaving:
            self._set_aside[self._key] = leaving
            for ticket, attachment in leaving.items():
                self._chat.attachment_changed.emit(ticket, attachment.name, "")
        self._key, self._attached = key, self._set_aside.pop(key, {})
        for ticket, attachment in self._attached.items():
            status = (translate("Attachments", "reading…") if attachment.document is None
                      else _size_text(attachment.document))
            self._chat.attachment_changed.emit(ticket, attachment.name, status)
        if leaving or self._attached:  # the next message's documents changed
            self.ready_changed.emit()

    def _find(self, ticket: int) -> tuple[dict[int, _Attachment] | None, _Attachment | None]:
        """The attachments (the open chat's, or a chat's set aside) holding `ticket`, and it."""
        for attached in (self._attached, *self._set_aside.values()):
            if ticket in attached:
                return attached, attached[ticket]
        return None, None

    # ----- events ------------------------------------------------------------------------------
    @Slot(int, float)
    def _on_job_progressed(self, ticket: int, fraction: float) -> None:
        attachment = self._attached.get(ticket)
        if attachment is not None and attachment.document is None:
            self._chat.attachment_changed.emit(ticket, attachment.name,
                                               translate("Attachments", "reading {0}%").format(round(100 * fraction)))

    @Slot(int, object)
    def _on_job_finished(self, ticket: int, result) -> None:
        attached, attachment = self._find(ticket)
        if attachment is None:  # removed meanwhile, or another job of the chat's
            return
        shown = attached is self._attached  # else read for a chat set aside: its chip shows with it
        if isinstance(result, DocumentError):
            log.info("could not attach %s", result)  # the reader's own words stay in the log
            attached.pop(ticket)
            if shown:
                self._chat.attachment_changed.emit(ticket, attachment.name, "")
            self._chat.announce(translate("Attachments", "Could not attach {0}: {1}").format(
                result.name, refusal_reason(result)), "error")
            return
        attachment.document = result
        if not shown:
            return
        self._chat.attachment_changed.emit(ticket, attachment.name, _size_text(result))
        note = legacy_note(result)
        if note:  # read from an older encoding (old Notepad's cp949): say so, where it stays
            self._chat.announce(note, "info")
        self.ready_changed.emit()

    @Slot(int, str)
    def _on_job_failed(self, ticket: int, reason: str) -> None:
        attached, attachment = self._find(ticket)
        if attachment is not None:
            attached.pop(ticket)
            if attached is self._attached:
                self._chat.attachment_changed.emit(ticket, attachment.name, "")
            self._chat.announce(translate("Attachments", "Could not attach {0}: {1}").format(attachment.name, reason),
                                "error")

    @Slot(int, object)
    def _on_documents_fitted(self, _request_id: int, fits) -> None:
        """Say how each document went in, on the question they were sent with (the turn's: the
        last user message of the path shown), and keep it with the document in the Store, so
        the note is there when the chat is opened again (a trial: gone after a restart)."""
        chat = self._chat
        messages = chat.conversation.messages
        index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role is Role.USER), -1)
        question = messages[index] if index >= 0 else None
        for fit in fits:
            note = fit_note(fit)
            if question is not None and question.id is not None:  # not kept: said now all the same
                chat.save(partial(chat.store.note_document_fit, question.id, fit.name, note), "", quiet=True)
            chat.document_noted.emit(index, fit.name, fit_line(fit.name, note))


def _size_text(document: ExtractedDocument) -> str:
    """The chip's status for a document read: "1,204 characters, 3 pages"; "1,204 characters,
    cp949" for text read from an older encoding."""
    pages = translate("Attachments", ", {0} pages").format(document.pages) if document.pages > 1 else ""
    if legacy_note(document):
        pages += f", {document.encoding}"
    return Attachments.tr("{0} characters{1}", "", len(document.text)).format(f"{len(document.text):,}", pages)


def fit_note(fit) -> FitNote:
    """The FitNote of an engine DocumentFit (app.engine.documents.fit): what the line says."""
    return FitNote(fit.mode, fit.tokens, fit.whole_tokens, len(fit.chunks), fit.total_chunks)


def fit_line(name: str, note: FitNote) -> str:
    """The transcript's line on how the document `name` went into its turn: "report.pdf: whole
    file, 812 tokens", or retrieved excerpts, or no room for one."""
    if note.mode == WHOLE:
        return Attachments.tr("{0}: whole file, {1} tokens", "", note.tokens).format(name, f"{note.tokens:,}")
    if note.excerpts:  # counted in the excerpts' tokens: the whole file is always many
        return Attachments.tr("{0}: too large for this turn ({1} tokens): retrieving {2} of {3} excerpts, "
                              "{4} tokens", "", note.tokens).format(name, f"{note.whole_tokens:,}", note.excerpts,
                                                                    f"{note.total_excerpts:,}", f"{note.tokens:,}")
    return translate("Attachments", "{0}: too large for this turn ({1} tokens) and no room left for "
                     "an excerpt").format(name, f"{note.whole_tokens:,}")
