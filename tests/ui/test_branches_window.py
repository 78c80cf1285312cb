"""Versions and branches in the window (issue 17, item 1), with a real (tiny) model: Edit keeps
the old version, the arrows switch, the engine's next prompt follows, Branch opens a new chat."""

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication


def open_and_wait(qtbot, window, path):
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        window.open_model(path)


def send(qtbot, window, text):
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        qtbot.keyClicks(window.composer.editor, text)
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)


def prompt_text(window) -> str:
    """What the engine put in the last turn's prompt (the window it selected)."""
    return "\n".join(m["content"] for m in window.chat.turns.last_plan.window.messages)


def test_edit_switch_and_branch_in_the_window(qtbot, make_window, tiny_model_dir):
    window = make_window(max_new_tokens=4)
    open_and_wait(qtbot, window, tiny_model_dir)
    send(qtbot, window, "Remember zebra")
    bubbles = window.chat_view.bubbles()
    bubbles[0].begin_edit()
    bubbles[0].editor.setPlainText("Remember giraffe")
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        qtbot.mouseClick(bubbles[0].save_button, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    first = window.chat_view.bubbles()[0]
    assert first.text == "Remember giraffe" and first.version_label.isVisible()
    assert first.version_label.text() == "2 / 2"

    qtbot.mouseClick(first.older_button, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    first = window.chat_view.bubbles()[0]
    assert first.text == "Remember zebra" and first.version_label.text() == "1 / 2"
    send(qtbot, window, "Which animal?")
    assert "zebra" in prompt_text(window) and "giraffe" not in prompt_text(window)

    source = window.chat.conversation_id
    window.chat_view.bubbles()[1].branch_action.trigger()
    assert window.chat.conversation_id != source and len(window.sidebar.ids()) == 2
    assert [b.text for b in window.chat_view.bubbles()][0] == "Remember zebra"
    assert len(window.chat_view.bubbles()) == 2


def test_pinned_notes_reach_the_prompt_and_the_meter(qtbot, make_window, tiny_model_dir):
    window = make_window(max_new_tokens=4)
    open_and_wait(qtbot, window, tiny_model_dir)
    send(qtbot, window, "Hello there")
    before = window.chat.turns.last_plan.window.prompt_tokens
    window.new_chat_action.trigger()
    qtbot.mouseClick(window.chat_bar.notes_button, Qt.MouseButton.LeftButton)
    dialog = window.dialogs.notes_dialog
    dialog.editor.setPlainText("The user's name is Ada and she lives in Lisbon.")
    assert "tokens in every prompt" in dialog.size_label.text()
    dialog.accept()
    assert window.chat_bar.notes_button.text().startswith("Notes · ≈")
    send(qtbot, window, "Hello there")
    plan = window.chat.turns.last_plan
    assert "she lives in Lisbon" in plan.window.messages[0]["content"]
    assert len(plan.window.kept) == 1 and plan.window.prompt_tokens >= before + 15  # counted in the budget
    assert "for pinned notes" in window.token_meter.text()
    window.chat_view.bubbles()[0].pin_action.trigger()
    assert window.chat.pinned_notes.endswith("Hello there")


def test_summarize_now_on_a_20_turn_chat_folds_with_a_marker_and_the_next_prompt_has_summary_and_notes(
        qtbot, make_window, tiny_model_dir):
    from app.core.conversation import Message, Role
    from app.core.history import SUMMARY_HEADER

    window = make_window(max_new_tokens=4)
    store = window.chat.store
    cid = store.create_conversation("twenty turns")
    for i in range(20):
        store.append_message(cid, Message(Role.USER, f"Fact {i}: item {i} is blue."))
        store.append_message(cid, Message(Role.ASSISTANT, f"Noted {i}."))
    store.set_pinned_notes(cid, "The user's name is Ada.")
    open_and_wait(qtbot, window, tiny_model_dir)
    window.sidebar.open_requested.emit(cid)
    assert window.chat_view.fold_marker is None
    with qtbot.waitSignal(window.chat.summarizing_changed, timeout=60000,
                          check_params_cb=lambda busy: not busy):
        qtbot.mouseClick(window.chat_bar.summarize_button, Qt.MouseButton.LeftButton)
    folded = window.chat.folded_turns()
    keep = window.chat.settings.generation.summary_keep_turns
    assert window.chat.summary.content and 1 <= folded <= 20 - keep
    marker = window.chat_view.fold_marker
    assert marker is not None and marker.folded_turns == folded
    assert store.load_conversation(cid).summary == window.chat.summary  # saved with the branch

    send(qtbot, window, "Which items are blue?")
    system = window.chat.turns.last_plan.window.messages[0]["content"]
    assert "The user's name is Ada." in system and SUMMARY_HEADER + window.chat.summary.content in system
    assert window.chat.turns.last_plan.window.kept[0].first_position > 2 * (folded - 1)


def test_a_preset_picked_in_the_bar_reaches_the_prompt(qtbot, make_window, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(tmp_path / "config"))
    window = make_window(max_new_tokens=4)
    open_and_wait(qtbot, window, tiny_model_dir)
    combo = window.chat_bar.preset_combo
    combo.activated.emit(combo.findData("Precise"))
    assert combo.currentText() == "Precise" and window.chat.settings.generation.top_k == 20
    send(qtbot, window, "Add two numbers")
    assert window.chat.turns.last_plan.window.messages[0]["content"].startswith("You are a precise assistant.")
    assert window.chat.store.load_conversation(window.chat.conversation_id).settings["preset"] == "Precise"


def test_each_answer_shows_its_stats_and_keeps_them_after_a_restart(qtbot, make_window, tiny_model_dir, tmp_path):
    db = tmp_path / "stats.sqlite3"
    window = make_window(max_new_tokens=4, store_path=db)
    open_and_wait(qtbot, window, tiny_model_dir)
    send(qtbot, window, "Hello there")
    answer = window.chat_view.bubbles()[1]
    stats = window.chat.conversation.messages[1].stats
    assert stats.new_tokens == 4 and stats.prompt_tokens == stats.prefilled_tokens + stats.reused_tokens
    assert stats.kv_precision == "float32" and stats.decode_path.startswith("eager")
    assert answer.stats_label.text().startswith("4 tokens · TTFT ")
    cid = window.chat.conversation_id
    window.close()
    again = make_window(store_path=db)
    again.sidebar.open_requested.emit(cid)
    assert again.chat_view.bubbles()[1].stats_label.text() == answer.stats_label.text()


def test_another_chat_opens_while_a_reply_streams_and_the_reply_is_kept_in_its_own(
        qtbot, make_window, tiny_model_dir, tmp_path):
    from app.ui.notice import Notice

    window = make_window(max_new_tokens=24, temperature=1.0)  # sampled: the tiny model rarely ends early
    open_and_wait(qtbot, window, tiny_model_dir)
    send(qtbot, window, "First chat")
    first = window.chat.conversation_id
    window.new_chat_action.trigger()
    send(qtbot, window, "Second chat")
    second = window.chat.conversation_id
    window.sidebar.open_requested.emit(first)
    grabbed = []

    def switch_on_first_token(_text):  # in the GUI thread, before the next token is taken in
        window.chat.reply_streamed.disconnect(switch_on_first_token)
        window.sidebar.open_requested.emit(second)
        QTimer.singleShot(100, lambda: grabbed.append(window.grab()))  # laid out, as the user sees it

    window.chat.reply_streamed.connect(switch_on_first_token)
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        qtbot.keyClicks(window.composer.editor, "Go on")
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: window.chat.conversation_id == second, timeout=30000)
        assert [b.text for b in window.chat_view.bubbles()][0] == "Second chat"
        assert window.composer.stop_button.isVisible()  # the model is busy: Stop is offered here
        assert "still being written" in window.chat_view.findChildren(Notice)[-1].text()
        assert not window.chat_view.bubbles()[-1].regenerate_button.isEnabled()
    qtbot.waitUntil(lambda: bool(grabbed))
    grabbed[0].save(str(tmp_path / "switch_while_streaming.png"))
    assert window.composer.send_button.isVisible() and window.chat_view.bubbles()[-1].regenerate_button.isEnabled()
    assert [b.text for b in window.chat_view.bubbles()][0] == "Second chat"
    kept = window.chat.store.load_conversation(first).conversation.messages
    assert [m.content for m in kept][:3] == [kept[0].content, kept[1].content, "Go on"] and kept[-1].content
    window.sidebar.open_requested.emit(first)
    assert window.chat_view.bubbles()[-1].text == kept[-1].content


def test_the_meter_follows_a_pin_a_version_switch_and_summarize_now_at_once(qtbot, make_window, tiny_model_dir):
    """The line under the composer says what the next prompt holds right after each change,
    counted by the model's tokenizer, without waiting for the next turn."""
    from app.core.conversation import Message, Role

    window = make_window(max_new_tokens=4)
    store, meter = window.chat.store, window.token_meter
    cid = store.create_conversation("six turns")
    for i in range(6):
        store.append_message(cid, Message(Role.USER, f"Fact {i}: item {i} is blue."))
        store.append_message(cid, Message(Role.ASSISTANT, f"Noted {i}."))
    last_question = store.load_conversation(cid).conversation.messages[-2].id
    parent = store.load_conversation(cid).conversation.messages[-3].id
    store.append_message(cid, Message(Role.USER, "Fact 5, told at length: " + "item five is very blue " * 20),
                         parent_id=parent)  # a second, much longer version of the last question
    store.append_message(cid, Message(Role.ASSISTANT, "Noted 5 again."))
    open_and_wait(qtbot, window, tiny_model_dir)

    def used() -> int:
        return int(meter.text().split(" / ")[0].replace(",", ""))

    window.sidebar.open_requested.emit(cid)
    qtbot.waitUntil(lambda: "6 turns in window" in meter.text(), timeout=10000)
    long_version = used()

    window.chat_view.bubbles()[10].older_button.click()  # the short version of the last question
    qtbot.waitUntil(lambda: used() < long_version - 50, timeout=10000)
    assert window.chat.conversation.messages[-2].id == last_question
    short_version = used()

    window.chat_view.bubbles()[0].pin_action.trigger()
    qtbot.waitUntil(lambda: "for pinned notes" in meter.text(), timeout=10000)
    assert used() > short_version  # the note is in every prompt
    pinned = used()

    with qtbot.waitSignal(window.chat.summarizing_changed, timeout=60000, check_params_cb=lambda busy: not busy):
        window.chat_bar.summarize_button.click()
    folded = window.chat.folded_turns()
    assert folded >= 1
    qtbot.waitUntil(lambda: f"{folded} folded into summary" in meter.text(), timeout=10000)
    kept = int(meter.text().split(" · ")[1].split(" turn")[0])
    assert kept == 6 - folded and used() != pinned
