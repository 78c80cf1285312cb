"""Store writes that fail for a reason outside Headroom — the disk is full, the database was made
read-only or is locked by another program, its folder went away — said as one plain notice, never
as the traceback dialog (new-user trial: "database or disk is full" opened the crash dialog, which
said the conversations were saved, and the message being sent was lost).

Every Store write of the chat's flows goes through `Chat.save(write, then, undo)`: on
sqlite3.OperationalError or OSError the write is abandoned, `undo` puts back what the flow had
already changed, and the notice says what could not be saved and `then`, what became of the
user's action (one of the lines below). A flow writes before it changes what the window shows, or
undoes that change, so a write that fails leaves the chat as it was. Until a later write
succeeds, the Chat says that conversations are not being saved (Chat.saving_changed).

`start_notice_text` words what the store had to do at start (app.core.store.StoreNotice: a
damaged file moved aside, a file that cannot be written, one from a newer Headroom): the core
hands up its kind and facts, and the words are said here, in the window's language (trial: the
Korean window showed the store's own English sentence, and the "Not saving" mark's tooltip too).
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from app.chat.error_text import os_error_text
from app.core.store import StoreNotice, disk_full  # the store's test: open_store tells a full disk apart too

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls

SAVE_ERRORS = (sqlite3.OperationalError, OSError)
"""What a Store write raises for a reason outside Headroom (a full disk, a lock, a read-only or
vanished file); sqlite3.IntegrityError and KeyError are the program's own and are not caught."""
# sqlite3's own words ("attempt to write a readonly database", "database is locked") are English
# whatever the window's language: the primary result codes a user meets, said plainly
# (https://sqlite.org/rescode.html; the extended codes keep the primary one in their low byte)
_SQLITE_REASONS = {
    5: QT_TRANSLATE_NOOP("Saving", "another program is using the database"),  # SQLITE_BUSY
    6: QT_TRANSLATE_NOOP("Saving", "another program is using the database"),  # SQLITE_LOCKED
    8: QT_TRANSLATE_NOOP("Saving", "the database file is read-only"),  # SQLITE_READONLY
    14: QT_TRANSLATE_NOOP("Saving", "the database file could not be opened"),  # SQLITE_CANTOPEN
}
_SQLITE_ERRNOS = {3: errno.EACCES, 10: errno.EIO}  # SQLITE_PERM, SQLITE_IOERR: said as the OS's


def not_saved_line(exc: BaseException, path: Path, then: str) -> str:
    """The notice for a write that failed with `exc` on the database at `path`, ending with
    `then` (what became of the action: one of the lines below)."""
    if disk_full(exc):
        return translate("Saving", "Could not save: the disk is full ({0}). Free some space; {1}").format(path, then)
    return translate("Saving", "Could not save: {0} ({1}); {2}").format(_reason(exc), path, then)


def not_saving_tip(exc: BaseException, path: Path) -> str:
    """Why conversations are not being saved, for the window's lasting mark (its tooltip)."""
    if disk_full(exc):
        return translate("Saving", "Conversations are not being saved: the disk is full ({0}). Free some "
                                   "space.").format(path)
    return translate("Saving", "Conversations are not being saved: {0} ({1}).").format(_reason(exc), path)


def _reason(exc: BaseException) -> str:
    """Why a write or an open failed, one clause in the window's language: an OSError in the
    plain words exports use, a sqlite3 error by its result code; sqlite3's own words otherwise."""
    if isinstance(exc, OSError):
        return os_error_text(exc)
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code in _SQLITE_ERRNOS:
        return os_error_text(OSError(_SQLITE_ERRNOS[code], str(exc)))
    return translate("Saving", _SQLITE_REASONS[code]) if code in _SQLITE_REASONS else str(exc)


def start_notice_text(notice: StoreNotice) -> str:
    """What the store had to do at start (`notice`, from app.core.store.open_store), one notice
    in the window's language; the window's "Not saving" mark shows it too while nothing is saved."""
    if notice.kind == StoreNotice.DAMAGED:
        if notice.conversations_found:  # a damaged page, not a file that is no database: what read was copied
            return translate("Saving", "The conversation database is damaged. It was kept as {0}, and a new one "
                                       "was started with the conversations that could still be read: {1} of {2}."
                             ).format(notice.kept, notice.conversations_copied, notice.conversations_found)
        return translate("Saving", "The conversation database could not be read: it is damaged or is not a "
                                   "database. It was kept as {0} and a new one was started.").format(notice.kept)
    if notice.kind == StoreNotice.FULL:  # it passes: the file stays the store (new-user trial 10)
        if notice.shown:
            return translate("Saving", "Your conversations cannot be saved now: the disk is full ({0}). Free some "
                                       "space: saving resumes by itself, and until then a message you send goes "
                                       "back to the message box.").format(notice.path)
        return translate("Saving", "Your conversations cannot be read or saved now: the disk is full ({0}). Free "
                                   "some space: saving resumes by itself and they show again, and until then a "
                                   "message you send goes back to the message box.").format(notice.path)
    if notice.kind == StoreNotice.NEWER:
        why = translate("Saving", "Your conversations were saved by a newer version of Headroom (database v{0}; "
                                  "this version reads up to v{1}).").format(notice.found, notice.supported)
        if notice.shown:
            return why + " " + translate("Saving", "They are shown, but new chats, messages and changes in this "
                                                   "session are kept only until Headroom closes. Update Headroom "
                                                   "to continue them.")
        return why + " " + translate("Saving", "This version cannot read them; the file was left untouched and "
                                               "chats in this session are not saved. Update Headroom to see them.")
    why = translate("Saving", "Your conversations cannot be saved ({0}: {1}).").format(
        notice.path, _reason(notice.error) if notice.error is not None else "")
    if notice.shown:
        return why + " " + translate("Saving", "They are shown, but new chats, messages and changes in this session "
                                               "are kept only until Headroom closes. Make the file writable, or "
                                               "close what holds it, and restart Headroom.")
    return why + " " + translate("Saving", "Chats in this session are kept only until Headroom closes.")


def not_sent() -> str:
    return translate("Saving", "your message was not sent and is back in the message box.")


def unchanged() -> str:
    return translate("Saving", "nothing was changed.")


def not_kept() -> str:
    return translate("Saving", "the change applies now but is not kept.")


def summary_not_kept() -> str:
    return translate("Saving", "the summary is used now but is not kept.")


def answer_kept_shown() -> str:
    return translate("Saving", "the answer stays shown and is saved with your next message, or when you open "
                               "another chat or quit, once there is room.")


def answer_lost(title: str) -> str:
    """What became of an answer that a chat no longer shown could not keep (`title`: that chat's)."""
    if not title:
        return translate("Saving", "the answer was not saved.")
    return translate("Saving", "the answer written in “{0}” was not saved.").format(title)
