"""SQLite persistence (app.core.store): round trip, search, soft delete, exports, migrations,
owner-only files, WAL, and durability across SIGKILL."""

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from app.core.conversation import Message, MessageStatus, Role
from app.core.history import SummaryState
from app.core.store import SCHEMA_VERSION, Store, StoreError, StoreNotice, connect, migrate

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "headroom.sqlite3") as s:
        yield s


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_round_trip_keeps_order_status_summary_and_settings(store):
    cid = store.create_conversation("Capitals", {"max_new_tokens": 64, "temperature": 0.0})
    user = Message(Role.USER, "What is the capital of France?", created_at=1000.5)
    reply = Message(Role.ASSISTANT, "", MessageStatus.STREAMING)
    assert store.append_message(cid, user) == user.id
    store.append_message(cid, reply)
    store.update_message(reply.id, content="The capital of", status=MessageStatus.STOPPED)
    store.append_message(cid, Message(Role.USER, "Finish, please."))
    store.save_summary(cid, SummaryState("asked about France", folded_through=1, tokens=9))

    loaded = store.load_conversation(cid)
    assert loaded.conversation.messages == [
        Message(Role.USER, "What is the capital of France?"),
        Message(Role.ASSISTANT, "The capital of", MessageStatus.STOPPED),
        Message(Role.USER, "Finish, please."),
    ]
    assert [m.id for m in loaded.conversation.messages][:2] == [user.id, reply.id]
    assert loaded.conversation.messages[0].created_at == 1000.5
    assert loaded.summary == SummaryState("asked about France", 1, 9)
    assert loaded.settings == {"max_new_tokens": 64, "temperature": 0.0}
    assert (loaded.info.title, loaded.info.message_count) == ("Capitals", 3)
    positions = store._conn.execute(
        "SELECT position FROM messages WHERE conversation_id = ? ORDER BY id", (cid,)).fetchall()
    assert [p[0] for p in positions] == [0, 1, 2]


def test_update_status_only_keeps_content_and_missing_ids_raise(store):
    cid = store.create_conversation()
    m = Message(Role.ASSISTANT, "partial")
    store.append_message(cid, m)
    store.update_message(m.id, status=MessageStatus.FAILED)
    assert store.load_conversation(cid).conversation.messages == [
        Message(Role.ASSISTANT, "partial", MessageStatus.FAILED)]
    with pytest.raises(KeyError):
        store.update_message(m.id + 99, content="x")
    with pytest.raises(KeyError):
        store.append_message(cid + 99, Message(Role.USER, "x"))
    with pytest.raises(KeyError):
        store.load_conversation(cid + 99)


def test_mark_interrupted_fails_streaming_messages(store):
    cid = store.create_conversation()
    store.append_message(cid, Message(Role.ASSISTANT, "half an ans", MessageStatus.STREAMING))
    assert store.mark_interrupted() == 1
    assert store.load_conversation(cid).conversation.messages[0].status is MessageStatus.FAILED


def test_list_search_rename_and_soft_delete(store):
    a = store.create_conversation("Trip to Paris")
    b = store.create_conversation("Taxes")
    store.append_message(b, Message(Role.USER, "Is 100% of the REFUND taxable?"))
    store.rename_conversation(a, "Paris itinerary")
    assert [c.id for c in store.list_conversations()] == [a, b]  # rename touched a last
    assert [c.title for c in store.list_conversations("paris")] == ["Paris itinerary"]
    assert [c.id for c in store.list_conversations("refund")] == [b]
    assert [c.id for c in store.list_conversations("100%")] == [b]
    assert store.list_conversations("1%") == []  # % is literal, not a wildcard
    assert store.list_conversations("a_i") == []  # so is _

    store.delete_conversation(b)
    assert [c.id for c in store.list_conversations()] == [a]
    deleted = [c for c in store.list_conversations(include_deleted=True) if c.id == b]
    assert deleted[0].deleted_at is not None
    store.restore_conversation(b)
    assert {c.id for c in store.list_conversations()} == {a, b}
    store.delete_conversation(b)
    assert store.purge_deleted(older_than_s=3600) == 0  # deleted just now: kept for undo
    assert store.purge_deleted() == 1
    assert store._conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    with pytest.raises(KeyError):
        store.restore_conversation(b)


def test_exports(store):
    cid = store.create_conversation("Capitals", {"temperature": 0.0})
    store.append_message(cid, Message(Role.USER, "Capital of France?"))
    store.append_message(cid, Message(Role.ASSISTANT, "Paris", MessageStatus.STOPPED))
    store.save_summary(cid, SummaryState("greetings", 1, 5))
    md = store.export_markdown(cid)
    assert md.startswith("# Capitals\n")
    assert "> **Summary of earlier turns:** greetings" in md
    assert "## User\n\nCapital of France?\n\n## Assistant\n\nParis\n\n_(stopped)_" in md
    data = json.loads(store.export_json(cid))
    assert data["format"] == "headroom-conversation" and data["title"] == "Capitals"
    assert data["settings"] == {"temperature": 0.0}
    assert data["summary"] == {"content": "greetings", "folded_through": 1, "tokens": 5}
    assert [(m["role"], m["content"], m["status"]) for m in data["messages"]] == [
        ("user", "Capital of France?", "complete"), ("assistant", "Paris", "stopped")]
    store.save_summary(cid, SummaryState("Alex lives in Lisbon.\n\nHe is a nurse.", 1, 9))
    md = store.export_markdown(cid)  # every line of a summary inside its quote
    assert "> **Summary of earlier turns:** Alex lives in Lisbon.\n> \n> He is a nurse.\n\n## User" in md


def test_an_export_says_that_a_refused_message_was_not_sent(store):
    """New-user trial: a message whose turn was refused (never sent to the model) was exported as
    an ordinary "## User" turn, status complete, while a stopped answer is marked "_(stopped)_"."""
    cid = store.create_conversation("Logs", {})
    store.append_message(cid, Message(Role.USER, "Why did it fail?"))
    store.append_message(cid, Message(Role.ASSISTANT, "The disk was full."))
    refused = store.append_message(cid, Message(Role.USER, "ERROR disk full\n" * 3))
    reason = "the new message needs 40,020 prompt tokens, but the context of 8,192 tokens minus max_new_tokens 512 ..."
    store.note_refusal(refused, {"cause": "positions", "reason": reason, "reason_kind": "message",
                                 "facts": {"message": 40_020}, "max_new_tokens_fit": None})
    md = store.export_markdown(cid)
    assert md.endswith("## User\n\n```text\n" + "ERROR disk full\n" * 3 + "\n```\n\n_(not sent: the new "
                       "message needs 40,020 prompt tokens, but the context of 8,192 tokens minus "
                       "max\\_new\\_tokens 512 ...)_\n")
    assert md.count("not sent") == 1  # the answered question is not marked
    from markdown_it import MarkdownIt

    assert MarkdownIt("commonmark").render(md).endswith(
        "<p><em>(not sent: the new message needs 40,020 prompt tokens, but the context of 8,192 tokens minus "
        "max_new_tokens 512 ...)</em></p>\n")
    data = json.loads(store.export_json(cid))
    assert [m.get("not_sent") for m in data["messages"]] == [None, None, {"cause": "positions", "reason": reason}]


def test_a_markdown_export_leaves_out_an_answers_blank_lines_before_and_after(store):
    cid = store.create_conversation("Base model", {})
    store.append_message(cid, Message(Role.USER, "Hello"))
    store.append_message(cid, Message(Role.ASSISTANT, "\n\n\n    indented code\nHi there.\n\n"))
    assert store.export_markdown(cid).endswith("## Assistant\n\n    indented code\nHi there.\n")


@pytest.mark.parametrize("answer, status", [
    ("Here:\n\n```c\nint main() {\n  if (a < b && b > c)", MessageStatus.STOPPED),  # stopped inside its code
    ("int x = a < b;\n```\nThat prints hello.", MessageStatus.COMPLETE),  # a stray closing fence opens one
    ("~~~~\ncode\n~~~", MessageStatus.COMPLETE),  # closed by a shorter fence: still open
    ("<pre>\nint main() {", MessageStatus.STOPPED),  # raw HTML blocks run on too (re-trial)
    ("Note:\n\n<!-- draft\nmore", MessageStatus.STOPPED),
])
def test_a_markdown_export_closes_a_code_fence_an_answer_left_open(store, answer, status):
    """New-user trial: an answer's lone fence ran on as code through every later message of the
    export; its "## User" heading and the next answer vanished into one code block."""
    from markdown_it import MarkdownIt

    cid = store.create_conversation("Code", {})
    for message in (Message(Role.USER, "Write C"), Message(Role.ASSISTANT, answer, status),
                    Message(Role.USER, "Thanks"), Message(Role.ASSISTANT, "You're welcome.")):
        store.append_message(cid, message)
    md = store.export_markdown(cid)
    assert answer in md  # the answer as written, a closing fence after it
    tokens = MarkdownIt("commonmark").parse(md)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["Code", "User", "Assistant", "User", "Assistant"]
    assert "You're welcome." in [t.content for t in tokens if t.type == "inline"]  # a paragraph again


