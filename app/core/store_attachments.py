"""Files attached to messages and the excerpts answers were given, in the Store's SQLite file
(issue 18, items 3-4): the schema step that adds them and the reads and writes `Store` makes.

A user message keeps the documents sent with it (their extracted text, so the chat can send them
again when the message is edited or answered again, without the file); an answer keeps the
excerpts (Citations, text included) its prompt held. Both go with the message: deleting it
deletes them, a branch copies them, exports include them. Functions take the Store's connection
inside its transaction; no Qt.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from app.core.attached_document import ExtractedDocument
from app.core.document_prompt import Citation, without_document

# v7: attachments stored with the message they were sent with; each answer's sources.
V7 = [
    """CREATE TABLE attachments (
        id INTEGER PRIMARY KEY,
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        page_starts_json TEXT NOT NULL DEFAULT '[]',
        size_bytes INTEGER NOT NULL DEFAULT 0,
        encoding TEXT)""",
    "CREATE INDEX attachments_by_message ON attachments (message_id)",
    "ALTER TABLE messages ADD COLUMN sources_json TEXT",
]


def save_documents(db: sqlite3.Connection, message_id: int, documents: Iterable[ExtractedDocument]) -> None:
    """Keep `documents` with message `message_id`, in their order."""
    db.executemany(
        "INSERT INTO attachments (message_id, name, kind, text, page_starts_json, size_bytes, encoding)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(message_id, d.name, d.kind, d.text, json.dumps(list(d.page_starts)), d.size_bytes, d.encoding)
         for d in documents])


def documents_of(conn: sqlite3.Connection, message_ids: Sequence[int]) -> dict[int, tuple[ExtractedDocument, ...]]:
    """The documents kept with each of `message_ids` (those with none are absent), in the order
    they were attached."""
    found: dict[int, list[ExtractedDocument]] = {}
    if not message_ids:
        return {}
    for row in conn.execute(
            "SELECT * FROM attachments WHERE message_id IN"
            f" ({','.join('?' * len(message_ids))}) ORDER BY id", list(message_ids)):
        found.setdefault(row["message_id"], []).append(ExtractedDocument(
            row["name"], row["kind"], row["text"], tuple(json.loads(row["page_starts_json"])), row["size_bytes"],
            row["encoding"]))
    return {message_id: tuple(documents) for message_id, documents in found.items()}


def remove_document(db: sqlite3.Connection, message_id: int, index: int) -> str:
    """Delete the `index`-th document (from 0) of message `message_id`; returns its name.
    KeyError when there is no such document."""
    rows = db.execute("SELECT id, name FROM attachments WHERE message_id = ? ORDER BY id", (message_id,)).fetchall()
    if not 0 <= index < len(rows):
        raise KeyError((message_id, index))
    db.execute("DELETE FROM attachments WHERE id = ?", (rows[index][0],))
    return rows[index][1]


def forget_cited_text(db: sqlite3.Connection, message_id: int, name: str) -> int:
    """Drop the words of the excerpts of document `name` from the sources of every answer to
    message `message_id` (all its versions): they keep only where each excerpt was
    (Citation.without_text). Returns how many answers changed. By name: a message's documents
    are told apart by name in the sources, so a second file of the same name loses its
    excerpts' text too (privacy first)."""
    changed = 0
    for answer_id, text in db.execute("SELECT id, sources_json FROM messages WHERE parent_id = ?"
                                      " AND sources_json IS NOT NULL", (message_id,)).fetchall():
        sources = sources_from(text)
        kept = without_document(sources, name)
        if kept != sources:
            db.execute("UPDATE messages SET sources_json = ? WHERE id = ?", (sources_json(kept), answer_id))
            changed += 1
    return changed


def copy_documents(db: sqlite3.Connection, from_message_id: int, to_message_id: int) -> None:
    """Give message `to_message_id` copies of the documents of `from_message_id` (a branch)."""
    db.execute(
        "INSERT INTO attachments (message_id, name, kind, text, page_starts_json, size_bytes, encoding)"
        " SELECT ?, name, kind, text, page_starts_json, size_bytes, encoding FROM attachments"
        " WHERE message_id = ? ORDER BY id", (to_message_id, from_message_id))


def sources_json(sources: Sequence[Citation]) -> str | None:
    """The messages.sources_json value of an answer's excerpts (None when it has none)."""
    return json.dumps([c.to_json() for c in sources], ensure_ascii=False) if sources else None


def sources_from(text: str | None) -> tuple[Citation, ...]:
    """The excerpts in a messages.sources_json value; a damaged value gives none (the
    conversation still opens)."""
    try:
        raw = json.loads(text) if text else []
    except ValueError:
        return ()
    if not isinstance(raw, list):
        return ()
    return tuple(c for c in map(Citation.from_json, raw) if c is not None)
