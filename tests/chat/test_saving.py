"""Store writes that fail (new-user trial: the data folder on a full disk, or unwritable): a plain
notice says what was not saved and what became of the action, never the traceback dialog; a
message that could not be stored is not sent and goes back to the composer; Regenerate, Edit and
the sidebar's commands leave the chat as it was; an answer that cannot be stored stays shown and
is stored once there is room; the window is told, for as long as it lasts, that nothing is saved."""

import sqlite3

import pytest

from app.chat import open_chat
from app.core.conversation import Message, MessageStatus, Role
from app.core.settings import GenerationSettings, Settings
from app.core.store import Store
from tests.chat.conftest import finished, record
from tests.helpers.fake_worker import FakeWorker

FULL = "database or disk is full"


def disk_full(monkeypatch, *methods):
    """Store `methods` raise as SQLite does on a full disk; returns the function that frees space."""
    saved = {name: getattr(Store, name) for name in methods}

    def full(*_args, **_kwargs):
        raise sqlite3.OperationalError(FULL)

    for name in methods:
        monkeypatch.setattr(Store, name, full)
    return lambda: [monkeypatch.setattr(Store, name, method) for name, method in saved.items()]


def watch_saving(chat):
    said = []
    chat.saving_changed.connect(said.append)
    return said


def contents(messages):
    return [m.content for m in messages]


def stored(chat):
    return contents(chat.store.load_conversation(chat.conversation_id).conversation.messages)


def answer(chat, text):
    worker = chat.worker
    worker.token_streamed.emit(worker.last_id, text)
    worker.reply_finished.emit(worker.last_id, finished(text), record())


def errors(chat):
    return [text for text, kind in chat.recorded.of("notice") if kind == "error"]


def test_a_message_that_cannot_be_stored_is_not_sent_and_goes_back_to_the_composer(chat, monkeypatch, tmp_path):
    """Trial: sending on a full disk raised into the crash dialog, emptied the message box and the
    message was gone, from the chat and from the database, once space was freed."""
    seen, worker, saving = chat.recorded, chat.worker, watch_saving(chat)
    chat.turns.send("First question")
    answer(chat, "First answer.")
    free = disk_full(monkeypatch, "append_message")
    chat.turns.send("Second question, disk full")
    assert len(worker.requests) == 1 and not chat.turns.active  # not sent
    assert seen.of("text_withdrawn") == [("Second question, disk full",)]
    assert contents(chat.conversation.messages) == ["First question", "First answer."]
    assert seen.of("messages_truncated")[-1] == (2,)  # its bubble goes
    [line] = errors(chat)
    assert line == (f"Could not save: the disk is full ({tmp_path / 'chat.sqlite3'}). Free some space; your "
                    "message was not sent and is back in the message box.")
    assert saving == [f"Conversations are not being saved: the disk is full ({tmp_path / 'chat.sqlite3'}). "
                      "Free some space."] and chat.not_saving == saving[-1]
    free()
    chat.turns.send("Second question, disk full")
    answer(chat, "Second answer.")
    assert stored(chat) == ["First question", "First answer.", "Second question, disk full", "Second answer."]
    assert saving[-1] == "" and ("Saving works again.", "status") in seen.of("notice")


def test_a_save_that_writes_nothing_does_not_say_that_saving_works_again(chat, monkeypatch):
    """Trial 10: each send on a full disk said "Saving works again." and hid the "Not saving" mark
    (its first save, withdrawing an unanswered message, had none to withdraw), then "Could not save"."""
    saving = watch_saving(chat)
    chat.turns.send("First question")
    answer(chat, "First answer.")
    free = disk_full(monkeypatch, "append_message")
    chat.turns.send("Second question")
    chat.turns.send("Third question")
    assert len(saving) == 1 and saving[0].startswith("Conversations are not being saved: the disk is full")
    assert ("Saving works again.", "status") not in chat.recorded.of("notice")
    free()
    chat.turns.send("Fourth question")
    assert saving[-1] == "" and chat.recorded.of("notice")[-1] == ("Saving works again.", "status")


def test_a_first_message_that_cannot_be_stored_leaves_no_empty_chat_behind(chat, monkeypatch):
    free = disk_full(monkeypatch, "append_message")
    chat.turns.send("Hello")
    assert chat.conversation_id is None and chat.store.list_conversations() == []
    assert chat.conversation.messages == [] and chat.recorded.of("text_withdrawn") == [("Hello",)]
    free()
    chat.turns.send("Hello")
    assert stored(chat) == ["Hello"] and len(chat.store.list_conversations()) == 1