def test_a_markdown_export_folds_an_answers_reasoning_as_the_window_does(store):
    """"<think>" is no HTML a Markdown viewer knows: the reasoning goes in a collapsed block before
    the answer; the JSON export keeps the text as stored."""
    cid = store.create_conversation("Reasoning", {})
    store.append_message(cid, Message(Role.USER, "Capital of France?"))
    store.append_message(cid, Message(Role.ASSISTANT, "<think>\nIt is *Paris*.\n</think>\n\nParis."))
    from markdown_it import MarkdownIt

    md = store.export_markdown(cid)
    assert md.endswith("## Assistant\n\n<details>\n<summary>Reasoning</summary>\n\nIt is *Paris*.\n\n"
                       "</details>\n\nParis.\n")
    html_text = MarkdownIt("commonmark").render(md)
    assert "<em>Paris</em>" in html_text and "<think>" not in html_text
    assert json.loads(store.export_json(cid))["messages"][1]["content"].startswith("<think>\nIt is")
    # stopped while it reasoned: said as the window says it (new-user trial 13)
    store.append_message(cid, Message(Role.USER, "And Italy?"))
    store.append_message(cid, Message(Role.ASSISTANT, "<think>\nRome, I think", MessageStatus.STOPPED))
    assert store.export_markdown(cid).endswith("## Assistant\n\n<details>\n<summary>Reasoning (unfinished)</summary>"
                                               "\n\nRome, I think\n\n</details>\n\n_(no answer)_\n\n_(stopped)_\n")


PLAIN_TYPED = ["Capital of France?", "Qu'est-ce que c'est? 50% off, -5 degrees: yes!", "서울은 어디? (수도)"]
MARKUP_TYPED = ["a &amp; b", "<div>x</div>", "*not italic*", "# not a heading", "1) x", "- no list",
                "two  spaces", "line\nbreak", "```\nfence inside\n```", " lead", "---", "back\\slash"]


@pytest.mark.parametrize("typed", PLAIN_TYPED + MARKUP_TYPED)
def test_a_markdown_export_shows_a_users_message_as_typed(store, typed):
    """What a Markdown reader (CommonMark, as GitHub's) shows of the exported user message is
    exactly what was typed: plain prose stays as it is, anything it would change is fenced."""
    from markdown_it import MarkdownIt

    cid = store.create_conversation("Typed", {})
    store.append_message(cid, Message(Role.USER, typed))
    tokens = MarkdownIt("commonmark").parse(store.export_markdown(cid))
    at = next(i for i, t in enumerate(tokens) if t.type == "inline" and t.content == "User") + 2
    if typed in MARKUP_TYPED:
        assert tokens[at].type == "fence" and tokens[at].info == "text"
        assert tokens[at].content == typed + "\n"
    else:  # plain prose is left as it is
        assert tokens[at].type == "paragraph_open"
        inline = tokens[at + 1]
        assert [c.type for c in inline.children] == ["text"] and inline.content == typed


@pytest.mark.parametrize("title", ["Capitals", "a &amp; b <div> *x*", "C# ## and F#", "[link](http://a) `code`",
                                   "under_score_ | ~strike~", "back\\slash", "서울 <b>굵게</b>"])
def test_a_markdown_export_shows_the_title_as_typed(store, title):
    """New-user trial: the heading `# <title>` was not escaped, so a viewer showed a chat titled
    `a &amp; b <div> *x*` as "a & b", HTML and italics."""
    import html

    from markdown_it import MarkdownIt

    cid = store.create_conversation(title, {})
    shown = MarkdownIt("commonmark").render(store.export_markdown(cid)).split("\n")[0]
    assert shown.startswith("<h1>") and shown.endswith("</h1>")
    inner = shown.removeprefix("<h1>").removesuffix("</h1>")
    assert "<" not in inner and html.unescape(inner) == title  # text only, no markup made of it


def test_migration_from_v1_keeps_data(tmp_path):
    path = tmp_path / "old.sqlite3"
    conn = connect(path)
    assert migrate(conn, target=1) == 1
    conn.execute("INSERT INTO conversations VALUES (7, 'old chat', 1.0, 2.0, '{\"a\": 1}')")
    conn.execute("INSERT INTO messages VALUES (1, 7, 0, 'user', 'hi from v1', 'complete', 1.5)")
    conn.execute("INSERT INTO summaries VALUES (7, 'v1 summary', 0, 3)")
    columns = [r[1] for r in conn.execute("PRAGMA table_info(conversations)")]
    assert "deleted_at" not in columns
    conn.close()

    with Store(path) as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 11
        loaded = store.load_conversation(7)
        assert loaded.conversation.messages == [Message(Role.USER, "hi from v1")]
        assert loaded.summary == SummaryState("v1 summary", 0, 3) and loaded.settings == {"a": 1}
        assert loaded.info.deleted_at is None
        store.delete_conversation(7)  # v2 feature works on migrated data
        assert store.list_conversations() == []


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "future.sqlite3"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store(path)


def test_files_are_owner_only_and_wal_is_on(tmp_path):
    path = tmp_path / "data" / "headroom.sqlite3"
    old_umask = os.umask(0)  # the store must not rely on the caller's umask
    try:
        store = Store(path)
    finally:
        os.umask(old_umask)
    cid = store.create_conversation("secret")
    store.append_message(cid, Message(Role.USER, "private"))
    for suffix in ("", "-wal", "-shm"):
        assert mode(path.with_name(path.name + suffix)) == 0o600, suffix
    assert mode(path.parent) == 0o700
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    other = sqlite3.connect(path)  # WAL is persistent: a fresh connection sees it too
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()


def test_loose_permissions_on_existing_file_are_tightened(tmp_path):
    path = tmp_path / "headroom.sqlite3"
    Store(path).close()
    path.chmod(0o644)
    with Store(path):
        assert mode(path) == 0o600


CHILD = """
import sys
from pathlib import Path
from app.core.conversation import Message, Role
from app.core.store import Store
store = Store(Path(sys.argv[1]))
cid = store.create_conversation("durability")
i = 0
while True:
    store.append_message(cid, Message(Role.USER, f"message {i} " + "x" * 4000))
    print(i, flush=True)  # only after the commit returned
    i += 1
"""


def test_committed_messages_survive_sigkill(tmp_path):
    path = tmp_path / "killed.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], cwd=REPO_ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reported = []
    try:
        for line in child.stdout:
            reported.append(int(line))
            if len(reported) >= 150:
                os.kill(child.pid, signal.SIGKILL)
                break
        reported += [int(line) for line in child.stdout]  # already in the pipe before the kill
    finally:
        child.kill()
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, child.stderr.read()
    assert reported == list(range(len(reported))) and len(reported) >= 150

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = conn.execute("SELECT content FROM messages ORDER BY position").fetchall()
    stored = [int(content.split()[1]) for (content,) in rows]
    conn.close()
    assert stored[: len(reported)] == reported  # every reported commit is there
    assert len(stored) - len(reported) in (0, 1)  # at most the one committed but not yet printed


def _chat(store, *texts):
    """A conversation of alternating user / assistant messages; returns (id, messages)."""
    cid = store.create_conversation("t")
    messages = [Message(Role.USER if i % 2 == 0 else Role.ASSISTANT, t) for i, t in enumerate(texts)]
    for m in messages:
        store.append_message(cid, m)
    return cid, messages


def contents(store, cid):
    return [m.content for m in store.load_conversation(cid).conversation.messages]


