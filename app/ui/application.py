"""Start the GUI: QApplication on qasync's event loop, stylesheet, excepthook, main window.

The main window (and with it torch and transformers, 3–4 s to import) is imported only after the
splash screen is painted, so a double-click shows Headroom within a second."""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import sys
import time
from importlib import resources
from typing import TYPE_CHECKING

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QTimer
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QApplication, QMessageBox
from qasync import QEventLoop

from app.core.interrupts import interrupted
from app.core.logs import current_log_file
from app.core.paths import data_dir, default_model_path
from app.core.settings import (
    HOLDS_CREDENTIALS,
    NOT_A_CHOICE,
    NOT_A_NUMBER,
    NOT_AN_OBJECT,
    NOT_FINITE,
    NOT_TEXT,
    NOT_WHOLE,
    OUT_OF_RANGE,
    OUT_OF_RANGE_DEFAULT,
    RANDOM_SEED,
    Settings,
    UnreadSettings,
    UnusableSettings,
    UnusableValue,
)
from app.desktop_entry import APP_ID, ICON_SIZES
from app.ui.excepthook import install_excepthook, install_loop_exception_handler
from app.ui.fonts import install_hangul_fallback
from app.ui.interrupt import close_on_interrupt
from app.ui.qt_messages import install_qt_message_handler
from app.ui.single_instance import SingleInstance
from app.ui.splash import show_splash
from app.ui.theme import apply_theme
from app.ui.translations import install_translators

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow


log = logging.getLogger(__name__)


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
    """Build the main window and start opening `model` (else the last model used, else the
    default model) in the background. Must be called with a running QApplication and qasync
    loop. store: a conversation Store (default: the one in the user data folder).
    app.main.quiet_transformers is called before (transformers' progress bars are read when it
    is imported)."""
    from app.ui.main_window import MainWindow  # imports torch: after the splash is up

    freeze_imported_objects()
    window = MainWindow(settings, device_preference, store)
    window.chat.models.open_at_start(model, default_model_path())
    return window


@functools.cache  # once per process: the imports happen once, and a later freeze would keep garbage
def freeze_imported_objects() -> None:
    """Move what is alive now (torch's and transformers' modules, ~260,000 objects) out of the cyclic
    GC's reach, before the model loader thread starts. Each full collection walked them with the
    GIL held, ~190 ms, and the window froze with it: five stalls per model open on a 2-core box
    (tests/benchmarks/ui_stalls.py; Python docs, gc.freeze). Garbage is collected first, so none
    is kept for good (0.13 s, once, while the splash is up)."""
    gc.collect()
    gc.freeze()


def unread_settings_text(note: UnreadSettings) -> str:
    """Why the settings are the defaults, in the window's language (trial 6: it stayed English in the
    Korean window): a file that could not be opened by its errno, as every file error is
    (app.chat.error_text.os_error_line); broken JSON by where it broke; another damaged one in the
    parser's words."""
    if note.kept_as:
        reason = note.reason
        if note.json_position is not None:  # the parser's English said in the window's words (new-user trial)
            reason = QCoreApplication.translate("Application", "not valid JSON at line {0}, column {1}").format(
                *note.json_position)
        return QCoreApplication.translate(
            "Application", "Settings could not be read ({0}); the file was kept as {1} and the defaults are "
                           "used.").format(reason, note.kept_as)
    from app.chat.error_text import os_error_line  # here: app.chat imports torch, after the splash is painted

    reason = os_error_line(note.error) if note.error is not None else note.reason
    return QCoreApplication.translate(
        "Application", "Settings could not be read ({0}); the defaults are used.").format(reason)


def unusable_settings_text(note: UnusableSettings) -> str:
    """The values of settings.json not used as written, and what is used instead, in the window's
    language: one notice (in English, UnusableSettings' own line, as `--ask` says it)."""
    return QCoreApplication.translate("Application", "Settings: {0}").format(
        " ".join(_unusable_value_text(value) for value in note.values))


