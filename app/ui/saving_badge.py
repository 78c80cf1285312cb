"""The status bar's lasting "Not saving", shown while the conversations are not being saved: their
database cannot be written (a read-only folder, a full disk, a file locked by another program).
The notice that says so at start, or when a write fails, scrolls away with the transcript and
goes with New chat (new-user trial: every chat of a session on a read-only folder was gone after
a restart, and nothing on screen said so at the time). Why and where are in its tooltip."""

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QLabel

from app.ui.plain_text import plain_tooltip


class SavingBadge(QLabel):
    """Hidden while conversations are saved; `show_not_saving(why)` shows it. No signals."""

    def __init__(self, parent=None):
        super().__init__(self.tr("Not saving"), parent)
        self.setObjectName("notSaving")
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setAccessibleName(self.tr("Conversations are not being saved"))
        self.hide()

    @Slot(str)
    def show_not_saving(self, why: str) -> None:
        """Shown, with `why` (reason and path, Chat.saving_changed) in its tooltip; hidden for ""."""
        self.setToolTip(plain_tooltip(why))
        self.setAccessibleDescription(why)
        self.setVisible(bool(why))
