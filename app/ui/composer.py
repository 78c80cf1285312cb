"""The message composer: Enter sends, Shift+Enter inserts a new line; Send / Stop."""

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QWidget


class _Editor(QPlainTextEdit):
    submitted = Signal()

    def keyPressEvent(self, event):
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    """Signals: send_requested(str) with the stripped text; stop_requested()."""

    send_requested = Signal(str)
    stop_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.editor = _Editor()
        self.editor.setObjectName("composerEditor")
        self.editor.setPlaceholderText("Message Headroom — Enter to send, Shift+Enter for a new line")
        self.editor.setFixedHeight(80)
        self.editor.setAccessibleName(self.tr("Message"))
        self.editor.setAccessibleDescription(self.tr("Enter sends, Shift+Enter starts a new line"))
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("sendButton")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setVisible(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 4, 12, 12)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.send_button)
        layout.addWidget(self.stop_button)
        self.editor.submitted.connect(self._on_submitted)
        self.send_button.clicked.connect(self._on_submitted)
        self.stop_button.clicked.connect(self.request_stop)
        self._can_send = False
        self._generating = False
        self._stopping = False

    def set_generating(self, generating: bool) -> None:
        self._generating = generating
        self._stopping = False
        self.send_button.setVisible(not generating)
        self.stop_button.setVisible(generating)
        self.send_button.setEnabled(self._can_send and not generating)

    def set_can_send(self, can_send: bool) -> None:
        """False while no model is loaded; the text typed meanwhile is kept."""
        self._can_send = can_send
        self.send_button.setEnabled(can_send and not self._generating)

    @Slot()
    def request_stop(self) -> None:
        """Stop the answer (the Stop button, Esc): emits stop_requested."""
        # a message sent now goes right after the reply stops (Stop that does not stop, text-generation-webui #1749)
        self._stopping = True
        self.stop_requested.emit()

    def _on_submitted(self) -> None:
        text = self.editor.toPlainText().strip()
        if not text or not self._can_send or (self._generating and not self._stopping):
            return
        self.editor.clear()
        self.send_requested.emit(text)