def test_regenerate_that_cannot_be_stored_leaves_the_answer_shown(chat, monkeypatch):
    """Trial: Regenerate on a full disk opened the crash dialog and the answer left the view
    (it was still in the database)."""
    seen, worker = chat.recorded, chat.worker
    chat.turns.send("Question")
    answer(chat, "Answer.")
    seen.clear()
    disk_full(monkeypatch, "set_active_message")
    chat.turns.regenerate(1)
    assert len(worker.requests) == 1 and not chat.turns.active
    assert contents(chat.conversation.messages) == ["Question", "Answer."]
    assert seen.of("messages_truncated") == [] and seen.of("reply_started") == []
    assert errors(chat)[-1].endswith("Free some space; nothing was changed.")
    assert stored(chat) == ["Question", "Answer."]


def test_an_edit_that_cannot_be_stored_shows_the_version_it_replaced_and_keeps_the_text(chat, monkeypatch):
    seen, worker = chat.recorded, chat.worker
    chat.turns.send("Capital of France?")
    answer(chat, "Paris.")
    disk_full(monkeypatch, "append_message")
    chat.turns.edit(0, "Capital of Spain?")
    assert len(worker.requests) == 1
    assert contents(chat.conversation.messages) == ["Capital of France?", "Paris."]
    assert contents(seen.of("conversation_loaded")[-1][0]) == ["Capital of France?", "Paris."]
    assert seen.of("text_withdrawn") == [("Capital of Spain?",)]
    assert stored(chat) == ["Capital of France?", "Paris."] and chat.versions == [(1, 1), (1, 1)]


def test_an_answer_that_cannot_be_stored_stays_shown_and_is_stored_with_the_next_message(chat, monkeypatch):
    seen, worker = chat.recorded, chat.worker
    chat.turns.send("Question one")
    free = disk_full(monkeypatch, "append_message", "update_message")
    worker.token_streamed.emit(worker.last_id, "Answer")
    worker.token_streamed.emit(worker.last_id, " one.")
    worker.reply_finished.emit(worker.last_id, finished("Answer one."), record())
    assert seen.of("reply_ended") == [(MessageStatus.COMPLETE, "")] and seen.of("turn_ended") == [("complete",)]
    assert contents(chat.conversation.messages) == ["Question one", "Answer one."]
    [line] = errors(chat)  # once, though its first piece and its end both failed
    assert "the answer stays shown and is saved with your next message" in line
    assert stored(chat) == ["Question one"]
    free()
    chat.turns.send("Question two")
    assert stored(chat) == ["Question one", "Answer one.", "Question two"]  # in its place in the tree
    assert chat.versions == [(1, 1)] * 4


def test_an_answer_the_full_disk_refuses_is_tried_again_at_most_every_second(chat, monkeypatch):
    worker, tries = chat.worker, []

    def full(*_args, **_kwargs):
        tries.append(1)
        raise sqlite3.OperationalError(FULL)

    chat.turns.send("Question")
    monkeypatch.setattr(Store, "append_message", full)
    for piece in ("a", "b", "c", "d"):
        worker.token_streamed.emit(worker.last_id, piece)
    assert len(tries) == 1  # not once per token: the log said it 200 times an answer


def test_an_unstored_answer_is_stored_when_the_chat_is_left_or_said_lost(chat, monkeypatch):
    seen = chat.recorded
    chat.turns.send("Kept question")
    free = disk_full(monkeypatch, "append_message", "update_message")
    answer(chat, "Kept answer.")
    free()
    first = chat.conversation_id
    chat.conversations.new_conversation()
    assert contents(chat.store.load_conversation(first).conversation.messages) == ["Kept question", "Kept answer."]

    chat.turns.send("Lost question")
    disk_full(monkeypatch, "append_message", "update_message")
    answer(chat, "Lost answer.")
    chat.conversations.open_conversation(first)
    assert seen.of("notice")[-1] == (f"Could not save: the disk is full ({chat.store.path}). Free some space; the "
                                     "answer written in “Lost question” was not saved.", "warning")


def test_the_sidebar_s_commands_that_cannot_be_stored_change_nothing(chat, monkeypatch):
    chat.turns.send("About cats")
    answer(chat, "Cats.")
    cid = chat.conversation_id
    disk_full(monkeypatch, "rename_conversation", "delete_conversation")
    chat.conversations.rename(cid, "Renamed")
    assert chat.store.load_conversation(cid).info.title == "About cats"
    assert chat.recorded.of("conversations_listed")[-1][0][0].title == "About cats"  # the list shows it again
    chat.conversations.delete(cid)
    assert chat.conversation_id == cid and contents(chat.conversation.messages) == ["About cats", "Cats."]
    assert chat.recorded.of("conversation_deleted") == []
    assert [line.endswith("nothing was changed.") for line in errors(chat)] == [True, True]


