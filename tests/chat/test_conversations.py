"""Conversations: switching, settings per conversation, delete/undo, search, export."""

import pytest

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


def test_an_opened_chat_s_settings_never_become_the_defaults(chat, tmp_path):
    """New-user trial: Settings saved 100 new tokens as the default; opening an older chat (7),
    then New chat, gave the new chat 7, and choosing a file then saved 7 over the default."""
    from dataclasses import replace

    from app.chat.file_folders import FileFolders
    from app.core.settings import load_settings

    chat.backend.apply_settings(replace(chat.settings.generation, max_new_tokens=100), BackendSettings())
    assert load_settings().generation.max_new_tokens == 100
    chat.conversations.open_conversation(seed(chat.store, "cats", max_new_tokens=7))
    assert chat.settings.generation.max_new_tokens == 7  # the old chat keeps its own
    FileFolders(chat).remember("attach", tmp_path)  # Attach… saves the folder it was picked in
    assert load_settings().generation.max_new_tokens == 100
    assert load_settings().last_folders.folder("attach") == str(tmp_path)
    chat.conversations.new_conversation()
    assert chat.settings.generation.max_new_tokens == 100 and chat.preset_name == ""
    chat.turns.send("hello")
    assert chat.worker.requests[-1].settings.max_new_tokens == 100


def test_a_reply_goes_on_into_its_own_chat_while_another_is_opened(chat):
    worker, seen = chat.worker, chat.recorded
    cats = seed(chat.store, "cats")
    chat.turns.send("hello")
    first = chat.conversation_id
    worker.token_streamed.emit(worker.last_id, "Hi th")
    chat.conversations.open_conversation(cats)  # allowed: the reply is not stopped
    assert chat.conversation_id == cats and worker.stops == 0
    assert seen.of("reply_elsewhere")[-1] == ("The answer in “hello” is still being written and will be saved "
                                              "there. Stop ends it; then you can send here.",)
    seen.clear()
    worker.token_streamed.emit(worker.last_id, "ere")
    assert seen.of("reply_streamed") == []  # nothing of it reaches the chat shown
    assert [m.content for m in chat.conversation.messages] == ["Tell me about cats", "An answer about cats"]
    chat.conversations.open_conversation(first)  # back: the reply still streams, with what came meanwhile
    assert [m.content for m in seen.of("conversation_loaded")[-1][0]] == ["hello", "Hi there"]
    assert seen.of("reply_started")[-1] == (True,)  # the transcript streams into it again
    assert seen.of("reply_elsewhere")[-1] == ("",)  # its own chat: no line about another
    chat.conversations.new_conversation()
    assert "“hello” is still being written" in seen.of("reply_elsewhere")[-1][0]  # any other chat says it
    worker.token_streamed.emit(worker.last_id, ".")
    worker.reply_finished.emit(worker.last_id, finished("Hi there."), record())
    assert seen.of("reply_stats") == [] and chat.conversation.messages == []  # the new chat is untouched
    assert seen.of("turn_ended")[-1] == ("complete",)  # Send is usable again
    assert seen.of("reply_elsewhere")[-1] == ("",)  # and the line about it goes
    kept = chat.store.load_conversation(first).conversation.messages
    assert [(m.content, m.status) for m in kept] == [("hello", MessageStatus.COMPLETE),
                                                     ("Hi there.", MessageStatus.COMPLETE)]
    assert kept[-1].stats is not None and chat.store.message_tree(first).parents[kept[-1].id] == kept[0].id


def test_a_notice_names_a_chat_as_the_list_shows_its_title(chat):
    """A title stored before titles were cleaned (control and bidi characters, line breaks) went into
    the notices as stored, while the list showed it cleaned (clean_title)."""
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("hello")
    chat.store.rename_conversation(chat.conversation_id, "Old\x1b[31m \u202etitle\n")
    worker.token_streamed.emit(worker.last_id, "Hi")
    chat.conversations.open_conversation(seed(chat.store, "cats"))
    assert seen.of("reply_elsewhere")[-1] == ("The answer in “Old[31m title” is still being written and will be "
                                              "saved there. Stop ends it; then you can send here.",)

