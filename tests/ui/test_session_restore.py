"""Restore on start: layout (geometry, docks, sidebar splitter) and the open conversation come
back; start-up notices appear once. `make_window` keeps session.ini in the test's folder, so two
windows made in one test are two starts of the app with the same config folder."""

from dataclasses import replace

from PySide6.QtCore import QRect, Qt

from app.core.conversation import Message, Role
from app.core.store import Store
from app.engine.loading.environment import read_environment
from app.engine.loading.startup_notices import startup_notices
from app.ui.notice import Notice
from tests.engine.test_startup_notices import CPU_BOX, GPU_BOX


def seed(db):
    """Two saved conversations (no model needed): returns their ids, oldest first."""
    ids = []
    with Store(db) as store:
        for topic in ("cats", "dogs"):
            cid = store.create_conversation(f"About {topic}")
            store.append_message(cid, Message(Role.USER, f"Tell me about {topic}"))
            store.append_message(cid, Message(Role.ASSISTANT, f"An answer about {topic}"))
            ids.append(cid)
    return ids


def notice_texts(window):
    return [n.text() for n in window.chat_view.findChildren(Notice)]


def test_layout_and_open_conversation_come_back_after_a_restart(qtbot, make_window, tmp_path):
    db = tmp_path / "chats.sqlite3"
    cats, dogs = seed(db)
    window = make_window(store_path=db)
    assert window.chat.conversation_id is None  # first start: nothing to restore
    # inside the offscreen platform's 800×600 screen: restoreGeometry moves a window back onto
    # the screen, as it should on a real desktop whose monitor changed
    window.setGeometry(QRect(20, 30, 770, 540))
    window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, window.vram_panel)
    window.splitter.setSizes([170, 300])
    qtbot.mouseClick(window.sidebar.list_widget.viewport(), Qt.MouseButton.LeftButton,
                     pos=window.sidebar.list_widget.visualItemRect(window.sidebar.item_for(cats)).center())
    assert window.chat.conversation_id == cats  # opened by a click, not the newest one
    geometry, sizes = window.geometry(), window.splitter.sizes()
    window.close()

    again = make_window(store_path=db)
    assert again.geometry() == geometry == QRect(20, 30, 770, 540)
    assert again.splitter.sizes() == sizes
    assert again.dockWidgetArea(again.vram_panel) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert again.chat.conversation_id == cats and again.sidebar.current_id() == cats
    assert [b.text for b in again.chat_view.bubbles()] == ["Tell me about cats", "An answer about cats"]
    assert dogs in again.sidebar.ids()


def test_the_open_conversation_comes_back_after_a_crash(qtbot, make_window, tmp_path):
    """Regression trial: after kill -9 the next start opened the chat open at the last clean close;
    the open chat is remembered as soon as it opens. The first window is never closed here."""
    db = tmp_path / "chats.sqlite3"
    cats, dogs = seed(db)
    window = make_window(store_path=db)
    window.sidebar.open_requested.emit(dogs)
    window.sidebar.open_requested.emit(cats)
    assert window.chat.conversation_id == cats
    again = make_window(store_path=db)  # a start after a crash: no close, no save at close
    assert again.chat.conversation_id == cats


def test_a_presets_file_that_could_not_be_read_is_said_in_the_chat_reopened_at_start(qtbot, make_window, tmp_path):
    """Trial 7: the notice was said, then the reopened chat emptied the transcript before anyone
    could read it, and the user's presets were just gone."""
    from app.core.presets import presets_path

    db = tmp_path / "chats.sqlite3"
    cats, _dogs = seed(db)
    window = make_window(store_path=db)
    window.sidebar.open_requested.emit(cats)
    window.close()
    presets_path().parent.mkdir(parents=True, exist_ok=True)
    presets_path().write_text('{"format": "headroom-presets", "presets": [', encoding="utf-8")  # cut short
    again = make_window(store_path=db)
    assert again.chat.conversation_id == cats and len(again.chat_view.bubbles()) == 2
    shown = [n.text() for n in again.chat_view.findChildren(Notice) if n.isVisible()]  # not one cleared away
    [said] = [text for text in shown if "presets could not be read" in text]
    assert "presets.unreadable-" in said and "built-in presets are used" in said


def test_a_hidden_memory_panel_and_a_new_chat_are_restored_as_such(qtbot, make_window, tmp_path):
    db = tmp_path / "chats.sqlite3"
    cats, _ = seed(db)
    window = make_window(store_path=db)
    assert window.chat.worker.probe.kind == "cpu"
    assert not window.vram_panel.isVisible()  # a first start on a CPU-only machine: closed
    qtbot.mouseClick(window.headroom_badge, Qt.MouseButton.LeftButton)  # the status bar's gauge opens it
    assert window.vram_panel.isVisible() and window.memory_action.isChecked()
    window.close()

    shown = make_window(store_path=db)
    assert shown.vram_panel.isVisible() and shown.headroom_badge.isChecked()  # restored as left
    shown.sidebar.open_requested.emit(cats)
    shown.memory_action.trigger()  # the toolbar's Memory toggle hides the dock
    assert not shown.vram_panel.isVisible() and not shown.headroom_badge.isChecked()
    shown.new_chat_action.trigger()
    shown.close()

    again = make_window(store_path=db)
    assert not again.vram_panel.isVisible() and not again.memory_action.isChecked()
    assert again.chat.conversation_id is None and again.chat_view.bubbles() == []


def test_a_conversation_deleted_since_is_not_reopened(qtbot, make_window, tmp_path):
    db = tmp_path / "chats.sqlite3"
    cats, _ = seed(db)
    window = make_window(store_path=db)
    window.sidebar.open_requested.emit(cats)
    window.close()
    with Store(db) as store:
        store.delete_conversation(cats)
    again = make_window(store_path=db)
    assert again.chat.conversation_id is None and again.chat_view.bubbles() == []


def test_startup_notices_are_shown_once(qtbot, make_window):
    no_gpu = startup_notices(CPU_BOX)
    window = make_window()
    assert window.show_startup_notices(no_gpu) == no_gpu
    assert notice_texts(window) == [no_gpu[0].text]
    window.close()

    again = make_window()  # the next start: the same facts say nothing new
    assert again.show_startup_notices(no_gpu) == []
    assert notice_texts(again) == []
    no_bnb = startup_notices(replace(GPU_BOX, bitsandbytes=None, bitsandbytes_problem="not installed"))
    assert again.show_startup_notices(no_bnb) == no_bnb  # a new situation is explained
    assert notice_texts(again) == [no_bnb[0].text]


def test_check_environment_explains_this_machine_in_the_chat(qtbot, make_window):
    expected = startup_notices(read_environment(probe_gpu=True))
    window = make_window()
    task = window.check_environment()  # an async slot called directly returns its task
    qtbot.waitUntil(task.done, timeout=15000)
    assert task.exception() is None
    assert notice_texts(window) == [n.text for n in expected]
    assert window.window_state.shown_notices() == {n.key for n in expected}
    if not read_environment().cuda_available:  # this CPU-only CI machine: the plain CPU message
        assert "runs models on the CPU" in " ".join(notice_texts(window))
