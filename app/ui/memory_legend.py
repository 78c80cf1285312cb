"""The VRAM panel's legend: one row per memory term — swatch, name, value — painted in one pass.

Painted rather than built of 27 QLabels: the values change up to 4 times a second, and a label
per value costs a stylesheet-styled paint each (measured ~0.1 ms apiece with the app's QSS); here
a changed value repaints its own row only. Names wrap to the width; hovering a row shows what the
term is, its unit and where the number comes from.
"""

from PySide6.QtCore import QEvent, QPointF, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QStaticText, QTextOption
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.ui.memory_bar import swatch_pixmap, term_text, term_tip
from app.ui.memory_breakdown import TERM_KEYS
from app.ui.panel_colours import PanelColours
from app.ui.panel_font import panel_font, panel_scale

_SWATCH = 12
_NAME_X = 18
_VALUE_W = 130
_PAD = 2


class MemoryLegend(QWidget):
    """Legend rows for memory_breakdown.TERM_KEYS; no signals.

    ``name_text(key)``, ``value_text(key)``, ``row_visible(key)`` and ``tooltip_text(key)`` read
    what is shown (for tests and accessibility)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("memoryLegend")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # Qt skips the parent beneath
        self._set_font_sizes()
        self._kind = "cuda"
        self._values = dict.fromkeys(TERM_KEYS, "—")
        self._colours = PanelColours.from_palette(self.palette())
        self._swatches = {key: swatch_pixmap(key, _SWATCH, self._colours) for key in TERM_KEYS}
        self._names: dict[str, QStaticText] = {}
        self._value_cache: dict[str, QStaticText] = {}
        self._rows: list[tuple[str, int, int]] = []  # key, top, height, for the current width
        self._layout_width = -1
        self.set_kind("cuda")

    # ----- content --------------------------------------------------------------------------
    def set_kind(self, kind: str) -> None:
        """"cuda" or "cpu": names and tooltips follow; terms a CPU lacks are hidden."""
        self._kind = kind
        self._names = {}
        for key in TERM_KEYS:
            label = term_text(key, kind)
            if label:
                static = QStaticText(label)
                static.setTextFormat(Qt.TextFormat.PlainText)
                option = QTextOption()
                option.setWrapMode(QTextOption.WrapMode.WordWrap)
                static.setTextOption(option)
                self._names[key] = static
        self._layout_width = -1
        self.updateGeometry()
        self.update()

    def set_values(self, values: dict[str, str]) -> None:
        """New value texts by key; only rows whose text changed are repainted."""
        for key, text in values.items():
            if self._values.get(key) != text:
                self._values[key] = text
                row = self._row(key)
                if row is not None:
                    self.update(QRect(0, row[1], self.width(), row[2]))

    def name_text(self, key: str) -> str:
        static = self._names.get(key)
        return static.text() if static is not None else ""

    def value_text(self, key: str) -> str:
        return self._values[key]

    def row_visible(self, key: str) -> bool:
        return key in self._names

    def tooltip_text(self, key: str) -> str:
        return term_tip(key, self._kind)

    # ----- geometry ---------------------------------------------------------------------------
    def _name_width(self, width: int) -> int:
        return max(width - _NAME_X - round(_VALUE_W * self._scale) - 6, 60)

    def _relayout(self, width: int) -> None:
        """Row tops and heights for ``width`` (names may wrap to two lines)."""
        if width == self._layout_width:
            return
        self._layout_width, self._rows, top = width, [], 0
        for key in TERM_KEYS:
            static = self._names.get(key)
            if static is None:
                continue
            static.setTextWidth(self._name_width(width))
            static.prepare(font=self._font)
            height = max(round(static.size().height()) + _PAD, self._line_h)
            self._rows.append((key, top, height))
            top += height

    def _row(self, key: str) -> tuple[str, int, int] | None:
        self._relayout(self.width())
        return next((row for row in self._rows if row[0] == key), None)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        self._relayout(width)
        return sum(row[2] for row in self._rows)

    def sizeHint(self) -> QSize:
        return QSize(320, self.heightForWidth(max(self.width(), 320)))

    def minimumSizeHint(self) -> QSize:
        return QSize(_NAME_X + 60 + round(_VALUE_W * self._scale), self.heightForWidth(max(self.width(), 320)))

    # ----- painting -------------------------------------------------------------------------
    def _value_static(self, text: str) -> QStaticText:
        static = self._value_cache.get(text)
        if static is None:
            if len(self._value_cache) > 256:
                self._value_cache.clear()
            static = self._value_cache[text] = QStaticText(text)
            static.prepare(font=self._font)
        return static

    def paintEvent(self, event) -> None:
        self._relayout(self.width())
        painter = QPainter(self)
        exposed = event.rect()
        painter.fillRect(exposed, QColor(self._colours.background))
        painter.setFont(self._font)
        painter.setPen(QColor(self._colours.text))
        for key, top, height in self._rows:
            if top > exposed.bottom() or top + height < exposed.top():
                continue
            painter.drawPixmap(0, top + (self._line_h - _SWATCH) // 2, self._swatches[key])
            painter.drawStaticText(QPointF(_NAME_X, top + 1), self._names[key])
            value = self._value_static(self._values[key])
            painter.drawStaticText(QPointF(self.width() - value.size().width() - 1, top + 1), value)
        painter.end()

    def _set_font_sizes(self) -> None:
        """12 px text on 17 px rows, both larger with a larger font (app.ui.panel_font)."""
        self._font = panel_font(self.font(), 12)
        self._scale = panel_scale(self.font())
        self._line_h = round(17 * self._scale)
        self._value_cache = {}
        self._layout_width = -1

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._colours = PanelColours.from_palette(self.palette())
            self._swatches = {key: swatch_pixmap(key, _SWATCH, self._colours) for key in TERM_KEYS}
            self.update()
        elif event.type() == QEvent.Type.FontChange:
            self._set_font_sizes()
            self.updateGeometry()
            self.update()

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            pos = QPointF(event.pos())
            key = next((k for k, top, h in self._rows
                        if QRectF(0, top, self.width(), h).contains(pos)), None)
            if key is not None:
                QToolTip.showText(event.globalPos(), self.tooltip_text(key), self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)
