"""Start the GUI: QApplication on qasync's event loop, stylesheet, excepthook, main window."""

import asyncio
import sys
from importlib import resources

from PySide6.QtWidgets import QApplication
from qasync import QEventLoop

from app.core.paths import default_model_path
from app.core.settings import Settings
from app.ui.excepthook import install_excepthook
from app.ui.main_window import MainWindow


def load_stylesheet() -> str:
    return resources.files("app.resources").joinpath("style.qss").read_text(encoding="utf-8")


def create_window(settings: Settings, model=None, device_preference: str = "auto",
                  store=None) -> MainWindow:
    """Build the main window and start opening `model` (or the default model) in the
    background. Must be called with a running QApplication and qasync loop. store: a
    conversation Store (default: the one in the user data folder)."""
    window = MainWindow(settings, device_preference, store)
    path = model or default_model_path()
    if model is None and not path.exists():
        window.chat_view.add_notice(
            f"The default model is not installed yet ({path}). Run "
            "`python -m app.install_model`, or open a model with Open model…", "error")
    else:
        window.open_model(path)
    return window


def run_gui(args, settings: Settings) -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Headroom")
    app.setStyleSheet(load_stylesheet())
    install_excepthook()
    loop = QEventLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    window = create_window(settings, args.model, "cpu" if args.cpu else "auto")
    window.show()
    with loop:
        loop.run_until_complete(closed.wait())
    return 0
