"""One message in the transcript: role header, markdown body, status tag."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout

from app.core.conversation import MessageStatus, Role
from app.ui.markdown_html import to_html

_ROLE_TITLES = {Role.USER: "You", Role.ASSISTANT: "Assistant", Role.SYSTEM: "System"}
_STATUS_TAGS = {MessageStatus.STOPPED: "stopped", MessageStatus.FAILED: "failed"}


class MessageBubble(QFrame):
    """Shows one message; `set_text` re-renders the markdown (called once per frame at most)."""

    def __init__(self, role: Role, text: str = "", parent=None):
        super().__init__(parent)
        self.role = role
        self.setObjectName(f"bubble_{role.value}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._header = QLabel(_ROLE_TITLES[role])
        self._header.setObjectName("bubbleHeader")
        self._body = QLabel()
        self._body.setObjectName("bubbleBody")
        self._body.setWordWrap(True)
        self._body.setTextFormat(Qt.TextFormat.RichText)
        self._body.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self._body.setOpenExternalLinks(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 8)
        layout.setSpacing(2)
        layout.addWidget(self._header)
        layout.addWidget(self._body)
        self.text = ""
        self.set_text(text)

    def set_text(self, text: str) -> None:
        self.text = text
        self._body.setText(to_html(text) if text else "<i>…</i>")

    def set_status(self, status: MessageStatus, detail: str = "") -> None:
        tag = _STATUS_TAGS.get(status)
        title = _ROLE_TITLES[self.role]
        self._header.setText(f"{title} — {tag}{': ' + detail if detail else ''}" if tag else title)
        self.setProperty("status", status.value)
        self.style().unpolish(self)
        self.style().polish(self)