def test_while_a_reply_is_written_elsewhere_edits_wait_and_deleting_its_chat_stops_it(chat):
    worker, seen = chat.worker, chat.recorded
    cats = seed(chat.store, "cats")
    chat.turns.send("hello")
    first = chat.conversation_id
    worker.token_streamed.emit(worker.last_id, "Hi th")
    chat.conversations.open_conversation(cats)
    chat.turns.regenerate(1)
    chat.turns.edit(0, "Tell me about lions")
    assert len(worker.requests) == 1 and seen.of("notice")[-1] == (
        "Wait for the answer being written to end, or stop it.", "status")
    assert [m.content for m in chat.conversation.messages] == ["Tell me about cats", "An answer about cats"]
    chat.conversations.delete(first)  # its reply stops; the partial answer is kept, as stopped
    assert worker.stops == 1 and not chat.turns.active and chat.conversation_id == cats
    kept = chat.store.load_conversation(first).conversation.messages[-1]
    assert (kept.content, kept.status) == ("Hi th", MessageStatus.STOPPED)
    worker.reply_finished.emit(worker.requests[-1].request_id, finished("Hi th", "stopped"), record())
    assert len(chat.conversation.messages) == 2  # the late end of the old reply changes nothing


def test_a_reply_refused_after_its_chat_was_left_keeps_the_question_and_opens_no_dialog(chat):
    from app.engine.memory.admission import AdmissionDecision

    worker, seen = chat.worker, chat.recorded
    cats = seed(chat.store, "cats")
    chat.turns.send("hello")
    first = chat.conversation_id
    chat.conversations.open_conversation(cats)
    worker.turn_refused.emit(worker.last_id, AdmissionDecision(False, "memory", "short by 1 MiB"))
    assert seen.of("turn_refused") == [] and seen.of("messages_truncated") == []
    assert seen.of("turn_ended")[-1] == ("refused",) and seen.of("notice")[-1][1] == "error"
    assert [m.content for m in chat.conversation.messages] == ["Tell me about cats", "An answer about cats"]
    assert [m.content for m in chat.store.load_conversation(first).conversation.messages] == ["hello"]


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
    assert chat.recorded.of("notice")[-1] == ("Exported to cats.md", "status")
    assert not chat.conversations.export_conversation(cats, "json", tmp_path / "missing" / "cats.json")
    text, kind = chat.recorded.of("notice")[-1]
    # the OS's English ("No such file or directory") was said in the Korean window too (trial 9)
    assert (text, kind) == (f"Could not export to {tmp_path / 'missing' / 'cats.json'}: the file or its folder "
                            "does not exist", "error")


