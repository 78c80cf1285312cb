"""Start the GUI: QApplication on qasync's event loop, stylesheet, excepthook, main window."""

import asyncio
import sys
from importlib import resources

from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QApplication
from qasync import QEventLoop

from app.core.logs import current_log_file
from app.core.paths import default_model_path
from app.core.settings import Settings
from app.desktop_entry import APP_ID, ICON_SIZES
from app.ui.excepthook import install_excepthook, install_loop_exception_handler
from app.ui.main_window import MainWindow
from app.ui.qt_messages import install_qt_message_handler


def load_stylesheet() -> str:
    return resources.files("app.resources").joinpath("style.qss").read_text(encoding="utf-8")


def load_app_icon() -> QIcon:
    """The app icon from the committed PNG renditions (no SVG plugin needed in the bundle)."""
    icon, folder = QIcon(), resources.files("app.resources").joinpath("icons")
    for size in ICON_SIZES:
        pixmap = QPixmap()
        pixmap.loadFromData(folder.joinpath(f"{APP_ID}-{size}.png").read_bytes(), "PNG")
        icon.addPixmap(pixmap)
    return icon


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
    """Run the window until it is closed; returns the exit code (0)."""
    install_qt_message_handler()  # first: Qt warns while it creates the application too
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Headroom")
    app.setDesktopFileName(APP_ID)  # Wayland app id / taskbar grouping with headroom.desktop
    app.setWindowIcon(load_app_icon())
    app.setStyleSheet(load_stylesheet())
    install_excepthook(current_log_file())
    loop = QEventLoop(app)
    asyncio.set_event_loop(loop)
    install_loop_exception_handler(loop)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    window = create_window(settings, args.model, "cpu" if args.cpu else "auto")
    window.show()
    window.check_environment()  # no GPU, old driver, no bitsandbytes: explained once, in the chat
    with loop:
        loop.run_until_complete(closed.wait())
    return 0
