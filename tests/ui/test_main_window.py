"""The window as a person uses it: open a model, type, press Enter, read the answer."""

from PySide6.QtCore import Qt

from app.core.conversation import MessageStatus, Role


def open_and_wait(qtbot, window, path, timeout=60000):
    with qtbot.waitSignal(window.model_ready, timeout=timeout):
        window.open_model(path)


def send(qtbot, window, text):
    qtbot.keyClicks(window.composer.editor, text)
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)


def test_asks_and_reads_paris_in_the_transcript(qtbot, make_window, real_model_path, tmp_path):
    window = make_window()
    open_and_wait(qtbot, window, real_model_path)
    assert "cpu" in window.status.model_label.text() and "sdpa" in window.status.model_label.text()
    with qtbot.waitSignal(window.turn_finished, timeout=60000) as blocker:
        send(qtbot, window, "What is the capital of France?")
    assert blocker.args == ["complete"]
    bubbles = window.chat_view.bubbles()
    assert [b.role for b in bubbles] == [Role.USER, Role.ASSISTANT]
    assert "Paris" in bubbles[1].text
    assert window.composer.editor.toPlainText() == ""
    assert "tok/s" in window.status.speed_label.text()
    assert window.composer.send_button.isEnabled()
    window.grab().save(str(tmp_path / "window.png"))
    assert (tmp_path / "window.png").stat().st_size > 10_000


def test_shift_enter_inserts_a_new_line(qtbot, make_window):
    window = make_window()
    qtbot.keyClicks(window.composer.editor, "line one")
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.composer.editor, "line two")
    assert window.composer.editor.toPlainText() == "line one\nline two"
    assert window.chat_view.bubbles() == []  # nothing sent (and no model loaded yet)


def test_stop_keeps_partial_answer_and_next_turn_starts(qtbot, make_window, real_model_folder):
    # the real model at ~10 tok/s: a 1,000-token story cannot finish before Stop is pressed
    window = make_window(max_new_tokens=1000, temperature=0.0)
    open_and_wait(qtbot, window, real_model_folder)
    send(qtbot, window, "Tell me a very long story about a dragon and a knight.")
    qtbot.waitUntil(lambda: len(window.chat.conversation.messages[-1].content) > 20, timeout=30000)
    with qtbot.waitSignal(window.turn_finished, timeout=10000) as blocker:
        qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["stopped"]
    stopped = window.chat.conversation.messages[-1]
    assert stopped.status is MessageStatus.STOPPED and stopped.content
    assert "stopped" in window.chat_view.bubbles()[-1]._header.text()
    window.chat.settings = type(window.chat.settings)(type(window.chat.settings.generation)(max_new_tokens=8))
    with qtbot.waitSignal(window.turn_finished, timeout=60000):
        send(qtbot, window, "Again")  # the next turn starts at once
    assert len(window.chat.conversation.messages) == 4


def test_bad_model_shows_a_clear_message_and_app_stays_usable(qtbot, make_window, tmp_path,
                                                              tiny_model_dir):
    window = make_window(max_new_tokens=5)
    open_and_wait(qtbot, window, tiny_model_dir)
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"not a gguf" * 50)  # the magic bytes, then junk: the converter finds it
    with qtbot.waitSignal(window.load_failed, timeout=30000) as blocker:
        window.open_model(bad)
    assert "cannot convert broken.gguf" in blocker.args[0]
    notices = [n.text() for n in window.chat_view.findChildren(type(window.chat_view.add_notice("x")))]
    # one plain line (what happened, what to do); the converter's words stay in the log
    # its version field is junk, no version a GGUF has: said as a damaged file, with its name
    assert any(text.startswith("broken.gguf: This GGUF file could not be read. The file may be incomplete or "
                               "damaged; download it again.") for text in notices)
    # the old model was released before the failed load; opening a good one works again
    open_and_wait(qtbot, window, tiny_model_dir)
    # random bytes are refused before the open model is freed (trial 6: it was unloaded and reloaded)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf" * 50)
    with qtbot.waitSignal(window.load_failed, timeout=5000) as blocker:
        window.open_model(junk)
    assert blocker.args[0] == "junk.gguf is not a GGUF file (no GGUF magic bytes)"
    assert window.chat.report is not None and window.composer.send_button.isEnabled()
    with qtbot.waitSignal(window.turn_finished, timeout=30000) as finished:
        send(qtbot, window, "hello")
    assert finished.args == ["stopped"]  # 5 random-weight tokens: cut off by max_new_tokens
    assert "max new tokens reached" in window.chat_view.bubbles()[-1]._header.text()


