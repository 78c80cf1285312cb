"""An inline notice in the transcript (load errors, hints) — never a traceback dialog.

A read-only text view as tall as its lines, not a QLabel: a word-wrapped QLabel breaks lines only
between words, so a word longer than the line (a file name, a URL, a path) ran past the notice's
right edge and was cut there (new-user trial: the notice's last word was clipped). Here lines wrap
at word boundaries or, for such a word, anywhere, as the message text does (ProseView). The text
is shown literally (titles and file names), can be selected and copied as given.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSize, Qt, Slot
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser


class Notice(QTextBrowser):
    """kind: "info" or "error" (styled by the stylesheet through the `kind` property). `text()`
    is the text as given."""

    def __init__(self, text: str, kind: str = "info", parent=None):
        super().__init__(parent)
        self.setObjectName("notice")
        self.setProperty("kind", kind)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # as a label's: Tab goes past it
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)  # never widens the column
        self.viewport().setCursor(Qt.CursorShape.IBeamCursor)
        self.document().setDocumentMargin(0)
        self.document().setUndoRedoEnabled(False)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.setText(text)

    def text(self) -> str:
        return self.toPlainText()

    def setText(self, text: str) -> None:  # noqa: N802 (QLabel's name, kept for callers)
        self.setPlainText(text)  # titles and file names show literally
        self.setAccessibleName(text)
        self._fit_height()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt override)
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt override)
        """The height that shows every line at `width` (px), the stylesheet's padding included."""
        self.ensurePolished()
        document = self.document().clone()
        document.setTextWidth(max(width - self._chrome().width(), 1))
        return math.ceil(document.size().height()) + self._chrome().height()

    def _chrome(self) -> QSize:
        """What the frame and the stylesheet's padding add around the text (px)."""
        margins = self.contentsMargins() + self.viewportMargins()
        return QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(0, self.height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(0, self.height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._fit_height()

    @Slot()
    def _fit_height(self, *_args) -> None:
        """As tall as the document laid out at the viewport's width, plus the stylesheet's padding."""
        self.setFixedHeight(math.ceil(self.document().size().height()) + self._chrome().height())
