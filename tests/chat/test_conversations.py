"""Conversations: switching, settings per conversation, delete/undo, search, export."""

from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings, conversation_settings
from app.core.conversation import Message, MessageStatus, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from tests.chat.conftest import finished, record


def seed(store, topic, max_new_tokens=7, summary=None):
    cid = store.create_conversation(f"About {topic}", conversation_settings(
        GenerationSettings(max_new_tokens=max_new_tokens), BackendSettings()))
    store.append_message(cid, Message(Role.USER, f"Tell me about {topic}"))
    store.append_message(cid, Message(Role.ASSISTANT, f"An answer about {topic}"))
    if summary:
        store.save_summary(cid, summary)
    return cid


def test_opening_a_conversation_adopts_its_messages_settings_and_summary(chat):
    seen = chat.recorded
    cats = seed(chat.store, "cats", max_new_tokens=7, summary=SummaryState("Cats were discussed.", 1, 5))
    chat.conversations.open_conversation(cats)
    assert chat.conversation_id == cats and chat.settings.generation.max_new_tokens == 7
    assert [m.content for m in seen.of("conversation_loaded")[-1][0]] == ["Tell me about cats",
                                                                          "An answer about cats"]
    content, folded, tokens, cap = seen.of("summary_changed")[-1]
    assert (content, folded, tokens) == ("Cats were discussed.", 1, 5)
    assert cap == 2048 // 8  # no model yet: a 2,048-token context, an eighth reserved
    infos, current = seen.of("conversations_listed")[-1]
    assert [i.id for i in infos] == [cats] and current == cats


def test_switching_is_refused_while_a_reply_streams_and_new_chat_keeps_the_partial(chat):
    worker, seen = chat.worker, chat.recorded
    cats = seed(chat.store, "cats")
    chat.turns.send("hello")
    worker.token_streamed.emit(worker.last_id, "Hi th")
    chat.conversations.open_conversation(cats)
    assert seen.of("notice")[-1] == ("Stop the current reply before switching conversations.", "info")
    assert chat.conversation_id != cats
    first = chat.conversation_id
    chat.conversations.new_conversation()  # stops the reply; its partial answer is kept as stopped
    assert worker.stops == 1 and chat.conversation_id is None and chat.conversation.messages == []
    assert seen.names().count("conversation_cleared") == 1
    kept = chat.store.load_conversation(first).conversation.messages[-1]
    assert (kept.content, kept.status) == ("Hi th", MessageStatus.STOPPED)
    worker.reply_finished.emit(worker.requests[-1].request_id, finished("Hi th", "stopped"), record())
    assert chat.conversation.messages == []  # the late end of the old reply changes nothing


def test_delete_offers_undo_and_restore_brings_it_back(chat):
    seen = chat.recorded
    cats, dogs = seed(chat.store, "cats"), seed(chat.store, "dogs")
    chat.conversations.open_conversation(cats)
    chat.conversations.delete(cats)
    assert seen.of("conversation_deleted") == [(cats, "About cats")]
    assert chat.conversation_id is None
    assert [i.id for i in seen.of("conversations_listed")[-1][0]] == [dogs]
    chat.conversations.restore(cats)
    assert {i.id for i in seen.of("conversations_listed")[-1][0]} == {cats, dogs}
    chat.conversations.search("dogs")
    assert [i.id for i in seen.of("conversations_listed")[-1][0]] == [dogs]


def test_reopen_only_what_still_exists(chat):
    cats = seed(chat.store, "cats")
    assert not chat.conversations.reopen(cats + 1) and chat.conversation_id is None
    assert not chat.conversations.reopen(None)
    assert chat.conversations.reopen(cats) and chat.conversation_id == cats


def test_export_writes_the_file_or_says_why_not(chat, tmp_path):
    cats = seed(chat.store, "cats")
    assert chat.conversations.export_conversation(cats, "markdown", tmp_path / "cats.md")
    assert "Tell me about cats" in (tmp_path / "cats.md").read_text()
    assert not chat.conversations.export_conversation(cats, "json", tmp_path / "missing" / "cats.json")
    text, kind = chat.recorded.of("notice")[-1]
    assert kind == "error" and text.startswith("Could not export to") and "No such file" in text


def test_a_remote_conversation_watches_its_server_and_can_send_without_a_model(chat):
    seen = chat.recorded
    assert seen.of("can_send_changed")[-1] == (False,)  # local backend, no model
    remote = BackendSettings(REMOTE, RemoteSettings("http://127.0.0.1:9", "m"))
    chat.backend.apply_settings(GenerationSettings(max_new_tokens=5), remote)
    assert seen.of("can_send_changed")[-1] == (True,)
    assert seen.of("backend_changed")[-1] == (remote.remote.display,)
    assert chat.server_monitor.watching == remote.remote
    chat.backend.apply_settings(GenerationSettings(max_new_tokens=5), BackendSettings())
    assert seen.of("backend_changed")[-1] == (None,) and chat.server_monitor.watching is None


def test_each_conversation_keeps_one_cache_key_and_the_worker_hears_switches(chat):
    """The worker's kept KV caches are keyed by conversation (issue 12, item 5): a new chat gets
    a key that it keeps after the store gives it an id, opening it again activates that key,
    every turn names it, and deleting the chat lets the worker drop its cache."""
    worker = chat.worker
    cats = seed(chat.store, "cats")
    chat.turns.send("hello")
    started_key = worker.requests[-1].conversation_key
    new_id = chat.conversation_id
    worker.reply_finished.emit(worker.last_id, finished(), record())
    chat.conversations.open_conversation(cats)
    assert worker.activations[-1] == (f"stored-{cats}", chat.settings.generation.kept_chat_cache_mib)
    chat.conversations.open_conversation(new_id)
    assert worker.activations[-1][0] == started_key and chat.cache_key == started_key
    chat.turns.send("again")
    assert worker.requests[-1].conversation_key == started_key
    worker.reply_finished.emit(worker.last_id, finished(), record())
    chat.conversations.new_conversation()
    fresh = worker.activations[-1][0]
    assert fresh not in (started_key, f"stored-{cats}") and chat.cache_key == fresh
    chat.conversations.delete(new_id)
    assert worker.forgotten == [started_key]


def test_the_list_reorders_when_a_message_is_sent_not_at_the_next_click(chat):
    """New-user trial: the sidebar re-sorted when a chat was opened, under the pointer."""
    seen = chat.recorded
    older, newer = seed(chat.store, "cats"), seed(chat.store, "dogs")
    chat.conversations.open_conversation(older)
    assert [i.id for i in seen.of("conversations_listed")[-1][0]][:2] == [newer, older]
    chat.turns.send("More about cats")
    assert [i.id for i in seen.of("conversations_listed")[-1][0]][:2] == [older, newer]
