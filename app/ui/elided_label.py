"""A one-line label that never widens the window: it shows as much of its text as fits, ending
in "…", and the full text is in its tooltip when it is cut (the status bar: a long model path or
server name made the window wider than the screen). A label can keep an end part whole and cut
only the text before it, in the middle ("a-long-re…ort.pdf · 312 pages": a document chip)."""

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy

from app.ui.plain_text import plain_tooltip

MIN_CHARS = "Mmmmmm…"  # the narrowest it gets: a few characters and the ellipsis


class ElidedLabel(QLabel):
    """`text()` is the full text; what is drawn is elided to the width. `setToolTip` sets the
    details shown under the full text when it is cut. No signals."""

    def __init__(self, text: str = "", parent=None, min_width: int = 0, kept: str = ""):
        """min_width: the narrowest it lets a layout make it, in pixels, when its text is that wide
        (default: a few characters, MIN_CHARS). kept: an end shown whole after `text` (see
        setText)."""
        super().__init__(parent)
        self._min_width = min_width
        self._full = ""
        self._kept = ""
        self._details = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setText(text, kept)

    def text(self) -> str:  # noqa: D102 (the full text, not the elided one)
        return self._full + self._kept

    def shown_text(self) -> str:
        """What is drawn now (ends in "…" when cut)."""
        return super().text()

    def setText(self, text: str, kept: str = "") -> None:  # noqa: N802 (Qt name)
        """Show `text`, then `kept`. Without `kept`, the text is cut at its end; with it, only
        `text` is cut, in the middle (a file name keeps its start and extension), and `kept`
        (" · 312 pages") shows whole."""
        self._full, self._kept = text, kept
        self.updateGeometry()
        self._elide()

    def setToolTip(self, details: str) -> None:  # noqa: N802 (Qt name)
        self._details = details
        self._elide()

    def sizeHint(self) -> QSize:
        margins = self.contentsMargins()  # a styled label's padding and border (a chip's)
        width = self.fontMetrics().horizontalAdvance(self.text()) + 4 + margins.left() + margins.right()
        return QSize(width, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        metrics = self.fontMetrics()
        floor = max(metrics.horizontalAdvance(MIN_CHARS + self._kept), self._min_width)
        width = min(floor, self.sizeHint().width())
        return QSize(width if self.text() else 0, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        metrics, room, full = self.fontMetrics(), self.contentsRect().width(), self.text()
        fits = metrics.horizontalAdvance(full) <= room  # elidedText cuts a text of exactly `room`
        if fits:
            shown = full
        elif self._kept and room - metrics.horizontalAdvance(self._kept) >= metrics.horizontalAdvance(MIN_CHARS):
            room -= metrics.horizontalAdvance(self._kept)
            shown = metrics.elidedText(self._full, Qt.TextElideMode.ElideMiddle, room) + self._kept
        else:  # (squeezed below its minimum: no room for the kept end and a few characters before it)
            shown = metrics.elidedText(full, Qt.TextElideMode.ElideRight, room)
        if shown != super().text():
            super().setText(shown)
        cut = shown != full
        tip = "\n".join(t for t in ((full if cut else ""), self._details) if t)
        tip = plain_tooltip(tip)
        if tip != super().toolTip():
            super().setToolTip(tip)
