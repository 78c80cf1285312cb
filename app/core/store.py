"""SQLite persistence for conversations: stdlib sqlite3, one database file, WAL journal (SQLite's
rollback journal where the file system cannot hold the WAL index: `connect`).

Threads: a `Store` owns one connection opened with `check_same_thread=True`, so it works only in
the thread that made it (the GUI thread); any other thread opens its own `Store` on the same file
(WAL lets readers run beside the single writer; busy_timeout waits up to 5 s for the write lock).

Durability: the connection is in autocommit mode and each public write is one transaction
(BEGIN IMMEDIATE … COMMIT) with synchronous=FULL, so a message is on disk when `append_message`
returns: it survives a crash or SIGKILL of the app and, with FULL, a power cut
(https://sqlite.org/pragma.html#pragma_synchronous). Streamed tokens are not committed one by one;
the worker commits the answer when it completes, is stopped or fails (`update_message`).

Privacy: the database and its -wal/-shm files are owner-only (0o600). The file is created by us
with mode 0o600 before SQLite opens it (SQLite gives -wal/-shm the database file's mode); `umask`
is not used because it is process-wide and would race other threads creating files. Deletion is
soft (`delete_conversation` / `restore_conversation` for undo); `purge_deleted` removes rows for
good, and secure_delete=ON makes SQLite overwrite the freed pages.

Schema: `PRAGMA user_version` counts the entries of `MIGRATIONS` already applied. To change the
schema append a new list of statements (never edit an old one); each runs in one transaction.
Before migrating a file that holds an older schema, a consistent copy of it (SQLite online backup,
WAL content included) is written beside it as ``<name>.v<old>-<UTC time>.bak``, owner-only.

A file written by a newer Headroom (user_version > SCHEMA_VERSION) is never migrated nor written:
`Store(path)` raises NewerSchemaError; `open_store` instead opens it *read-only* — a copy of the
file in memory (`Store(path, read_only=True)`), so the history shows and this session's chats work,
but nothing reaches the file — and returns a StoreNotice saying so. The copy takes every write
(old chats can be continued, renamed, deleted): the notice's words say that none of it is kept.
A StoreNotice is a kind and its facts, no sentence: this layer has no translation, and the chat
says it in the window's language (app.chat.saving.start_notice_text).

A full disk at start is not a file that cannot be written: it passes (new-user trial 10: started
on a full disk, nothing was saved all session, even after space was freed). `open_store` keeps the
file: one it could open is written as usual (each write fails while the disk is full, as it would
mid-session); one it could not even open (SQLite needs room for the WAL index) becomes a
`Store.until_room` — read from a copy in memory, while every write first opens the file and goes
there, or raises what stopped it. No write ever lands in the copy, so nothing differs between the
two when the file opens.
"""

import errno
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from app.core import store_attachments, store_notes, store_refusals, store_search
from app.core.backend_settings import without_credentials
from app.core.conversation import Conversation, Message, MessageStatus, ReplyStats, Role
from app.core.export import conversation_json, conversation_markdown
from app.core.history import SummaryState
from app.core.kv_precision import DEFAULT_KV_PRECISION, KV_PRECISIONS, valid_kv_precision
from app.core.message_tree import MessageTree
from app.core.paths import data_dir

log = logging.getLogger(__name__)

DB_FILE_NAME = "headroom.sqlite3"
LAST = -1
"""`parent_id` / `through_message_id` default: the last message of the active path (row ids are
never negative)."""
_PRIVATE_FILE = 0o600

