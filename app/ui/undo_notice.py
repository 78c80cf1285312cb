"""A short-lived "Removed big.txt · Undo" in the status bar, as mail and chat apps offer after a
removal: the removal is done at once, and Undo puts it back while the notice shows. It looks and
lasts like the sidebar's Undo bar after a deleted conversation (the stylesheet's #undoBar)."""

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

UNDO_MS = 10_000  # how long Undo is offered, as the sidebar's after a deleted conversation (trial 8)


class UndoNotice(QFrame):
    """Hidden until `offer`; hides by itself after UNDO_MS, on `withdraw`, or once Undo is
    clicked. Signals: undo_requested() (Undo clicked), expired() (the offer ran out)."""

    undo_requested = Signal()
    expired = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("undoBar")
        self.label = QLabel()
        self.label.setObjectName("undoLabel")
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # file names show literally
        self.undo_button = QPushButton(self.tr("Undo"))
        self.undo_button.setObjectName("undoButton")
        self.undo_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.undo_button.setAccessibleDescription(self.tr("Put the removed file back"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 0, 2, 0)
        layout.setSpacing(6)
        layout.addWidget(self.label)
        layout.addWidget(self.undo_button)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(UNDO_MS)
        self._timer.timeout.connect(self._on_timeout)
        self.undo_button.clicked.connect(self._on_undo_clicked)
        self.hide()

    @Slot(str)
    def offer(self, name: str) -> None:
        """Say that `name` was removed and offer Undo for UNDO_MS (a newer removal replaces an
        older one's offer: only the last one can be undone)."""
        self.label.setText(self.tr("Removed {0}").format(name))
        self.show()
        self._timer.start()

    @Slot()
    def withdraw(self) -> None:
        """The removal can no longer be undone (another chat opened): the notice goes."""
        self._timer.stop()
        self.hide()

    @Slot()
    def _on_timeout(self) -> None:
        self.hide()
        self.expired.emit()

    @Slot()
    def _on_undo_clicked(self) -> None:
        self.withdraw()
        self.undo_requested.emit()
