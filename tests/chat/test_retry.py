"""Retry after a failed or crashed turn (new-user trial): the same question is asked again,
never sent twice; an empty failed answer goes, one with text stays as an older version."""

from PySide6.QtWidgets import QApplication

from app.core.conversation import Message, MessageStatus, Role
from app.core.store import Store
from tests.chat.conftest import finished, record


def contents(messages):
    return [m.content for m in messages]


def fail(chat, partial=""):
    worker = chat.worker
    if partial:
        worker.token_streamed.emit(worker.last_id, partial)
    worker.generation_failed.emit(worker.last_id, "no model is loaded", partial)


def test_retry_asks_the_same_question_once_and_drops_an_empty_failed_answer(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Capital of France?")
    worker.token_streamed.emit(worker.last_id, "Paris.")
    worker.reply_finished.emit(worker.last_id, finished("Paris."), record())
    chat.turns.send("And of Spain?")
    fail(chat)
    assert seen.of("notice")[-1] == ("No model is loaded. Open a model first (Open model…).", "retry")
    chat.turns.retry()
    request = worker.requests[-1]
    assert contents(request.messages) == ["Capital of France?", "Paris.", "And of Spain?"]  # sent once
    assert chat.turns.active and seen.of("messages_truncated")[-1] == (3,)
    worker.token_streamed.emit(worker.last_id, "Madrid.")
    worker.reply_finished.emit(worker.last_id, finished("Madrid."), record())
    stored = chat.store.load_conversation(chat.conversation_id)
    assert contents(stored.conversation.messages) == ["Capital of France?", "Paris.", "And of Spain?", "Madrid."]
    assert stored.info.message_count == 4 and chat.versions[-1] == (1, 1)  # the empty failure is gone


def test_a_failed_answer_with_text_stays_as_an_older_version(chat):
    worker = chat.worker
    chat.turns.send("Tell me a story")
    fail(chat, partial="Once upon a")
    chat.turns.retry()
    assert contents(worker.requests[-1].messages) == ["Tell me a story"]
    worker.token_streamed.emit(worker.last_id, "A dragon.")
    worker.reply_finished.emit(worker.last_id, finished("A dragon."), record())
    assert chat.versions == [(1, 1), (2, 2)]
    chat.conversations.switch_version(1, -1)
    assert chat.conversation.messages[-1].content == "Once upon a"


def test_retry_does_nothing_unless_the_last_answer_failed(chat):
    worker = chat.worker
    chat.turns.retry()  # empty chat
    chat.turns.send("hi")
    chat.turns.retry()  # a reply in flight
    worker.reply_finished.emit(worker.last_id, finished("hello"), record())
    chat.turns.retry()  # the answer is fine
    assert len(worker.requests) == 1


def test_a_conversation_cut_off_by_a_crash_offers_retry_when_opened(make_chat, tmp_path):
    db = tmp_path / "crashed.sqlite3"
    with Store(db) as store:
        cid = store.create_conversation("crashed")
        store.append_message(cid, Message(Role.USER, "Explain KV caches"))
        store.append_message(cid, Message(Role.ASSISTANT, "A KV cache keeps", MessageStatus.STREAMING))
    chat = make_chat(db="crashed.sqlite3")  # the store marks the cut-off answer failed at start
    chat.conversations.open_conversation(cid)
    QApplication.processEvents()  # said after the window has shown the transcript
    text, kind = chat.recorded.of("notice")[-1]
    assert kind == "retry" and text.startswith("The last answer did not finish")
    chat.turns.retry()
    assert contents(chat.worker.requests[-1].messages) == ["Explain KV caches"]


def test_a_failed_answer_says_its_own_reason_when_opened_again_and_in_its_export(make_chat, tmp_path):
    """Trial 15: after a restart a failed answer said "Headroom stopped, or the model failed", and the
    Markdown export "_(failed)_": the reason was gone (the row kept only the status). It is kept
    (messages.failure, schema v11), said again in the window's words, and cleared once the answer is
    continued to its end."""
    import json

    chat = make_chat(db="kept.sqlite3")
    worker = chat.worker
    chat.turns.send("Tell me a story")
    worker.token_streamed.emit(worker.last_id, "Once upon a")
    worker.generation_failed.emit(worker.last_id, "CUDA out of memory. Tried to allocate 2.00 GiB", "Once upon a")
    cid = chat.conversation_id
    said_then = chat.recorded.of("notice")[-1]
    assert said_then[0].startswith("The model ran out of memory during this answer.")
    chat.conversations.new_conversation()
    chat.conversations.open_conversation(cid)  # as after a restart: read back from the Store
    QApplication.processEvents()
    assert chat.recorded.of("notice")[-1] == said_then
    markdown = chat.store.export_markdown(cid)
    assert "_(failed: CUDA out of memory. Tried to allocate 2.00 GiB)_" in markdown
    assert json.loads(chat.store.export_json(cid))["messages"][-1]["failure"].startswith("CUDA out of memory")

    chat.turns.continue_reply(1)  # continued to its end: no longer failed, nor its reason kept
    worker.token_streamed.emit(worker.last_id, " time.")
    worker.reply_finished.emit(worker.last_id, finished(" time."), record())
    last = chat.store.load_conversation(cid).conversation.messages[-1]
    assert last.status is MessageStatus.COMPLETE and last.failure == ""