def test_an_export_that_fails_midway_leaves_the_earlier_export_whole(chat, tmp_path, file_size_limit):
    """The export wrote straight into the file: a full disk mid-write left a cut-off file where a
    good export of the chat had been."""
    cats = seed(chat.store, "cats")
    path = tmp_path / "exports" / "cats.md"
    path.parent.mkdir()
    assert chat.conversations.export_conversation(cats, "markdown", path)
    good = path.read_text(encoding="utf-8")
    chat.store.append_message(cats, Message(Role.USER, "And dogs? " * 100))
    with file_size_limit(len(good.encode("utf-8")) // 2):
        assert not chat.conversations.export_conversation(cats, "markdown", path)
    assert path.read_text(encoding="utf-8") == good
    assert [p.name for p in path.parent.iterdir()] == ["cats.md"]  # no temp file left
    assert chat.recorded.of("notice")[-1] == (f"Could not export to {path}: the file is too large for this disk",
                                              "error")

def test_an_export_says_why_an_answer_stopped_as_the_window_does(chat, tmp_path):
    """New-user trial: an answer cut at max new tokens read "stopped: max new tokens reached" in
    the window but "_(stopped)_" in the Markdown export, as if the user had pressed Stop; the JSON
    said "stopped" alone too. Stop and a failure keep their own marks."""
    import json
    import re

    worker, seen = chat.worker, chat.recorded
    for question, reason in (("Write a poem", "length"), ("Write a story", "stopped")):
        chat.turns.send(question)
        worker.token_streamed.emit(worker.last_id, "Roses")
        worker.reply_finished.emit(worker.last_id, finished("Roses", reason), record(reason))
    chat.turns.send("Write a song")
    worker.token_streamed.emit(worker.last_id, "La")
    worker.generation_failed.emit(worker.last_id, "the GPU ran out of memory", "La")
    # the window's header: "stopped: <detail>", or "stopped" for Stop (app.ui.message_bubble)
    headers = [f"{status.value}: {detail}" if detail else status.value for status, detail in seen.of("reply_ended")[:2]]
    assert headers == ["stopped: max new tokens reached", "stopped"]
    assert chat.conversations.export_conversation(chat.conversation_id, "markdown", tmp_path / "a.md")
    marks = re.findall(r"^_\((.*)\)_$", (tmp_path / "a.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert marks == [*headers, "failed: the GPU ran out of memory"]  # its reason kept (Message.failure)
    assert chat.conversations.export_conversation(chat.conversation_id, "json", tmp_path / "a.json")
    messages = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))["messages"]
    assert [(m["status"], m.get("stop_reason")) for m in messages] == [
        ("complete", None), ("stopped", "length"), ("complete", None), ("stopped", "stopped"),
        ("complete", None), ("failed", None)]


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
    every turn names it, and a deleted chat's cache is dropped once its Undo is no longer offered
    (an Undo in time opens it with its cache still there)."""
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
    assert worker.forgotten == []  # Undo is still offered
    chat.conversations.restore(new_id)
    chat.conversations.open_conversation(new_id)
    assert worker.activations[-1][0] == started_key  # its kept cache, not a fresh prefill
    chat.conversations.delete(new_id)
    chat.conversations.end_undo(new_id)  # the offer ran out
    assert worker.forgotten == [started_key]
    chat.conversations.end_undo(new_id)
    assert worker.forgotten == [started_key]


def test_the_list_reorders_when_a_message_is_sent_not_at_the_next_click(chat):
    """New-user trial: the sidebar re-sorted when a chat was opened, under the pointer."""
    seen = chat.recorded
    older, newer = seed(chat.store, "cats"), seed(chat.store, "dogs")
    chat.conversations.open_conversation(older)
    assert [i.id for i in seen.of("conversations_listed")[-1][0]][:2] == [newer, older]
    chat.turns.send("More about cats")
    assert [i.id for i in seen.of("conversations_listed")[-1][0]][:2] == [older, newer]


def test_an_answer_that_ends_does_not_move_its_chat_in_the_list(chat):
    """Product trial: the chat that just answered jumped to the top of the list, under the
    pointer. The list follows what the user does (send, rename), not answers ending."""
    seen, worker = chat.recorded, chat.worker
    cats, dogs = seed(chat.store, "cats"), seed(chat.store, "dogs")
    chat.conversations.open_conversation(cats)
    chat.turns.send("More about cats")  # the user's own action: cats goes to the top
    assert [i.id for i in seen.of("conversations_listed")[-1][0]] == [cats, dogs]
    chat.conversations.open_conversation(dogs)  # while the answer is written in cats
    chat.conversations.rename(dogs, "Dogs, renamed")  # the user's own action: dogs to the top
    assert [i.id for i in seen.of("conversations_listed")[-1][0]] == [dogs, cats]
    worker.token_streamed.emit(worker.last_id, "Cats purr.")
    worker.reply_finished.emit(worker.last_id, finished("Cats purr."), record())
    infos, current = seen.of("conversations_listed")[-1]
    assert [i.id for i in infos] == [dogs, cats] and current == dogs  # the answer moved nothing
    assert [i.message_count for i in infos] == [2, 4]  # the count did follow
    assert chat.store.load_conversation(cats).conversation.messages[-1].content == "Cats purr."


def test_a_renamed_title_is_kept_to_200_characters(chat):
    """Trial 4: a 5,000-character title was stored whole."""
    cats = seed(chat.store, "cats")
    chat.conversations.rename(cats, "  " + "long title " * 500)
    [info] = [i for i in chat.store.list_conversations() if i.id == cats]
    assert len(info.title) == 200 and info.title.startswith("long title long")


def test_titles_drop_control_and_bidi_override_characters_and_keep_emoji_joiners():
    """Trial 7: a first message with NUL and U+202E showed a box in the sidebar and turned the rest of
    the title, "…" included, right to left."""
    from app.chat.conversations import auto_title

    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one emoji, joined by zero-width joiners
    assert auto_title("NUL[\x00] RTL[\u202ecba\u202c] ESC[\x1b] 안녕\u200b " + family + "\nsecond line") == (
        "NUL[] RTL[cba] ESC[] 안녕\u200b " + family)


def test_a_renamed_title_is_one_line(chat):
    """New-user trial 10: a title renamed with a line break kept it, and exports and file names took
    it. Every run of whitespace (line breaks of any kind, tabs) is one space; none at either end."""
    cats = seed(chat.store, "cats")
    chat.conversations.rename(cats, "\n 제목\n두 줄\t셋\r\n넷\u2028다섯\u2029여섯\x0b\x0c일곱\x85여덟  \x00 아홉\t\n")
    [info] = [i for i in chat.store.list_conversations() if i.id == cats]
    assert info.title == "제목 두 줄 셋 넷 다섯 여섯 일곱 여덟 아홉"
    assert chat.recorded.of("conversations_listed")[-1][0][0].title == info.title


def test_an_automatic_title_is_its_first_line_with_words_on_one_line():
    from app.chat.conversations import auto_title

    assert auto_title("\x00\n\n  Plan\tthe\u3000trip  \nsecond line") == "Plan the trip"
    assert auto_title("a\rb") == "a"  # a lone carriage return ends a line too
    assert auto_title(" \n\t") == ""


@pytest.mark.parametrize(("message", "title"), [
    ("```\nprint('hi')\n```\nWhat does this print?", "print('hi')"),
    ("```python\ndef f(): pass\n```", "def f(): pass"),  # a fence's language is not a title either
    ("~~~\n---\n***\n===\n?\n...\n# Plan the trip", "# Plan the trip"),
    ("| --- | --- |\n> hi", "> hi"),
    ("🎉", "🎉"),  # an emoji alone still names the chat
    ("x", "x"),
    ("```\n```", ""),
    ("\u200b", ""),
    ("\u200b\u200d\ufeff\u2060\u00ad\u3164\u2800\u0301\nsecond line", "second line"),
])
def test_an_automatic_title_skips_lines_without_words(message, title):
    """New-user trial 11: a first message that opened with a code fence titled the chat "```", and
    one of a zero-width space an invisible title."""
    from app.chat.conversations import auto_title

    assert auto_title(message) == title


def test_a_title_with_nothing_visible_is_untitled(chat):
    """New-user trial 11: a chat renamed to a zero-width space (U+200B) showed an invisible row in
    the list; it is untitled ("New chat") as a blank title is."""
    from app.chat.conversations import clean_title

    assert clean_title("\u200b") == clean_title("\u200b \u200c\u200d\ufeff\u2060\u00ad\u3164") == ""
    assert clean_title(" a\u200b ") == "a\u200b" and clean_title("\u200b🙂") == "\u200b🙂"
    cats = seed(chat.store, "cats")
    chat.conversations.rename(cats, "\u200b")
    [info] = [i for i in chat.store.list_conversations() if i.id == cats]
    assert info.title == ""
    chat.conversations.rename(cats, "\u200b" * 250 + "a")  # what is visible is past the 200 kept
    [info] = [i for i in chat.store.list_conversations() if i.id == cats]
    assert info.title == ""


def test_a_renamed_title_drops_control_characters_too(chat):
    cats = seed(chat.store, "cats")
    chat.conversations.rename(cats, "Trip\u202e plan\x00")
    [info] = [i for i in chat.store.list_conversations() if i.id == cats]
    assert info.title == "Trip plan"


@pytest.mark.parametrize("message, title", [
    ("Write a long C program that implements a linked list with insertion, deletion and search.",
     "Write a long C program that implements a linked list with…"),
    ("Write a long C program that implements a linked list withab and more", "Write a long C program that "
     "implements a linked list withab…"),  # the 59th character ends a word: kept
    ("x" * 100, "x" * 59 + "…"),  # one long word: cut where it must be
    ("짧은 제목", "짧은 제목"),
])
def test_a_long_first_line_is_titled_by_its_whole_words_and_an_ellipsis(message, title):
    """New-user trial: the title (and the export's file name) read "… a linked list with in"."""
    from app.chat.conversations import TITLE_CHARS, auto_title

    assert auto_title(message) == title and len(title) <= TITLE_CHARS
