"""An inline notice in the transcript (load errors, hints) — never a traceback dialog."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel


class Notice(QLabel):
    """kind: "info" or "error" (styled by the stylesheet through the `kind` property)."""

    def __init__(self, text: str, kind: str = "info", parent=None):
        super().__init__(text, parent)
        self.setObjectName("notice")
        self.setProperty("kind", kind)
        self.setTextFormat(Qt.TextFormat.PlainText)  # titles and file names show literally
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
