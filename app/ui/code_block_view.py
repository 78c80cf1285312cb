"""A code block in a message: language tag, Copy button, and the code with horizontal scroll.

Code never wraps (a wrapped line of code reads as two); a line wider than the column scrolls
horizontally inside this block only, because the block's horizontal size policy is Ignored and
the column never learns its content width. Tabs are kept, shown 4 spaces wide. Copy puts the
source text on the clipboard exactly as the model wrote it (no entities, tabs kept).

Highlighting is lazy: a block is laid out as plain text at once and its colours are applied the
first time it is painted (the next event-loop turn), so opening a long chat never runs Pygments
over blocks nobody scrolls to. Colours change no metrics, so this never moves the layout.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSizeF, Qt, QTimer, Slot
from PySide6.QtGui import QFontDatabase, QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
)

from app.ui.markdown_html import code_html
from app.ui.theme import TextColours

COPIED_FEEDBACK_MS = 1500
HIGHLIGHT_MAX_CHARS = 20_000
"""Longer blocks stay plain: Pygments' Python lexers run at roughly 20-40 kB/s on this 2-core
machine (measured: a 2.1 kB block ≈ 50-140 ms), and a highlight pass must not freeze a scroll."""


class _CodeText(QTextBrowser):
    """The code itself: no wrap, horizontal scroll bar when needed, as tall as its lines."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("codeBlockText")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setLineWrapMode(QTextBrowser.LineWrapMode.NoWrap)
        self.setWordWrapMode(QTextOption.WrapMode.NoWrap)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setOpenLinks(False)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.viewport().setAutoFillBackground(False)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self.document().setDocumentMargin(6)
        self.document().setUndoRedoEnabled(False)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.horizontalScrollBar().rangeChanged.connect(self._fit_height)
        self._fit_height()  # one line tall until text comes (an empty document never signals a new size)

    def loadResource(self, kind, url):  # noqa: N802 (Qt override)
        return None

    @Slot()
    def _fit_height(self, *_args) -> None:
        size: QSizeF = self.document().size()
        bar = self.horizontalScrollBar()
        extra = bar.sizeHint().height() if bar.maximum() > 0 else 0
        height = math.ceil(size.height()) + extra + 2 * self.frameWidth()
        if height != self.height():
            self.setFixedHeight(height)


class CodeBlockView(QFrame):
    """One fenced (or indented) code block. `set_code(code, language, colours, highlighted)`
    shows it; `code` is the source the Copy button copies."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("codeBlock")
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.language_label = QLabel()
        self.language_label.setObjectName("codeBlockLanguage")
        self.language_label.setTextFormat(Qt.TextFormat.PlainText)  # the fence info string, as written
        self.copy_button = QToolButton()
        self.copy_button.setObjectName("codeBlockCopy")
        self.copy_button.setText(self.tr("Copy"))
        self.copy_button.setToolTip(self.tr("Copy this code to the clipboard"))
        self.copy_button.setAccessibleName(self.tr("Copy code"))
        self.copy_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.copy_button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.text_view = _CodeText()
        self.text_view.setAccessibleName(self.tr("Code"))
        header = QHBoxLayout()
        header.setContentsMargins(8, 2, 2, 0)
        header.addWidget(self.language_label, 1)
        header.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignRight)  # right, also without a language
        layout = QVBoxLayout(self)
        layout.setContentsMargins(1, 1, 1, 1)
        layout.setSpacing(0)
        layout.addLayout(header)
        layout.addWidget(self.text_view)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        self._feedback = QTimer(self)
        self._feedback.setSingleShot(True)
        self._feedback.setInterval(COPIED_FEEDBACK_MS)
        self._feedback.timeout.connect(lambda: self.copy_button.setText(self.tr("Copy")))
        self.code = ""
        self._shown: tuple | None = None
        self._pending_highlight = False
        self.text_view.viewport().installEventFilter(self)

    def set_code(self, code: str, language: str, colours: TextColours, highlighted: bool = True) -> None:
        """Show `code`; unchanged arguments cost nothing. While a block streams (`highlighted`
        False) new text that extends the shown text is appended, not re-laid out."""
        shown = (code, language, colours, highlighted)
        if shown == self._shown:
            return
        previous, self._shown, self.code = self._shown, shown, code
        if previous is None or previous[2] != colours:
            self.setStyleSheet(f"#codeBlock {{ background: {colours.code_background}; "
                               f"border: 1px solid {colours.code_border}; border-radius: 6px; }}")
        self.language_label.setText(language)
        self.language_label.setVisible(bool(language))
        if (previous is not None and not highlighted and not previous[3] and previous[1:3] == shown[1:3]
                and code.startswith(previous[0])):
            cursor = self.text_view.textCursor()
            cursor.movePosition(cursor.MoveOperation.End)
            cursor.insertText(code[len(previous[0]):])
            return
        wants_colour = highlighted and len(code) <= HIGHLIGHT_MAX_CHARS
        if not (previous is not None and previous[0] == code and not previous[3]):
            self._set_body(code, language, colours, False)  # plain now; colours when first painted
        self._pending_highlight = wants_colour
        if wants_colour and self.text_view.isVisible():
            self.text_view.viewport().update()

    def _set_body(self, code: str, language: str, colours: TextColours, highlighted: bool) -> None:
        body = code_html(code, language, colours, highlighted).replace("\n", "<br>")  # HTML drops a leading \n
        self.text_view.setHtml(f'<div style="white-space: pre;">{body}</div>')

    def highlight_now(self) -> None:
        """Apply the pending highlighting at once (normally done after the first paint)."""
        if self._pending_highlight and self._shown is not None:
            self._pending_highlight = False
            code, language, colours, _highlighted = self._shown
            self._set_body(code, language, colours, True)

    def is_highlighted(self) -> bool:
        return self._shown is not None and self._shown[3] and not self._pending_highlight \
            and len(self.code) <= HIGHLIGHT_MAX_CHARS

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.Paint and self._pending_highlight:
            QTimer.singleShot(0, self.highlight_now)
        return super().eventFilter(watched, event)

    def plain_text(self) -> str:
        """The text shown (equals `code`)."""
        return self.text_view.toPlainText()

    @Slot()
    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.code)
        self.copy_button.setText(self.tr("Copied"))
        self._feedback.start()
