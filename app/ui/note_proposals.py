"""Above the composer, after a summary: the facts it proposes as pinned notes, each with Pin and
Dismiss (issue 17, item 5). Nothing is pinned until the user says so; the row hides when none
is left. At most SHOWN_ROWS show at once, the rest counted, with Dismiss all: a long chat's
summaries proposed 19 and crushed the transcript to 60 px (trial 4). A note reads as the
answers do: its inline Markdown rendered (trial 10: "`reverseString`" showed its backticks); it
is pinned as written."""

from collections.abc import Sequence

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from app.ui.markdown_html import to_html
from app.ui.theme import TextColours

SHOWN_ROWS = 3  # proposals shown at once; Pin or Dismiss brings the next

class NoteProposals(QWidget):
    """Signals: accepted(str text) — pin this note; dismissed(str text) — do not."""

    accepted = Signal(str)
    dismissed = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("noteProposals")
        self.heading = QLabel(self.tr("The summary suggests keeping these as pinned notes:"))
        self.heading.setObjectName("noteProposalsHeading")
        self.heading.setWordWrap(True)
        self.dismiss_all = QToolButton()
        self.dismiss_all.setObjectName("noteDismissAll")
        self.dismiss_all.setText(self.tr("Dismiss all"))
        self.dismiss_all.setToolTip(self.tr("Pin none of these; they are not suggested again in this chat"))
        self.dismiss_all.clicked.connect(self._on_dismiss_all)
        self.more = QLabel()
        self.more.setObjectName("noteProposalsMore")
        self._grid = QGridLayout()
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setHorizontalSpacing(6)
        self._grid.setVerticalSpacing(2)
        self._grid.setColumnStretch(0, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 0)
        layout.setSpacing(2)
        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.dismiss_all, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(top)
        layout.addLayout(self._grid)
        layout.addWidget(self.more)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Maximum)
        self.rows: list[tuple[QLabel, QToolButton, QToolButton]] = []
        self.texts: list[str] = []  # the proposed notes as written, one per row
        self.setVisible(False)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # inline code's background follows light / dark
            for (label, _pin, _dismiss), text in zip(self.rows, self.texts, strict=True):
                label.setText(self._html(text))

    def _html(self, text: str) -> str:
        return to_html(text, TextColours.from_palette(self.palette()))

    def set_proposals(self, proposals: Sequence[str]) -> None:
        """A row for each of the first SHOWN_ROWS proposed notes, the others counted (none:
        hidden). `texts` holds them all."""
        for row in self.rows:
            for widget in row:
                self._grid.removeWidget(widget)
                widget.hide()
                widget.deleteLater()
        self.rows, self.texts = [], list(proposals)
        for line, text in enumerate(self.texts[:SHOWN_ROWS]):
            label = QLabel(self._html(text))
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setAccessibleName(text)
            label.setObjectName("noteProposal")
            label.setWordWrap(True)
            pin = QToolButton()
            pin.setObjectName("notePin")
            pin.setText(self.tr("Pin"))
            pin.setToolTip(self.tr("Keep this in every prompt of this chat"))
            pin.setAccessibleName(self.tr("Pin: {0}").format(text))
            dismiss = QToolButton()
            dismiss.setObjectName("noteDismiss")
            dismiss.setText(self.tr("Dismiss"))
            dismiss.setToolTip(self.tr("Do not pin this; it is not suggested again in this chat"))
            dismiss.setAccessibleName(self.tr("Dismiss: {0}").format(text))
            pin.clicked.connect(lambda _checked=False, t=text: self.accepted.emit(t))
            dismiss.clicked.connect(lambda _checked=False, t=text: self.dismissed.emit(t))
            self._grid.addWidget(label, line, 0)
            self._grid.addWidget(pin, line, 1)
            self._grid.addWidget(dismiss, line, 2)
            self.rows.append((label, pin, dismiss))
        hidden = len(self.texts) - len(self.rows)
        self.more.setText(self.tr("%n more after these", "", hidden))
        self.more.setVisible(hidden > 0)
        self.dismiss_all.setVisible(len(self.texts) > 1)
        self.setVisible(bool(proposals))

    def _on_dismiss_all(self) -> None:
        for text in list(self.texts):  # each answer may rebuild the rows: the list is copied first
            self.dismissed.emit(text)
