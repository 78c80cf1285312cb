"""Versions and branches (issue 17, item 1): Edit and Regenerate keep what they replace, the
version arrows switch the path the next turn is built from, and a path can become a new chat."""

import json

from app.core.conversation import MessageStatus, Role
from app.core.history import SummaryState
from app.engine.memory.admission import AdmissionDecision
from tests.chat.conftest import finished, record


def answer(chat, text):
    worker = chat.worker
    worker.token_streamed.emit(worker.last_id, text)
    worker.reply_finished.emit(worker.last_id, finished(text), record())


def contents(messages):
    return [m.content for m in messages]


def test_edit_keeps_the_old_version_and_switching_changes_the_next_prompt(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Capital of France?")
    answer(chat, "Paris.")
    chat.turns.edit(0, "Capital of Spain?")
    assert contents(worker.requests[-1].messages) == ["Capital of Spain?"]
    assert seen.of("messages_truncated")[-1] == (0,)
    assert seen.of("versions_changed")[-1] == ([(2, 2), (1, 1)],)  # the reply being written counts
    answer(chat, "Madrid.")
    assert chat.versions == [(2, 2), (1, 1)]
    assert len(chat.store.message_tree(chat.conversation_id).parents) == 4  # nothing lost

    chat.turns.send("And its population?")
    assert contents(worker.requests[-1].messages) == ["Capital of Spain?", "Madrid.", "And its population?"]
    answer(chat, "About 3.3 million.")
    chat.conversations.switch_version(0, -1)
    assert contents(seen.of("conversation_loaded")[-1][0]) == ["Capital of France?", "Paris."]
    assert seen.of("versions_changed")[-1] == ([(1, 2), (1, 1)],)
    chat.turns.send("And its population?")
    assert contents(worker.requests[-1].messages) == ["Capital of France?", "Paris.", "And its population?"]
    answer(chat, "About 2.1 million.")

    chat.conversations.switch_version(0, +1)  # back: the newest replies under the Spain version
    assert contents(chat.conversation.messages) == [
        "Capital of Spain?", "Madrid.", "And its population?", "About 3.3 million."]
    chat.conversations.switch_version(0, +1)  # already the last version: nothing changes
    assert chat.versions == [(2, 2), (1, 1), (1, 1), (1, 1)]


def test_regenerate_keeps_the_old_answer(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Name a colour")
    answer(chat, "Blue.")
    chat.turns.regenerate(1)
    assert contents(worker.requests[-1].messages) == ["Name a colour"]
    assert seen.of("versions_changed")[-1] == ([(1, 1), (2, 2)],)
    answer(chat, "Green.")
    chat.conversations.switch_version(1, -1)
    assert contents(chat.conversation.messages) == ["Name a colour", "Blue."] and chat.versions[1] == (1, 2)


def test_a_refused_regenerate_given_up_shows_the_old_answer_again(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Name a colour")
    answer(chat, "Blue.")
    chat.turns.regenerate(1)
    decision = AdmissionDecision(admitted=False, cause="memory", reason="short by 1 MiB")
    worker.turn_refused.emit(worker.last_id, decision)
    assert contents(chat.conversation.messages) == ["Name a colour"]
    chat.turns.apply_remedy("cancel", decision)
    assert contents(chat.conversation.messages) == ["Name a colour", "Blue."]
    assert seen.of("text_withdrawn") == []  # the question was answered before: it stays
    assert chat.store.load_conversation(chat.conversation_id).info.message_count == 2


def test_a_message_sent_after_a_refused_regenerate_follows_the_old_answer(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Name a colour")
    answer(chat, "Blue.")
    chat.turns.regenerate(1)
    worker.turn_refused.emit(worker.last_id, AdmissionDecision(admitted=False, cause="memory", reason="short"))
    chat.turns.send("Another one?")  # the remedies left unanswered
    assert contents(worker.requests[-1].messages) == ["Name a colour", "Blue.", "Another one?"]
    assert seen.of("text_withdrawn") == []  # the question stays, with its answer
    answer(chat, "Red.")
    stored = chat.store.load_conversation(chat.conversation_id)
    assert contents(stored.conversation.messages) == ["Name a colour", "Blue.", "Another one?", "Red."]


def test_a_refused_fresh_message_given_up_goes_back_to_the_composer(chat):
    worker, seen = chat.worker, chat.recorded
    chat.turns.send("Name a colour")
    answer(chat, "Blue.")
    chat.turns.send("A very long question")
    decision = AdmissionDecision(admitted=False, cause="memory", reason="short by 1 MiB")
    worker.turn_refused.emit(worker.last_id, decision)
    chat.turns.apply_remedy("cancel", decision)
    assert seen.of("text_withdrawn") == [("A very long question",)]
    stored = chat.store.load_conversation(chat.conversation_id)
    assert contents(stored.conversation.messages) == ["Name a colour", "Blue."] and stored.info.message_count == 2


def test_branch_into_a_new_chat_copies_the_path(chat):
    seen = chat.recorded
    chat.turns.send("q1")
    answer(chat, "a1")
    chat.turns.send("q2")
    answer(chat, "a2")
    source = chat.conversation_id
    chat.conversations.branch_to_new_chat(1)
    assert chat.conversation_id != source
    assert contents(chat.conversation.messages) == ["q1", "a1"]
    assert contents(seen.of("conversation_loaded")[-1][0]) == ["q1", "a1"]
    infos, current = seen.of("conversations_listed")[-1]
    assert current == chat.conversation_id and [i.title for i in infos][0] == "q1 (branch)"
    chat.turns.send("q2 asked differently")
    assert contents(chat.worker.requests[-1].messages) == ["q1", "a1", "q2 asked differently"]
    assert contents(chat.store.load_conversation(source).conversation.messages) == ["q1", "a1", "q2", "a2"]


def test_export_follows_the_active_branch(chat, tmp_path):
    chat.turns.send("Name a colour")
    answer(chat, "Blue.")
    chat.turns.regenerate(1)
    answer(chat, "Green.")
    chat.conversations.export_conversation(chat.conversation_id, "json", tmp_path / "a.json")
    assert [m["content"] for m in json.loads((tmp_path / "a.json").read_text())["messages"]] == [
        "Name a colour", "Green."]
    chat.conversations.switch_version(1, -1)
    chat.conversations.export_conversation(chat.conversation_id, "markdown", tmp_path / "a.md")
    text = (tmp_path / "a.md").read_text()
    assert "Blue." in text and "Green." not in text


def test_a_summary_follows_the_branch_it_folded(chat):
    chat.turns.send("q1")
    answer(chat, "a1")
    chat.turns.send("q2")
    answer(chat, "a2")
    state = SummaryState("asked q1", 1, 4)
    chat.worker.summary_finished.emit(chat.worker.last_id, state, "ok")
    chat.turns.edit(0, "q1 again")  # the folded turn is left: its summary does not apply here
    assert chat.summary == SummaryState() and chat.worker.requests[-1].summary == SummaryState()
    answer(chat, "a1 again")
    chat.conversations.switch_version(0, -1)
    assert chat.summary == state


def test_a_three_level_branch_survives_a_restart(make_chat):
    chat = make_chat(db="restart.sqlite3")
    chat.turns.send("q1")
    answer(chat, "a1")
    chat.turns.send("q2")
    answer(chat, "a2")
    chat.turns.send("q3")
    answer(chat, "a3")
    chat.turns.regenerate(5)
    answer(chat, "a3 v2")
    chat.turns.edit(2, "q2 v2")
    answer(chat, "a2 under q2 v2")
    chat.turns.regenerate(1)
    answer(chat, "a1 v2")
    chat.conversations.switch_version(1, -1)
    chat.conversations.switch_version(2, -1)
    chat.conversations.switch_version(5, -1)
    path, versions, cid = contents(chat.conversation.messages), list(chat.versions), chat.conversation_id
    assert path == ["q1", "a1", "q2", "a2", "q3", "a3"] and versions == [(1, 1), (1, 2), (1, 2), (1, 1), (1, 1), (1, 2)]
    chat.close()

    again = make_chat(db="restart.sqlite3")
    again.conversations.open_conversation(cid)
    assert contents(again.conversation.messages) == path and again.versions == versions
    exported = json.loads(again.store.export_json(cid))  # the export holds the branch shown after the restart
    assert [m["content"] for m in exported["messages"]] == path
    markdown = again.store.export_markdown(cid)
    assert "a3 v2" not in markdown and "## Assistant\n\na3\n" in markdown
    again.conversations.switch_version(1, +1)
    assert contents(again.conversation.messages) == ["q1", "a1 v2"]
    assert all(m.status is MessageStatus.COMPLETE and m.role in (Role.USER, Role.ASSISTANT)
               for m in again.conversation.messages)


def test_a_summary_that_ends_after_a_switch_is_kept_for_its_own_branch(chat):
    worker = chat.worker
    chat.turns.send("q1")
    answer(chat, "a1")
    chat.turns.send("q2")
    answer(chat, "a2")
    chat.turns.regenerate(1)  # a second version of a1 …
    answer(chat, "a1 v2")
    chat.conversations.switch_version(1, -1)  # … back to a1 q2 a2
    chat.turns.send("q3")
    summarized = worker.last_id
    answer(chat, "a3")
    chat.conversations.switch_version(1, +1)  # the user moves on while the summary is written
    state = SummaryState("asked q1 and q2", 3, 6)
    worker.summary_finished.emit(summarized, state, "ok")
    assert chat.summary == SummaryState()  # not this branch's: not adopted here
    assert contents(chat.conversation.messages) == ["q1", "a1 v2"]
    chat.conversations.switch_version(1, -1)
    assert chat.summary == state  # saved with the branch it folded
    chat.turns.send("q4")
    answer(chat, "a4")
    source, summarized = chat.conversation_id, worker.last_id
    chat.conversations.new_conversation()
    worker.summary_finished.emit(summarized, SummaryState("asked q1 to q3", 5, 8), "ok")
    assert chat.summary == SummaryState()  # another conversation open: left alone …
    assert chat.store.load_conversation(source).summary == SummaryState("asked q1 to q3", 5, 8)  # … saved


def test_equal_messages_keep_their_own_places_in_the_tree(chat):
    """A new trial found "ok" sent twice (and a repeated answer) saved as a second first message:
    the reply's parent was looked up by equality, which ignores ids. Reopened, the chat must show
    every turn, in order, as one branch."""
    cats = chat.conversations
    for _ in range(2):
        chat.turns.send("ok")
        answer(chat, "Sure.")
    chat.turns.send("Name a fruit.")
    answer(chat, "Sure.")
    conversation_id = chat.conversation_id
    cats.new_conversation()
    cats.open_conversation(conversation_id)
    assert contents(chat.conversation.messages) == ["ok", "Sure.", "ok", "Sure.", "Name a fruit.", "Sure."]
    assert chat.versions == [(1, 1)] * 6


def test_switching_back_to_a_version_shows_the_answer_last_viewed_under_it(chat):
    chat.turns.send("q1")
    answer(chat, "a1")
    chat.turns.regenerate(1)
    answer(chat, "a1 v2")
    chat.turns.regenerate(1)
    answer(chat, "a1 v3")
    chat.conversations.switch_version(1, -1)  # the user reads v2 of the answer
    assert contents(chat.conversation.messages) == ["q1", "a1 v2"] and chat.versions[1] == (2, 3)
    chat.turns.edit(0, "q1 asked again")
    answer(chat, "another answer")
    chat.conversations.switch_version(0, -1)  # back to the first question: v2 of its answer, not v3
    assert contents(chat.conversation.messages) == ["q1", "a1 v2"] and chat.versions == [(1, 2), (2, 3)]
    chat.conversations.switch_version(0, +1)
    assert contents(chat.conversation.messages) == ["q1 asked again", "another answer"]


def test_the_sidebar_counts_the_branch_shown_not_every_version(chat):
    chat.turns.send("q1")
    answer(chat, "a1")
    for text in ("a1 v2", "a1 v3"):
        chat.turns.regenerate(1)
        answer(chat, text)
    infos, _ = chat.recorded.of("conversations_listed")[-1]
    assert [i.message_count for i in infos] == [2]  # four stored, two shown
    assert len(chat.store.message_tree(chat.conversation_id).parents) == 4


def test_a_branch_is_titled_after_its_own_first_message(chat):
    chat.turns.send("Capital of France?")
    answer(chat, "Paris.")
    chat.turns.edit(0, "Capital of Spain?")
    answer(chat, "Madrid.")
    source = chat.conversation_id
    chat.conversations.branch_to_new_chat(1)
    assert chat.store.load_conversation(chat.conversation_id).info.title == "Capital of Spain? (branch)"
    chat.conversations.rename(source, "Capitals")  # a title the user chose is kept
    chat.conversations.open_conversation(source)
    chat.conversations.branch_to_new_chat(1)
    assert chat.store.load_conversation(chat.conversation_id).info.title == "Capitals (branch)"