WRITES = ("create_conversation", "append_message", "update_message", "set_active_message", "delete_message",
          "remove_document", "note_document_fit", "note_refusal", "restore_document", "delete_if_empty",
          "rename_conversation", "set_pinned_notes", "set_note_proposals", "set_kv_precision", "update_settings",
          "save_summary", "delete_conversation", "restore_conversation", "purge_deleted", "copy_branch")


def test_no_command_of_the_chat_raises_when_nothing_can_be_written(chat, monkeypatch):
    """Every Store write the flows make, failing at once: each command says so and goes on."""
    chat.turns.send("Question")
    answer(chat, "Answer.")
    chat.turns.send("Another")
    answer(chat, "Another answer.")
    cid = chat.conversation_id
    disk_full(monkeypatch, *WRITES)
    conversations, turns = chat.conversations, chat.turns
    conversations.rename(cid, "x")
    conversations.set_kv_precision("8-bit")
    conversations.branch_to_new_chat(1)
    conversations.switch_version(1, -1)
    conversations.delete(cid)
    conversations.restore(cid)
    chat.notes.edit("a note")
    chat.summaries.edit("a summary")
    chat.presets.save_pick()
    turns.regenerate(3)
    turns.edit(2, "Another, edited")
    turns.send("Third")
    assert len(chat.worker.requests) == 2 and chat.conversation_id == cid
    assert contents(chat.conversation.messages) == ["Question", "Answer.", "Another", "Another answer."]
    assert chat.pinned_notes == "a note" and chat.summary.content == "a summary"  # for now, not kept
    assert len(errors(chat)) == 11 and all(line.startswith("Could not save: the disk is full") for line in errors(chat))
    chat.close()  # its purge of deleted chats fails too: quietly


def test_a_store_that_cannot_be_written_is_marked_for_the_whole_session(qapp, tmp_path):
    """Trial: the start notice went with New chat and nothing said that the chats of the session
    would be gone after a restart."""
    path = tmp_path / "headroom.sqlite3"
    Store(path).close()
    chat = open_chat(Settings(GenerationSettings(max_new_tokens=16)), Store(path, read_only=True),
                     worker=FakeWorker())
    saving = watch_saving(chat)
    chat.start()
    try:
        assert saving == [f"Your conversations cannot be saved to {path}: chats and changes in this session are "
                          "kept only until Headroom closes."]
        chat.conversations.new_conversation()
        chat.turns.send("Hello")
        chat.worker.reply_finished.emit(chat.worker.last_id, finished("Hi."), record())
        assert chat.not_saving == saving[0] and len(saving) == 1  # its writes in memory change nothing
    finally:
        chat.close()


def readonly_error(path) -> sqlite3.OperationalError:
    """The error SQLite itself raises when a write meets a file it may only read (SQLITE_READONLY)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        conn.execute("CREATE TABLE t (x)")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("a read-only connection wrote")


def started(monkeypatch, path):
    """A Chat whose store is the user's (open_store, here on `path`), started; and what it said."""
    from app.chat import chat as chat_module
    from app.core.store import open_store

    monkeypatch.setattr(chat_module, "open_store", lambda: open_store(path))
    chat = open_chat(Settings(GenerationSettings(max_new_tokens=16)), worker=FakeWorker())
    said, saving = [], watch_saving(chat)
    chat.notice.connect(lambda text, kind: said.append((text, kind)))
    chat.start()
    return chat, said, saving


def full_at_open(monkeypatch):
    """The store's file cannot be opened, as SQLite says on a full disk (it needs room for the
    WAL index); returns the function that frees space."""
    from app.core import store as store_module

    real = store_module.connect

    def full(_path):
        raise sqlite3.OperationalError(FULL)

    monkeypatch.setattr(store_module, "connect", full)
    return lambda: monkeypatch.setattr(store_module, "connect", real)


