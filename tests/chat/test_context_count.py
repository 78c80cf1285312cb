"""The context meter's numbers (app.chat.context_count): from each turn's plan, and recounted by
the worker right after Summarize now, a pinned note and a switched version — not only at the
next turn."""

from types import SimpleNamespace

from PySide6.QtWidgets import QApplication

from app.core.history import SummaryState, TokenBudget, WindowResult, group_turns
from app.core.pinned_notes import NOTES_HEADER
from tests.chat.conftest import finished, model_folder, record, report


def window(messages, used, limit=400, kept=None):
    """A WindowResult keeping the newest `kept` turns of `messages` (all by default)."""
    turns = group_turns(messages)
    kept = len(turns) if kept is None else kept
    return WindowResult(True, (), tuple(turns[len(turns) - kept:]), tuple(turns[:len(turns) - kept]), used, limit,
                        0, TokenBudget(512, 16, 96))


def chat_with_model(make_chat):
    chat = make_chat()
    chat.report = report()
    return chat


def turn(chat, text, answer, used):
    """Send `text`; the worker plans it (`used` tokens) and answers `answer`."""
    worker = chat.worker
    chat.turns.send(text)
    plan = SimpleNamespace(window=window(chat.conversation.messages[:-1], used), projection=None)
    worker.turn_planned.emit(worker.last_id, plan)
    worker.token_streamed.emit(worker.last_id, answer)
    worker.reply_finished.emit(worker.last_id, finished(answer), record())


def settle():
    QApplication.processEvents()  # recounts wait for the event loop's next turn


def test_a_turn_is_counted_from_its_plan_then_with_its_answer(make_chat):
    chat = chat_with_model(make_chat)
    turn(chat, "What is a KV cache?", "Keys and values kept per token.", used=40)
    assert chat.recorded.of("context_counted") == [(40, 400, 1, 0)]
    settle()
    [request] = chat.worker.counts  # one count, though the turn's end changed several things
    assert [m.content for m in request.messages] == ["What is a KV cache?", "Keys and values kept per token."]
    chat.worker.window_counted.emit(request.request_id, window(chat.conversation.messages, 49))
    assert chat.recorded.of("context_counted")[-1] == (49, 400, 1, 0)


def test_pinning_a_note_recounts_at_once_with_the_note_in_the_prompt(make_chat):
    chat = chat_with_model(make_chat)
    turn(chat, "My flight leaves at 9:40.", "Noted.", used=30)
    settle()
    chat.worker.counts.clear()
    chat.notes.pin(0)
    settle()
    [request] = chat.worker.counts
    assert f"{NOTES_HEADER}\nMy flight leaves at 9:40." in request.settings.system_prompt
    assert [m.content for m in request.messages] == ["My flight leaves at 9:40.", "Noted."]
    chat.worker.window_counted.emit(request.request_id, window(chat.conversation.messages, 52))
    assert chat.recorded.of("context_counted")[-1] == (52, 400, 1, 0)


def test_summarize_now_recounts_when_the_summary_arrives(make_chat):
    chat = chat_with_model(make_chat)
    for i in range(3):
        turn(chat, f"q{i}", f"a{i}", used=20 * (i + 1))
    settle()
    chat.worker.counts.clear()
    chat.turns.summarize_now()
    summary_request = chat.worker.requests[-1]
    settle()
    assert chat.worker.counts == []  # nothing changed yet
    chat.worker.summary_finished.emit(summary_request.request_id, SummaryState("q0, q1 were asked.", 3, 6), "ok")
    settle()
    [request] = chat.worker.counts
    assert request.summary == SummaryState("q0, q1 were asked.", 3, 6)
    chat.worker.window_counted.emit(request.request_id, window(chat.conversation.messages, 31, kept=1))
    assert chat.recorded.of("context_counted")[-1] == (31, 400, 1, 2)  # 2 turns folded


def test_switching_a_version_recounts_the_path_shown(make_chat):
    chat = chat_with_model(make_chat)
    turn(chat, "Capital of France?", "Paris.", used=25)
    chat.turns.edit(0, "Capital of Spain?")
    chat.worker.reply_finished.emit(chat.worker.last_id, finished("Madrid."), record())
    settle()
    chat.worker.counts.clear()
    chat.conversations.switch_version(0, -1)
    settle()
    [request] = chat.worker.counts  # one count for the four changes switching makes
    assert [m.content for m in request.messages][0] == "Capital of France?"


def test_a_preset_or_another_model_recounts_with_the_new_settings(make_chat):
    chat = chat_with_model(make_chat)
    turn(chat, "Write a function", "def f(): pass", used=30)
    settle()
    chat.worker.counts.clear()
    chat.presets.apply("Code")
    settle()
    [request] = chat.worker.counts
    assert request.settings.system_prompt == chat.presets.library.get("Code").values["system_prompt"]
    chat.worker.model_changed.emit(report(name="other", max_positions=1024))
    settle()
    assert len(chat.worker.counts) == 2  # the other model's tokenizer and context count now


def test_stale_answers_and_turns_in_flight_are_not_counted(make_chat):
    chat = chat_with_model(make_chat)
    turn(chat, "q", "a", used=10)
    chat.notes.edit("one")
    settle()
    chat.notes.edit("two")
    settle()
    first, second = chat.worker.counts
    chat.worker.window_counted.emit(first.request_id, window(chat.conversation.messages, 11))
    assert chat.recorded.of("context_counted")[-1] == (10, 400, 1, 0)  # the stale answer is dropped
    chat.turns.send("next")
    chat.worker.window_counted.emit(second.request_id, window(chat.conversation.messages, 12))
    assert chat.recorded.of("context_counted")[-1] == (10, 400, 1, 0)  # a turn in flight counts itself
    chat.notes.edit("three")
    settle()
    assert len(chat.worker.counts) == 2