_V1 = [
    """CREATE TABLE conversations (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        settings_json TEXT NOT NULL DEFAULT '{}')""",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
        content TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('complete', 'stopped', 'failed', 'streaming')),
        created_at REAL NOT NULL,
        UNIQUE (conversation_id, position))""",
    """CREATE TABLE summaries (
        conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
        content TEXT NOT NULL,
        folded_through_position INTEGER NOT NULL,
        tokens INTEGER NOT NULL)""",
]
# v2: soft delete (undo) and a sorted conversation list.
_V2 = [
    "ALTER TABLE conversations ADD COLUMN deleted_at REAL",
    "CREATE INDEX conversations_by_update ON conversations (updated_at)",
]
# v3: versions and branches (issue 17). Messages form a tree: parent_id (NULL opens the conversation),
# `position` keeps counting in creation order; conversations remember the active message (the
# path shown runs through it); a summary belongs to the message it folds through, so it serves
# every branch that passes there. Old files become one straight branch and lose nothing.
_V3 = [
    "ALTER TABLE messages ADD COLUMN parent_id INTEGER REFERENCES messages(id) ON DELETE CASCADE",
    """UPDATE messages SET parent_id = (SELECT p.id FROM messages p
        WHERE p.conversation_id = messages.conversation_id AND p.position < messages.position
        ORDER BY p.position DESC LIMIT 1)""",
    "CREATE INDEX messages_by_parent ON messages (parent_id)",
    "ALTER TABLE conversations ADD COLUMN active_message_id INTEGER",
    """UPDATE conversations SET active_message_id = (SELECT m.id FROM messages m
        WHERE m.conversation_id = conversations.id ORDER BY m.position DESC LIMIT 1)""",
    """CREATE TABLE summaries_v3 (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        through_message_id INTEGER REFERENCES messages(id) ON DELETE CASCADE,
        content TEXT NOT NULL,
        tokens INTEGER NOT NULL)""",
    """INSERT INTO summaries_v3 (conversation_id, through_message_id, content, tokens)
        SELECT s.conversation_id, (SELECT m.id FROM messages m
            WHERE m.conversation_id = s.conversation_id AND m.position <= s.folded_through_position
            ORDER BY m.position DESC LIMIT 1), s.content, s.tokens FROM summaries s""",
    "DROP TABLE summaries",
    "ALTER TABLE summaries_v3 RENAME TO summaries",
    "CREATE INDEX summaries_by_conversation ON summaries (conversation_id)",
]
# v4: pinned notes, kept in every prompt of the conversation (issue 17, item 5).
_V4 = ["ALTER TABLE conversations ADD COLUMN pinned_notes TEXT NOT NULL DEFAULT ''"]
# v5: how each answer was made (ReplyStats as JSON; NULL for user messages and older answers).
_V5 = ["ALTER TABLE messages ADD COLUMN stats_json TEXT"]
# v6: each message remembers which of its replies was shown last, so switching back to a version
# brings back the branch the user was reading under it (NULL: the newest reply, as before).
_V6 = ["ALTER TABLE messages ADD COLUMN shown_child_id INTEGER REFERENCES messages(id) ON DELETE SET NULL"]
# v8: the conversation's KV cache precision, "16-bit", "8-bit" or "auto" (issue 16, app.core.kv_precision).
_V8 = ["ALTER TABLE conversations ADD COLUMN kv_precision TEXT NOT NULL DEFAULT '16-bit'"]
# v9: what the user saw in a chat is there after a restart: the note proposals a summary offered
# and the user has not decided (app.core.store_notes), and how each attached document went into
# its turn (app.core.store_attachments.FitNote).
_V9 = store_notes.V9_PROPOSALS + store_attachments.V9_FITS
# v10: why a user message's turn was refused, so the chat shows it again when opened (app.core.store_refusals).
_V10 = store_refusals.V10_REFUSALS
# v11: why an answer failed (the worker's one-line English reason; NULL: it did not, or was cut off by a
# stop of Headroom), so a chat opened again says it as it did (trial 15: after a restart, "Headroom
# stopped, or the model failed") and exports name it.
_V11 = ["ALTER TABLE messages ADD COLUMN failure TEXT"]
MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5, _V6, store_attachments.V7, _V8, _V9, _V10, _V11]
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(RuntimeError):
    """The database cannot be used (a newer schema)."""


class NewerSchemaError(StoreError):
    """The file's schema (`found`) is newer than this Headroom's (`supported`)."""

    def __init__(self, found: int, supported: int) -> None:
        super().__init__(f"database schema v{found} is newer than this Headroom (v{supported})")
        self.found, self.supported = found, supported


@dataclass(frozen=True)
class StoreNotice:
    """What `open_store` did instead of opening the file as it is, for the user: a kind and its
    facts; the words are the chat's (app.chat.saving.start_notice_text), in the window's language.

    kind: DAMAGED — the file was not a usable database (`error`, a sqlite3.DatabaseError): it was
    renamed to `kept` (a file name beside `path`) and a new database started (saved as usual), with
    `conversations_copied` of the `conversations_found` the damaged file still listed: those that read whole;
    UNWRITABLE — it cannot be written (`error`: the OSError or sqlite3.OperationalError: read-only,
    locked by another program); NEWER — a newer Headroom wrote it (schema v`found`, this version
    reads up to v`supported`). For UNWRITABLE and NEWER nothing is saved this session; `shown`:
    the old conversations are shown from a copy in memory (False: not even that copy could be
    read, the store is an empty session-only one).
    FULL — the disk is full (`error`: see `disk_full`): the store is the file still, and saving
    resumes by itself at the first write that fits; `shown` False: the old conversations cannot
    be read until then either (they show once the file opens)."""

    DAMAGED = "damaged"
    UNWRITABLE = "unwritable"
    NEWER = "newer"
    FULL = "full"

    kind: str
    path: Path
    error: Exception | None = None
    shown: bool = True
    kept: str = ""
    found: int = 0
    supported: int = 0
    conversations_found: int = 0
    conversations_copied: int = 0


@dataclass(frozen=True)
class ConversationInfo:
    """A conversation-list row. Times are Unix seconds; `deleted_at` is None unless deleted;
    `message_count`: the messages of the branch shown (other versions are not counted)."""

    id: int
    title: str
    created_at: float
    updated_at: float
    message_count: int
    deleted_at: float | None = None


@dataclass
class StoredConversation:
    info: ConversationInfo
    conversation: Conversation
    summary: SummaryState = field(default_factory=SummaryState)
    settings: dict[str, Any] = field(default_factory=dict)
    versions: list[tuple[int, int]] = field(default_factory=list)
    """Per message of the active path: (its version number from 1, how many versions)."""
    pinned_notes: str = ""
    kv_precision: str = DEFAULT_KV_PRECISION
    document_fits: dict[int, tuple[tuple[str, store_attachments.FitNote], ...]] = field(default_factory=dict)
    """Per message id of the active path with some: (document name, how it went into the turn)."""
    refusals: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Per message id of the active path whose turn was refused: the refusal's facts (app.core.store_refusals)."""


def default_db_path() -> Path:
    return data_dir() / DB_FILE_NAME


_SQLITE_FULL = 13  # https://sqlite.org/rescode.html#full
# the unix VFS could not grow the WAL index (-shm), "may indicate that the underlying filesystem
# volume is out of space" (https://sqlite.org/rescode.html#ioerr_shmsize): measured on a full
# tmpfs, an existing database fails to open with it, not with SQLITE_FULL
_SQLITE_IOERR_SHMSIZE = 4874


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk (or the user's quota) is full: SQLITE_FULL, SQLITE_IOERR_SHMSIZE,
    ENOSPC or EDQUOT."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (_SQLITE_FULL, _SQLITE_IOERR_SHMSIZE) or "disk is full" in str(exc)


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Apply MIGRATIONS[user_version:target], one transaction each; returns the new version.
    Raises StoreError when the file is newer than `target` (written by a newer Headroom)."""
    version = schema_version(conn)
    if version > target:
        raise NewerSchemaError(version, target)
    for number in range(version + 1, target + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[number - 1]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return target


def schema_version(conn: sqlite3.Connection) -> int:
    """The file's `PRAGMA user_version`: how many MIGRATIONS it has had (0 = new file)."""
    return conn.execute("PRAGMA user_version").fetchone()[0]


def backup_before_migration(conn: sqlite3.Connection, path: Path, version: int) -> Path:
    """Copy the database behind `conn` to ``<path>.v<version>-<UTC time>.bak`` (owner-only) with
    SQLite's online backup API (a consistent snapshot, WAL content included); returns its path.
    Raises OSError / sqlite3.Error when the copy cannot be written (then nothing is migrated)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{path.name}.v{version}-{stamp}.bak")
    os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, _PRIVATE_FILE))
    try:
        copy = sqlite3.connect(target)
        try:
            conn.backup(copy)
        finally:
            copy.close()
    except BaseException:
        # a cut-off copy is no backup; on a full disk each write tries again (Store.until_room)
        target.unlink(missing_ok=True)
        raise
    return target


def _read_only_copy(path: Path) -> sqlite3.Connection:
    """An in-memory copy of the database at `path`, which is opened read-only (``mode=ro``)
    and never written. Without a -wal file (the other version closed cleanly) it is also opened
    ``immutable``, so SQLite creates no -wal/-shm beside it; with one, the WAL's pages are read
    too (SQLite then needs a -shm). Raises sqlite3.Error when the file cannot be read.
    Source: https://sqlite.org/uri.html#recognized_query_parameters"""
    wal = path.with_name(path.name + "-wal")
    flags = "mode=ro" if wal.exists() and wal.stat().st_size > 0 else "mode=ro&immutable=1"
    source = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True)
    memory = _memory_connection()
    try:
        source.backup(memory)
    finally:
        source.close()
    return memory


