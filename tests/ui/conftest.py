import asyncio

import pytest
from qasync import QEventLoop

from app.core.settings import GenerationSettings, Settings
from app.core.store import Store
from app.ui.application import load_stylesheet
from app.ui.main_window import MainWindow
from app.ui.window_state import WindowState


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

    def make(max_new_tokens=64, temperature=0.0, store_path=None, context_tokens=0):
        settings = Settings(GenerationSettings(system_prompt="You are a helpful assistant.",
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