def test_a_new_version_keeps_the_old_one_and_the_active_path_follows_it(store):
    cid, (q, a, q2, a2) = _chat(store, "q", "a", "q2", "a2")
    again = Message(Role.ASSISTANT, "a (second)")
    store.append_message(cid, again, parent_id=q.id)  # Regenerate: a sibling of "a"
    loaded = store.load_conversation(cid)
    assert contents(store, cid) == ["q", "a (second)"] and loaded.versions == [(1, 1), (2, 2)]
    store.set_active_message(cid, a.id)  # switch back: the newest reply below it follows
    loaded = store.load_conversation(cid)
    assert contents(store, cid) == ["q", "a", "q2", "a2"] and loaded.versions == [(1, 1), (1, 2), (1, 1), (1, 1)]
    edited = Message(Role.USER, "q (edited)")
    store.append_message(cid, edited, parent_id=None)  # editing the first message: a new root
    assert contents(store, cid) == ["q (edited)"] and store.load_conversation(cid).versions == [(2, 2)]
    store.append_message(cid, Message(Role.ASSISTANT, "a3"))  # LAST: after the active path's end
    assert contents(store, cid) == ["q (edited)", "a3"]
    assert len(store.message_tree(cid).parents) == 7  # nothing was lost
    assert store.load_conversation(cid).info.message_count == 2  # the branch shown is counted
    assert [i.message_count for i in store.list_conversations()] == [2]
    other = store.create_conversation("other")
    with pytest.raises(KeyError):
        store.append_message(other, Message(Role.USER, "x"), parent_id=q.id)
    with pytest.raises(KeyError):
        store.set_active_message(other, q.id)


def test_a_summary_serves_the_branches_through_the_message_it_folded(store):
    cid, (q, a, q2, a2, q3) = _chat(store, "q", "a", "q2", "a2", "q3")
    store.save_summary(cid, SummaryState("asked q", folded_through=1, tokens=4))
    store.save_summary(cid, SummaryState("asked q and q2", folded_through=3, tokens=6))
    assert store.load_conversation(cid).summary == SummaryState("asked q and q2", 3, 6)
    store.append_message(cid, Message(Role.USER, "q2 (edited)"), parent_id=a.id)
    assert store.load_conversation(cid).summary == SummaryState("asked q", 1, 4)  # the shared part only
    store.append_message(cid, Message(Role.USER, "q (edited)"), parent_id=None)
    assert store.load_conversation(cid).summary == SummaryState()
    store.set_active_message(cid, q3.id)
    assert store.load_conversation(cid).summary == SummaryState("asked q and q2", 3, 6)
    store.save_summary(cid, SummaryState())  # "forget it": the summaries on this path go
    assert store.load_conversation(cid).summary == SummaryState()


def test_deleting_a_message_takes_its_replies_and_moves_the_active_path_up(store):
    cid, (q, a, q2) = _chat(store, "q", "a", "q2")
    store.save_summary(cid, SummaryState("s", 1, 5))
    store.delete_message(q2.id)
    assert contents(store, cid) == ["q", "a"]
    store.delete_message(a.id)
    loaded = store.load_conversation(cid)
    assert [m.content for m in loaded.conversation.messages] == ["q"] and loaded.summary == SummaryState()
    store.append_message(cid, Message(Role.ASSISTANT, "again"))
    assert contents(store, cid) == ["q", "again"]
    with pytest.raises(KeyError):
        store.delete_message(a.id + 999)


def test_copy_branch_makes_a_new_chat_of_the_path(store):
    cid, (q, a, q2, a2) = _chat(store, "q", "a", "q2", "a2")
    store.append_message(cid, Message(Role.ASSISTANT, "a (second)"), parent_id=q.id)
    store.set_active_message(cid, a2.id)
    store.save_summary(cid, SummaryState("asked q", 1, 4))
    store.update_settings(cid, {"temperature": 0.2})
    store.set_pinned_notes(cid, "Ada prefers metric units.")
    copy = store.copy_branch(cid, q2.id, "t (branch)")
    loaded = store.load_conversation(copy)
    assert loaded.pinned_notes == "Ada prefers metric units."
    assert [m.content for m in loaded.conversation.messages] == ["q", "a", "q2"]
    assert loaded.versions == [(1, 1)] * 3 and loaded.info.message_count == 3
    assert loaded.summary == SummaryState("asked q", 1, 4) and loaded.settings == {"temperature": 0.2}
    assert {m.id for m in loaded.conversation.messages}.isdisjoint({q.id, a.id, q2.id})
    assert contents(store, cid) == ["q", "a", "q2", "a2"]  # the source is unchanged
    with pytest.raises(KeyError):
        store.copy_branch(cid, q2.id + 999, "x")


def test_exports_follow_the_active_branch(store):
    cid, (q, a) = _chat(store, "Capital of France?", "Lyon")
    store.append_message(cid, Message(Role.ASSISTANT, "Paris"), parent_id=q.id)
    data = json.loads(store.export_json(cid))
    assert [m["content"] for m in data["messages"]] == ["Capital of France?", "Paris"]
    assert "Lyon" not in store.export_markdown(cid)
    store.set_active_message(cid, a.id)
    assert "Lyon" in store.export_markdown(cid) and "Paris" not in store.export_markdown(cid)
    assert "pinned_notes" not in json.loads(store.export_json(cid))
    store.set_pinned_notes(cid, "Answer in one word.\nBe kind.")
    assert json.loads(store.export_json(cid))["pinned_notes"] == "Answer in one word.\nBe kind."
    assert "> **Pinned notes:** Answer in one word.\n> Be kind." in store.export_markdown(cid)


def _v2_file(path: Path) -> None:
    """A store written by the release before branches (schema v2), built with its own schema."""
    from app.core.store import _V1, _V2

    conn = sqlite3.connect(path)
    for statement in _V1 + _V2:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO conversations VALUES (7, 'old chat', 1.0, 2.0, '{\"temperature\": 0.1}', NULL)")
    conn.execute("INSERT INTO conversations VALUES (8, 'deleted chat', 1.0, 2.0, '{}', 5.0)")
    conn.execute("INSERT INTO conversations VALUES (9, 'empty chat', 1.0, 2.0, '{}', NULL)")
    for i, (role, text, status) in enumerate([("user", "q1", "complete"), ("assistant", "a1", "complete"),
                                              ("user", "q2", "complete"), ("assistant", "a2", "stopped")]):
        conn.execute("INSERT INTO messages VALUES (?, 7, ?, ?, ?, ?, ?)", (10 + i, i, role, text, status, 1.5 + i))
    conn.execute("INSERT INTO messages VALUES (20, 8, 0, 'user', 'in the bin', 'complete', 3.0)")
    conn.execute("INSERT INTO summaries VALUES (7, 'asked q1', 1, 4)")
    conn.commit()
    conn.close()


def test_migration_from_v2_keeps_everything_as_one_branch(tmp_path):
    path = tmp_path / "headroom.sqlite3"
    _v2_file(path)
    with Store(path) as store:
        assert store.backup_path is not None and ".v2-" in store.backup_path.name
        loaded = store.load_conversation(7)
        assert [(m.id, m.role, m.content, m.status) for m in loaded.conversation.messages] == [
            (10, Role.USER, "q1", MessageStatus.COMPLETE), (11, Role.ASSISTANT, "a1", MessageStatus.COMPLETE),
            (12, Role.USER, "q2", MessageStatus.COMPLETE), (13, Role.ASSISTANT, "a2", MessageStatus.STOPPED)]
        assert [m.created_at for m in loaded.conversation.messages] == [1.5, 2.5, 3.5, 4.5]
        assert loaded.summary == SummaryState("asked q1", 1, 4) and loaded.settings == {"temperature": 0.1}
        assert loaded.versions == [(1, 1)] * 4 and loaded.pinned_notes == ""
        assert store.message_tree(7).parents == {10: None, 11: 10, 12: 11, 13: 12}
        listed = store.list_conversations(include_deleted=True)
        assert [(c.id, c.deleted_at, c.message_count) for c in listed] == [(9, None, 0), (8, 5.0, 1), (7, None, 4)]
        assert [m.content for m in store.load_conversation(8).conversation.messages] == ["in the bin"]
        assert store.load_conversation(9).conversation.messages == []
        store.append_message(7, Message(Role.ASSISTANT, "a1 (second)"), parent_id=10)  # v3 works on it
        assert store.load_conversation(7).versions == [(1, 1), (2, 2)]
    reopened = Store(path)
    assert reopened.backup_path is None and [m.content for m in reopened.load_conversation(7).conversation.messages] \
        == ["q1", "a1 (second)"]
    reopened.close()


