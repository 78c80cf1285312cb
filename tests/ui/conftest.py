import asyncio

import pytest
from qasync import QEventLoop

from app.core.settings import GenerationSettings, Settings
from app.core.store import Store
from app.ui.application import load_stylesheet
from app.ui.main_window import MainWindow
from app.ui.window_state import WindowState


@pytest.fixture(autouse=True)
def english(english_plurals):
    """Every test here reads English as the app shows it: "1 token", not "1 tokens"."""
    return english_plurals


@pytest.fixture
def qasync_loop(qapp):
    """qasync's loop over pytest-qt's QApplication: async slots run while qtbot waits."""
    qapp.setStyleSheet(load_stylesheet())
    loop = QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()  # joins qasync's executor threads (model loading runs there)
    asyncio.set_event_loop(None)


@pytest.fixture
def make_window(qtbot, qasync_loop, tmp_path):
    windows = []

    def make(max_new_tokens=64, temperature=0.0, store_path=None, context_tokens=0, settings=None):
        """settings: the whole Settings to start with (e.g. Settings(), a fresh install's); else
        built from the other arguments."""
        settings = settings or Settings(GenerationSettings(system_prompt="You are a helpful assistant.",
                                                           max_new_tokens=max_new_tokens,
                                                           temperature=temperature, context_tokens=context_tokens))
        # the layout and last conversation live in this test's folder: windows made in one test
        # share them (a restart), other tests never see them
        window = MainWindow(settings, store=Store(store_path or tmp_path / "headroom.sqlite3"),
                            window_state=WindowState(tmp_path / "session.ini"))
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.close()


@pytest.fixture
def make_fake_window(make_window, monkeypatch):
    """A MainWindow whose Chat runs on a FakeWorker (tests/helpers/fake_worker.py): the test plays
    the worker's part (`window.chat.worker.summary_started.emit(rid, 1)`) and every widget is real.
    Send is usable as with a model loaded."""
    from app.chat import open_chat
    from app.ui import main_window
    from tests.helpers.fake_worker import FakeWorker

    monkeypatch.setattr(main_window, "open_chat", lambda *args, **kw: open_chat(*args, worker=FakeWorker(), **kw))

    def make(**kw):
        window = make_window(**kw)
        window.composer.set_can_send(True)
        return window

    return make
