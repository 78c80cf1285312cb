"""Body of a message: markdown shown as a column of prose views and code block views.

One renderer serves a reply while it streams and once it has ended, so the end of a stream
changes nothing but the highlighting of a code block that was still open (same fonts, same
sizes: no jump). The text is cut into *settled* blocks — up to the last blank line outside a fence
that is followed by an unindented line (`markdown_html.settled_cuts`) — and an open *tail*.
Settled blocks are parsed and converted once and never touched again; only the tail is parsed
on each update, and only the widgets showing it change (`ProseView.show_fragments` keeps equal
fragments, `CodeBlockView.set_code` appends to a streaming block). A frame therefore costs time
in proportion to the tail, not to the reply.

Chunks are converted separately, so a loose list split at a blank line renders as several
lists (numbering kept: the next one starts at its own number); the cuts depend on the text only,
so a streamed reply and the same text opened later render the same way.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

from app.ui.code_block_view import CodeBlockView
from app.ui.markdown_html import Block, settled_cuts, split_blocks, to_html
from app.ui.prose_view import ProseView
from app.ui.theme import TextColours

TABLE_COLUMN_CHARS = 8
"""The least width of a table column, in average characters, before the table scrolls sideways."""


def _table_columns(html: str) -> int:
    """How many cells the first row of `html` has when it starts with a table, else 0."""
    if not html.startswith("<table"):
        return 0
    first_row = html[html.find("<tr"):html.find("</tr>")]
    return first_row.count("<th") + first_row.count("<td")


class MarkdownView(QWidget):
    """`set_markdown(text, final)` shows `text`; when it extends the text shown, only the new
    part costs work. final=False while a reply streams (an open code block is not highlighted).
    `set_plain(text)` shows `text` as typed instead (a user's message: "a &amp; b", "<div>",
    "# not a heading" stay as they are), in one ProseView with the same font and colours."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("messageBody")
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self._widgets: list[ProseView | CodeBlockView] = []
        self._settled_text = ""
        self._settled_blocks: list[Block] = []
        self._colours = TextColours.from_palette(self.palette())
        self.markdown = ""
        self._final = True
        self._plain = False

    # ----- reading -------------------------------------------------------------------------
    def parts(self) -> list[ProseView | CodeBlockView]:
        """The widgets shown, top to bottom."""
        return list(self._widgets)

    def code_blocks(self) -> list[CodeBlockView]:
        return [w for w in self._widgets if isinstance(w, CodeBlockView)]

    def plain_text(self) -> str:
        """What a reader sees, as text: each part's plain text, parts separated by a newline."""
        return "\n".join(w.plain_text() if isinstance(w, CodeBlockView) else w.toPlainText()
                         for w in self._widgets)

    # ----- showing -------------------------------------------------------------------------
    def set_plain(self, text: str) -> None:
        """Show `text` verbatim: nothing is parsed, whitespace and line breaks are kept, long
        lines wrap."""
        self.markdown, self._final, self._plain = text, True, True
        self._settled_text, self._settled_blocks = "", []
        if text:
            self._widget_at(0, ProseView).show_plain(text)
        self._drop_from(1 if text else 0)

    def set_markdown(self, text: str, final: bool = True) -> None:
        self._plain = False
        if not text.startswith(self._settled_text):
            self._settled_text, self._settled_blocks = "", []
        self.markdown, self._final = text, final
        start = settled = len(self._settled_text)
        for cut in settled_cuts(text[start:]):  # each settled chunk is parsed on its own, once
            self._settled_blocks += split_blocks(text[settled:start + cut])
            settled = start + cut
        self._settled_text = text[:settled]
        tail = split_blocks(text[settled:]) if text[settled:].strip() else []
        self._show(self._settled_blocks, tail)

    def _show(self, settled: list[Block], tail: list[Block]) -> None:
        """Lay out settled + tail blocks: consecutive prose blocks share one ProseView (one
        fragment each; a block that starts with a table starts a new view), each code block has
        its own CodeBlockView."""
        groups: list[tuple[str, list]] = []
        for index, block in enumerate(settled + tail):
            if block.kind == "prose":
                html = to_html(block.text, self._colours)
                table = html.startswith("<table") or bool(groups) and groups[-1][1][0].startswith("<table")
                if groups and groups[-1][0] == "prose" and not table:
                    groups[-1][1].append(html)
                else:
                    groups.append(("prose", [html]))
            else:
                highlighted = self._final or index < len(settled)
                groups.append(("code", [block.text, block.language, highlighted]))
        for position, (kind, content) in enumerate(groups):
            widget = self._widget_at(position, ProseView if kind == "prose" else CodeBlockView)
            if kind == "prose":
                widget.show_fragments(content)
                # a table keeps TABLE_COLUMN_CHARS a column, and scrolls sideways in a narrow view
                # (trial 7: 25 columns of one letter each, headers read down)
                columns = _table_columns(content[0])
                widget.set_min_text_width(columns * TABLE_COLUMN_CHARS * widget.fontMetrics().averageCharWidth())
            else:
                widget.set_code(content[0], content[1], self._colours, content[2])
        self._drop_from(len(groups))

    def _drop_from(self, position: int) -> None:
        """Remove the widgets from `position` on."""
        for widget in self._widgets[position:]:
            widget.hide()
            widget.deleteLater()
        del self._widgets[position:]

    def _widget_at(self, position: int, kind: type) -> ProseView | CodeBlockView:
        if position < len(self._widgets) and type(self._widgets[position]) is kind:
            return self._widgets[position]
        widget = kind()
        if position < len(self._widgets):
            old = self._widgets[position]
            self._layout.replaceWidget(old, widget)
            old.hide()
            old.deleteLater()
            self._widgets[position] = widget
        else:
            self._layout.addWidget(widget)
            self._widgets.append(widget)
        return widget

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        """A new palette (light ↔ dark) redraws everything in its colours."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            colours = TextColours.from_palette(self.palette())
            if colours != self._colours:
                self._colours = colours
                for widget in self._widgets:
                    widget.hide()
                    widget.deleteLater()
                self._widgets = []
                if self._plain:
                    self.set_plain(self.markdown)
                else:
                    self.set_markdown(self.markdown, self._final)
