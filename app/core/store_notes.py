"""Note proposals in the Store's SQLite file: what a summary offered to pin (app.core.note_proposals)
that the user has not decided yet, and what they dismissed, per conversation, so both are there
again after a restart (a trial: an undecided proposal was gone once the app was closed).

A proposal is one row: `dismissed` 0 while it is offered, 1 once the user dismissed it (kept so it
is not offered again in that conversation, as within a session); an accepted one is deleted (it is
in the pinned notes now). The rows go with their conversation (ON DELETE CASCADE: purged with
it, never copied into a branch). Functions take the Store's connection inside its transaction;
no Qt.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

# v9 (with store_attachments.V9_FITS): note proposals kept per conversation.
V9_PROPOSALS = [
    """CREATE TABLE note_proposals (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        text TEXT NOT NULL,
        dismissed INTEGER NOT NULL DEFAULT 0 CHECK (dismissed IN (0, 1)),
        UNIQUE (conversation_id, text))""",
]


def save_proposals(db: sqlite3.Connection, conversation_id: int, offered: Iterable[str],
                   dismissed: Iterable[str]) -> None:
    """Replace the conversation's proposals: `offered` (undecided, in the order shown) and
    `dismissed`. A text in both counts as dismissed."""
    refused = list(dict.fromkeys(dismissed))
    db.execute("DELETE FROM note_proposals WHERE conversation_id = ?", (conversation_id,))
    db.executemany("INSERT INTO note_proposals (conversation_id, text, dismissed) VALUES (?, ?, 0)",
                   [(conversation_id, text) for text in dict.fromkeys(offered) if text not in refused])
    db.executemany("INSERT INTO note_proposals (conversation_id, text, dismissed) VALUES (?, ?, 1)",
                   [(conversation_id, text) for text in refused])


def proposals_of(conn: sqlite3.Connection, conversation_id: int) -> tuple[list[str], set[str]]:
    """(offered, dismissed) of the conversation: the undecided proposals in the order they were
    saved, and the dismissed texts. Both empty for a conversation with none (or unknown)."""
    offered, dismissed = [], set()
    for text, refused in conn.execute("SELECT text, dismissed FROM note_proposals WHERE conversation_id = ?"
                                      " ORDER BY id", (conversation_id,)):
        (dismissed.add if refused else offered.append)(text)
    return offered, dismissed
