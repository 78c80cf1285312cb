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
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from PySide6.QtCore import QCoreApplication

from app.chat.error_text import os_error_text

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls

SAVE_ERRORS = (sqlite3.OperationalError, OSError)
"""What a Store write raises for a reason outside Headroom (a full disk, a lock, a read-only or
vanished file); sqlite3.IntegrityError and KeyError are the program's own and are not caught."""
_SQLITE_FULL = 13  # https://sqlite.org/rescode.html#full


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk (or the user's quota) is full: SQLITE_FULL, ENOSPC or EDQUOT."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL or "disk is full" in str(exc)


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
    return os_error_text(exc) if isinstance(exc, OSError) else str(exc)  # sqlite3's own words otherwise


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
