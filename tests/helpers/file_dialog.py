"""Reading Qt's own file dialog while it runs modally (a static QFileDialog call blocks the test)."""

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFileDialog, QTreeView


def read_modal_file_dialog(window, open_dialog, read):
    """Call ``open_dialog()``, which shows a modal Qt file dialog over ``window``; every 100 ms a
    timer puts the dialog in Detail view and calls ``read(dialog, tree)`` until it returns True,
    then rejects the dialog (after 10 s it rejects it anyway rather than hang the suite). Returns
    what ``open_dialog`` returned."""
    polls = []

    def poll():
        dialog = next((d for d in window.findChildren(QFileDialog) if d.isVisible()), None)
        polls.append(dialog)
        if dialog is None or len(polls) > 100:
            if dialog is not None:
                dialog.reject()
            return
        dialog.setViewMode(QFileDialog.ViewMode.Detail)
        if read(dialog, dialog.findChild(QTreeView)):
            dialog.reject()

    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(100)
    try:
        return open_dialog()
    finally:
        timer.stop()
