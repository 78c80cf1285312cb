"""The line in the transcript below the last turn folded into the summary (issue 17, item 4):
the turns above it are no longer sent as they are; the summary stands for them."""

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton


class FoldMarker(QFrame):
    """"↑ 3 turns above are folded into the summary · Show summary".

    Signals: summary_requested() — the user wants to read the summary that replaced them.
    """

    summary_requested = Signal()

    def __init__(self, folded_turns: int, parent=None):
        super().__init__(parent)
        self.setObjectName("foldMarker")
        self.label = QLabel()
        self.label.setObjectName("foldMarkerText")
        self.label.setWordWrap(True)
        self.show_button = QToolButton()
        self.show_button.setObjectName("bubbleAction")
        self.show_button.setText(self.tr("Show summary"))
        self.show_button.setCursor(Qt.CursorShape.PointingHandCursor)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 2)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.show_button)
        self.show_button.clicked.connect(self.summary_requested)
        self.set_folded_turns(folded_turns)

    def set_folded_turns(self, folded_turns: int) -> None:
        self.folded_turns = folded_turns
        text = (self.tr("↑ 1 turn above is folded into the summary: the model reads the summary instead")
                if folded_turns == 1 else
                self.tr("↑ {0} turns above are folded into the summary: the model reads the summary instead")
                .format(f"{folded_turns:,}"))
        self.label.setText(text)
        self.setAccessibleName(text)
