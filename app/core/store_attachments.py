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
from dataclasses import asdict, dataclass

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


# v9: how each document went into its message's turn, kept with it (FitNote as JSON; NULL: not said).
V9_FITS = ["ALTER TABLE attachments ADD COLUMN fit_json TEXT"]


@dataclass(frozen=True)
class FitNote:
    """How a document went into its question's turn, as the transcript says it ("report.pdf:
    whole file, 812 tokens"): `mode` "whole" or "retrieved" (app.engine.documents.fit), the
    prompt `tokens` it took, `whole_tokens` of all of it, and the `excerpts` retrieved of
    `total_excerpts`. The numbers, not the sentence, so it is said in the language shown."""

    mode: str
    tokens: int
    whole_tokens: int
    excerpts: int = 0
    total_excerpts: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | None) -> FitNote | None:
        """None for NULL or a damaged value (the conversation still opens, without the note)."""
        try:
            raw = json.loads(text) if text else None
            return cls(str(raw["mode"]), *(int(raw[k]) for k in ("tokens", "whole_tokens", "excerpts",
                                                                   "total_excerpts")))
        except (ValueError, TypeError, KeyError):
            return None


def note_fit(db: sqlite3.Connection, message_id: int, name: str, note: FitNote) -> int:
    """Keep `note` with the documents called `name` of message `message_id` (a new turn of the
    same question replaces it); returns how many documents took it (0: none of that name)."""
    return db.execute("UPDATE attachments SET fit_json = ? WHERE message_id = ? AND name = ?",
                      (note.to_json(), message_id, name)).rowcount


def fits_of(conn: sqlite3.Connection, message_ids: Sequence[int]) -> dict[int, tuple[tuple[str, FitNote], ...]]:
    """(document name, FitNote) of each document of `message_ids` that has one, in the order they
    were attached; messages without any are absent."""
    found: dict[int, list[tuple[str, FitNote]]] = {}
    if not message_ids:
        return {}
    for row in conn.execute(
            "SELECT message_id, name, fit_json FROM attachments WHERE fit_json IS NOT NULL AND message_id IN"
            f" ({','.join('?' * len(message_ids))}) ORDER BY id", list(message_ids)):
        note = FitNote.from_json(row["fit_json"])
        if note is not None:
            found.setdefault(row["message_id"], []).append((row["name"], note))
    return {message_id: tuple(notes) for message_id, notes in found.items()}


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


@dataclass(frozen=True)
class RemovedDocument:
    """A document taken off its message, with what putting it back exactly takes (Undo):
    its attachments row, id included (its place among the message's documents), and the
    sources_json each answer to the message had before its excerpts' words were dropped."""

    message_id: int
    name: str
    row: tuple  # (id, message_id, name, kind, text, page_starts_json, size_bytes, encoding, fit_json)
    answer_sources: tuple[tuple[int, str | None], ...]  # (answer id, sources_json before)


_ROW = "id, message_id, name, kind, text, page_starts_json, size_bytes, encoding, fit_json"


def remove_document(db: sqlite3.Connection, message_id: int, index: int) -> RemovedDocument:
    """Delete the `index`-th document (from 0) of message `message_id` and the words of its
    excerpts in the answers' sources (forget_cited_text); returns what restore_document needs.
    KeyError when there is no such document."""
    rows = db.execute(f"SELECT {_ROW} FROM attachments WHERE message_id = ? ORDER BY id", (message_id,)).fetchall()
    if not 0 <= index < len(rows):
        raise KeyError((message_id, index))
    row = tuple(rows[index])
    answers = tuple((r[0], r[1]) for r in db.execute(
        "SELECT id, sources_json FROM messages WHERE parent_id = ? AND sources_json IS NOT NULL", (message_id,)))
    db.execute("DELETE FROM attachments WHERE id = ?", (row[0],))
    forget_cited_text(db, message_id, row[2])
    return RemovedDocument(message_id, row[2], row, answers)


def restore_document(db: sqlite3.Connection, removed: RemovedDocument) -> None:
    """Put back what remove_document took: the row under its old id (so it keeps its place
    among the message's documents; a newer attachment that took that id meanwhile was the last
    one anyway, and the row then goes last under a new id) and the answers' sources as they
    were. KeyError when the message is gone."""
    if db.execute("SELECT 1 FROM messages WHERE id = ?", (removed.message_id,)).fetchone() is None:
        raise KeyError(removed.message_id)
    taken = db.execute("SELECT 1 FROM attachments WHERE id = ?", (removed.row[0],)).fetchone() is not None
    row = (None, *removed.row[1:]) if taken else removed.row
    db.execute(f"INSERT INTO attachments ({_ROW}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
    db.executemany("UPDATE messages SET sources_json = ? WHERE id = ?",
                   [(text, answer_id) for answer_id, text in removed.answer_sources])


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
        "INSERT INTO attachments (message_id, name, kind, text, page_starts_json, size_bytes, encoding, fit_json)"
        " SELECT ?, name, kind, text, page_starts_json, size_bytes, encoding, fit_json FROM attachments"
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
