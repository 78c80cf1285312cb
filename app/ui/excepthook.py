"""The one error funnel for unexpected exceptions: log with traceback, show a non-fatal
dialog. Expected failures (bad model, OOM) never get here — they travel on signals."""

import logging
import sys
import traceback

from PySide6.QtWidgets import QApplication, QMessageBox

log = logging.getLogger("headroom.crash")


def install_excepthook() -> None:
    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("unhandled exception\n%s", details)
        if QApplication.instance() is not None:
            box = QMessageBox(QMessageBox.Icon.Warning, "Headroom hit an unexpected error",
                              f"{exc_type.__name__}: {exc}\n\nYour conversation is kept; "
                              "the details below are also in the log.")
            box.setDetailedText(details)
            box.exec()

    sys.excepthook = hook
