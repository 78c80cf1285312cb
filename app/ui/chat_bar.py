"""The bar above the composer with what shapes the whole chat (issue 17): its pinned notes and
"Summarize now"."""

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QToolButton, QWidget


def _bar_button(text: str, tooltip: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName("chatBarButton")
    button.setText(text)
    button.setToolTip(tooltip)
    return button


class ChatBar(QWidget):
    """Signals: notes_requested() — open the pinned notes; summarize_requested() — fold the
    older turns into the summary now."""

    notes_requested = Signal()
    summarize_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("chatBar")
        self.notes_button = _bar_button(self.tr("Notes"), self.tr("Pinned notes: kept in every prompt of this chat"))
        self.summarize_button = _bar_button(
            self.tr("Summarize now"), self.tr("Fold the older turns into the summary now; the last turns stay as "
                                              "they are (Settings: keep the last turns verbatim)"))
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(12, 4, 12, 0)
        self._layout.setSpacing(6)
        self._layout.addStretch(1)
        self._layout.addWidget(self.notes_button)
        self._layout.addWidget(self.summarize_button)
        self.notes_button.clicked.connect(self.notes_requested)
        self.summarize_button.clicked.connect(self.summarize_requested)

    @Slot(str, int)
    def show_notes(self, notes: str, tokens: int) -> None:
        """Say on the Notes button whether there are notes and about how many tokens they take."""
        self.notes_button.setText(self.tr("Notes · ≈{0} tokens").format(f"{tokens:,}") if notes else self.tr("Notes"))
        self.notes_button.setProperty("active", bool(notes))
        self.notes_button.setToolTip(notes or self.tr("Pinned notes: kept in every prompt of this chat"))
        self.notes_button.style().unpolish(self.notes_button)
        self.notes_button.style().polish(self.notes_button)

    @Slot(bool)
    def set_summarizing(self, summarizing: bool) -> None:
        """While a summary is being written "Summarize now" waits."""
        self.summarize_button.setEnabled(not summarizing)
