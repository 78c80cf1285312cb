"""The open conversation and the saved ones: which conversation the chat holds, its rows in the
Store, and the sidebar's commands (new, open, rename, delete with undo, search, export).

A conversation gets its row when its first message is committed; each message is committed as
it completes. Opening a conversation adopts its own generation and backend settings.

Versions and branches (issue 17): the Store keeps every message as a tree (app.core.message_tree);
the chat holds the active path (chat.conversation.messages) and each message's version numbers
(chat.versions). Edit and Regenerate start a new version beside the old one (`cut_to`, then the
new message); `switch_version` shows another version with the newest replies under it;
`branch_to_new_chat` copies the path up to a message into a conversation of its own.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Slot

from app.chat import saving
from app.chat.attachments import fit_line
from app.chat.error_text import os_error_text
from app.chat.refusal_text import refusal_line_stored
from app.chat.stop_text import STOP_DETAILS
from app.core.backend_settings import BackendSettings
from app.core.conversation import Conversation, Role
from app.core.history import SummaryState
from app.core.json_files import write_atomically
from app.core.kv_precision import DEFAULT_KV_PRECISION, KV_8, KV_16, KV_AUTO, valid_kv_precision
from app.core.settings import GenerationSettings

if TYPE_CHECKING:
    from app.chat.chat import Chat


translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls
TITLE_CHARS = 60
MAX_TITLE_CHARS = 200  # a title the user types: longer ones are cut (trial 4 stored 5,000 characters)


# control characters (NUL, ESC …) and the bidi embeddings, overrides and isolates: in a title they
# showed as boxes or turned the rest of it, and its "…", right to left (trial 7). Zero-width joiners
# and marks stay: emoji sequences and some scripts need them.
_TITLE_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# letters and symbols that draw nothing: the Hangul fillers and the blank braille pattern
_BLANK_GLYPHS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# what makes a line of a message a title: letters, digits (and other numbers), emoji and other symbols
_WORD_CATEGORIES = frozenset(("Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "So"))
# a code fence's opening or closing line (```python, ~~~): markup, not the message's words
_FENCE = re.compile(r"^(`{3,}|~{3,})")


def clean_title(title: str) -> str:
    """`title` on one line: each run of whitespace (line breaks, tabs, Unicode line and paragraph
    separators …) one space, none at either end, and without the characters that a one-line
    label cannot show safely (_TITLE_UNSAFE). A renamed title kept its line breaks, and exports
    and file names took them (new-user trial 10). A title with nothing visible (only zero-width
    spaces, joiners, lone marks …) is "": the list calls it untitled, not an invisible row
    (new-user trial 11)."""
    # whitespace first: \r, \v, \f and \x1c-\x1f are unsafe too, but between two words they part them
    title = " ".join(_TITLE_UNSAFE.sub("", " ".join(title.split())).split())
    return title if any(_visible(char) for char in title) else ""


def auto_title(first_message: str) -> str:
    """A new conversation's title: the first line of its first message with words (a letter, a
    digit or a symbol such as an emoji: not a code fence, a rule like "---" or lone punctuation;
    new-user trial 11 titled a chat "```"), cleaned (clean_title), at most TITLE_CHARS; "" when
    no line has words. A longer line is cut after its last whole word that fits, and "…" says so
    (new-user trial: "… a linked list with in" as the title and the export's file name)."""
    lines = (clean_title(line) for line in first_message.splitlines())
    line = next((line for line in lines if _has_words(line) and not _FENCE.match(line)), "")
    if len(line) > TITLE_CHARS:
        cut = line[:TITLE_CHARS - 1]
        space = cut.rfind(" ")
        if line[len(cut)] != " " and space >= TITLE_CHARS // 2:  # a word cut in two: it goes
            cut = cut[:space]
        line = cut.rstrip() + "…"
    return clean_title(line)


def _visible(char: str) -> bool:
    """Whether `char` draws something of its own: a letter, number, punctuation mark or symbol
    (Unicode general categories L, N, P, S), or a private-use character (an icon font's); not a
    blank filler (_BLANK_GLYPHS). Spaces, format characters (U+200B, joiners) and lone marks
    draw nothing."""
    category = unicodedata.category(char)
    return (category[0] in "LNPS" or category == "Co") and char not in _BLANK_GLYPHS


def _has_words(line: str) -> bool:
    """Whether `line` holds a letter, a digit or an other-symbol (emoji; Unicode categories L, N,
    So) that draws something."""
    return any(unicodedata.category(c) in _WORD_CATEGORIES for c in line if c not in _BLANK_GLYPHS)


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
        self._deleted_keys: dict[int, str] = {}  # deleted while Undo is offered: id -> cache key
        # messages of the chat shown whose write failed (a full disk): written, in their order,
        # before the next message, or when the chat is left (save_unsaved)
        self._unsaved: list = []

    def refresh_sidebar(self) -> None:
        """List the stored conversations matching the search text, the open one current."""
        chat = self._chat
        chat.conversations_listed.emit(chat.store.list_conversations(self._search), chat.conversation_id)

    def _reset_conversation(self) -> None:
        chat = self._chat
        self._leave_unsaved()
        chat.turns.discard_queued()  # a message sent while stopping was meant for the chat left
        chat.notes.forget_proposals()
        chat.conversation, chat.summary, chat.conversation_id = Conversation(), SummaryState(), None
        chat.cache_key = f"new-{next(self._new_keys)}"
        chat.versions, chat.pinned_notes = [], ""
        chat.kv_precision = DEFAULT_KV_PRECISION
        # a new chat starts from the saved defaults, not from the chat left (an opened one then
        # adopts its own); the backend follows in apply_backend
        chat.settings = replace(chat.settings, generation=chat.defaults.generation, backend=chat.defaults.backend)
        chat.preset_name = ""
        chat.conversation_cleared.emit()
        chat.reply_unmeasured.emit()  # the chat left's last answer is not this one's
        chat.kv_precision_changed.emit(chat.kv_precision)
        chat.notes.show_notes()
        chat.summaries.show_summarizing()  # another chat's summary in progress is not shown here

    def _activate_cache(self) -> None:
        """Tell the worker which conversation is open, so its kept KV cache (if any) is back on
        the device before the next turn and the previous chat's is parked."""
        chat = self._chat
        chat.worker.conversation_activated.emit(chat.cache_key, chat.settings.generation.kept_chat_cache_mib)

    @Slot()
    def new_conversation(self) -> None:
        """Open an empty chat (a reply being written goes on into its own; a line here says so
        while it lasts: TurnFlow.show_elsewhere)."""
        chat = self._chat
        backend = chat.settings.backend
        self._reset_conversation()
        if chat.settings.backend != backend:  # the chat left had its own (a remote server, say)
            chat.backend.apply_backend()
        self._activate_cache()
        chat.presets.show_presets()
        chat.models.say_new_tokens_limit()
        self.refresh_sidebar()
        chat.turns.show_elsewhere()

    @Slot(int)
    def open_conversation(self, conversation_id: int) -> None:
        """Open a stored conversation with its own settings and summary. A reply being written
        goes on into its own conversation; opening that one shows it still streaming."""
        chat = self._chat
        if chat.turns.shown and chat.conversation_id == conversation_id:
            return  # already shown, its reply streaming
        self._leave_unsaved()  # before it is read: it may be this one again
        stored = chat.store.load_conversation(conversation_id)
        backend = chat.settings.backend
        self._reset_conversation()
        chat.conversation_id = conversation_id
        chat.cache_key = self._cache_keys.setdefault(conversation_id, f"stored-{conversation_id}")
        if stored.settings:  # this conversation's own generation settings
            known = {f.name for f in fields(GenerationSettings)}
            generation = GenerationSettings(**{k: v for k, v in stored.settings.items() if k in known})
            # no "backend" key: written before remote backends existed, so answered locally
            chat.settings = replace(chat.settings, generation=generation.validated(),
                                    backend=BackendSettings.from_json(stored.settings.get("backend")))
        if chat.settings.backend != backend:
            chat.backend.apply_backend()
        preset = stored.settings.get("preset")  # the preset its settings came from, if any
        chat.preset_name = preset if isinstance(preset, str) else ""
        self._activate_cache()
        home = chat.turns.home_of(conversation_id)
        if home is not None:  # the reply in flight is written here: its messages, not the store's yet
            stored.conversation = home
        self._adopt(stored)
        if home is not None:
            self.show_versions()
            chat.reply_started.emit(True)  # the transcript streams into that reply again
            chat.turns.show_waiting()  # still queued behind a summary: said in it again
        chat.presets.show_presets()
        chat.models.say_new_tokens_limit()  # its own settings, on this model
        self.refresh_sidebar()
        chat.turns.show_elsewhere()  # a reply being written in another chat: said here while it lasts

    def _adopt(self, stored) -> None:
        """Show a StoredConversation's active path, its summary and version numbers."""
        chat = self._chat
        chat.conversation, chat.summary, chat.versions = stored.conversation, stored.summary, stored.versions
        chat.pinned_notes = stored.pinned_notes
        chat.kv_precision = stored.kv_precision
        chat.kv_precision_changed.emit(chat.kv_precision)
        chat.conversation_loaded.emit(chat.conversation.messages)
        self._show_measured()
        self._note_document_fits(stored)
        self._say_refusal(stored)
        chat.summaries.show_summary()
        chat.summaries.show_summarizing()  # its summary still being written shows again
        chat.notes.show_notes()
        chat.notes.restore_proposals()
        chat.versions_changed.emit(list(chat.versions))

    def _show_measured(self) -> None:
        """The speed of the last answer of the path shown that has stats (trial 8: the status bar
        kept the chat left's), or none."""
        chat = self._chat
        stats = next((m.stats for m in reversed(chat.conversation.messages) if m.stats is not None), None)
        if stats is None:
            chat.reply_unmeasured.emit()
        else:  # as it was said when that answer ended: its last part's tokens
            chat.reply_measured.emit(stats.ttft_s, stats.tokens_per_s, stats.continued_tokens or stats.new_tokens)

    def _say_refusal(self, stored) -> None:
        """A chat that ends with a message whose turn was refused shows why again, under it, as
        when it was refused (kept in the Store: new-user trial, gone after a restart); it goes
        when that message is withdrawn or its turn runs."""
        messages = self._chat.conversation.messages
        last = messages[-1] if messages else None
        refusal = stored.refusals.get(last.id) if last is not None and last.role is Role.USER else None
        if refusal is not None:
            self._chat.announce(refusal_line_stored(refusal), "refused")

    def _note_document_fits(self, stored) -> None:
        """Say again on each question of the path shown how its documents went into its turn
        (kept with them in the Store: a removed file has none)."""
        chat = self._chat
        for index, message in enumerate(chat.conversation.messages):
            for name, note in stored.document_fits.get(message.id, ()) if message.id is not None else ():
                chat.document_noted.emit(index, name, fit_line(name, note))

    @Slot(int, int)
    def switch_version(self, index: int, step: int) -> None:
        """Show the version `step` places from the message at `index` (−1: the one before), with
        the newest replies under it; refused (with a notice) while a reply is in flight."""
        chat = self._chat
        if chat.turns.active:
            chat.announce(translate("Conversations", "Stop the current reply before switching versions."))
            return
        message = chat.conversation.messages[index]
        if chat.conversation_id is None or message.id is None:
            return
        tree = chat.store.message_tree(chat.conversation_id)
        siblings = tree.siblings(message.id)
        target = siblings[max(0, min(len(siblings) - 1, siblings.index(message.id) + step))]
        if target == message.id:
            return
        if not chat.save(lambda: chat.store.set_active_message(chat.conversation_id, tree.shown_leaf(target)),
                         saving.unchanged()):
            return
        self._adopt(chat.store.load_conversation(chat.conversation_id))

    @Slot(int)
    def branch_to_new_chat(self, index: int) -> None:
        """Open a new conversation holding this one's path up to the message at `index` (with
        the summary and settings that go with it); this one stays as it is."""
        chat = self._chat
        if chat.turns.active:
            chat.announce(translate("Conversations", "Stop the current reply before branching."))
            return
        message = chat.conversation.messages[index]
        if chat.conversation_id is None or message.id is None:
            return
        title = translate("Conversations", "{0} (branch)").format(self._branch_title())
        copies = []
        if chat.save(lambda: copies.append(chat.store.copy_branch(chat.conversation_id, message.id, title)),
                     saving.unchanged()):
            self.open_conversation(copies[0])

    def _branch_title(self) -> str:
        """What a branch of the open conversation is called: its own title when the user renamed
        it, else the words of the branch's first message (not those of version 1, which the
        automatic title was made from)."""
        chat = self._chat
        title = chat.store.load_conversation(chat.conversation_id).info.title
        tree = chat.store.message_tree(chat.conversation_id)
        first = chat.store.message_text(tree.children(None)[0])
        return auto_title(chat.conversation.messages[0].content) if title == auto_title(first) else title

    def reopen(self, conversation_id: int | None) -> bool:
        """Open the conversation that was open at the last close, when it still exists (it may
        have been deleted, or the database replaced); returns whether it was opened."""
        if conversation_id not in {info.id for info in self._chat.store.list_conversations()}:
            return False
        self.open_conversation(conversation_id)
        return True

    @Slot(str)
    def set_kv_precision(self, precision: str) -> None:
        """Keep the open chat's KV cache in ``precision`` ("16-bit", "8-bit" or "auto") from its
        next turn on, stored with the conversation. The cache it holds in the other precision is
        dropped at that turn, which then reads the whole history again once (said in a notice)."""
        chat = self._chat
        precision = valid_kv_precision(precision)
        if precision == chat.kv_precision:
            return
        chat.kv_precision = precision
        if chat.conversation_id is not None:
            chat.save(lambda: chat.store.set_kv_precision(chat.conversation_id, precision), saving.not_kept())
        chat.kv_precision_changed.emit(precision)
        names = {KV_16: translate("Conversations", "16-bit"), KV_8: translate("Conversations", "8-bit"),
                 KV_AUTO: translate("Conversations", "auto (8-bit only when 16-bit does not fit)")}
        text = translate("Conversations", "KV cache for this chat: {0}.").format(names[precision])
        if chat.conversation.messages:
            text += " " + translate("Conversations", "Its cached history is dropped when the precision changes: "
                                    "the next answer reads the whole history again once.")
        chat.announce(text, "status")

    @Slot(int, str)
    def rename(self, conversation_id: int, title: str) -> None:
        """Give the conversation the title `title`, cut to MAX_TITLE_CHARS (not saved: the list
        shows the old one again, and a notice says why)."""
        title = clean_title(clean_title(title)[:MAX_TITLE_CHARS])  # the cut: no space at the end, nothing left visible
        self._chat.save(lambda: self._chat.store.rename_conversation(conversation_id, title), saving.unchanged())
        self.refresh_sidebar()

    @Slot(int)
    def delete(self, conversation_id: int) -> None:
        """Delete (restorable for a week); the open conversation closes into an empty chat. Not
        saved (a full disk): nothing changes, a reply being written into it goes on."""
        chat = self._chat
        title = next((i.title for i in chat.store.list_conversations() if i.id == conversation_id), "")
        if not chat.save(lambda: chat.store.delete_conversation(conversation_id), saving.unchanged()):
            return
        chat.turns.stop_for_delete(conversation_id)  # kept with it, as stopped, for Undo
        key = self._cache_keys.pop(conversation_id, None)
        if key is not None:  # its kept KV cache stays while Undo is offered (end_undo)
            self._deleted_keys[conversation_id] = key
        if conversation_id == chat.conversation_id:
            self._reset_conversation()
            chat.turns.show_elsewhere()
        self.refresh_sidebar()
        chat.conversation_deleted.emit(conversation_id, title)

    @Slot(int)
    def restore(self, conversation_id: int) -> None:
        """Undo a delete (its kept KV cache, if the worker still has it, is its own again)."""
        if not self._chat.save(lambda: self._chat.store.restore_conversation(conversation_id), saving.unchanged()):
            return
        key = self._deleted_keys.pop(conversation_id, None)
        if key is not None:
            self._cache_keys[conversation_id] = key
        self.refresh_sidebar()

    @Slot(int)
    def end_undo(self, conversation_id: int) -> None:
        """Undo of the delete of `conversation_id` is no longer offered: the worker drops its kept
        KV cache. Its rows stay in the Store, deleted, until purged a week later (Chat.close)."""
        key = self._deleted_keys.pop(conversation_id, None)
        if key is not None:
            self._chat.worker.conversation_forgotten.emit(key)

    @Slot(str)
    def search(self, text: str) -> None:
        """List only the conversations matching `text` from now on."""
        self._search = text
        self.refresh_sidebar()

    def export_conversation(self, conversation_id: int, fmt: str, path: Path) -> bool:
        """Write the conversation as Markdown (fmt "markdown") or JSON to `path`, whole or not at
        all (a file already there stays as it was when the write fails); a failure to write is
        said in an error notice (returns False)."""
        store = self._chat.store
        # a stopped answer says why, in the words its header says ("stopped: max new tokens reached")
        text = (store.export_markdown(conversation_id, STOP_DETAILS) if fmt == "markdown"
                else store.export_json(conversation_id))
        try:
            write_atomically(Path(path), text, make_folder=False)
        except OSError as exc:
            self._chat.announce(translate("Conversations", "Could not export to {0}: {1}").format(
                path, os_error_text(exc)), "error")
            return False
        self._chat.announce(translate("Conversations", "Exported to {0}").format(Path(path).name), "status")
        return True

    def persist(self, message, conversation: Conversation | None = None, conversation_id: int | None = None) -> None:
        """Commit a message as it completes (a new row, the reply to the message before it on the
        active path, or the final state of an old one). `conversation` / `conversation_id`: where
        it belongs when that is not the conversation shown (a reply that ended after a switch).
        Raises SAVE_ERRORS (app.chat.saving) when the Store cannot be written (a full disk): a
        message of the chat shown is then written with the next one that is, before it, so that
        each keeps its place in the tree (or when the chat is left: `_leave_unsaved`)."""
        chat = self._chat
        if conversation is not None and conversation is not chat.conversation:
            self._persist_elsewhere(message, conversation, conversation_id)
            return
        if not any(m is message for m in self._unsaved):
            self._unsaved.append(message)
        self._write_unsaved()

    def _pending(self) -> list:
        """The messages of self._unsaved still on the path shown, in its order (the others are
        forgotten: withdrawn, cut by Regenerate or Edit)."""
        self._unsaved = [m for m in self._chat.conversation.messages if any(m is u for u in self._unsaved)]
        return self._unsaved

    def _write_unsaved(self) -> None:
        """Write the pending messages of the chat shown, in their order; raises SAVE_ERRORS at the
        first that fails, which stays pending with those after it."""
        pending = self._pending()
        while pending:
            self._write(pending[0])
            pending.pop(0)
        self.show_versions()

    def _write(self, message) -> None:
        """Commit one message of the chat shown (see persist), its conversation's row first when
        it has none yet."""
        chat = self._chat
        if chat.conversation_id is None:
            title = auto_title(chat.conversation.messages[0].content)
            chat.conversation_id = chat.store.create_conversation(title, chat.presets.conversation_settings())
            self._cache_keys[chat.conversation_id] = chat.cache_key
            self.refresh_sidebar()
            if chat.kv_precision != DEFAULT_KV_PRECISION:  # chosen before the first message
                chat.store.set_kv_precision(chat.conversation_id, chat.kv_precision)
            chat.notes.save()  # notes written before the first message
        if message.id is None:
            # by identity: Message equality ignores ids, and a chat can hold two equal messages
            # ("ok" sent twice, a repeated answer): list.index would pick the first one's place
            index = next(i for i, m in enumerate(chat.conversation.messages) if m is message)
            parent = chat.conversation.messages[index - 1].id if index else None
            chat.store.append_message(chat.conversation_id, message, parent_id=parent)
            # the list follows at once (newest first): reordered now, not under the pointer at the
            # next click (new-user trial: a message went to the wrong chat)
            self.refresh_sidebar()
        else:
            chat.store.update_message(message.id, content=message.content, status=message.status,
                                      stats=message.stats, failure=message.failure)

    def save_unsaved(self) -> None:
        """Write what a full disk kept from the Store in the chat shown, if there is room now
        (at close: quietly, nobody reads the notice)."""
        if self._pending():
            self._chat.save(self._write_unsaved, "", quiet=True)

    def _leave_unsaved(self) -> None:
        """Before the chat shown is left (another opened, a new one, it deleted): what a full disk
        kept from the Store is written now if there is room; else it is lost, and the status bar
        says so (the transcript goes with the chat). An answer still being written is left to its
        end, which stores it in its own chat."""
        chat = self._chat
        writing = chat.conversation.messages[-1] if chat.turns.shown else None
        if [m for m in self._pending() if m is not writing]:
            if writing is not None:
                self._unsaved.remove(writing)
            title = (clean_title(chat.store.load_conversation(chat.conversation_id).info.title)
                     if chat.conversation_id is not None else auto_title(chat.conversation.messages[0].content))
            chat.save(self._write_unsaved, saving.answer_lost(title), kind="warning")
        self._unsaved = []

    def show_stored(self) -> None:
        """Show the chat shown again as the Store has it (an Edit whose new version could not be
        stored: the version it replaced)."""
        chat = self._chat
        if chat.conversation_id is not None:
            self._adopt(chat.store.load_conversation(chat.conversation_id))

    def take_back_unsaved(self, message) -> None:
        """Take out of the chat shown a message that could not be written (with what follows it):
        a chat made for it as its first message goes too, when the Store lets it."""
        chat = self._chat
        index = next((i for i, m in enumerate(chat.conversation.messages) if m is message), None)
        if index is None:
            return
        self.drop_from(index)
        if chat.conversation_id is not None and not chat.conversation.messages:
            self._forget_if_empty()
        self.show_versions()

    def _forget_if_empty(self) -> None:
        """The chat shown's row goes when it holds no message (its first one withdrawn, or not
        written); a Store that cannot be written keeps it in the list, empty."""
        chat = self._chat
        emptied = []
        chat.save(lambda: emptied.append(chat.store.delete_if_empty(chat.conversation_id)), "", quiet=True)
        if emptied and emptied[0]:
            self._cache_keys.pop(chat.conversation_id, None)
            chat.conversation_id = None
            self.refresh_sidebar()

    def _persist_elsewhere(self, message, conversation: Conversation, conversation_id: int) -> None:
        """Commit a message of a conversation that is not shown (see persist)."""
        store = self._chat.store
        if message.id is None:
            index = next(i for i, m in enumerate(conversation.messages) if m is message)
            parent = conversation.messages[index - 1].id if index else None
            store.append_message(conversation_id, message, parent_id=parent)
        else:
            store.update_message(message.id, content=message.content, status=message.status, stats=message.stats,
                                 failure=message.failure)
        self.refresh_sidebar()

    def show_versions(self) -> None:
        """Recount the versions of each message on the active path (a message not saved yet, the
        reply being written, counts as the newest version) and emit versions_changed."""
        chat = self._chat
        tree = chat.store.message_tree(chat.conversation_id) if chat.conversation_id is not None else None
        versions = []
        for index, message in enumerate(chat.conversation.messages):
            if tree is not None and message.id is not None:
                versions += tree.versions([message.id])
            else:  # the reply being written: one more version after its parent's other replies
                parent = chat.conversation.messages[index - 1].id if index else None
                known = tree is not None and (index == 0 or parent is not None)
                count = len(tree.children(parent)) + 1 if known else 1
                versions.append((count, count))
        chat.versions = versions
        chat.versions_changed.emit(list(versions))

    def cut_to(self, index: int) -> None:
        """Leave the messages from `index` on (Edit, Regenerate): they stay in the Store as an
        older version; the path shown, the Store's active message and the summary go back to
        the message before `index`. Raises SAVE_ERRORS, with nothing changed, when the Store
        cannot be written."""
        chat = self._chat
        path = [m.id for m in chat.conversation.messages[:index] if m.id is not None]
        if chat.conversation_id is not None and path:
            chat.store.set_active_message(chat.conversation_id, path[-1])
        self.drop_from(index)

    def drop_from(self, index: int) -> None:
        """The messages from `index` on leave the chat shown (the Store's active path is the
        caller's), with the summary when it folded any of them."""
        chat = self._chat
        del chat.conversation.messages[index:]
        chat.messages_truncated.emit(index)
        if chat.summary.folded_through >= index:
            path = [m.id for m in chat.conversation.messages if m.id is not None]
            chat.summary = chat.store.summary_for(chat.conversation_id, path) if chat.conversation_id \
                is not None else SummaryState()
            chat.summaries.show_summary()

    def withdraw_last(self) -> tuple[str, tuple]:
        """Take back the last (user) message that got no answer; returns its text and the
        documents attached to it (("", ()) when nothing was taken back). A message that was only
        just written is deleted; one that has older answers (a refused Regenerate) stays, and the
        newest of those answers is shown again. Raises SAVE_ERRORS, with nothing changed, when
        the Store cannot be written."""
        chat = self._chat
        message = chat.conversation.messages[-1]
        if chat.conversation_id is not None and message.id is not None:
            if chat.store.message_tree(chat.conversation_id).children(message.id):
                chat.store.set_active_message(chat.conversation_id, message.id)
                self._adopt(chat.store.load_conversation(chat.conversation_id))
                return "", ()
            chat.store.delete_message(message.id)  # the Store's active path moves up to its parent
            self._forget_if_empty()  # its first message: no chat is left behind
            self.drop_from(len(chat.conversation.messages) - 1)
        else:
            self.cut_to(len(chat.conversation.messages) - 1)
        self.show_versions()
        return message.content, tuple(message.documents)