def test_conversations_survive_a_restart_of_the_window(qtbot, make_window, tiny_model_dir, tmp_path):
    db = tmp_path / "chats.sqlite3"
    window = make_window(max_new_tokens=6, store_path=db)
    open_and_wait(qtbot, window, tiny_model_dir)
    assert window.chat_bar.kv_combo.itemText(0) == "32-bit"  # float32 on the CPU, not "16-bit"
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        send(qtbot, window, "Remember the word zebra")
    answer = window.chat.conversation.messages[-1].content
    first_id = window.chat.conversation_id
    window.close()

    again = make_window(max_new_tokens=99, store_path=db)  # a restart, other default settings
    assert again.sidebar.ids() == [first_id]
    again.sidebar.open_requested.emit(first_id)
    assert again.chat.settings.generation.max_new_tokens == 6  # the conversation's own settings
    assert [m.content for m in again.chat.conversation.messages] == ["Remember the word zebra", answer]
    assert [b.text for b in again.chat_view.bubbles()] == ["Remember the word zebra", answer]


def test_regenerate_replaces_the_last_answer_in_window_and_store(qtbot, make_window, tiny_model_dir):
    window = make_window(max_new_tokens=6, temperature=1.0)
    open_and_wait(qtbot, window, tiny_model_dir)
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        send(qtbot, window, "hello")
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        window.chat_view.regenerate_requested.emit(1)
    stored = window.chat.store.load_conversation(window.chat.conversation_id).conversation.messages
    assert len(stored) == len(window.chat.conversation.messages) == 2
    assert stored[1].content == window.chat.conversation.messages[1].content
    assert len(window.chat_view.bubbles()) == 2


def test_continue_extends_a_stopped_answer_in_place(qtbot, make_window, real_model_folder):
    window = make_window(max_new_tokens=300)
    open_and_wait(qtbot, window, real_model_folder)
    send(qtbot, window, "Write a long poem about the sea.")
    qtbot.waitUntil(lambda: len(window.chat.conversation.messages[-1].content) > 30, timeout=60000)
    with qtbot.waitSignal(window.turn_finished, timeout=10000):
        window.composer.stop_requested.emit()
    partial = window.chat.conversation.messages[-1].content
    settings = window.chat.settings
    window.chat.settings = type(settings)(type(settings.generation)(max_new_tokens=5, temperature=0.0))
    with qtbot.waitSignal(window.turn_finished, timeout=60000) as finished:
        window.chat_view.continue_requested.emit(1)
    assert finished.args == ["stopped"]  # 5 more tokens of a long poem: cut off, Continue again
    assert "max new tokens reached" in window.chat_view.bubbles()[-1]._header.text()
    assert len(window.chat.conversation.messages) == 2 and len(window.chat_view.bubbles()) == 2
    continued = window.chat.conversation.messages[-1].content
    assert continued.startswith(partial) and len(continued) > len(partial)
    stored = window.chat.store.load_conversation(window.chat.conversation_id).conversation.messages
    assert stored[-1].content == continued


def test_refused_turn_offers_remedies_and_lowering_max_new_tokens_runs_it(qtbot, make_window, real_model_folder):
    """Issue 3 item 4: the turn does not start; the user picks a remedy and it runs."""
    from app.engine.memory.probe import FakeProbe

    window = make_window(max_new_tokens=4000)  # context "auto": memory admission still judges the turn
    weights = 538_060_288  # the default model's weights in float32, bytes
    # a simulated 1.33 GiB device: model + CUDA context leave ~350 MiB free, and 4,000 new
    # tokens of KV (177 MiB) + margin (256 MiB) do not fit
    window.chat.worker._probe_factory = lambda _device: FakeProbe(total=1363 * 2**20, allocated=weights)
    open_and_wait(qtbot, window, real_model_folder)
    with qtbot.waitSignal(window.turn_finished, timeout=30000) as refused:
        send(qtbot, window, "What is the capital of France?")
    assert refused.args == ["refused"]
    dialog = window.dialogs.admission_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert [m.role for m in window.chat.conversation.messages] == [Role.USER]  # nothing ran, nothing lost
    assert "lower_max_new_tokens" in dialog.buttons and "override" in dialog.buttons
    with qtbot.waitSignal(window.turn_finished, timeout=60000) as answered:
        qtbot.mouseClick(dialog.buttons["lower_max_new_tokens"], Qt.MouseButton.LeftButton)
    assert answered.args == ["complete"]
    assert "Paris" in window.chat.conversation.messages[-1].content