def test_a_damaged_database_is_moved_aside_and_a_new_one_started(tmp_path):
    from app.core.store import open_store

    path = tmp_path / "headroom.sqlite3"
    path.write_bytes(bytes(range(256)) * 12)  # not SQLite
    store, notice = open_store(path)
    kept = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert len(kept) == 1 and kept[0].read_bytes() == bytes(range(256)) * 12
    # a kind and its facts, no sentence: the chat words it in the window's language (app.chat.saving)
    assert (notice.kind, notice.path, notice.kept) == (StoreNotice.DAMAGED, path, kept[0].name)
    assert isinstance(notice.error, sqlite3.DatabaseError)
    assert store.list_conversations() == []
    store.close()
    again, notice = open_store(path)  # the new file is fine: nothing moved the second time
    assert notice is None and len([p for p in tmp_path.iterdir() if ".damaged-" in p.name]) == 1
    again.close()


def _chats_with_a_damaged_page(tmp_path: Path, page: int | str) -> tuple[Path, list[str]]:
    """A store of 40 conversations of 6 messages (the newest with a summary), closed, with the 4 KiB
    page `page` (from 0; or the first leaf page of the index or table of that name) overwritten
    (0xAB); the titles, oldest first."""
    path = tmp_path / "headroom.sqlite3"
    titles = [f"chat {i}" for i in range(40)]
    with Store(path) as store:
        for i, title in enumerate(titles):
            cid = store.create_conversation(title)
            for j in range(6):
                role = Role.USER if j % 2 == 0 else Role.ASSISTANT
                store.append_message(cid, Message(role, f"message {j} of {title} " + "x" * 300))
            if i == 39:
                store.save_summary(cid, SummaryState("Alice lives in Lyon.", 1, 6))
    if isinstance(page, str):
        with closing(sqlite3.connect(path)) as db:
            page = db.execute("SELECT min(pageno) - 1 FROM dbstat WHERE name = ? AND pagetype = 'leaf'",
                              (page,)).fetchone()[0]
    data = bytearray(path.read_bytes())
    assert (page + 1) * 4096 <= len(data)
    data[page * 4096:(page + 1) * 4096] = b"\xab" * 4096
    path.write_bytes(bytes(data))
    return path, titles


def test_a_damaged_page_past_the_header_keeps_what_still_reads(tmp_path):
    """New-user trial: bytes overwritten past the first page made mark_interrupted raise
    "database disk image is malformed" out of open_store, and Headroom ended at every start with
    nothing said. Now the file is kept aside as a damaged one, and each conversation that still
    reads whole is copied into the new file; the notice counts them."""
    from app.core.store import open_store

    path, titles = _chats_with_a_damaged_page(tmp_path, 22)
    store, notice = open_store(path)
    [kept] = [p for p in tmp_path.iterdir() if p.name.endswith(notice.kept)]
    assert notice.kind == StoreNotice.DAMAGED and "malformed" in str(notice.error)
    assert notice.conversations_found == 40 and 30 <= notice.conversations_copied < 40
    listed = store.list_conversations()
    assert len(listed) == notice.conversations_copied
    for info in listed:  # each whole: its six messages, in order
        stored = store.load_conversation(info.id)
        assert [m.content.split(" x")[0] for m in stored.conversation.messages] == [
            f"message {j} of {info.title}" for j in range(6)]
    assert store.load_conversation(listed[0].id).summary.content in ("", "Alice lives in Lyon.")
    cid = store.create_conversation("after")  # the new file takes writes
    store.append_message(cid, Message(Role.USER, "hello"))
    store.close()
    assert kept.stat().st_size > 100_000  # the damaged file itself is left for the user
    again, notice = open_store(path)
    assert notice is None and len(again.list_conversations()) == len(listed) + 1
    again.close()


def test_a_damaged_index_page_costs_no_conversation(tmp_path):
    """New-user re-trial: a damaged leaf of messages' own (conversation_id, position) index made each
    lookup of a conversation's messages fail, and 26 of 60 whole chats were not copied; the tables
    are read whole when an index fails."""
    from app.core.store import open_store

    path, titles = _chats_with_a_damaged_page(tmp_path, "sqlite_autoindex_messages_1")
    store, notice = open_store(path)
    assert (notice.kind, notice.conversations_found, notice.conversations_copied) == (StoreNotice.DAMAGED, 40, 40)
    assert sorted(info.title for info in store.list_conversations()) == sorted(titles)
    assert all(len(store.load_conversation(info.id).conversation.messages) == 6 for info in store.list_conversations())
    store.close()


def test_a_damaged_page_of_the_conversations_table_keeps_their_messages(tmp_path):
    """New-user re-trial: a damaged leaf of the conversations table lost every chat (0 of 300), though all
    their messages read. Their ids come from the messages too, and a conversation whose own row is lost
    is copied with its messages, untitled, its times its first and last message's."""
    from app.core.store import open_store

    path, titles = _chats_with_a_damaged_page(tmp_path, "conversations")
    store, notice = open_store(path)
    assert (notice.kind, notice.conversations_found, notice.conversations_copied) == (StoreNotice.DAMAGED, 40, 40)
    listed = store.list_conversations()
    assert len(listed) == 40 and {info.title for info in listed} <= {"", *titles}
    for info in listed:
        messages = store.load_conversation(info.id).conversation.messages
        assert len(messages) == 6 and info.created_at <= info.updated_at
        assert messages[0].content.startswith("message 0 of chat ")
    store.close()


