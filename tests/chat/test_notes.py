"""Pinned notes (issue 17, item 5): saved with the conversation, sent in every prompt's system
message, pinned from a message, copied by a branch."""

from app.core.pinned_notes import NOTES_HEADER
from tests.chat.conftest import finished, record


def answer(chat, text):
    chat.worker.reply_finished.emit(chat.worker.last_id, finished(text), record())
    chat.conversation.messages[-1].content = text


def test_notes_written_before_the_first_message_are_sent_and_kept(chat):
    seen = chat.recorded
    chat.notes.edit("  The user's name is Ada.\n")
    assert seen.of("notes_changed")[-1] == ("The user's name is Ada.", (5 + 7) * 4 // 3)
    chat.turns.send("What is my name?")
    system = chat.worker.requests[-1].settings.system_prompt
    assert system == f"{chat.settings.generation.system_prompt}\n\n{NOTES_HEADER}\nThe user's name is Ada."
    assert chat.settings.generation.system_prompt not in ("", system)  # the setting itself is unchanged
    answer(chat, "Ada.")
    cid = chat.conversation_id
    assert chat.store.load_conversation(cid).pinned_notes == "The user's name is Ada."

    chat.conversations.new_conversation()
    assert chat.pinned_notes == "" and seen.of("notes_changed")[-1] == ("", 0)
    chat.turns.send("hello")
    assert NOTES_HEADER not in chat.worker.requests[-1].settings.system_prompt
    answer(chat, "hi")
    chat.conversations.open_conversation(cid)
    assert chat.pinned_notes == "The user's name is Ada."
    chat.turns.send("And again?")
    assert "Ada" in chat.worker.requests[-1].settings.system_prompt


def test_pin_adds_a_message_and_a_branch_keeps_the_notes(chat):
    chat.turns.send("My flight leaves at 9:40 from gate B12.")
    answer(chat, "Noted.")
    chat.notes.pin(0)
    chat.notes.pin(1)
    assert chat.pinned_notes == "My flight leaves at 9:40 from gate B12.\n\nNoted."
    source = chat.conversation_id
    assert chat.store.load_conversation(source).pinned_notes == chat.pinned_notes
    chat.conversations.branch_to_new_chat(0)
    assert chat.conversation_id != source and chat.pinned_notes.startswith("My flight")
    chat.notes.edit("")
    assert chat.store.load_conversation(chat.conversation_id).pinned_notes == ""
    assert chat.store.load_conversation(source).pinned_notes.startswith("My flight")


def test_a_pinned_answer_leaves_its_reasoning_behind(chat):
    """Notes go into every prompt: an answer is pinned as it is sent, without its "<think>" part."""
    chat.turns.send("My flight leaves at 9:40 from gate B12.")
    answer(chat, "<think>\nThe user states a fact to remember.\n</think>\n\nNoted: 9:40, gate B12.")
    chat.notes.pin(1)
    assert chat.pinned_notes == "Noted: 9:40, gate B12."