def test_memory_panel_is_live_and_diagnostics_are_saved(qtbot, make_window, tiny_model_dir, tmp_path):
    window = make_window(max_new_tokens=8)
    open_and_wait(qtbot, window, tiny_model_dir)
    qtbot.waitUntil(lambda: len(window.chat.monitor.history()) >= 2, timeout=5000)  # ~4 Hz sampling
    assert window.chat.monitor.latest().kind == "cpu"
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        send(qtbot, window, "hello")
    assert window.chat.turns.last_plan.projection.peak > window.chat.turns.last_plan.projection.now_allocated
    report = tmp_path / "diag.md"
    window.save_diagnostics(report)
    text = report.read_text()
    assert "sdpa+gqa-packed" in text and str(window.chat.turns.turn_records[-1].prompt_tokens) in text
    assert report.stat().st_mode & 0o777 == 0o600


def test_message_too_long_for_the_context_offers_lower_max_new_tokens_or_goes_back(qtbot, make_window,
                                                                                 tiny_model_dir):
    """A refusal the user cancels returns the text to the composer; history keeps no orphan."""
    # tiny model: 512 positions, reserve 64; 300 new tokens leave 148 for a message (500 would be
    # limited for this model's turns: app.core.new_tokens)
    window = make_window(max_new_tokens=300)
    open_and_wait(qtbot, window, tiny_model_dir)
    assert window.chat.settings.generation.max_new_tokens == 300
    message = "Tell me about cats and how they sleep. " * 20  # ~180 tokens
    with qtbot.waitSignal(window.turn_finished, timeout=30000) as refused:
        send(qtbot, window, message)
    assert refused.args == ["refused"]
    dialog = window.dialogs.admission_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert set(dialog.buttons) == {"attach", "lower_max_new_tokens", "cancel"}  # trimming cannot help
    qtbot.mouseClick(dialog.buttons["cancel"], Qt.MouseButton.LeftButton)
    assert window.chat.conversation.messages == [] and window.chat_view.bubbles() == []
    assert window.composer.editor.toPlainText() == message.strip()
    assert window.chat.conversation_id is None and window.chat.store.list_conversations() == []
    assert window.sidebar.ids() == []  # no empty chat left behind in the list (new-user trial)
    with qtbot.waitSignal(window.turn_finished, timeout=30000) as refused_again:
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    assert refused_again.args == ["refused"]
    dialog = window.dialogs.admission_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    with qtbot.waitSignal(window.turn_finished, timeout=60000) as answered:
        qtbot.mouseClick(dialog.buttons["lower_max_new_tokens"], Qt.MouseButton.LeftButton)
    assert answered.args in (["complete"], ["stopped"])  # eos, or cut off at the lowered limit
    assert [m.role for m in window.chat.conversation.messages] == [Role.USER, Role.ASSISTANT]


def shown_notices(window) -> list[str]:
    """The notices the transcript shows, top to bottom (withdrawn ones are gone at once)."""
    from app.ui.notice import Notice

    layout = window.chat_view._layout
    widgets = [layout.itemAt(i).widget() for i in range(layout.count())]
    return [w.text() for w in widgets if isinstance(w, Notice) and not w.isHidden()]