_VALUE_SAID = {  # app.core.settings._SAID's sentences, marked for the translators
    OUT_OF_RANGE: QT_TRANSLATE_NOOP("Application", "{0} {1} is out of range; {2} is used."),
    OUT_OF_RANGE_DEFAULT: QT_TRANSLATE_NOOP("Application", "{0} {1} is out of range; the default {2} is used."),
    NOT_AN_OBJECT: QT_TRANSLATE_NOOP("Application", "{0} {1} is not an object of settings; the defaults are used."),
    NOT_FINITE: QT_TRANSLATE_NOOP("Application", "{0} {1} is not a finite number; the default {2} is used."),
    NOT_WHOLE: QT_TRANSLATE_NOOP("Application", "{0} {1} is not a whole number; the default {2} is used."),
    NOT_TEXT: QT_TRANSLATE_NOOP("Application", "{0} {1} is not text; the default {2} is used."),
    NOT_A_NUMBER: QT_TRANSLATE_NOOP("Application", "{0} {1} is not a number; the default {2} is used."),
    NOT_A_CHOICE: QT_TRANSLATE_NOOP("Application", "{0} {1} is not one of its choices; the default {2} is used."),
    HOLDS_CREDENTIALS: QT_TRANSLATE_NOOP("Application", "{0} {1} holds a user name or password before '@'; {2} is "
                                                        "used: put the key in Settings, API key."),
}


def _unusable_value_text(value: UnusableValue) -> str:
    """One value's sentence in the window's language."""
    used = QCoreApplication.translate("Application", "random") if value.used == RANDOM_SEED else value.used
    return QCoreApplication.translate("Application", _VALUE_SAID[value.problem]).format(
        value.key, value.written, used)


def settings_note_text(note: UnreadSettings | UnusableSettings) -> str:
    """What read_settings' note says, in the window's language: why the settings are the defaults,
    or which values are not used as written."""
    if isinstance(note, UnusableSettings):
        return unusable_settings_text(note)
    return unread_settings_text(note)


def run_gui(args, settings: Settings, settings_note: UnreadSettings | UnusableSettings | None = None,
            started: float | None = None) -> int:
    """Run the window until it is closed; returns the exit code (0). settings_note: why the
    settings are the defaults, or which of their values are not used as written (None when all
    were read as written; app.core.settings.read_settings), said in the window. started: the
    ``time.perf_counter()`` of process start, to log how long the splash and window took."""
    install_qt_message_handler()  # first: Qt warns while it creates the application too
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Headroom")
    app.setDesktopFileName(APP_ID)  # Wayland app id / taskbar grouping with headroom.desktop
    install_translators(app, settings.language)  # before any string is shown
    instance = SingleInstance(data_dir())
    if not instance.acquire():  # another Headroom has this profile: it comes forward instead
        return _hand_over(instance, args.model)
    app.aboutToQuit.connect(instance.release)
    install_hangul_fallback(app)  # Korean never shows as boxes, on any desktop
    icon = load_app_icon()
    app.setWindowIcon(icon)
    splash = show_splash(app, icon)
    splash_at = time.perf_counter()
    apply_theme(app, settings.appearance)  # light or dark (Settings → Appearance); stylesheet to match
    funnel = install_excepthook(current_log_file())
    loop = QEventLoop(app)
    asyncio.set_event_loop(loop)
    install_loop_exception_handler(loop)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    window = create_window(settings, args.model, "cpu" if args.cpu else "auto")
    funnel.watch_saving(window.chat)  # the crash dialog says "saved" only while the window saves
    instance.activation_requested.connect(window.bring_forward)
    window.show()
    splash.finish(window)
    if started is not None:
        log.info("splash shown %.2f s, window shown %.2f s after start", splash_at - started,
                 time.perf_counter() - started)
    window.check_environment()  # no GPU, old driver, no bitsandbytes: explained once, in the chat
    if settings_note is not None:  # a broken settings.json: kept aside, and said (trial 4: replaced in silence);
        # a value in it not used as written, said too (new-user trial: "temperature": "hot" was not)
        window.chat.announce(settings_note_text(settings_note), "error")
    restore_interrupt = close_on_interrupt(window.close, window)  # Ctrl+C in a terminal: as the close button
    if interrupted():  # pressed while starting, and swallowed by an import: closed now, as it was asked
        QTimer.singleShot(0, window.close)
    with loop:
        loop.run_until_complete(closed.wait())
    restore_interrupt()
    return 0


def _hand_over(instance: SingleInstance, model) -> int:
    """A second launch on a profile already open: pass `model` to the running window and exit 0;
    when that window does not answer, say so and exit 1 (two writers would share one store)."""
    if instance.hand_over(model):
        log.info("Headroom is already running on this profile; handed over to it")
        # a terminal's user is told where the model went (new-user trial: exit 0 and nothing said)
        what = f"{model} goes to its window" if model else "its window is brought forward"
        print(f"headroom: Headroom is already open for this profile ({data_dir()}); {what}", file=sys.stderr)
        return 0
    QMessageBox.warning(None, "Headroom", QCoreApplication.translate(
        "Application", "Headroom is already running for this profile ({0}) but does not answer. "
        "Close it (or end its process) and start Headroom again.").format(data_dir()))
    return 1
