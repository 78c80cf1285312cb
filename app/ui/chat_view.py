"""The transcript: a scrolling column of message bubbles and notices.

Streamed text is buffered and flushed to the last bubble at most once per frame (~60 Hz),
so a fast model never floods the GUI thread with re-layouts.
"""

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from app.core.conversation import MessageStatus, Role
from app.ui.message_bubble import MessageBubble
from app.ui.notice import Notice

FRAME_MS = 16


class ChatView(QScrollArea):
    """Append bubbles, stream into the last one, show notices."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._column = QWidget()
        self._column.setObjectName("chatColumn")
        self._layout = QVBoxLayout(self._column)
        self._layout.setContentsMargins(12, 12, 12, 12)
        self._layout.setSpacing(8)
        self._layout.addStretch(1)
        self.setWidget(self._column)
        self._streaming: MessageBubble | None = None
        self._pending = ""
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FRAME_MS)
        self._flush_timer.timeout.connect(self.flush)
        self.verticalScrollBar().rangeChanged.connect(self._follow_bottom)
        self._stick_to_bottom = True

    def bubbles(self) -> list[MessageBubble]:
        return self._column.findChildren(MessageBubble)

    def transcript_text(self) -> str:
        """Plain text of every bubble, oldest first (for tests and copy)."""
        return "\n\n".join(b.text for b in self.bubbles())

    def clear(self) -> None:
        self.end_stream()
        while self._layout.count() > 1:
            item = self._layout.takeAt(0)
            if item.widget():
                item.widget().deleteLater()

    def add_message(self, role: Role, text: str) -> MessageBubble:
        bubble = MessageBubble(role, text)
        self._layout.insertWidget(self._layout.count() - 1, bubble)
        self._stick_to_bottom = True
        return bubble

    def add_notice(self, text: str, kind: str = "info") -> Notice:
        notice = Notice(text, kind)
        self._layout.insertWidget(self._layout.count() - 1, notice)
        self._stick_to_bottom = True
        return notice

    def begin_stream(self, initial_text: str = "") -> MessageBubble:
        """Start a streaming assistant bubble (or continue one, C17)."""
        self._streaming = self.add_message(Role.ASSISTANT, initial_text)
        self._pending = ""
        self._flush_timer.start()
        return self._streaming

    def append_stream(self, text: str) -> None:
        """Buffer streamed text; it reaches the screen on the next frame."""
        self._pending += text

    def flush(self) -> None:
        if self._streaming is not None and self._pending:
            self._streaming.set_text(self._streaming.text + self._pending)
            self._pending = ""

    def end_stream(self, status: MessageStatus = MessageStatus.COMPLETE, detail: str = "") -> None:
        self.flush()
        self._flush_timer.stop()
        if self._streaming is not None:
            self._streaming.set_status(status, detail)
        self._streaming = None

    def _follow_bottom(self, _min: int, maximum: int) -> None:
        bar = self.verticalScrollBar()
        if self._stick_to_bottom or bar.value() >= bar.maximum() - 40:
            bar.setValue(maximum)
        self._stick_to_bottom = False