def _copy_of(path: Path) -> sqlite3.Connection:
    """`_read_only_copy(path)`, migrated in memory when its schema is not newer than this one's."""
    conn = _read_only_copy(path)
    try:
        if schema_version(conn) <= SCHEMA_VERSION:
            migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


_IDS_PER_QUERY = 900  # under SQLite's oldest limit on a statement's parameters (999)


def _memory_connection() -> sqlite3.Connection:
    memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=True)
    memory.row_factory, memory.text_factory = sqlite3.Row, _text
    memory.execute("PRAGMA foreign_keys = ON")
    store_search.register(memory)
    return memory


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating owner-only if needed) `path` in WAL mode, migrations not applied. Where SQLite
    cannot turn WAL on (a file system without the shared memory or locks its index needs: some network
    and FUSE mounts; SQLite then answers with the mode it kept) the file keeps SQLite's rollback journal:
    the same durability for this one writer, readers in other threads wait for its writes (busy_timeout)
    instead of reading beside them. Before, such a folder stopped the app at start."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.close(os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, _PRIVATE_FILE))
    os.chmod(path, _PRIVATE_FILE)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=True)
    conn.row_factory, conn.text_factory = sqlite3.Row, _text
    try:  # on a full disk this fails and is tried again at each write (Store.until_room): no handle left open
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            if mode not in ("delete", "truncate", "persist"):  # a journal that keeps a crash's writes undone
                mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
            log.warning("%s: SQLite could not use a WAL journal here; it keeps its %s journal", path, mode)
        for pragma in ("synchronous = FULL", "foreign_keys = ON", "busy_timeout = 5000",
                       "secure_delete = ON"):
            conn.execute(f"PRAGMA {pragma}")
    except BaseException:
        conn.close()
        raise
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.chmod(side, _PRIVATE_FILE)
    store_search.register(conn)
    return conn