def test_a_disk_full_at_start_passes_and_nothing_typed_is_lost(qapp, monkeypatch, tmp_path):
    """New-user trial 10: started on a full disk, the store became a copy in memory: the "Not
    saving" mark stayed and none of the session's turns reached the file, even after space was
    freed. It behaves as a disk that fills mid-session: a message that cannot be stored goes back
    to the composer, and saving resumes once there is room."""
    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        store.append_message(store.create_conversation("Earlier chat"), Message(Role.USER, "Earlier question"))
    free = full_at_open(monkeypatch)
    chat, said, saving = started(monkeypatch, path)
    try:
        full = (f"Your conversations cannot be saved now: the disk is full ({path}). Free some space: saving "
                "resumes by itself, and until then a message you send goes back to the message box.")
        assert said == [(full, "error")] and not chat.store.read_only
        tip = f"Conversations are not being saved: the disk is full ({path}). Free some space."
        assert saving == [tip] and chat.not_saving == tip
        assert [c.title for c in chat.store.list_conversations()] == ["Earlier chat"]  # the history shows
        withdrawn = []
        chat.text_withdrawn.connect(withdrawn.append)
        chat.conversations.new_conversation()
        chat.turns.send("First, disk full")
        chat.turns.send("Second, disk full")
        assert withdrawn == ["First, disk full", "Second, disk full"] and chat.worker.requests == []
        assert said[-1] == (f"Could not save: the disk is full ({path}). Free some space; your message was not sent "
                            "and is back in the message box.", "error")
        # the sends' first saves write nothing (no message to withdraw): they prove nothing (trial 10:
        # "Saving works again." and the mark gone before each "Could not save")
        assert saving == [tip] and ("Saving works again.", "status") not in said
        free()
        chat.turns.send("Third, space freed")
        answer(chat, "Third answer.")
        assert saving[-1] == "" and ("Saving works again.", "status") in said
    finally:
        chat.close()
    with Store(path) as store:  # the file itself: the earlier chat and this session's
        titles = {c.title: c.id for c in store.list_conversations()}
        assert set(titles) == {"Earlier chat", "Third, space freed"}
        assert contents(store.load_conversation(titles["Third, space freed"]).conversation.messages) == [
            "Third, space freed", "Third answer."]


def test_a_disk_full_at_start_that_hides_the_history_says_so_and_shows_it_once_there_is_room(
        qapp, monkeypatch, tmp_path):
    """The file could not even be read now (its WAL index needs room): it shows once a write fits."""
    from app.core import store as store_module
    from tests.helpers.marking_translator import marking

    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        store.append_message(store.create_conversation("Earlier chat"), Message(Role.USER, "Earlier question"))
    shm = sqlite3.OperationalError("disk I/O error")
    shm.sqlite_errorcode = 4874  # SQLITE_IOERR_SHMSIZE, as measured on a full tmpfs
    real_copy = store_module._read_only_copy
    monkeypatch.setattr(store_module, "_read_only_copy", lambda _path: (_ for _ in ()).throw(shm))
    free = full_at_open(monkeypatch)
    with marking("Saving"):
        chat, said, saving = started(monkeypatch, path)
    try:
        assert said == [(f"«Your conversations cannot be read or saved now: the disk is full ({path}). Free some "
                         "space: saving resumes by itself and they show again, and until then a message you send "
                         "goes back to the message box.»", "error")]
        assert "the disk is full" in saving[0] and chat.store.list_conversations() == []
        listed = []
        chat.conversations_listed.connect(lambda rows, _current: listed.append([c.title for c in rows]))
        free()
        monkeypatch.setattr(store_module, "_read_only_copy", real_copy)
        chat.turns.send("Hello again")
        assert listed[-1] == ["Hello again", "Earlier chat"]
        assert saving[-1] == ""
    finally:
        chat.close()


def test_a_damaged_page_is_said_with_the_conversations_kept_and_the_chat_starts(qapp, monkeypatch, tmp_path):
    """New-user trial: a database with a damaged page ended Headroom at every start with nothing said.
    The chat starts, lists the conversations that read whole, and says how many of how many."""
    from tests.core.test_store import _chats_with_a_damaged_page
    from tests.helpers.marking_translator import marking

    path, _titles = _chats_with_a_damaged_page(tmp_path, 22)
    listed = []
    with marking("Saving"):
        chat, said, saving = started(monkeypatch, path)
    try:
        [kept] = tmp_path.glob("headroom.sqlite3.damaged-*[0-9]")
        copied = len(chat.store.list_conversations())
        assert 30 <= copied < 40
        assert said == [(f"«The conversation database is damaged. It was kept as {kept.name}, and a new one was "
                         f"started with the conversations that could still be read: {copied} of 40.»", "error")]
        assert saving == []  # the new file is saved as usual
        chat.conversations_listed.connect(lambda infos, _current: listed.append(len(infos)))
        chat.conversations.refresh_sidebar()
        assert listed == [copied]
    finally:
        chat.close()


