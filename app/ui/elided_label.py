"""A one-line label for the status bar that never widens the window: it shows as much of its
text as fits, ending in "…", and the full text is in its tooltip when it is cut (a long model
path or server name made the window wider than the screen)."""

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy

from app.ui.plain_text import plain_tooltip

MIN_CHARS = "Mmmmmm…"  # the narrowest it gets: a few characters and the ellipsis


class ElidedLabel(QLabel):
    """`text()` is the full text; what is drawn is elided to the width. `setToolTip` sets the
    details shown under the full text when it is cut. No signals."""

    def __init__(self, text: str = "", parent=None, min_width: int = 0):
        """min_width: the narrowest it lets a layout make it, in pixels, when its text is that wide
        (default: a few characters, MIN_CHARS)."""
        super().__init__(parent)
        self._min_width = min_width
        self._full = ""
        self._details = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def text(self) -> str:  # noqa: D102 (the full text, not the elided one)
        return self._full

    def shown_text(self) -> str:
        """What is drawn now (ends in "…" when cut)."""
        return super().text()

    def setText(self, text: str) -> None:  # noqa: N802 (Qt name)
        self._full = text
        self.updateGeometry()
        self._elide()

    def setToolTip(self, details: str) -> None:  # noqa: N802 (Qt name)
        self._details = details
        self._elide()

    def sizeHint(self) -> QSize:
        metrics = self.fontMetrics()
        return QSize(metrics.horizontalAdvance(self._full) + 4, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        floor = max(self.fontMetrics().horizontalAdvance(MIN_CHARS), self._min_width)
        width = min(floor, self.sizeHint().width())
        return QSize(width if self._full else 0, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        metrics, room = self.fontMetrics(), self.contentsRect().width()
        fits = metrics.horizontalAdvance(self._full) <= room  # elidedText cuts a text of exactly `room`
        shown = self._full if fits else metrics.elidedText(self._full, Qt.TextElideMode.ElideRight, room)
        if shown != super().text():
            super().setText(shown)
        cut = shown != self._full
        tip = "\n".join(t for t in ((self._full if cut else ""), self._details) if t)
        tip = plain_tooltip(tip)
        if tip != super().toolTip():
            super().setToolTip(tip)