class Store:
    """Conversations, messages and summaries in one SQLite file (see the module docstring).

    Ids are SQLite row ids. Methods taking an id raise KeyError when it does not exist.
    """

    def __init__(self, path: Path | None = None, read_only: bool = False) -> None:
        """Open `path` (default: the user data folder's file), migrating it after a backup
        (`backup_path`, None when nothing was migrated). read_only=True: work on an in-memory
        copy and never write the file (any schema; an older one is migrated in memory only).
        Raises NewerSchemaError for a newer schema unless read_only, StoreError without WAL,
        sqlite3.DatabaseError for a file that is not a database."""
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = read_only
        self.backup_path: Path | None = None
        self._waits_for_room = False  # Store.until_room: reads from a copy, writes open the file first
        self.commits = 0  # write transactions committed: a caller tells a write that reached the file
        self._conn = _copy_of(self.path) if read_only else self._open_file()

    def _open_file(self) -> sqlite3.Connection:
        """The file's connection, migrated after a backup (`backup_path`). Raises as __init__."""
        conn = connect(self.path)
        backup = None
        try:
            version = schema_version(conn)
            if 0 < version < SCHEMA_VERSION:
                backup = backup_before_migration(conn, self.path, version)
            migrate(conn)
        except BaseException as exc:
            conn.close()
            if backup is not None and disk_full(exc):  # retried at the next write, with a new backup (review:
                backup.unlink(missing_ok=True)  # one whole copy more per failed send); other failures keep it
            raise
        self.backup_path = backup or self.backup_path
        return conn

    @classmethod
    def _unopened(cls, path: Path, read_only: bool, waits_for_room: bool) -> Self:
        """A store of `path` with no connection yet (session_only, until_room give it theirs)."""
        store = cls.__new__(cls)
        store.path, store.read_only, store.backup_path = Path(path), read_only, None
        store._waits_for_room, store.commits = waits_for_room, 0
        return store

    @classmethod
    def until_room(cls, path: Path) -> tuple[Self, bool]:
        """The store of `path`, which could not be opened for a full disk: it reads from a copy in
        memory (empty when the file cannot be read now either) and every write first opens the
        file and writes there, raising what stopped it (the disk still full) with nothing changed.
        Returns (store, shown): shown False when an existing file could not be read now.
        Raises NewerSchemaError when the file is from a newer Headroom, sqlite3.DatabaseError
        when it is not a database."""
        store = cls._unopened(path, read_only=False, waits_for_room=True)
        try:
            store._conn = _copy_of(store.path)
        except sqlite3.OperationalError as exc:
            missing = not store.path.exists() or store.path.stat().st_size == 0
            if not (missing or disk_full(exc)):
                raise
            store._conn = _memory_connection()
            migrate(store._conn)
            return store, missing
        found = schema_version(store._conn)
        if found > SCHEMA_VERSION:
            store._conn.close()
            raise NewerSchemaError(found, SCHEMA_VERSION)
        return store, True

    @classmethod
    def session_only(cls, path: Path) -> Self:
        """An empty store with this version's schema, kept in memory: nothing is ever written
        (`path` is only remembered, for messages)."""
        store = cls._unopened(path, read_only=True, waits_for_room=False)
        store._conn = _memory_connection()
        migrate(store._conn)
        return store

    @property
    def waits_for_room(self) -> bool:
        """Whether the file is still to be opened (Store.until_room): no write has fitted yet."""
        return self._waits_for_room

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. A full disk surfaces at COMMIT (WAL pages are written then):
        that failure rolls back too, and the error raised is the one that stopped the write.
        A Store.until_room opens its file first: its copy is dropped, the file is written."""
        if self._waits_for_room:
            conn = self._open_file()  # raises while the disk is full: nothing changed
            self._conn.close()
            self._conn, self._waits_for_room = conn, False
            self.mark_interrupted()  # what start could not mark (Chat.__init__): cut-off replies become "failed"
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
            self._conn.execute("COMMIT")
            self.commits += 1
        except BaseException:
            # SQLITE_FULL and SQLITE_IOERR may have rolled back already; left open, every later
            # write failed with "cannot start a transaction within a transaction"
            if self._conn.in_transaction:
                with suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
            raise

    def _touch(self, db: sqlite3.Connection, conversation_id: int, sql: str, *args: Any) -> None:
        """Run `UPDATE conversations SET <sql>` for one row; KeyError when it is missing."""
        cur = db.execute(f"UPDATE conversations SET {sql} WHERE id = ?", (*args, conversation_id))
        if cur.rowcount == 0:
            raise KeyError(conversation_id)

    def create_conversation(self, title: str = "", settings: dict[str, Any] | None = None) -> int:
        now = time.time()
        with self._tx() as db:
            return db.execute(
                "INSERT INTO conversations (title, created_at, updated_at, settings_json)"
                " VALUES (?, ?, ?, ?)", (title, now, now, json.dumps(settings or {})),
            ).lastrowid

    def append_message(self, conversation_id: int, message: Message, parent_id: int | None = LAST) -> int:
        """Commit `message` (with its documents and sources) as a reply to `parent_id` (None: a new
        first message, a version of the opening one; LAST: the end of the active path) and make it
        the active message; sets and returns `message.id`, only once committed (a failed write,
        sqlite3.OperationalError for a full disk, leaves it as it was). KeyError for an unknown
        conversation or a parent not in it. A user's message makes the conversation the newest; an
        answer does not (see list_conversations)."""
        with self._tx() as db:
            self._touch(db, conversation_id, *_used_now(message.role))
            if parent_id == LAST:
                path = self._tree(conversation_id).active_path(self._active(conversation_id))
                parent_id = path[-1] if path else None
            elif parent_id is not None and self._conversation_of(parent_id) != conversation_id:
                raise KeyError(parent_id)
            new_id = db.execute(
                "INSERT INTO messages (conversation_id, position, role, content, status, created_at, parent_id,"
                " stats_json, sources_json, failure) SELECT ?, COALESCE(MAX(position), -1) + 1, ?, ?, ?, ?, ?, ?, ?,"
                " ? FROM messages WHERE conversation_id = ?",
                (conversation_id, Role(message.role).value, message.content,
                 MessageStatus(message.status).value, message.created_at, parent_id,
                 _stats_json(message.stats), store_attachments.sources_json(message.sources),
                 message.failure or None, conversation_id),
            ).lastrowid
            store_attachments.save_documents(db, new_id, message.documents)
            db.execute("UPDATE conversations SET active_message_id = ? WHERE id = ?",
                       (new_id, conversation_id))
            db.execute("UPDATE messages SET shown_child_id = ? WHERE id = ?", (new_id, parent_id))
        # the id of a row whose COMMIT failed is given to the next one (trial: disk full)
        message.id = new_id
        return message.id

    def update_message(
        self, message_id: int, *, content: str | None = None, status: MessageStatus | None = None,
        stats: ReplyStats | None = None, sources: tuple = (), failure: str | None = None,
    ) -> None:
        """Commit a message's new content, status (e.g. a partial answer, STOPPED), stats and/or
        sources (Citations; () leaves them), and why it failed (None leaves it, "" clears it). An
        answer's does not make its conversation the newest (see list_conversations)."""
        with self._tx() as db:
            row = db.execute(
                "UPDATE messages SET content = COALESCE(?, content), status = COALESCE(?, status),"
                " stats_json = COALESCE(?, stats_json), sources_json = COALESCE(?, sources_json),"
                " failure = CASE WHEN ? IS NULL THEN failure ELSE NULLIF(?, '') END"
                " WHERE id = ? RETURNING conversation_id, role",
                (content, None if status is None else MessageStatus(status).value, _stats_json(stats),
                 store_attachments.sources_json(sources), failure, failure, message_id),
            ).fetchone()
            if row is None:
                raise KeyError(message_id)
            self._touch(db, row[0], *_used_now(row[1]))

    def set_active_message(self, conversation_id: int, message_id: int) -> None:
        """Show the path through `message_id` (then the replies last shown below it) from now on;
        each message on the way to it remembers the reply shown. KeyError for an unknown
        conversation or a message not in it."""
        with self._tx() as db:
            if self._conversation_of(message_id) != conversation_id:
                raise KeyError(message_id)
            self._touch(db, conversation_id, "active_message_id = ?", message_id)
            path = self._tree(conversation_id).path_to(message_id)
            db.executemany("UPDATE messages SET shown_child_id = ? WHERE id = ?", zip(path[1:], path, strict=False))

    def delete_message(self, message_id: int) -> None:
        """Delete a message with every reply below it (and the summaries that folded any); the
        active path moves up to its parent when it ran through it. KeyError when missing."""
        with self._tx() as db:
            conversation_id = self._conversation_of(message_id)
            tree = self._tree(conversation_id)
            if self._active(conversation_id) in tree.subtree(message_id):
                self._touch(db, conversation_id, "active_message_id = ?", tree.parents[message_id])
            self._touch(db, conversation_id, "updated_at = ?", time.time())
            db.execute("DELETE FROM messages WHERE id = ?", (message_id,))

    def message_text(self, message_id: int) -> str:
        """The content of any stored message (any version, any branch). KeyError when missing."""
        row = self._conn.execute("SELECT content FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            raise KeyError(message_id)
        return row[0]

    def message_tree(self, conversation_id: int) -> MessageTree:
        """Every message's parent (all versions, all branches). KeyError for an unknown conversation."""
        self._active(conversation_id)
        return self._tree(conversation_id)

    def _tree(self, conversation_id: int) -> MessageTree:
        rows = self._conn.execute("SELECT id, parent_id, shown_child_id FROM messages WHERE conversation_id = ?",
                                  (conversation_id,)).fetchall()
        return MessageTree({r[0]: r[1] for r in rows}, {r[0]: r[2] for r in rows if r[2] is not None})

    def _active(self, conversation_id: int) -> int | None:
        row = self._conn.execute(
            "SELECT active_message_id FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise KeyError(conversation_id)
        return row[0]

    def _conversation_of(self, message_id: int) -> int:
        row = self._conn.execute(
            "SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            raise KeyError(message_id)
        return row[0]

    def check_pages(self) -> None:
        """Raise sqlite3.DatabaseError when a page of the file is damaged (``PRAGMA quick_check``:
        the b-trees' structure, every page read; 49 ms for 104 MB with the file in the page cache).
        A damaged page that start-up did not read otherwise (an index's, an old chat's) failed later,
        out of a listing or a load, as a crash (new-user trial)."""
        first = self._conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        if first != "ok":
            raise sqlite3.DatabaseError(f"database disk image is malformed ({first})")

    def mark_interrupted(self) -> int:
        """Turn messages left STREAMING by a crash into FAILED; returns how many. Call at start-up
        only, when no other Headroom instance is streaming into this file."""
        with self._tx() as db:
            return db.execute(
                "UPDATE messages SET status = 'failed' WHERE status = 'streaming'").rowcount

    def remove_document(self, message_id: int, index: int) -> store_attachments.RemovedDocument:
        """Forget the `index`-th document (from 0) attached to message `message_id`, its text
        included, and the text of its excerpts in the sources of the answers to that message
        (store_attachments.forget_cited_text); returns what restore_document needs (its
        `name`, the row). KeyError when there is no such document."""
        with self._tx() as db:
            removed = store_attachments.remove_document(db, message_id, index)
            self._touch(db, self._conversation_of(message_id), "updated_at = ?", time.time())
        return removed

    def note_document_fit(self, message_id: int, name: str, note: store_attachments.FitNote) -> bool:
        """Keep how the document `name` of message `message_id` went into its turn (the last
        turn's replaces an older one's); it goes with the document (removed, restored, branched
        and deleted with it). Returns whether a document of that name is there. Does not move
        the conversation in the list."""
        with self._tx() as db:
            return store_attachments.note_fit(db, message_id, name, note) > 0

    def note_refusal(self, message_id: int, refusal: dict[str, Any] | None) -> None:
        """Keep why the turn of the (user) message `message_id` was refused (JSON-able facts, see
        app.core.store_refusals); None forgets it (the turn ran after all). Raises KeyError for
        an unknown message."""
        with self._tx() as db:
            if db.execute("UPDATE messages SET refusal_json = ? WHERE id = ?",
                          (store_refusals.refusal_json(refusal), message_id)).rowcount == 0:
                raise KeyError(message_id)

    def restore_document(self, removed: store_attachments.RemovedDocument) -> None:
        """Undo remove_document: the document back in its place, the answers' sources as they
        were. KeyError when the message was deleted since."""
        with self._tx() as db:
            store_attachments.restore_document(db, removed)
            self._touch(db, self._conversation_of(removed.message_id), "updated_at = ?", time.time())

    def delete_if_empty(self, conversation_id: int) -> bool:
        """Delete the conversation for good when it holds no message (a first message withdrawn
        after a refusal); returns whether it did."""
        with self._tx() as db:
            return db.execute("DELETE FROM conversations WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages"
                              " WHERE conversation_id = ?)", (conversation_id, conversation_id)).rowcount > 0

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        with self._tx() as db:
            self._touch(db, conversation_id, "title = ?, updated_at = ?", title, time.time())

    def set_pinned_notes(self, conversation_id: int, notes: str) -> None:
        """The conversation's pinned notes ("" for none). KeyError for an unknown conversation."""
        with self._tx() as db:
            self._touch(db, conversation_id, "pinned_notes = ?, updated_at = ?", notes, time.time())

    def set_note_proposals(self, conversation_id: int, offered: list[str], dismissed: set[str]) -> None:
        """Keep the conversation's note proposals: those still `offered` (undecided, in their
        order) and the `dismissed` ones (not offered again); an accepted one is in neither and
        is forgotten (app.core.store_notes). Does not move the conversation in the list. KeyError
        for an unknown conversation."""
        with self._tx() as db:
            self._touch(db, conversation_id, "updated_at = updated_at")
            store_notes.save_proposals(db, conversation_id, offered, dismissed)

    def note_proposals(self, conversation_id: int) -> tuple[list[str], set[str]]:
        """(offered, dismissed): the conversation's undecided note proposals in their order and
        the dismissed ones, as set_note_proposals kept them (empty when none or unknown)."""
        return store_notes.proposals_of(self._conn, conversation_id)

    def set_kv_precision(self, conversation_id: int, precision: str) -> None:
        """The conversation's KV cache precision ("16-bit", "8-bit" or "auto"). ValueError for
        another value, KeyError for an unknown conversation."""
        if precision not in KV_PRECISIONS:
            raise ValueError(f"unknown KV precision {precision!r}")
        with self._tx() as db:
            self._touch(db, conversation_id, "kv_precision = ?", precision)

    def update_settings(self, conversation_id: int, settings: dict[str, Any]) -> None:
        with self._tx() as db:
            self._touch(db, conversation_id, "settings_json = ?", json.dumps(settings))

    def save_summary(self, conversation_id: int, summary: SummaryState,
                     through_message_id: int | None = LAST) -> None:
        """Keep `summary` for every branch through `through_message_id`, the last message it
        folds (LAST: the one at `summary.folded_through` on the active path). An empty summary
        forgets the summaries on the active path. KeyError for an unknown conversation."""
        with self._tx() as db:
            self._touch(db, conversation_id, "updated_at = updated_at")
            path = self._tree(conversation_id).active_path(self._active(conversation_id))
            if not summary.content:
                db.execute(
                    "DELETE FROM summaries WHERE conversation_id = ? AND (through_message_id IS NULL"
                    f" OR through_message_id IN ({','.join('?' * len(path))}))", (conversation_id, *path))
                return
            if through_message_id == LAST:
                through_message_id = path[summary.folded_through] if summary.folded_through >= 0 else None
            db.execute("DELETE FROM summaries WHERE conversation_id = ? AND through_message_id IS ?",
                       (conversation_id, through_message_id))
            db.execute(
                "INSERT INTO summaries (conversation_id, through_message_id, content, tokens)"
                " VALUES (?, ?, ?, ?)", (conversation_id, through_message_id, summary.content, summary.tokens))

    def summary_for(self, conversation_id: int, path: list[int]) -> SummaryState:
        """The deepest summary that folds through a message of `path` (message ids, root first;
        or a summary saved before any message): the one that serves that branch."""
        index = {message_id: i for i, message_id in enumerate(path)}
        best = SummaryState()
        for row in self._conn.execute("SELECT * FROM summaries WHERE conversation_id = ?", (conversation_id,)):
            through = row["through_message_id"]
            if through is not None and through not in index:
                continue  # another branch's
            folded = -1 if through is None else index[through]
            if not best.content or folded > best.folded_through:
                best = SummaryState(row["content"], folded, row["tokens"])
        return best

    def delete_conversation(self, conversation_id: int) -> None:
        """Soft delete: hidden from `list_conversations` until restored or purged."""
        with self._tx() as db:
            self._touch(db, conversation_id, "deleted_at = ?", time.time())

    def restore_conversation(self, conversation_id: int) -> None:
        """Undo `delete_conversation`."""
        with self._tx() as db:
            self._touch(db, conversation_id, "deleted_at = NULL")

    def purge_deleted(self, older_than_s: float = 0.0) -> int:
        """Hard-delete conversations soft-deleted more than `older_than_s` seconds ago (messages
        and summary cascade); returns how many."""
        with self._tx() as db:
            return db.execute(
                "DELETE FROM conversations WHERE deleted_at IS NOT NULL AND deleted_at <= ?",
                (time.time() - older_than_s,),
            ).rowcount

    def list_conversations(
        self, search: str = "", include_deleted: bool = False,
    ) -> list[ConversationInfo]:
        """Newest first, by the user's last use (a message sent, a rename, notes, a file removed):
        an answer that ends does not move its conversation, so the sidebar does not reorder by
        itself while the user reads or clicks it (product trial). `search` matches a substring
        of the title or of any message of the branch shown, case-insensitive in every script
        (app.core.store_search; new-user trial: "über" did not find "ÜBER" with plain LIKE, which
        folds ASCII only). A full scan, fine for a desktop history; FTS5 would be a v3."""
        if search:
            rows, paths = self._matching(search, include_deleted)
        else:
            rows = self._conn.execute(
                "SELECT * FROM conversations WHERE ? OR deleted_at IS NULL ORDER BY updated_at DESC, id DESC",
                (include_deleted,)).fetchall()
            paths = self._shown_paths({row["id"]: row["active_message_id"] for row in rows})
        return [_info(row, len(paths[row["id"]])) for row in rows]

    def _matching(self, search: str, include_deleted: bool) -> tuple[list[sqlite3.Row], dict[int, list[int]]]:
        """The conversations whose title or branch shown holds `search`, newest first, and their
        branches shown. A version not shown does not count (new-user trial: an edited-away
        question matched, and its chat opened with no match in sight)."""
        in_title, title_args = store_search.match("c.title", search)
        in_message, message_args = store_search.match("content", search)
        # hit: the first message that matches (stops there, as EXISTS would), checked below
        rows = self._conn.execute(
            f"SELECT c.*, {in_title} AS titled, m.id AS hit FROM conversations c LEFT JOIN messages m"
            f" ON m.id = (SELECT id FROM messages WHERE conversation_id = c.id AND {in_message} LIMIT 1)"
            f" WHERE (? OR c.deleted_at IS NULL) AND ({in_title} OR m.id IS NOT NULL)"
            " ORDER BY c.updated_at DESC, c.id DESC", (*title_args, *message_args, include_deleted, *title_args),
        ).fetchall()
        paths = self._shown_paths({row["id"]: row["active_message_id"] for row in rows})
        # the first match found is another version: is there one on the branch shown too?
        unsure = {row["id"] for row in rows if not row["titled"] and row["hit"] not in paths[row["id"]]}
        shown = [message_id for cid in unsure for message_id in paths[cid]]
        for start in range(0, len(shown), _IDS_PER_QUERY):  # SQLite caps a statement's parameters
            ids = shown[start:start + _IDS_PER_QUERY]
            unsure -= {cid for (cid,) in self._conn.execute(
                f"SELECT DISTINCT conversation_id FROM messages WHERE id IN ({','.join('?' * len(ids))})"
                f" AND {in_message}", (*ids, *message_args))}
        return [row for row in rows if row["id"] not in unsure], paths

    def _shown_paths(self, actives: dict[int, int | None]) -> dict[int, list[int]]:
        """The active path (message ids) of each conversation in `actives` (id → its active
        message): what the list counts, not every stored version. One pass over their rows."""
        parents: dict[int, dict[int, int | None]] = {cid: {} for cid in actives}
        shown: dict[int, dict[int, int]] = {cid: {} for cid in actives}
        if actives:
            for cid, mid, parent, child in self._conn.execute(
                    "SELECT conversation_id, id, parent_id, shown_child_id FROM messages WHERE conversation_id"
                    f" IN ({','.join('?' * len(actives))})", list(actives)):
                parents[cid][mid] = parent
                if child is not None:
                    shown[cid][mid] = child
        return {cid: MessageTree(parents[cid], shown[cid]).active_path(active) for cid, active in actives.items()}

    def load_conversation(self, conversation_id: int) -> StoredConversation:
        """The conversation along its active path (see app.core.message_tree), with the summary
        that serves that path and each message's version numbers."""
        row = self._conn.execute("SELECT * FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise KeyError(conversation_id)
        rows = {m["id"]: m for m in self._conn.execute(
            "SELECT * FROM messages WHERE conversation_id = ?", (conversation_id,))}
        tree = MessageTree({i: m["parent_id"] for i, m in rows.items()},
                           {i: m["shown_child_id"] for i, m in rows.items() if m["shown_child_id"] is not None})
        path = tree.active_path(row["active_message_id"])
        documents = store_attachments.documents_of(self._conn, path)
        messages = [Message(Role(rows[i]["role"]), rows[i]["content"], MessageStatus(rows[i]["status"]), i,
                            rows[i]["created_at"], _stats(rows[i]["stats_json"]), documents.get(i, ()),
                            store_attachments.sources_from(rows[i]["sources_json"]), rows[i]["failure"] or "")
                    for i in path]
        refusals = {i: refusal for i in path if (refusal := store_refusals.refusal_from(rows[i]["refusal_json"]))}
        return StoredConversation(
            _info(row, len(path)), Conversation(messages), self.summary_for(conversation_id, path),
            _stored_settings(row["settings_json"]), tree.versions(path), row["pinned_notes"],
            valid_kv_precision(row["kv_precision"]), store_attachments.fits_of(self._conn, path), refusals)

    def copy_branch(self, conversation_id: int, through_message_id: int, title: str) -> int:
        """A new conversation holding the path to `through_message_id` (copies, one version each,
        with their documents and sources), the summary that serves it, the same settings and
        pinned notes; returns its id. KeyError
        when missing."""
        source = self.load_conversation(conversation_id)
        tree = self._tree(conversation_id)
        if through_message_id not in tree.parents:
            raise KeyError(through_message_id)
        path = tree.path_to(through_message_id)
        rows = {m["id"]: m for m in self._conn.execute(
            f"SELECT * FROM messages WHERE id IN ({','.join('?' * len(path))})", path)}
        summary = self.summary_for(conversation_id, path)
        now = time.time()
        with self._tx() as db:
            new_id = db.execute(
                "INSERT INTO conversations (title, created_at, updated_at, settings_json, pinned_notes)"
                " VALUES (?, ?, ?, ?, ?)", (title, now, now, json.dumps(source.settings), source.pinned_notes),
            ).lastrowid
            parent, copies = None, []
            for position, old in enumerate(path):
                m = rows[old]
                parent = db.execute(
                    "INSERT INTO messages (conversation_id, position, role, content, status, created_at,"
                    " parent_id, stats_json, sources_json, failure) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (new_id, position, m["role"], m["content"], m["status"], m["created_at"], parent,
                     m["stats_json"], m["sources_json"], m["failure"])).lastrowid
                store_attachments.copy_documents(db, old, parent)
                copies.append(parent)
            db.execute("UPDATE conversations SET active_message_id = ? WHERE id = ?", (parent, new_id))
            if summary.content:
                through = copies[summary.folded_through] if summary.folded_through >= 0 else None
                db.execute("INSERT INTO summaries (conversation_id, through_message_id, content, tokens)"
                           " VALUES (?, ?, ?, ?)", (new_id, through, summary.content, summary.tokens))
        return new_id

    def export_json(self, conversation_id: int) -> str:
        """The conversation's active branch as JSON (app.core.export)."""
        return conversation_json(self.load_conversation(conversation_id))

    def export_markdown(self, conversation_id: int, stop_details: Mapping[str, str] | None = None) -> str:
        """The conversation's active branch as Markdown (app.core.export); `stop_details`: the
        words for a stopped answer's stop reason (app.chat.stop_text.STOP_DETAILS)."""
        return conversation_markdown(self.load_conversation(conversation_id), stop_details)


def _stats_json(stats: ReplyStats | None) -> str | None:
    return None if stats is None else json.dumps(stats.to_json())


def _stats(text: str | None) -> ReplyStats | None:
    try:
        return ReplyStats.from_json(json.loads(text)) if text else None
    except ValueError:
        return None


def _text(data: bytes) -> str:
    """A TEXT value as read: UTF-8, a damaged byte as U+FFFD (a re-trial's 4 overwritten bytes in a
    message made every read of its conversation raise "Could not decode to UTF-8")."""
    return data.decode("utf-8", errors="replace")


def _stored_settings(text: str) -> dict[str, Any]:
    """A conversation's stored settings, its server URL without a user name or password: a row
    written before settings.json's URL was read without them kept one, and the JSON export wrote it
    (new-user re-trial)."""
    settings = json.loads(text)
    backend = settings.get("backend")
    remote = backend.get("remote") if isinstance(backend, dict) else None
    if isinstance(remote, dict) and isinstance(remote.get("base_url"), str):
        remote["base_url"] = without_credentials(remote["base_url"])
    return settings


def _used_now(role: Role | str) -> tuple:
    """The `_touch` arguments for committing a message of `role`: the user's (or the system's)
    makes the conversation the newest; an answer leaves its place (still checks it exists)."""
    if Role(role) is Role.ASSISTANT:
        return ("updated_at = updated_at",)
    return ("updated_at = ?", time.time())


def _info(row: sqlite3.Row, message_count: int) -> ConversationInfo:
    return ConversationInfo(row["id"], row["title"], row["created_at"], row["updated_at"],
                            message_count, row["deleted_at"])


def open_store(path: Path | None = None) -> tuple["Store", StoreNotice | None]:
    """Open the conversation database; a damaged or newer file never stops the app.

    Returns (store, notice): notice is None, or a StoreNotice for the user when
    - the file was written by a newer Headroom (NEWER): `store` is a read-only copy
      (`store.read_only`; history shown, nothing this session does is saved) and the file is left
      untouched; if even that copy cannot be read, `store` is an empty session-only one;
    - the file at ``path`` was not a usable SQLite database (DAMAGED: sqlite3.DatabaseError, e.g.
      "file is not a database"): it was renamed to ``<name>.damaged-<UTC time>`` (its -wal/-shm
      beside it) before a new, empty database was started.
    - the file cannot be written (UNWRITABLE: a read-only file or folder, a lock held by another
      program): `store` is a read-only copy, or an empty session-only one when even reading fails.
    - the disk is full (FULL, `disk_full`): `store` is the file's, not a copy: its writes fail
      while the disk is full and succeed once there is room (a Store.until_room when the file
      could not even be opened).
    """
    path = Path(path) if path is not None else default_db_path()
    try:
        store = Store(path)
    except NewerSchemaError as exc:
        return _open_newer(path, exc)
    except (OSError, sqlite3.OperationalError) as exc:  # before DatabaseError: locked is not damaged
        if disk_full(exc):
            return _open_full(path, exc)
        return _open_unwritable(path, exc)
    except sqlite3.DatabaseError as exc:
        return _open_damaged(path, exc)
    try:
        store.mark_interrupted()  # the first write: a file that cannot be written says so here
        store.check_pages()
    except sqlite3.OperationalError as exc:  # read-only, or locked by another program
        if disk_full(exc):  # it passes: the file stays, and is written once there is room
            return store, StoreNotice(StoreNotice.FULL, path, exc)
        store.close()
        return _open_unwritable(path, exc)
    except sqlite3.DatabaseError as exc:  # a damaged page past the header: "database disk image is malformed"
        store.close()  # (new-user trial: it left open_store, and Headroom ended at every start, nothing said)
        return _open_damaged(path, exc)
    return store, None


def _open_damaged(path: Path, exc: sqlite3.DatabaseError) -> tuple[Store, StoreNotice]:
    """A new database at `path` after the damaged one (`exc`) was renamed to
    ``<name>.damaged-<UTC time>`` (its -wal/-shm beside it), with the conversations that still
    read whole copied into it (`_salvage`); the notice says how many of how many."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(kept.with_name(kept.name + suffix))
    store = Store(path)
    copied, found = _salvage(kept, store)
    return store, StoreNotice(StoreNotice.DAMAGED, path, exc, kept=kept.name, conversations_found=found,
                              conversations_copied=copied)


_CONVERSATION_ROWS = (  # every table, and the rows of conversation ? in it
    ("conversations", "id = ?"),
    ("messages", "conversation_id = ?"),
    ("summaries", "conversation_id = ?"),
    ("attachments", "message_id IN (SELECT id FROM messages{scan} WHERE conversation_id = ?)"),
    ("note_proposals", "conversation_id = ?"),
)


def _salvage(damaged: Path, store: Store) -> tuple[int, int]:
    """Copy into `store` (new, empty) each conversation of the file `damaged` whose rows all
    still read, in one transaction each (a conversation is copied whole or not at all); returns
    (copied, found). The conversations are those the conversations table lists, and those its
    messages name (a re-trial's damaged leaf of the conversations table lost every chat though
    their messages read); `found` is 0 when neither reads (a file that is no database at all).
    A damaged page costs only the conversations with rows on it; a conversation whose own row is
    lost is copied with its messages, untitled."""
    try:
        old = sqlite3.connect(f"{damaged.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0, 0
    ids: set[int] = set()
    for listing in ("SELECT id FROM conversations", "SELECT DISTINCT conversation_id FROM messages",
                    "SELECT DISTINCT conversation_id FROM messages NOT INDEXED"):
        try:
            ids.update(row[0] for row in old.execute(listing))
        except sqlite3.DatabaseError:
            continue
    copied = 0
    for conversation_id in sorted(ids):
        # through the indexes first; a damaged index page (a new-user re-trial's, in messages' own
        # (conversation_id, position) index, cost 26 of 60 whole chats) is passed by reading the tables whole;
        # last, its own row made anew when that is what is lost
        for scan, own_row in (("", True), (" NOT INDEXED", True), (" NOT INDEXED", False)):
            try:
                _copy_conversation(old, store, conversation_id, scan, own_row)
                copied += 1
                break
            except sqlite3.DatabaseError:  # a row on a damaged page (or one the schema refuses): not this one
                log.info("conversation %s of %s not salvaged%s", conversation_id, damaged,
                         "" if own_row else " at all", exc_info=not own_row)
    old.close()
    return copied, len(ids)


def _copy_conversation(old: sqlite3.Connection, store: Store, conversation_id: int, scan: str,
                       own_row: bool = True) -> None:
    """Copy conversation `conversation_id`'s rows of every table from `old` into `store`, in one
    transaction; `scan` " NOT INDEXED" reads the tables without their indexes; `own_row` False makes
    its conversations row anew (untitled, its times those of its first and last message, default
    settings) instead of reading it. Raises sqlite3.DatabaseError (no messages: nothing to make it of)."""
    with store._tx() as db:
        db.execute("PRAGMA defer_foreign_keys = ON")  # a message names its shown reply, a later row
        if not own_row:
            first, last = old.execute(f"SELECT min(created_at), max(created_at) FROM messages{scan} "
                                      "WHERE conversation_id = ?", (conversation_id,)).fetchone()
            if first is None:
                raise sqlite3.DatabaseError(f"conversation {conversation_id}: its row and its messages are lost")
            db.execute("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, '', ?, ?)",
                       (conversation_id, first, last))
        for table, rows_of in _CONVERSATION_ROWS[0 if own_row else 1:]:
            columns = ", ".join(row[1] for row in db.execute(f"PRAGMA table_info({table})"))
            rows = old.execute(f"SELECT {columns} FROM {table}{scan} WHERE {rows_of.format(scan=scan)}",
                               (conversation_id,)).fetchall()
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                db.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def _open_full(path: Path, exc: Exception) -> tuple[Store, StoreNotice]:
    """The store of a file that a full disk kept from opening (`exc`): a Store.until_room, with
    the notice for the user. A file from a newer Headroom opens as it always does (its read-only
    copy); one whose copy fails for another reason (not a database, no permission) as a file that
    cannot be written: nothing is renamed or written while the disk is full."""
    try:
        store, shown = Store.until_room(path)
    except NewerSchemaError as newer:
        return _open_newer(path, newer)
    except (sqlite3.Error, OSError):
        return _open_unwritable(path, exc)
    return store, StoreNotice(StoreNotice.FULL, path, exc, shown=shown)


def _open_unwritable(path: Path, exc: Exception) -> tuple[Store, StoreNotice]:
    """A read-only copy of a database this process cannot write (trial 4: a read-only file, or
    one locked by another program, stopped the app before its window), or an empty
    session-only store when it cannot be read either; with the notice for the user. The copy is
    in memory: old chats can be continued and changed, so the notice never says "read-only"
    (new-user trial: a session's chats were gone after a restart, with no mark of it)."""
    try:
        store = Store(path, read_only=True)
        store.list_conversations(include_deleted=True)
        return store, StoreNotice(StoreNotice.UNWRITABLE, path, exc)
    except (sqlite3.Error, OSError, StoreError):
        return Store.session_only(path), StoreNotice(StoreNotice.UNWRITABLE, path, exc, shown=False)


def _open_newer(path: Path, exc: NewerSchemaError) -> tuple[Store, StoreNotice]:
    """The read-only copy of a file from a newer Headroom, or an empty session-only store when
    its tables cannot be read by this version; with the notice for the user."""
    try:
        store = Store(path, read_only=True)
        store.list_conversations(include_deleted=True)  # this version's queries work on it
        return store, StoreNotice(StoreNotice.NEWER, path, exc, found=exc.found, supported=exc.supported)
    except sqlite3.Error:
        return Store.session_only(path), StoreNotice(StoreNotice.NEWER, path, exc, shown=False, found=exc.found,
                                                     supported=exc.supported)