def test_the_stores_start_notice_is_said_in_the_windows_language(qapp, monkeypatch, tmp_path):
    """Trial: the Korean window showed the store's own English sentence at start (a damaged file
    moved aside, a file that cannot be written, one from a newer Headroom), and the "Not saving"
    mark's tooltip repeated it. The store says what it met (app.core.store.StoreNotice); the chat
    says it through the catalogue, the reason too."""
    from app.core import store as store_module
    from tests.helpers.marking_translator import marking

    path = tmp_path / "headroom.sqlite3"
    path.write_bytes(bytes(range(256)) * 12)  # not SQLite: moved aside, a new one started
    with marking("Saving"):
        chat, said, saving = started(monkeypatch, path)
    chat.close()
    [kept] = tmp_path.glob("headroom.sqlite3.damaged-*")
    assert said == [(f"«The conversation database could not be read: it is damaged or is not a database. It was "
                     f"kept as {kept.name} and a new one was started.»", "error")]
    assert saving == []  # the new file is saved as usual

    refused, real = readonly_error(path), Store.mark_interrupted

    def read_only_file(store):  # the file refuses the first write; the copy in memory takes it
        if not store.read_only:
            raise refused
        return real(store)

    monkeypatch.setattr(Store, "mark_interrupted", read_only_file)
    with marking("Saving"):
        chat, said, saving = started(monkeypatch, path)
    chat.close()
    notice = (f"«Your conversations cannot be saved ({path}: «the database file is read-only»).» «They are shown, "
              "but new chats, messages and changes in this session are kept only until Headroom closes. Make the "
              "file writable, or close what holds it, and restart Headroom.»")
    assert said == [(notice, "error")] and saving == [notice]  # the "Not saving" mark's tooltip: the same words

    monkeypatch.setattr(store_module, "_read_only_copy", lambda _path: (_ for _ in ()).throw(OSError(13, "denied")))
    monkeypatch.setattr(store_module, "connect", lambda _path: (_ for _ in ()).throw(OSError(30, "Read-only")))
    chat, said, saving = started(monkeypatch, path)
    chat.close()
    assert said == [(f"Your conversations cannot be saved ({path}: the disk or folder is read-only). Chats in this "
                     "session are kept only until Headroom closes.", "error")] and saving == [said[0][0]]


def test_a_store_from_a_newer_headroom_is_said_in_the_windows_language(qapp, monkeypatch, tmp_path):
    from app.core.store import SCHEMA_VERSION
    from tests.helpers.marking_translator import marking

    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        store.create_conversation("from the future")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with marking("Saving"):
        chat, said, saving = started(monkeypatch, path)
    chat.close()
    notice = (f"«Your conversations were saved by a newer version of Headroom (database v{SCHEMA_VERSION + 1}; this "
              f"version reads up to v{SCHEMA_VERSION}).» «They are shown, but new chats, messages and changes in this "
              "session are kept only until Headroom closes. Update Headroom to continue them.»")
    assert said == [(notice, "error")] and saving == [notice]
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE messages RENAME TO turns")  # this version cannot read it at all
    conn.close()
    chat, said, saving = started(monkeypatch, path)
    chat.close()
    assert said[0][0].endswith("This version cannot read them; the file was left untouched and chats in this session "
                               "are not saved. Update Headroom to see them.") and saving == [said[0][0]]


@pytest.mark.parametrize(("code", "reason"), [(5, "another program is using the database"),
                                              (517, "another program is using the database"),  # SQLITE_BUSY_SNAPSHOT
                                              (8, "the database file is read-only"),
                                              (14, "the database file could not be opened"),
                                              (10, "the disk could not be read or written"),
                                              (3, "permission denied"),
                                              (1, "no such table: x")])  # SQLITE_ERROR: sqlite3's own words
def test_sqlite_reasons_a_user_meets_are_said_plainly(chat, monkeypatch, code, reason):
    """sqlite3's own words are English in the Korean window too: the result codes of a locked,
    read-only or unopenable database are said by their code."""
    exc = sqlite3.OperationalError("no such table: x")
    exc.sqlite_errorcode = code

    def fails(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr(Store, "append_message", fails)
    chat.turns.send("Hi")
    assert errors(chat) == [f"Could not save: {reason} ({chat.store.path}); your message was not sent and is back "
                            "in the message box."]


@pytest.mark.parametrize("exc", [sqlite3.OperationalError("database is locked"), OSError(30, "Read-only file system")])
def test_other_reasons_are_said_plainly(chat, monkeypatch, exc):
    """sqlite3's own words for the database; an OSError in the plain words exports use (os_error_text)."""
    def fails(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr(Store, "append_message", fails)
    chat.turns.send("Hi")
    reason = "database is locked" if isinstance(exc, sqlite3.Error) else "the disk or folder is read-only"
    assert errors(chat) == [f"Could not save: {reason} ({chat.store.path}); your message was not sent and is back "
                            "in the message box."]