def test_the_salvage_copies_every_table(tmp_path):
    """A table added by a later migration must be named in the salvage, or a damaged file's copy
    would lose it without a word."""
    from app.core.store import _CONVERSATION_ROWS

    with Store(tmp_path / "headroom.sqlite3") as store:
        tables = {row[0] for row in store._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {table for table, _rows in _CONVERSATION_ROWS}


def _future_file(tmp_path: Path, breaking: bool = False) -> tuple[Path, dict[str, bytes]]:
    """A store with one conversation, then marked as written by a newer Headroom (closed, so
    its WAL is checkpointed); breaking=True also renames a table this version reads."""
    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        cid = store.create_conversation("from the future")
        store.append_message(cid, Message(Role.USER, "hello from v3"))
    conn = sqlite3.connect(path)
    if breaking:
        conn.execute("ALTER TABLE messages RENAME TO turns")
    conn.execute("ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    return path, {p.name: p.read_bytes() for p in tmp_path.iterdir()}


def test_a_newer_store_opens_read_only_with_a_notice_and_is_never_written(tmp_path):
    from app.core.store import NewerSchemaError, open_store

    path, before = _future_file(tmp_path)
    with pytest.raises(NewerSchemaError) as refused:
        Store(path)
    assert (refused.value.found, refused.value.supported) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    store, notice = open_store(path)
    assert store.read_only and store.backup_path is None
    assert (notice.kind, notice.found, notice.supported, notice.shown) == (
        StoreNotice.NEWER, SCHEMA_VERSION + 1, SCHEMA_VERSION, True)
    [info] = store.list_conversations()
    assert info.title == "from the future"
    assert store.load_conversation(info.id).conversation.messages[0].content == "hello from v3"
    cid = store.create_conversation("this session")  # chats work, in memory only
    store.append_message(cid, Message(Role.USER, "not saved"))
    store.mark_interrupted()
    store.close()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # file untouched, no backup
    with Store(path, read_only=True) as again:
        assert [c.title for c in again.list_conversations()] == ["from the future"]


def test_a_newer_store_this_version_cannot_read_leaves_the_file_alone(tmp_path):
    from app.core.store import open_store

    path, before = _future_file(tmp_path, breaking=True)
    store, notice = open_store(path)
    assert store.read_only and (notice.kind, notice.shown) == (StoreNotice.NEWER, False)
    assert store.list_conversations() == []
    store.append_message(store.create_conversation("session"), Message(Role.USER, "hi"))
    store.close()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_database_that_cannot_be_written_opens_read_only_and_is_never_renamed(tmp_path, monkeypatch):
    """Trial 4: a read-only file (or folder) and one locked by another program stopped the app
    before its window. Neither is damaged: nothing is renamed, the history shows read-only."""
    from app.core import store as store_module
    from app.core.store import open_store

    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        store.append_message(store.create_conversation("kept"), Message(Role.USER, "hello"))
    before = {p.name for p in tmp_path.iterdir()}
    real_connect = store_module.connect

    def read_only_file(_path):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(store_module, "connect", read_only_file)
    store, notice = open_store(path)
    assert store.read_only and [c.title for c in store.list_conversations()] == ["kept"]
    assert (notice.kind, notice.path, notice.shown) == (StoreNotice.UNWRITABLE, path, True)
    assert isinstance(notice.error, OSError) and notice.error.errno == 30
    store.close()

    monkeypatch.setattr(store_module, "connect", real_connect)

    def locked(_self):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(Store, "mark_interrupted", locked)
    store, notice = open_store(path)
    assert store.read_only and (notice.kind, notice.shown) == (StoreNotice.UNWRITABLE, True)
    assert str(notice.error) == "database is locked"
    assert [c.title for c in store.list_conversations()] == ["kept"]
    store.close()
    assert {p.name for p in tmp_path.iterdir()} == before  # no ".damaged-…": a lock is not damage

    monkeypatch.setattr(store_module, "_read_only_copy", lambda _path: (_ for _ in ()).throw(OSError(13, "denied")))
    store, notice = open_store(path)  # not even readable: an empty session-only store
    assert store.list_conversations() == []
    assert (notice.kind, notice.shown) == (StoreNotice.UNWRITABLE, False)
    store.close()


def _full_disk(monkeypatch, error=None):
    """`connect` fails as SQLite does when the disk is full (`error`, default SQLITE_FULL's words);
    returns the function that frees space."""
    from app.core import store as store_module

    real = store_module.connect
    exc = error or sqlite3.OperationalError("database or disk is full")
    monkeypatch.setattr(store_module, "connect", lambda _path: (_ for _ in ()).throw(exc))
    return lambda: monkeypatch.setattr(store_module, "connect", real)


def _shm_full() -> sqlite3.OperationalError:
    """What opening an existing WAL database on a full tmpfs raised (measured): SQLITE_IOERR_SHMSIZE."""
    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = 4874
    return exc


def test_a_disk_full_at_start_keeps_the_file_as_the_store_and_writes_it_once_there_is_room(tmp_path, monkeypatch):
    """New-user trial 10: a full disk at start was taken for a read-only file; the store became a
    copy in memory for the whole session and nothing reached the file after space was freed."""
    from app.core.store import open_store

    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        store.append_message(store.create_conversation("kept"), Message(Role.USER, "hello"))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    free = _full_disk(monkeypatch, _shm_full())
    store, notice = open_store(path)
    assert (notice.kind, notice.path, notice.shown) == (StoreNotice.FULL, path, True)
    assert notice.error.sqlite_errorcode == 4874
    assert not store.read_only and store.waits_for_room
    [info] = store.list_conversations()  # read from a copy meanwhile
    assert info.title == "kept"
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        store.create_conversation("while full")
    with pytest.raises(sqlite3.OperationalError):
        store.append_message(info.id, Message(Role.USER, "while full"))
    assert [c.title for c in store.list_conversations()] == ["kept"]  # nothing landed in the copy
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    free()
    cid = store.create_conversation("after")
    store.append_message(cid, Message(Role.USER, "saved"))
    assert not store.waits_for_room and {c.title for c in store.list_conversations()} == {"kept", "after"}
    store.close()
    with Store(path) as again:
        assert [m.content for m in again.load_conversation(cid).conversation.messages] == ["saved"]
        assert again.load_conversation(info.id).conversation.messages[0].content == "hello"


def test_a_disk_full_at_start_with_no_file_yet_starts_it_once_there_is_room(tmp_path, monkeypatch):
    from app.core.store import open_store

    path = tmp_path / "data" / "headroom.sqlite3"
    free = _full_disk(monkeypatch)
    store, notice = open_store(path)
    assert (notice.kind, notice.shown) == (StoreNotice.FULL, True)  # nothing to show: nothing hidden
    assert not store.read_only and store.list_conversations() == []
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        store.create_conversation("while full")
    free()
    cid = store.create_conversation("first")
    store.close()
    with Store(path) as again:
        assert [(c.id, c.title) for c in again.list_conversations()] == [(cid, "first")]


def test_a_disk_full_at_start_that_keeps_the_file_unread_shows_it_once_there_is_room(tmp_path, monkeypatch):
    from app.core import store as store_module
    from app.core.store import open_store

    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        store.create_conversation("kept")
    real_copy = store_module._read_only_copy
    monkeypatch.setattr(store_module, "_read_only_copy", lambda _path: (_ for _ in ()).throw(_shm_full()))
    free = _full_disk(monkeypatch, _shm_full())
    store, notice = open_store(path)
    assert (notice.kind, notice.shown) == (StoreNotice.FULL, False) and not store.read_only
    assert store.list_conversations() == []
    free()
    monkeypatch.setattr(store_module, "_read_only_copy", real_copy)
    store.create_conversation("new")
    assert {c.title for c in store.list_conversations()} == {"kept", "new"}
    store.close()


def test_a_first_write_that_meets_a_full_disk_keeps_the_file(tmp_path, monkeypatch):
    """The file opened, but its first write found no room: the store is the file, not a copy."""
    from app.core.store import open_store

    path = tmp_path / "headroom.sqlite3"
    Store(path).close()
    real = Store.mark_interrupted

    def full(_self):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Store, "mark_interrupted", full)
    store, notice = open_store(path)
    assert (notice.kind, notice.shown) == (StoreNotice.FULL, True)
    assert not store.read_only and not store.waits_for_room
    monkeypatch.setattr(Store, "mark_interrupted", real)
    cid = store.create_conversation("saved")
    store.close()
    with Store(path) as again:
        assert [c.id for c in again.list_conversations()] == [cid]


def test_a_full_disk_with_a_newer_or_unreadable_file_opens_as_before(tmp_path, monkeypatch):
    """A full disk changes nothing for a file from a newer Headroom (read-only copy) nor for one
    that cannot be read for another reason (UNWRITABLE, session only)."""
    from app.core import store as store_module
    from app.core.store import open_store

    path, _ = _future_file(tmp_path)
    _full_disk(monkeypatch)
    store, notice = open_store(path)
    assert store.read_only and (notice.kind, notice.found) == (StoreNotice.NEWER, SCHEMA_VERSION + 1)
    store.close()
    monkeypatch.setattr(store_module, "_read_only_copy", lambda _path: (_ for _ in ()).throw(OSError(13, "denied")))
    store, notice = open_store(path)
    assert store.read_only and (notice.kind, notice.shown) == (StoreNotice.UNWRITABLE, False)
    store.close()


@pytest.mark.parametrize(("exc", "full"), [
    (sqlite3.OperationalError("database or disk is full"), True),
    (_shm_full(), True),
    (OSError(28, "No space left on device"), True),
    (OSError(122, "Disk quota exceeded"), True),
    (sqlite3.OperationalError("disk I/O error"), False),
    (sqlite3.OperationalError("attempt to write a readonly database"), False),
    (sqlite3.OperationalError("database is locked"), False),
    (OSError(30, "Read-only file system"), False),
])
def test_disk_full_tells_a_full_disk_from_a_file_that_cannot_be_written(exc, full):
    from app.core.store import disk_full

    assert disk_full(exc) is full


def test_a_backup_cut_off_is_removed(tmp_path):
    """On a full disk a half-written backup is no backup, and each write would leave another."""
    from app.core.store import backup_before_migration

    class FullDisk:
        def backup(self, _target):
            raise sqlite3.OperationalError("database or disk is full")

    with pytest.raises(sqlite3.OperationalError):
        backup_before_migration(FullDisk(), tmp_path / "headroom.sqlite3", 3)
    assert list(tmp_path.iterdir()) == []


def test_a_migration_is_preceded_by_a_timestamped_backup(tmp_path):
    path = tmp_path / "headroom.sqlite3"
    conn = connect(path)
    migrate(conn, target=1)
    conn.execute("INSERT INTO conversations VALUES (7, 'old chat', 1.0, 2.0, '{}')")
    conn.close()
    with Store(path) as store:
        backup = store.backup_path
        assert backup is not None and backup.parent == tmp_path
        assert backup.name.startswith("headroom.sqlite3.v1-") and backup.name.endswith("Z.bak")
        assert mode(backup) == 0o600
    old = sqlite3.connect(backup)
    assert old.execute("PRAGMA user_version").fetchone()[0] == 1
    assert old.execute("SELECT title FROM conversations").fetchall() == [("old chat",)]
    old.close()
    with Store(path) as again:  # already current: no second backup
        assert again.backup_path is None
    assert len(list(tmp_path.glob("*.bak"))) == 1


def test_a_new_file_needs_no_backup(tmp_path):
    with Store(tmp_path / "headroom.sqlite3") as store:
        assert store.backup_path is None and not store.read_only
    assert list(tmp_path.glob("*.bak")) == []


def test_a_failed_migration_keeps_the_backup_and_the_old_schema(tmp_path, monkeypatch):
    from app.core import store as store_module

    path = tmp_path / "headroom.sqlite3"
    conn = connect(path)
    migrate(conn, target=1)
    conn.execute("INSERT INTO conversations VALUES (7, 'old chat', 1.0, 2.0, '{}')")
    conn.close()
    monkeypatch.setattr(store_module, "MIGRATIONS", [store_module._V1, ["ALTER TABLE nowhere ADD x"]])
    with pytest.raises(sqlite3.OperationalError):
        Store(path)
    [backup] = tmp_path.glob("*.bak")
    for file in (path, backup):
        db = sqlite3.connect(file)
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        assert db.execute("SELECT title FROM conversations").fetchall() == [("old chat",)]
        db.close()


def test_a_newer_store_left_with_a_wal_is_read_with_it(tmp_path):
    """The newer version still running (or crashed): its last writes are only in the -wal."""
    from app.core.store import open_store

    path, _before = _future_file(tmp_path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("INSERT INTO conversations (title, created_at, updated_at) VALUES ('only in the wal', 3, 3)")
    assert path.with_name(path.name + "-wal").stat().st_size > 0
    store, notice = open_store(path)
    assert (notice.kind, notice.shown) == (StoreNotice.NEWER, True)
    assert sorted(c.title for c in store.list_conversations()) == ["from the future", "only in the wal"]
    store.close()
    writer.close()


def test_reply_stats_round_trip_and_a_damaged_row_shows_none(store):
    from app.core.conversation import ReplyStats

    stats = ReplyStats(812, 40, 772, 12, 0.25, 10.0, "compiled", "bfloat16", "Llama · cuda:0")
    cid, (q, a) = _chat(store, "q", "a")
    store.update_message(a.id, stats=stats)
    store.update_message(a.id, status=MessageStatus.STOPPED)  # other updates keep the stats
    assert store.load_conversation(cid).conversation.messages[1].stats == stats
    copy = store.copy_branch(cid, a.id, "copy")
    assert store.load_conversation(copy).conversation.messages[1].stats == stats
    reply = Message(Role.ASSISTANT, "b", stats=stats)
    store.append_message(cid, reply, parent_id=q.id)
    assert store.load_conversation(cid).conversation.messages[1].stats == stats
    damaged = json.dumps({"prompt_tokens": "many"})
    store._conn.execute("UPDATE messages SET stats_json = ? WHERE id = ?", (damaged, reply.id))
    assert store.load_conversation(cid).conversation.messages[1].stats is None
    store._conn.execute("UPDATE messages SET stats_json = 'not json' WHERE id = ?", (reply.id,))
    assert store.load_conversation(cid).conversation.messages[1].stats is None
    assert ReplyStats.from_json({**stats.to_json(), "from_the_future": 1}) == stats


def _v5_file(path: Path) -> None:
    """A store as the release before attachments wrote it (schema v5: branches, summaries per
    branch, pinned notes, answer stats), built with that release's migrations and its rows."""
    conn = connect(path)
    assert migrate(conn, target=5) == 5
    conn.execute("INSERT INTO conversations (id, title, created_at, updated_at, settings_json, active_message_id,"
                 " pinned_notes) VALUES (3, 'Capitals', 1.0, 9.0, '{\"preset\": \"Precise\"}', 24, 'Be brief.')")
    stats = json.dumps({"prompt_tokens": 40, "prefilled_tokens": 40, "reused_tokens": 0, "new_tokens": 3,
                        "ttft_s": 0.2, "tokens_per_s": 11.0, "decode_path": "eager", "kv_precision": "float32",
                        "backend": "SmolLM2 · cpu"})
    #   20 q ─ 21 a ─ 22 q2 ─ 23 a2
    #        └ 24 a (regenerated, active)
    for mid, parent, role, text, stats_json in [(20, None, "user", "Capital of France?", None),
                                                (21, 20, "assistant", "Paris.", stats),
                                                (22, 21, "user", "And Spain?", None),
                                                (23, 22, "assistant", "Madrid.", None),
                                                (24, 20, "assistant", "It is Paris.", stats)]:
        conn.execute("INSERT INTO messages (id, conversation_id, position, role, content, status, created_at,"
                     " parent_id, stats_json) VALUES (?, 3, ?, ?, ?, 'complete', ?, ?, ?)",
                     (mid, mid - 20, role, text, float(mid), parent, stats_json))
    conn.execute("INSERT INTO summaries (conversation_id, through_message_id, content, tokens)"
                 " VALUES (3, 21, 'Asked about France.', 6)")
    conn.close()


def test_migration_from_the_current_release_loses_nothing_and_new_features_work_on_it(tmp_path):
    from app.core.attached_document import ExtractedDocument

    path = tmp_path / "headroom.sqlite3"
    _v5_file(path)
    with Store(path) as store:
        assert store.backup_path is not None and ".v5-" in store.backup_path.name
        loaded = store.load_conversation(3)
        assert [(m.id, m.content) for m in loaded.conversation.messages] == [(20, "Capital of France?"),
                                                                            (24, "It is Paris.")]
        assert loaded.versions == [(1, 1), (2, 2)] and loaded.info.message_count == 2
        assert loaded.conversation.messages[1].stats.backend == "SmolLM2 · cpu"
        assert loaded.pinned_notes == "Be brief." and loaded.settings == {"preset": "Precise"}
        assert all(m.documents == () and m.sources == () for m in loaded.conversation.messages)
        store.set_active_message(3, 21)  # the older branch with its summary, as it was
        older = store.load_conversation(3)
        assert [m.content for m in older.conversation.messages] == ["Capital of France?", "Paris.", "And Spain?",
                                                                    "Madrid."]
        assert older.summary == SummaryState("Asked about France.", 1, 6)
        assert len(store.message_tree(3).parents) == 5
        question = Message(Role.USER, "And Italy?", documents=(ExtractedDocument("atlas.txt", "text", "Rome."),))
        store.append_message(3, question)  # what this version adds works on the old file
        assert store.load_conversation(3).conversation.messages[-1].documents[0].text == "Rome."
    backup = sqlite3.connect(next(tmp_path.glob("headroom.sqlite3.v5-*.bak")))
    assert backup.execute("PRAGMA user_version").fetchone()[0] == 5
    assert backup.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 5
    backup.close()


def test_documents_and_sources_go_with_their_message_into_a_branch_and_can_be_removed(store):
    from app.core.attached_document import ExtractedDocument
    from app.core.document_prompt import Citation

    doc = ExtractedDocument("manual.pdf", "pdf", "page one\fpage two", (0, 9), 2048, None)
    cid = store.create_conversation("t")
    question = Message(Role.USER, "q", documents=(doc, ExtractedDocument("b.txt", "text", "b", (), 1, "utf-8")))
    store.append_message(cid, question)
    source = Citation("manual.pdf", 2, "Intro", 2, 9, 17, "page two")
    store.append_message(cid, Message(Role.ASSISTANT, "a", sources=(source,)))
    copy = store.copy_branch(cid, question.id + 1, "t (branch)")
    branched = store.load_conversation(copy).conversation.messages
    assert branched[0].documents == question.documents and branched[0].documents[0].pages == 2
    assert branched[1].sources == (source,)
    assert store.remove_document(question.id, 0).name == "manual.pdf"
    assert [d.name for d in store.load_conversation(cid).conversation.messages[0].documents] == ["b.txt"]
    assert [d.name for d in store.load_conversation(copy).conversation.messages[0].documents] == ["manual.pdf",
                                                                                                  "b.txt"]
    with pytest.raises(KeyError):
        store.remove_document(question.id, 5)
    store._conn.execute("UPDATE messages SET sources_json = '[{\"name\": 3}]' WHERE id = ?", (question.id + 1,))
    assert store.load_conversation(cid).conversation.messages[1].sources == ()  # damaged: shown without


def test_removing_a_document_drops_its_excerpts_text_from_the_answers_for_good(tmp_path):
    """Product trial: a file removed for privacy left its words in the sources under earlier
    answers. They go (every version of the answer), the excerpts of another file stay, and the
    file on disk no longer holds the words once the store is closed."""
    from app.core.attached_document import ExtractedDocument
    from app.core.document_prompt import Citation

    path = tmp_path / "headroom.sqlite3"
    secret = Citation("vault.txt", 3, "Codes", 2, 40, 80, "The vault code is 4711-SECRET.")
    other = Citation("manual.pdf", 1, "Intro", None, 0, 20, "Read me first.")
    with Store(path) as store:
        cid = store.create_conversation("t")
        question = Message(Role.USER, "code?", documents=(ExtractedDocument("manual.pdf", "pdf", "Read me first."),
                                                         ExtractedDocument("vault.txt", "text", "x 4711-SECRET")))
        store.append_message(cid, question)
        store.append_message(cid, Message(Role.ASSISTANT, "It is 4711.", sources=(other, secret)))
        store.append_message(cid, Message(Role.ASSISTANT, "4711.", sources=(secret,)), parent_id=question.id)
        assert store.remove_document(question.id, 1).name == "vault.txt"
    with Store(path) as store:  # reopened: what was committed
        tree = store.message_tree(cid)
        answers = [store.load_conversation(cid).conversation.messages[1]]
        store.set_active_message(cid, tree.children(question.id)[0])
        answers.append(store.load_conversation(cid).conversation.messages[1])
        assert sorted(a.content for a in answers) == ["4711.", "It is 4711."]  # the answers' own text stays
        gone = Citation("vault.txt", 3, "", 2, 40, 80, "", removed=True)
        assert {a.content: a.sources for a in answers} == {"It is 4711.": (other, gone), "4711.": (gone,)}
        assert gone.label == "vault.txt #3, page 2, removed attachment"
    assert b"SECRET" not in path.read_bytes()


def test_a_markdown_export_names_a_removed_file_once_and_json_keeps_each_excerpt(store):
    """Product trial: the export listed "big.txt #381, removed attachment; …" 13 times where the
    window shows one "big.txt (removed attachment)"."""
    from app.core.document_prompt import Citation

    cid = store.create_conversation("t")
    store.append_message(cid, Message(Role.USER, "sum it up"))
    big = [Citation("big.txt", n, "", None, n * 100, n * 100 + 90, "", removed=True) for n in range(381, 394)]
    kept = Citation("manual.pdf", 17, "", 12, 0, 20, "Read me first.")
    store.append_message(cid, Message(Role.ASSISTANT, "It says …", sources=(*big[:5], kept, *big[5:])))
    md = store.export_markdown(cid)
    assert "Sources: big.txt (removed attachment); manual.pdf #17, page 12\n" in md
    assert md.count("big.txt") == 1
    data = json.loads(store.export_json(cid))
    assert [(s["name"], s["chunk_id"], s["removed"]) for s in data["messages"][1]["sources"]] == \
        [("big.txt", n, True) for n in range(381, 386)] + [("manual.pdf", 17, False)] + \
        [("big.txt", n, True) for n in range(386, 394)]


def test_a_removed_document_is_restored_exactly(store):
    """Undo of a removal: the document is back in its place among the message's documents, every
    answer's sources hold their excerpts' words again, and the export is as before; a message
    deleted meanwhile is a KeyError."""
    from app.core.attached_document import ExtractedDocument
    from app.core.document_prompt import Citation

    docs = (ExtractedDocument("a.txt", "text", "alpha", (), 5, "utf-8"),
            ExtractedDocument("vault.pdf", "pdf", "code\fSECRET-9", (0, 5), 900, None),
            ExtractedDocument("c.txt", "text", "gamma", (), 5, "utf-8"))
    secret = Citation("vault.pdf", 1, "Codes", 2, 5, 13, "SECRET-9")
    cid = store.create_conversation("t")
    question = Message(Role.USER, "code?", documents=docs)
    store.append_message(cid, question)
    store.append_message(cid, Message(Role.ASSISTANT, "It is 4711.", sources=(secret,)))
    store.append_message(cid, Message(Role.ASSISTANT, "4711.", sources=(secret,)), parent_id=question.id)
    def exported():
        whole = json.loads(store.export_json(cid))
        del whole["updated_at"]  # the removal and its undo are changes to the chat
        return whole, store.export_markdown(cid)

    before = exported()
    removed = store.remove_document(question.id, 1)
    assert removed.name == "vault.pdf" and "SECRET-9" not in store.export_json(cid)
    store.restore_document(removed)
    assert store.load_conversation(cid).conversation.messages[0].documents == docs
    assert exported() == before
    again = store.remove_document(question.id, 2)  # the newest row: its id is free to take again
    store.append_message(cid, Message(Role.USER, "more", documents=(docs[0],)))
    store.restore_document(again)  # its id taken meanwhile: it goes last, where it was
    assert store.load_conversation(cid).conversation.messages[0].documents == docs
    removed = store.remove_document(question.id, 0)
    store._conn.execute("DELETE FROM messages WHERE id = ?", (question.id,))
    with pytest.raises(KeyError):
        store.restore_document(removed)


def test_note_proposals_are_kept_per_conversation_across_a_reopen_and_purged_with_it(tmp_path):
    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        cid, other = store.create_conversation("t"), store.create_conversation("u")
        store.append_message(cid, Message(Role.USER, "q"))
        before = store.list_conversations()
        store.set_note_proposals(cid, ["Budget is 1,200 euros.", "Ada lives in Lisbon.", "Flights at 9."],
                                 {"Flights at 9.", "It rains."})
        assert store.list_conversations() == before  # a proposal does not move the conversation
        with pytest.raises(KeyError):
            store.set_note_proposals(99, ["x"], set())
    with Store(path) as store:
        assert store.note_proposals(cid) == (["Budget is 1,200 euros.", "Ada lives in Lisbon."],
                                             {"Flights at 9.", "It rains."})
        assert store.note_proposals(other) == ([], set())
        store.set_note_proposals(cid, ["Ada lives in Lisbon."], {"It rains."})  # one accepted, one dismissed
        assert store.note_proposals(cid) == (["Ada lives in Lisbon."], {"It rains."})
        store.delete_conversation(cid)
        assert store.note_proposals(cid) == (["Ada lives in Lisbon."], {"It rains."})  # undo brings them back
        store.purge_deleted()
        assert store.note_proposals(cid) == ([], set())
        assert store._conn.execute("SELECT COUNT(*) FROM note_proposals").fetchone()[0] == 0


def test_a_v8_file_upgrades_to_note_proposals_and_document_fits_without_loss(tmp_path):
    from app.core.store_attachments import FitNote

    path = tmp_path / "headroom.sqlite3"
    conn = connect(path)
    assert migrate(conn, target=8) == 8
    conn.execute("INSERT INTO conversations (id, title, created_at, updated_at, pinned_notes, kv_precision)"
                 " VALUES (4, 'Trip', 1.0, 2.0, 'Be brief.', '8-bit')")
    conn.execute("INSERT INTO messages (id, conversation_id, position, role, content, status, created_at)"
                 " VALUES (1, 4, 0, 'user', 'Plan a trip', 'complete', 1.5)")
    conn.execute("UPDATE conversations SET active_message_id = 1 WHERE id = 4")
    conn.execute("INSERT INTO attachments (message_id, name, kind, text) VALUES (1, 'plan.txt', 'text', 'Lisbon')")
    conn.close()
    with Store(path) as store:
        assert store.backup_path is not None and ".v8-" in store.backup_path.name
        loaded = store.load_conversation(4)
        assert [m.content for m in loaded.conversation.messages] == ["Plan a trip"]
        assert loaded.conversation.messages[0].documents[0].text == "Lisbon"
        assert (loaded.pinned_notes, loaded.kv_precision) == ("Be brief.", "8-bit")
        assert store.note_proposals(4) == ([], set()) and loaded.document_fits == {}
        store.set_note_proposals(4, ["Lisbon in May."], set())
        assert store.note_document_fit(1, "plan.txt", FitNote("whole", 2, 2))
    with Store(path) as store:
        assert store.note_proposals(4) == (["Lisbon in May."], set())
        assert store.load_conversation(4).document_fits == {1: (("plan.txt", FitNote("whole", 2, 2)),)}


def test_how_a_document_went_into_its_turn_is_kept_with_it(tmp_path):
    from app.core.attached_document import ExtractedDocument
    from app.core.store_attachments import FitNote

    path = tmp_path / "headroom.sqlite3"
    whole, retrieved = FitNote("whole", 8, 8), FitNote("retrieved", 1200, 220000, 3, 900)
    with Store(path) as store:
        cid = store.create_conversation("t")
        question = Message(Role.USER, "q", documents=(ExtractedDocument("note.md", "text", "n"),
                                                      ExtractedDocument("manual.pdf", "pdf", "m")))
        store.append_message(cid, question)
        assert store.load_conversation(cid).document_fits == {}
        assert store.note_document_fit(question.id, "note.md", FitNote("retrieved", 5, 8, 1, 2))
        assert store.note_document_fit(question.id, "note.md", whole)  # the last turn's replaces it
        assert store.note_document_fit(question.id, "manual.pdf", retrieved)
        assert not store.note_document_fit(question.id, "other.txt", whole)
        assert not store.note_document_fit(question.id + 5, "note.md", whole)
    with Store(path) as store:
        assert store.load_conversation(cid).document_fits == {question.id: (("note.md", whole),
                                                                            ("manual.pdf", retrieved))}
        copy = store.copy_branch(cid, question.id, "t (branch)")
        branched = store.load_conversation(copy)
        assert branched.document_fits == {branched.conversation.messages[0].id: (("note.md", whole),
                                                                                 ("manual.pdf", retrieved))}
        removed = store.remove_document(question.id, 0)
        assert store.load_conversation(cid).document_fits == {question.id: (("manual.pdf", retrieved),)}
        store.restore_document(removed)
        assert store.load_conversation(cid).document_fits[question.id][0] == ("note.md", whole)
        store._conn.execute("UPDATE attachments SET fit_json = '{\"mode\": 1}' WHERE name = 'manual.pdf'")
        assert store.load_conversation(cid).document_fits == {question.id: (("note.md", whole),)}  # damaged: unsaid
        assert store.load_conversation(copy).document_fits != {}
        store.delete_conversation(cid)
        store.purge_deleted()
        assert store._conn.execute("SELECT COUNT(*) FROM attachments WHERE message_id = ?",
                                   (question.id,)).fetchone()[0] == 0


def test_an_answers_stop_reason_is_kept_and_older_rows_have_none(store):
    """Trial 8: why an answer ended ("length": max_new_tokens) is kept in its stats_json: no new
    column and no migration; a row written before it was kept reads as "" (not said)."""
    from app.core.conversation import ReplyStats

    cid, (_q, a) = _chat(store, "q", "a")
    store.update_message(a.id, stats=ReplyStats(12, 12, 0, 64, 0.25, 10.0, stop_reason="length"))
    assert store.load_conversation(cid).conversation.messages[1].stats.stop_reason == "length"
    older = {"prompt_tokens": 12, "prefilled_tokens": 12, "reused_tokens": 0, "new_tokens": 64, "ttft_s": 0.25,
             "tokens_per_s": 10.0, "decode_path": "eager", "kv_precision": "float32", "backend": "SmolLM2 · cpu"}
    store._conn.execute("UPDATE messages SET stats_json = ? WHERE id = ?", (json.dumps(older), a.id))
    assert store.load_conversation(cid).conversation.messages[1].stats.stop_reason == ""
    assert ReplyStats.from_json({**older, "stop_reason": 7}).stop_reason == ""  # damaged: not said


def test_a_refusal_is_kept_with_its_message_until_forgotten(store, tmp_path):
    """Why a turn was refused comes back when the chat is loaded again (new-user trial: the red
    notice was gone after a restart); None forgets it; a damaged value loads as none."""
    cid = store.create_conversation("Logs")
    mid = store.append_message(cid, Message(Role.USER, "A very long pasted log"))
    refusal = {"cause": "positions", "reason": "too long", "reason_kind": "message",
               "facts": {"message": 40_020, "room": 7_168}, "max_new_tokens_fit": None}
    store.note_refusal(mid, refusal)
    store.close()
    with Store(tmp_path / "headroom.sqlite3") as again:
        assert again.load_conversation(cid).refusals == {mid: refusal}
        again.note_refusal(mid, None)
        assert again.load_conversation(cid).refusals == {}
        again._conn.execute("UPDATE messages SET refusal_json = '{not json' WHERE id = ?", (mid,))
        assert again.load_conversation(cid).refusals == {}
        with pytest.raises(KeyError):
            again.note_refusal(mid + 1, refusal)


class _FullAtCommit:
    """A connection whose COMMIT fails as on a full disk (SQLite writes the WAL then), having
    rolled back (`rolls_back`, as SQLITE_FULL usually does) or leaving the transaction open."""

    def __init__(self, conn, rolls_back):
        self._conn, self._rolls_back = conn, rolls_back

    def execute(self, sql, *args):
        if sql == "COMMIT":
            if self._rolls_back:
                self._conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


@pytest.mark.parametrize("rolls_back", [True, False])
def test_a_write_that_fails_at_commit_leaves_no_trace_and_the_next_one_works(store, rolls_back):
    """New-user trial, disk full: the failed message kept the row id its COMMIT never wrote, and
    the next message stored got that id too."""
    cid = store.create_conversation("chat")
    store.append_message(cid, Message(Role.USER, "kept"))
    real = store._conn
    store._conn = _FullAtCommit(real, rolls_back)
    lost = Message(Role.USER, "not stored")
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        store.append_message(cid, lost)
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        store.rename_conversation(cid, "renamed")
    assert lost.id is None and not real.in_transaction
    store._conn = real  # space freed
    later = Message(Role.USER, "stored later")
    store.append_message(cid, later)
    stored = store.load_conversation(cid)
    assert [m.content for m in stored.conversation.messages] == ["kept", "stored later"]
    assert stored.info.title == "chat"


def test_a_store_waiting_for_room_marks_the_cut_off_replies_once_its_file_opens(tmp_path, monkeypatch):
    """Start could not mark them (the disk was full): the first write that opens the file does."""
    from app.core.store import open_store

    path = tmp_path / "headroom.sqlite3"
    with Store(path) as store:
        cid = store.create_conversation("crashed")
        store.append_message(cid, Message(Role.USER, "hi"))
        store.append_message(cid, Message(Role.ASSISTANT, "half an ans"))
        store._conn.execute("UPDATE messages SET status = 'streaming' WHERE role = 'assistant'")
    free = _full_disk(monkeypatch, _shm_full())
    store, notice = open_store(path)
    assert store.waits_for_room
    free()
    store.create_conversation("after")
    statuses = sqlite3.connect(path).execute("SELECT status FROM messages WHERE role = 'assistant'").fetchall()
    assert statuses == [("failed",)]
    store.close()


def test_a_migration_the_full_disk_stops_leaves_no_backup_behind(tmp_path, monkeypatch):
    """Each write retries the migration with a backup of its own: one the disk stopped is removed (review:
    every failed send left another whole copy); a migration that fails otherwise keeps its backup (above)."""
    from app.core import store as store_module

    path = tmp_path / "headroom.sqlite3"
    conn = connect(path)
    migrate(conn, target=1)
    conn.close()

    def full(_conn, target=None):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store_module, "migrate", full)
    for _ in range(3):
        with pytest.raises(sqlite3.OperationalError):
            Store(path)
    assert list(tmp_path.glob("*.bak")) == []


def test_a_folder_where_wal_cannot_be_used_keeps_sqlites_rollback_journal(tmp_path, monkeypatch, caplog):
    """SQLite answers `PRAGMA journal_mode = WAL` with the mode it kept where the file system cannot hold
    the WAL index (some network and FUSE mounts). That stopped the app at start (StoreError); now the
    store keeps the rollback journal, says so in the log, and its writes are kept as before."""
    import app.core.store as store_module

    class NoWal(sqlite3.Connection):
        def execute(self, sql, *args):
            if sql.replace(" ", "").upper() == "PRAGMAJOURNAL_MODE=WAL":
                return super().execute("PRAGMA journal_mode")  # what SQLite answers: the mode it kept
            return super().execute(sql, *args)

    real_connect = sqlite3.connect
    monkeypatch.setattr(store_module.sqlite3, "connect", lambda *a, **k: real_connect(*a, factory=NoWal, **k))
    path = tmp_path / "headroom.sqlite3"
    with caplog.at_level("WARNING"), Store(path) as store:
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        cid = store.create_conversation("kept")
        mid = store.append_message(cid, Message(Role.USER, "a message"))
    assert "could not use a WAL journal here; it keeps its delete journal" in caplog.text
    monkeypatch.setattr(store_module.sqlite3, "connect", real_connect)
    with Store(path) as again:
        assert again.message_text(mid) == "a message"
    assert not path.with_name(path.name + "-wal").exists()
