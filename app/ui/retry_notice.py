"""An error notice about the last turn with a Retry button: the answer failed (or was cut off
by a crash), and the same question can be asked again with one click."""

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from app.ui.notice import Notice


class RetryNotice(QWidget):
    """Signals: retry_requested() — the user clicked Retry (once: the button then goes, as it does
    after `expire`)."""

    retry_requested = Signal()

    def __init__(self, text: str, parent=None):
        super().__init__(parent)
        self.setObjectName("retryNotice")
        self.label = Notice(text, "error")  # wraps as the other notices do, a long word included
        self.retry_button = QPushButton(self.tr("Retry"))
        self.retry_button.setToolTip(self.tr("Ask the same question again"))
        self.retry_button.setAccessibleDescription(self.tr("Ask the same question again"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addWidget(self.label, 1, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.retry_button.clicked.connect(self._on_retry_clicked)

    def text(self) -> str:
        return self.label.text()

    @Slot()
    def expire(self) -> None:
        """The turn it is about is no longer the last one: Retry goes (a greyed button left in the
        transcript read as broken; the notice itself stays as the record of what failed)."""
        self.retry_button.setEnabled(False)
        self.retry_button.hide()

    @Slot()
    def _on_retry_clicked(self) -> None:
        self.expire()
        self.retry_requested.emit()