def test_without_a_model_nothing_is_asked(make_chat):
    chat = make_chat()
    chat.turns.send("q")
    chat.worker.reply_finished.emit(chat.worker.last_id, finished("a"), record())
    chat.notes.pin(0)
    settle()
    assert chat.worker.counts == []


def test_a_model_opened_with_a_custom_context_recounts_with_that_context(make_chat, tmp_path):
    """Product trial: the meter kept the previous context after a model opened with a Custom
    context, until the next turn. The worker announces the model (model_changed) before the
    chat knows its path (model_loaded): the count made then used the old model's context."""
    chat = chat_with_model(make_chat)
    turn(chat, "q", "a", used=10)
    settle()
    chat.worker.counts.clear()
    folder = model_folder(tmp_path / "model")
    chat.models.open_chosen(str(folder), chat.settings.permissions_for(folder), 2048)
    chat.worker.model_changed.emit(None)  # the open model is freed first
    settle()
    chat.worker.model_changed.emit(report(name="model", max_positions=8192))
    settle()  # queued across threads: the recount may run before model_loaded arrives
    chat.worker.model_loaded.emit(report(name="model", max_positions=8192))
    settle()
    assert chat.worker.counts and chat.worker.counts[-1].settings.context_tokens == 2048
    chat.worker.window_counted.emit(chat.worker.counts[-1].request_id, window(chat.conversation.messages, 12,
                                                                              limit=2048 - 16))
    assert chat.recorded.of("context_counted")[-1] == (12, 2032, 1, 0)


def test_a_context_edited_in_settings_recounts_with_that_context(make_chat, tmp_path):
    """The Settings dialog's context (for models without their own): the meter follows at once."""
    from dataclasses import replace

    chat = chat_with_model(make_chat)
    folder = tmp_path / "model"
    folder.mkdir()
    chat.model_path = folder
    turn(chat, "q", "a", used=10)
    settle()
    chat.worker.counts.clear()
    settings = chat.settings
    chat.backend.apply_settings(replace(settings.generation, context_tokens=300), settings.backend)
    chat.presets.settings_edited()  # as WindowDialogs.settings does after the dialog
    settle()
    assert chat.worker.counts and chat.worker.counts[-1].settings.context_tokens == 300


def test_a_file_attached_to_the_next_message_is_counted_with_it(qtbot, make_chat, tmp_path):
    """Trial 5: the meter left out the files attached to the message being written. Once a file
    is read the next prompt is counted with it (the worker tokenizes it), and again when it goes;
    reading progress and typing do not recount."""
    chat = chat_with_model(make_chat)
    turn(chat, "What is a KV cache?", "Keys and values kept per token.", used=40)
    settle()
    chat.worker.counts.clear()
    note = tmp_path / "note.md"
    note.write_text("# Vault\n\nThe pass code is 4711.\n", encoding="utf-8")
    chat.attachments.add([str(note)])
    qtbot.waitUntil(lambda: not chat.attachments.reading)
    settle()
    [request] = chat.worker.counts
    assert [d.name for d in request.documents] == ["note.md"]
    assert [m.content for m in request.messages] == ["What is a KV cache?", "Keys and values kept per token."]
    chat.worker.window_counted.emit(request.request_id, window(chat.conversation.messages, 70))
    assert chat.recorded.of("context_counted")[-1] == (70, 400, 1, 0)
    ticket = chat.recorded.of("attachment_changed")[-1][0]
    chat.attachments.remove(ticket)
    settle()
    assert len(chat.worker.counts) == 2 and chat.worker.counts[-1].documents == ()


def test_a_file_attached_to_a_new_chats_first_message_is_counted_and_cleared_when_removed(qtbot, make_chat,
                                                                                          tmp_path):
    """A tester: in a new chat the token line stayed empty with a file attached to the first
    message, which the first turn sends whole. The empty chat is counted with its documents (the
    worker counts them as an empty first turn carrying them); removed, the line is cleared."""
    chat = chat_with_model(make_chat)
    note = tmp_path / "note.md"
    note.write_text("# Vault\n\nThe pass code is 4711.\n", encoding="utf-8")
    chat.attachments.add([str(note)])
    qtbot.waitUntil(lambda: not chat.attachments.reading)
    settle()
    [request] = chat.worker.counts
    assert list(request.messages) == [] and [d.name for d in request.documents] == ["note.md"]
    chat.worker.window_counted.emit(request.request_id, window([], 31))
    assert chat.recorded.of("context_counted")[-1] == (31, 400, 0, 0)
    ticket = chat.recorded.of("attachment_changed")[-1][0]
    chat.recorded.clear()
    chat.attachments.remove(ticket)
    settle()
    assert len(chat.worker.counts) == 1 and chat.recorded.of("context_cleared")


def test_switching_the_backend_recounts_for_the_other_context(make_chat):
    """The meter kept the server's 3,072-token budget after the chat switched to the local model (and the
    other way round) until the next answer (a check after trial 15): the switch asks for a count now,
    with the backend it switched to."""
    from app.core.backend_settings import REMOTE, BackendSettings, RemoteSettings

    chat = chat_with_model(make_chat)
    turn(chat, "Hi", "Hello", 40)
    settle()
    asked = len(chat.worker.counts)
    remote = BackendSettings(REMOTE, RemoteSettings("http://gpu-box:8000/v1", "m"))
    chat.backend.apply_settings(chat.settings.generation, remote)
    settle()
    assert len(chat.worker.counts) == asked + 1 and chat.worker.counts[-1].backend == remote
    chat.backend.apply_settings(chat.settings.generation, BackendSettings())
    settle()
    assert len(chat.worker.counts) == asked + 2 and not chat.worker.counts[-1].backend.is_remote
