"""The Chat itself: the one notice funnel, start-up, and closing completely — twice in one
process with real worker threads."""

import gc

import shiboken6
from PySide6.QtCore import QtMsgType

from app.chat import open_chat
from app.core.settings import Settings
from app.core.store import Store, StoreNotice


def test_every_expected_error_and_notice_goes_through_the_one_funnel(make_chat, tmp_path):
    chat = make_chat()
    chat.announce("a hint")
    chat.announce("a failure", "error")
    chat.models.open_model(tmp_path / "nowhere")
    chat.memory.save_diagnostics(tmp_path / "no-such-folder" / "diag.md")
    chat.worker.summary_failed.emit(1, "no model")
    chat.monitor.sampling_failed.emit("RuntimeError: NVML gone")
    kinds = [kind for _text, kind in chat.recorded.of("notice")]
    assert kinds == ["info", "error", "load", "error", "error", "warning"]  # "load": until a model opens
    chat.memory.save_diagnostics(tmp_path / "diag.md")
    assert chat.recorded.of("notice")[-1] == (f"Diagnostics saved to {tmp_path / 'diag.md'}", "status")


def test_diagnostics_that_cannot_be_saved_say_why_in_plain_words(make_chat, tmp_path):
    """Trial 9: a failed save said the OS's English ("No such file or directory"), in the Korean
    window too (app.chat.error_text.os_error_text)."""
    chat = make_chat()
    path = tmp_path / "no-such-folder" / "diag.md"
    assert not chat.memory.save_diagnostics(path)
    assert chat.recorded.of("notice")[-1] == (f"Could not save diagnostics to {path}: the file or its folder does "
                                              "not exist", "error")


def test_a_damaged_store_is_said_at_start(qapp, monkeypatch, tmp_path):
    from app.chat import chat as chat_module
    from tests.helpers.fake_worker import FakeWorker

    path = tmp_path / "new.sqlite3"
    notice = StoreNotice(StoreNotice.DAMAGED, path, kept="new.sqlite3.damaged-20260101-000000")
    monkeypatch.setattr(chat_module, "open_store", lambda: (Store(path), notice))
    chat = open_chat(Settings(), worker=FakeWorker())
    said = []
    chat.notice.connect(lambda text, kind: said.append((text, kind)))
    chat.start()
    chat.close()
    assert said == [("The conversation database could not be read: it is damaged or is not a database. It was kept "
                     "as new.sqlite3.damaged-20260101-000000 and a new one was started.", "error")]


def test_the_monitor_samples_the_workers_probe_and_follows_a_new_one(chat):
    from app.engine.memory.probe import FakeProbe

    assert chat.monitor.probe is chat.worker.probe and chat.monitor.is_active()
    probe = FakeProbe(total=24 << 30, allocated=1 << 30)
    chat.worker.probe_changed.emit(probe)
    assert chat.monitor.probe is probe and chat.monitor.sample_now().allocated == 1 << 30


def test_two_chats_with_real_threads_open_and_close_in_one_process(qapp, qtlog, tmp_path):
    """A second chat built after the first was closed (a second window in one process) starts
    and stops its worker and server-monitor threads cleanly; nothing warns about timers or
    threads, and closing twice is harmless."""
    for i in range(2):
        chat = open_chat(Settings(), Store(tmp_path / f"chat{i}.sqlite3"))
        chat.start()
        assert chat.thread.isRunning() and chat.monitor.is_active()
        chat.close()
        chat.close()
        assert chat.thread.isFinished() and not chat.monitor.is_active()
        assert not chat.server_monitor._thread.isRunning()
        shiboken6.delete(chat)  # destroys the QThreads now: Qt aborts if one still ran
        del chat
        gc.collect()
    bad = (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg)
    assert [r.message for r in qtlog.records if r.type in bad] == []


def test_a_summary_finished_just_before_quit_is_saved_not_lost_on_a_closed_store(make_chat, tmp_path):
    """Ctrl+Q while a summary is written (new-user trial): the worker's summary_finished is still
    queued when the window closes; it must be taken in before the store closes (it used to reach
    a closed database: a traceback, and the app stayed up without a window)."""
    import threading

    from app.core.conversation import Message, Role
    from app.core.history import SummaryState

    chat = make_chat(db="quit.sqlite3")
    cid = chat.store.create_conversation("summarized")
    chat.store.append_message(cid, Message(Role.USER, "Hi"))
    chat.conversations.open_conversation(cid)
    state = SummaryState("The user said hi.", folded_through=0, tokens=9)
    emitter = threading.Thread(target=lambda: chat.worker.summary_finished.emit(1, state, "ok"))
    emitter.start()  # from another thread: queued for the GUI thread, not yet delivered
    emitter.join()
    chat.close()
    stored = Store(tmp_path / "quit.sqlite3").load_conversation(cid)
    assert stored.summary.content == "The user said hi."


def test_settings_that_cannot_be_saved_are_said_once_and_still_apply(make_chat, tmp_path, monkeypatch):
    """Trial 4: a read-only config folder raised a traceback dialog at every model load."""
    from dataclasses import replace

    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").mkdir()  # the save's rename onto it fails, as on a read-only folder
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(config))
    chat = make_chat()
    chat.save_defaults(lambda settings: replace(settings, language="ko"))
    chat.save_defaults(lambda settings: replace(settings, appearance="dark"))
    said = [text for text, kind in chat.recorded.of("notice") if kind == "error"]
    # why, in the plain words exports use (app.chat.error_text.os_error_text), not the OS's English
    assert said == [f"Settings cannot be saved ({config / 'settings.json'}: it is a folder, not a file): changes "
                    "apply until Headroom closes."]
    assert sorted(p.name for p in config.iterdir()) == ["settings.json"]  # trial 5: the temp file was left behind
    assert (chat.defaults.language, chat.defaults.appearance) == ("ko", "dark")  # kept for this session