def test_a_cut_model_says_which_file_and_its_notice_goes_once_another_model_opens(qtbot, make_window, tmp_path,
                                                                                  tiny_model_dir):
    """New-user trial: a folder whose model.safetensors was cut short failed with
    "(SafetensorError)", and the notice then stayed at the top of the next chat although a
    different model had opened."""
    import shutil

    window = make_window(max_new_tokens=3)
    open_and_wait(qtbot, window, tiny_model_dir)
    cut, other = tmp_path / "cut", tmp_path / "other"
    shutil.copytree(tiny_model_dir, cut)
    shutil.copytree(tiny_model_dir, other)
    with open(cut / "model.safetensors", "r+b") as file:
        file.truncate((cut / "model.safetensors").stat().st_size // 2)
    report = window.chat.report
    with qtbot.waitSignal(window.load_failed, timeout=60000):  # refused by its header: the open model stays
        window.open_model(cut)
    said = ("cut: The weights file model.safetensors could not be read. The file may be incomplete or damaged; "
            "download it again.")
    qtbot.waitUntil(lambda: shown_notices(window) == [said], timeout=5000)
    assert window.chat.report is report
    with qtbot.waitSignal(window.turn_finished, timeout=30000) as answered:  # answered by the model kept open
        send(qtbot, window, "hi")
    assert answered.args[0] in ("complete", "stopped")
    open_and_wait(qtbot, window, other)
    assert shown_notices(window) == []
    with qtbot.waitSignal(window.turn_finished, timeout=30000):
        send(qtbot, window, "hello")
    assert shown_notices(window) == [] and [b.text for b in window.chat_view.bubbles()][::2] == ["hi", "hello"]


def test_a_missing_path_keeps_the_open_model(qtbot, make_window, tmp_path, tiny_model_dir):
    window = make_window(max_new_tokens=5)
    open_and_wait(qtbot, window, tiny_model_dir)
    report = window.chat.report
    with qtbot.waitSignal(window.load_failed, timeout=10000) as blocker:
        window.open_model(tmp_path / "nowhere")
    assert blocker.args[0] == f"no model at {tmp_path / 'nowhere'}"
    assert window.chat.report is report  # checked before unloading: nothing to reopen
    notices = [n.text() for n in window.chat_view.findChildren(type(window.chat_view.add_notice("x")))]
    assert f"There is no model at {tmp_path / 'nowhere'}. Pick another one in Open model." in notices


def test_export_proposes_the_chats_title_in_the_documents_folder_then_the_last_export_folder(
        qtbot, make_window, monkeypatch, tmp_path):
    """New-user trial: Export offered conversation.md in the current folder (the repository); a
    product trial: it then kept offering Documents, not the folder the user exported to."""
    from pathlib import Path

    from PySide6.QtWidgets import QFileDialog

    from app.chat.file_folders import documents_folder
    from app.core.conversation import Message, Role
    from app.core.last_folders import start_folder
    from app.core.settings import load_settings
    from app.ui.window_dialogs import export_name

    window = make_window()
    store = window.chat.store
    cid = store.create_conversation('Plans: "Q3" / budget?')
    store.append_message(cid, Message(Role.USER, "Hello"))
    window.sidebar.open_requested.emit(cid)
    chosen = tmp_path / "exports" / "plans.md"
    chosen.parent.mkdir()
    offered = []

    def pick(_parent, _title, proposed, _filters=""):
        offered.append(Path(proposed))
        return str(chosen), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", pick)
    window.dialogs.export_open()
    assert offered[0] == start_folder("", documents_folder(), Path.home()) / "Plans Q3 budget.md"
    assert chosen.read_text(encoding="utf-8").count("Hello") == 1
    window.dialogs.export_open()  # the next export starts where the last one went
    assert offered[1] == chosen.parent / "Plans Q3 budget.md"
    window.dialogs.export_conversation(cid, "json")  # the sidebar's Export too, with the title
    assert offered[2] == chosen.parent / "Plans Q3 budget.json"
    assert load_settings().last_folders.export == str(chosen.parent)  # and the next run
    assert export_name("...") == "conversation.md"
    # a title stored before titles were cleaned: no bidi override turning the name around, nothing invisible
    assert (export_name("Notes\u202etxt.exe"), export_name("\u200b\u3164")) == ("Notestxt.exe.md", "conversation.md")
    # trial 7: 75 emoji (303 bytes) proposed a name no file system takes, and the crash dialog came
    rockets = "🚀" * 75
    assert export_name(rockets) == "🚀" * 50 + ".md" and len(export_name(rockets).encode()) == 203
    store.rename_conversation(cid, rockets)
    chosen = tmp_path / "exports" / ("🚀" * 75 + ".md")  # a picker that returns it anyway
    window.dialogs.export_conversation(cid, "markdown")  # said, not a traceback
    assert [p.name for p in chosen.parent.iterdir()] == ["plans.md"] and window.isVisible()
    assert load_settings().last_folders.export == str(chosen.parent)
