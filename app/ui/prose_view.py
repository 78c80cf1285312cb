"""Prose part of a message: a frameless QTextBrowser exactly as tall as its document.

The document is a list of HTML fragments (one per markdown block run). `show_fragments` keeps
the fragments that did not change and replaces only the rest, so while a reply streams a frame
costs time in proportion to the open tail, not to the reply (QTextDocument lays out only the
blocks that changed).

Lines wrap at word boundaries or anywhere, and the widget's horizontal size policy is Ignored,
so a 20,000-character URL wraps inside the column instead of widening it. Links open in the
system browser when clicked, and only for http, https and mailto; the document never loads a
resource (no images, no local files).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSizeF, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextOption
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QTextEdit

from app.ui.markdown_html import safe_href


def open_link(url: QUrl) -> bool:
    """Open `url` in the system browser / mail client when its scheme is http, https or
    mailto; anything else is ignored. Returns whether it was handed to the desktop."""
    if safe_href(url.toString()) is None:
        return False
    return QDesktopServices.openUrl(url)


class ProseView(QTextBrowser):
    """Read-only, selectable markdown prose.

    Signals: link_opened(QUrl) — a safe link was clicked and handed to the desktop.
    """

    link_opened = Signal(QUrl)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("messageProse")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.viewport().setAutoFillBackground(False)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.document().setDocumentMargin(0)
        self.document().setUndoRedoEnabled(False)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.anchorClicked.connect(self._on_anchor_clicked)
        self._fragments: list[str] = []
        self._ends: list[int] = []  # document position after each fragment
        self._min_text_width = 0  # pixels; more than the view is wide: laid out that wide, scrolled
        self.setFixedHeight(0)

    def loadResource(self, kind, url):  # noqa: N802 (Qt override)
        """Nothing is ever loaded: model output cannot pull in images or local files."""
        return None

    def fragments(self) -> list[str]:
        return list(self._fragments)

    def show_plain(self, text: str) -> None:
        """Show `text` exactly as written: no markup is read, spaces, tabs and line breaks stay
        (the user's own message). Replaces any fragments shown."""
        if not self._fragments and self.toPlainText() == text:
            return
        self.setPlainText(text)
        self.document().setDocumentMargin(0)
        self._fragments, self._ends = [], []

    def show_fragments(self, fragments: list[str]) -> None:
        """Show `fragments` in order; those equal to the ones shown at the same place stay."""
        keep = 0
        while keep < min(len(fragments), len(self._fragments)) and fragments[keep] == self._fragments[keep]:
            keep += 1
        if keep == len(fragments) == len(self._fragments):
            return
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        cursor.setPosition(self._ends[keep - 1] if keep else 0)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        del self._fragments[keep:], self._ends[keep:]
        for fragment in fragments[keep:]:
            if not self._fragments:
                self._set_first(fragment)
                cursor.movePosition(QTextCursor.MoveOperation.End)
            else:
                self._append_html(cursor, fragment)
            self._fragments.append(fragment)
            self._ends.append(cursor.position())
        cursor.endEditBlock()
        if self._min_text_width:
            self._to_first_column()

    def _set_first(self, fragment: str) -> None:
        """The first fragment replaces the document, so its first block keeps its own format
        (and a table may start the document)."""
        self.document().setHtml(fragment)
        self.document().setDocumentMargin(0)

    def _append_html(self, cursor: QTextCursor, fragment: str) -> None:
        """Append `fragment` at the end as blocks of its own, with their own formats. Inserted
        HTML merges its first block into the cursor's block, losing that block's format (a
        code block's background and margins), so a throw-away line break goes first and is
        removed again, together with the block that held it. A fragment must not start with a
        table (the eraser would cut into it): MarkdownView gives such a fragment a view of its own."""
        start = cursor.position()
        if start > 0:
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        separator = cursor.position()
        cursor.insertHtml("<br>" + fragment)
        eraser = QTextCursor(self.document())
        eraser.setPosition(start)
        eraser.setPosition(separator + 1 if start > 0 else 2, QTextCursor.MoveMode.KeepAnchor)
        eraser.removeSelectedText()
        cursor.movePosition(QTextCursor.MoveOperation.End)

    def set_min_text_width(self, pixels: int) -> None:
        """Lay the document out at least `pixels` wide; where the view is narrower it scrolls
        sideways (a wide table), with its scroll bar under the text. 0: as wide as the view."""
        if pixels == self._min_text_width:
            return
        self._min_text_width = pixels
        self._apply_text_width()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._apply_text_width()

    def _apply_text_width(self) -> None:
        wide = self._min_text_width > self.viewport().width()
        if wide:
            self.setLineWrapMode(QTextEdit.LineWrapMode.FixedPixelWidth)
            self.setLineWrapColumnOrWidth(self._min_text_width)
        elif self.lineWrapMode() != QTextEdit.LineWrapMode.WidgetWidth:
            self.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        policy = Qt.ScrollBarPolicy.ScrollBarAlwaysOn if wide else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        if self.horizontalScrollBarPolicy() != policy:
            self.setHorizontalScrollBarPolicy(policy)
            self._to_first_column()
            self._fit_height(self.document().size())

    def _to_first_column(self) -> None:
        """A wide table shows its first columns: the text cursor (which the view keeps in sight,
        and which ends where the text was put) goes to the start."""
        cursor = self.textCursor()
        if cursor.position() or cursor.hasSelection():
            cursor.setPosition(0)
            self.setTextCursor(cursor)
        self.horizontalScrollBar().setValue(0)

    @Slot(QUrl)
    def _on_anchor_clicked(self, url: QUrl) -> None:
        if open_link(url):
            self.link_opened.emit(url)

    @Slot(QSizeF)
    def _fit_height(self, size: QSizeF) -> None:
        scroll_bar = self.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOn
        height = math.ceil(size.height()) + 2 * self.frameWidth()
        height += self.horizontalScrollBar().sizeHint().height() if scroll_bar else 0
        if height != self.height():
            self.setFixedHeight(height)
