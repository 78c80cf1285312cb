"""Body of a bubble while its reply streams: markdown rendered incrementally into a QTextDocument.

Re-rendering the whole reply on every frame (markdown → HTML → rich-text relayout) costs time
in proportion to its length, so a long, fast reply stalls the GUI thread. Here the text is cut
into *settled* blocks — everything up to the last blank line that is outside a ``` / ~~~ fence
and followed by an unindented line — and an open *tail*. Settled blocks are converted once and
appended at the end of the document with a cursor; only the tail is converted again on each
update and replaces the previous tail. QTextDocument lays out only the blocks that changed, so a
frame costs time in proportion to the tail, not to the reply.

Blocks converted one by one may look slightly different from the whole text converted at once
(a loose list is split into several lists, an open fence is shown unhighlighted); the bubble
renders the whole reply once when the stream ends.
"""

import html
import math

from PySide6.QtCore import QSizeF, Qt, Slot
from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser

from app.ui.markdown_html import to_html

_FENCES = ("```", "~~~")


def settled_length(text: str) -> int:
    """Length of the longest prefix of `text` made of whole markdown blocks that later text
    cannot change: it ends after a blank line outside any fence, and the next line has started
    and is not indented (an indented line could continue a list item or an indented code block)."""
    pos = settled = 0
    fence = None
    candidate = -1  # end of a blank line outside a fence, waiting for the next line to show
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if candidate >= 0 and stripped and line[0] not in " \t":
            settled = candidate
        if stripped:
            candidate = -1
        if fence is not None:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
        elif stripped.startswith(_FENCES):
            fence = stripped[:3]
        elif not stripped and line.endswith("\n") and pos > 0 and candidate < 0:
            candidate = pos + len(line)
        pos += len(line)
    return settled


def _open_fence(text: str) -> int:
    """Offset of the line opening a fence that `text` leaves open, or -1."""
    pos, opened, fence = 0, -1, None
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence, opened = None, -1
        elif stripped.startswith(_FENCES):
            fence, opened = stripped[:3], pos
        pos += len(line)
    return opened


def _tail_html(tail: str) -> str:
    """HTML for the open tail; an open fence shows as plain preformatted text (no Pygments pass
    over a growing code block on every frame)."""
    fence_at = _open_fence(tail)
    if fence_at < 0:
        return to_html(tail)
    before, code = tail[:fence_at], tail[fence_at:]
    code = code.split("\n", 1)[1] if "\n" in code else ""
    pre = ('<pre style="background: #f0f0f0; line-height: 125%;">'
           f"{html.escape(code, quote=False)}</pre>")
    return (to_html(before) if before.strip() else "") + pre


class StreamingMarkdownView(QTextBrowser):
    """Read-only, selectable, frameless text view that is exactly as tall as its document.
    `set_markdown(text)` shows `text`; when `text` extends what is shown, only the new part
    costs work."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("bubbleStreamBody")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.DefaultContextMenu)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setStyleSheet("QTextBrowser { background: transparent; }")
        self.viewport().setAutoFillBackground(False)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.document().setDocumentMargin(0)
        self.document().setUndoRedoEnabled(False)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._settled_text = ""  # markdown of the blocks already in the document for good
        self._settled_end = 0  # document position where the settled blocks end
        self.markdown = ""
        self.setFixedHeight(0)

    def set_markdown(self, text: str) -> None:
        if not text.startswith(self._settled_text):
            self._reset()
        self.markdown = text
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        cursor.setPosition(self._settled_end)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()  # the previous tail
        start = len(self._settled_text)
        settled = start + settled_length(text[start:])
        if settled > start:
            self._append_html(cursor, to_html(text[start:settled]))
            self._settled_text = text[:settled]
            self._settled_end = cursor.position()
        tail = text[settled:]
        if tail.strip():
            self._append_html(cursor, _tail_html(tail))
        cursor.endEditBlock()

    def _append_html(self, cursor: QTextCursor, fragment: str) -> None:
        """Append `fragment` at the end as blocks of its own, with their own formats. Inserted
        HTML merges its first block into the cursor's block, losing that block's format (a
        code block's background and margins), so a throw-away line break goes first and is
        removed again, together with the block that held it."""
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

    def _reset(self) -> None:
        self.document().clear()
        self._settled_text, self._settled_end = "", 0

    @Slot(QSizeF)
    def _fit_height(self, size: QSizeF) -> None:
        height = math.ceil(size.height()) + 2 * self.frameWidth()
        if height != self.height():
            self.setFixedHeight(height)
