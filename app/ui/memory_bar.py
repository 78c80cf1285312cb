"""The stacked memory bar of the VRAM panel, custom-painted from a MemoryBreakdown.

Two rows on one byte scale. "Now": CUDA context, other processes, weights, KV & live tensors,
cached (reserved − allocated, hatched), free. "Peak": what is in use now as one grey block, then
the pending turn's KV and prefill spike (hatched: projected) with an error whisker, the safety
margin before the device's end, and a dashed marker where the KV would end at full context.
When the turn would not fit, the scale grows past the device and a red line marks its end.

Cost: boundaries snap to whole pixels and the picture is cached, so a sample that moves no
boundary by a pixel and changes no printed number costs a blit; a re-render is ~0.3 ms.
"""

from itertools import accumulate
from typing import NamedTuple

from PySide6.QtCore import QCoreApplication, QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QPixmap, QStaticText
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.engine.memory.units import format_bytes
from app.ui.memory_breakdown import (
    MemoryBreakdown,
    term_label,
    term_pair,
    term_projected,
    term_tooltip,
)
from app.ui.panel_colours import PanelColours
from app.ui.panel_font import panel_font, panel_scale
from app.ui.theme import blend


def term_text(key: str, kind: str) -> str:
    """A term's legend label (memory_breakdown.TERMS) in the window's language; "" when the
    term does not exist on this kind of device."""
    label = term_label(key, kind)
    return QCoreApplication.translate("MemoryTerms", label) if label else ""


def term_tip(key: str, kind: str) -> str:
    """A term's tooltip (what it is, its unit, where the number comes from), translated."""
    tip = term_tooltip(key, kind)
    return QCoreApplication.translate("MemoryTerms", tip) if tip else ""


class _Geometry(NamedTuple):
    """The bar's pixel layout, drawn for 12 px text and scaled with the font (app.ui.panel_font)."""

    label_w: int  # the "Now" / "Peak" column
    row_h: int
    label_h: int  # a marker's label under the Peak row
    rows: tuple[int, int]  # each row's top
    split: int  # the Now row's picture ends here, the Peak row's begins
    height: int

    @classmethod
    def scaled(cls, scale: float) -> "_Geometry":
        label_w, row_h, gap, top = (round(n * scale) for n in (38, 22, 18, 4))
        rows = (top, top + row_h + gap)
        return cls(label_w, row_h, round(13 * scale), rows, rows[1] - 3, top + 2 * row_h + gap + round(14 * scale))


_FILL_CACHE: dict[tuple[str, PanelColours], tuple[QBrush, ...]] = {}  # immutable brushes per term and palette


def _fills(key: str, colours: PanelColours) -> tuple[QBrush, ...]:
    """A term's fill: solid, or hatched over a pale underlay for projected terms and the cached
    gap (the underlay is the term's colour faded into the background, light or dark)."""
    cache_key = (key, colours)
    if cache_key not in _FILL_CACHE:
        fill = colours.pair(term_pair(key))
        if key == "margin":  # the safety margin: the error colour, cross-hatched
            brushes = (QBrush(QColor(colours.error), Qt.BrushStyle.DiagCrossPattern),)
        elif key == "free":
            brushes = (QBrush(fill),)
        elif term_projected(key) or key == "cached":
            under = blend(QColor(colours.background), fill, 0.12 if key == "cached" else 0.3)
            brushes = (QBrush(under), QBrush(fill, Qt.BrushStyle.BDiagPattern))
        else:
            brushes = (QBrush(fill),)
        _FILL_CACHE[cache_key] = brushes
    return _FILL_CACHE[cache_key]


def _paint_fill(painter: QPainter, rect: QRectF, key: str, colours: PanelColours) -> None:
    for brush in _fills(key, colours):
        painter.fillRect(rect, brush)


def swatch_pixmap(key: str, size: int, colours: PanelColours) -> QPixmap:
    """A legend swatch drawn like the bar draws the term (a dashed line for the full-context
    marker)."""
    pixmap = QPixmap(size, size)
    pixmap.fill(QColor(0, 0, 0, 0))
    painter = QPainter(pixmap)
    rect = QRectF(0.5, 0.5, size - 1, size - 1)
    if key == "kv_full":
        painter.setPen(QPen(colours.pair(term_pair(key)), 2, Qt.PenStyle.DashLine))
        painter.drawLine(size // 2, 0, size // 2, size)
    else:
        _paint_fill(painter, rect, key, colours)
        painter.setPen(QPen(QColor(colours.edge), 1))
        painter.drawRect(rect)
    painter.end()
    return pixmap


class MemoryBar(QWidget):
    """Paints :class:`MemoryBreakdown` rows; no signals. Hover tooltips name the term under the
    pointer (``tooltip_at``)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("memoryBar")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # Qt skips the parent beneath
        self._bd: MemoryBreakdown | None = None
        self._what_if_peak: int | None = None
        self._hits: list[list[tuple[QRectF, str]]] = [[], []]  # per row: (area, tooltip key)
        self._hit_list = self._hits[0]
        self._set_font_sizes()
        self._layers: list[QPixmap | None] = [None, None]  # cached Now and Peak row pictures
        self._cache_keys: list[tuple | None] = [None, None]
        self._texts: dict[str, tuple[QStaticText, float, float]] = {}
        self._colours = PanelColours.from_palette(self.palette())

    def _set_font_sizes(self) -> None:
        """11 px text in a layout for it, both larger with a larger font (app.ui.panel_font)."""
        self._font = panel_font(self.font(), 11)
        self._g = _Geometry.scaled(panel_scale(self.font()))
        self._texts = {}
        self._cache_keys = [None, None]

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._colours = PanelColours.from_palette(self.palette())
            self.update()
        elif event.type() == QEvent.Type.FontChange:
            self._set_font_sizes()
            self.updateGeometry()
            self.update()

    def sizeHint(self) -> QSize:
        return QSize(320, self._g.height)

    def minimumSizeHint(self) -> QSize:
        return QSize(200, self.sizeHint().height())

    def set_breakdown(self, breakdown: MemoryBreakdown | None, what_if_peak: int | None = None) -> None:
        """Repaint from ``breakdown``; what_if_peak: growth of a what-if turn, bytes, drawn as a
        marker on the Peak row (None: no marker)."""
        self._bd = breakdown
        self._what_if_peak = what_if_peak
        if list(self._fingerprint()) != self._cache_keys:
            self.update()  # an unchanged picture is not even blitted again

    # ----- geometry -------------------------------------------------------------------------
    def _scale_bytes(self, bd: MemoryBreakdown) -> int:
        turn_end = bd.in_use + (bd.growth + bd.error_bar if bd.has_projection else 0)
        return max(bd.total, turn_end, bd.in_use + (self._what_if_peak or 0))

    def _x(self, bd: MemoryBreakdown):
        """bytes → whole pixel column."""
        px = max(self.width() - self._g.label_w - 2, 10) / self._scale_bytes(bd)
        return lambda nbytes: self._g.label_w + round(nbytes * px)

    def _fingerprint(self) -> tuple:
        """(Now row, Peak row): everything each row's picture depends on — pixel columns and
        the numbers printed on it. Tooltips are worded at hover time, so their numbers need no
        repaint."""
        bd, base = self._bd, (self.width(), self.height(), self.devicePixelRatioF(), self._colours)
        if bd is None or bd.total <= 0:
            return (*base, None), (*base, None)
        x = self._x(bd)
        edges = [0, *accumulate(n for _, n in bd.now_terms())]
        spans = [(x(a), x(b)) for a, b in zip(edges, edges[1:], strict=False)]
        texts = [format_bytes(n) for _, n in bd.now_terms()]
        base_px = bd.context_overhead + (bd.other_processes or 0)
        now = (*base, bd.kind, bd.cached > 0, tuple(spans),
               x(base_px + bd.allocated), x(base_px + bd.reserved),
               tuple(t if self._fits(t, *span) else None for t, span in zip(texts, spans, strict=True)))
        used, end = bd.in_use, bd.in_use + bd.growth
        wif = self._what_if_peak
        marks = [end - bd.error_bar, end + bd.error_bar, bd.total - bd.margin, bd.total,
                 -1 if bd.kv_full_growth is None else used + bd.kv_full_growth,
                 -1 if wif is None else used + wif]
        peak_edges = [0, used, used + bd.kv_turn, end]
        peak_spans = [(x(a), x(b)) for a, b in zip(peak_edges, peak_edges[1:], strict=False)]
        peak_texts = [self.tr("in use {0}").format(format_bytes(used)), f"+{format_bytes(bd.kv_turn)}",
                      f"+{format_bytes(bd.prefill_spike)}"]
        peak = (*base, bd.has_projection, tuple(peak_spans), tuple(map(x, marks)),
                tuple(t if self._fits(t, *span) else None
                      for t, span in zip(peak_texts, peak_spans, strict=True)))
        return now, peak

    def _fits(self, text: str, left: int, right: int) -> bool:
        return self._entry(text)[1] + 6 < right - left

    # ----- painting -------------------------------------------------------------------------
    def paintEvent(self, _event) -> None:
        """Blit the two cached row pictures; re-render a row only when its fingerprint changed
        (in decode the Now row changes far more often than the Peak row)."""
        keys = self._fingerprint()
        dpr = self.devicePixelRatioF()
        for i, (top, bottom) in enumerate(((0, self._g.split), (self._g.split, self.height()))):
            if keys[i] != self._cache_keys[i] or self._layers[i] is None:
                size = (round(self.width() * dpr), round((bottom - top) * dpr))
                layer = self._layers[i]
                if layer is None or (layer.width(), layer.height()) != size:
                    layer = self._layers[i] = QPixmap(*size)
                    layer.setDevicePixelRatio(dpr)
                layer.fill(QColor(self._colours.background))
                painter = QPainter(layer)
                painter.translate(0, -top)
                self._render(painter, i)
                self._cache_keys[i] = keys[i]
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._layers[0])
        painter.drawPixmap(0, self._g.split, self._layers[1])
        bd = self._bd
        if bd is not None and bd.total > 0 and self._scale_bytes(bd) > bd.total:
            at = self._x(bd)(bd.total)  # the device ends before the bar does
            painter.setPen(QPen(QColor(self._colours.error), 2))
            painter.drawLine(at, self._g.rows[0] - 2, at, self._g.rows[1] + self._g.row_h + 2)
        painter.end()

    def _entry(self, text: str) -> tuple[QStaticText, float, float]:
        """Laid-out text and its size, kept for reuse (drawing it again costs a fraction of
        drawText)."""
        entry = self._texts.get(text)
        if entry is None:
            if len(self._texts) > 256:
                self._texts.clear()
            static = QStaticText(text)
            static.prepare(font=self._font)
            size = static.size()
            entry = self._texts[text] = (static, size.width(), size.height())
        return entry

    def _text(self, painter: QPainter, text: str, left: float, top: float, width: float,
              height: float, align: str = "center") -> None:
        """Draw ``text`` in a box, aligned "center", "left" or "right"."""
        static, w, h = self._entry(text)
        dx = {"center": (width - w) / 2, "left": 0.0, "right": width - w}[align]
        painter.drawStaticText(QPointF(left + dx, top + (height - h) / 2), static)

    def _render(self, painter: QPainter, row: int) -> None:
        """Row 0 (Now, with the allocator bracket) or row 1 (Peak, with markers)."""
        painter.setFont(self._font)
        colours = self._colours
        self._hit_list = self._hits[row] = []
        self._labels: list[QRectF] = []  # marker labels placed so far (to avoid overlaps)
        bd = self._bd
        painter.setPen(QColor(colours.muted))
        g = self._g
        self._text(painter, (self.tr("Now"), self.tr("Peak"))[row], 0, g.rows[row], g.label_w - 4, g.row_h, "right")
        if bd is None or bd.total <= 0:
            if row == 0:
                self._text(painter, self.tr("waiting for the first memory sample…"), self._g.label_w, self._g.rows[0],
                           self.width() - self._g.label_w, self._g.row_h)
            painter.end()
            return
        x = self._x(bd)
        if row == 0:
            self._paint_now_row(painter, bd, x, self._g.rows[0])
            self._paint_allocator_bracket(painter, bd, x, self._g.rows[0] + self._g.row_h)
        else:
            self._paint_peak_row(painter, bd, x, self._g.rows[1])
        painter.end()

    def _segment(self, painter: QPainter, left: int, right: int, y: int, key: str,
                 text: str) -> None:
        """One term from pixel column ``left`` to ``right``; ``key`` also names its tooltip."""
        if right <= left:
            return
        colours = self._colours
        rect = QRectF(left, y, right - left, self._g.row_h)
        if key == "in_use":
            painter.fillRect(rect, QColor(colours.track))
        else:
            _paint_fill(painter, rect, key, colours)
        painter.setPen(QPen(QColor(colours.edge), 0))
        painter.drawRect(rect)
        self._hit_list.append((rect, key))
        if not text or not self._fits(text, left, right):
            return
        solid = key == "in_use" or not (term_projected(key) or key in ("cached", "free"))
        fill = QColor(colours.track) if key == "in_use" else _fills(key, colours)[0].color()
        painter.setPen(colours.on_fill(fill) if solid else QColor(colours.text))
        self._text(painter, text, rect.left(), y, rect.width(), self._g.row_h)

    def _paint_now_row(self, painter, bd, x, y) -> None:
        start = 0
        for key, nbytes in bd.now_terms():
            self._segment(painter, x(start), x(start + nbytes), y, key, format_bytes(nbytes))
            start += nbytes

    def _paint_allocator_bracket(self, painter, bd, x, y) -> None:
        """A thin line under the Now row: solid over allocated, dashed over the cached gap."""
        if bd.kind != "cuda" or bd.reserved <= 0:
            return
        base = bd.context_overhead + (bd.other_processes or 0)
        left, mid, right = x(base), x(base + bd.allocated), x(base + bd.reserved)
        y += 3
        colours = self._colours
        painter.setPen(QPen(QColor(colours.text), 1.5))
        painter.drawLine(left, y - 3, left, y)
        painter.drawLine(left, y, mid, y)
        painter.setPen(QPen(colours.pair(term_pair("cached")), 1, Qt.PenStyle.DashLine))
        painter.drawLine(mid, y, right, y)
        painter.drawLine(right, y - 3, right, y)
        painter.setPen(QColor(colours.muted))
        text = self.tr("allocated ┄ reserved") if bd.cached else self.tr("allocated = reserved")
        self._text(painter, text, left, y, right - left, self._g.split - y)

    def _paint_peak_row(self, painter, bd, x, y) -> None:
        used, colours = bd.in_use, self._colours
        track = QRectF(x(0), y, x(bd.total) - x(0), self._g.row_h)
        painter.fillRect(track, QColor(colours.background))
        painter.setPen(QPen(QColor(colours.edge), 0))
        painter.drawRect(track)
        self._hit_list.append((track, "free_after"))
        self._segment(painter, x(0), x(used), y, "in_use", self.tr("in use {0}").format(format_bytes(used)))
        margin_rect = QRectF(x(max(bd.total - bd.margin, used)), y, 0, self._g.row_h)
        margin_rect.setRight(x(bd.total))
        _paint_fill(painter, margin_rect, "margin", colours)
        self._hit_list.append((margin_rect, "margin"))
        if not bd.has_projection:
            painter.setPen(QColor(colours.muted))
            self._text(painter, self.tr("no turn running"), x(used) + 6, y, x(bd.total) - x(used) - 12,
                       self._g.row_h, "left")
            return
        start = used
        for key, nbytes in (("kv_turn", bd.kv_turn), ("prefill", bd.prefill_spike)):
            self._segment(painter, x(start), x(start + nbytes), y, key, f"+{format_bytes(nbytes)}")
            start += nbytes
        self._whisker(painter, x(start - bd.error_bar), x(start + bd.error_bar), y)
        self._labels.append(QRectF(x(start - bd.error_bar) - 1, y + self._g.row_h,
                                   x(start + bd.error_bar) - x(start - bd.error_bar) + 2, 2))
        if bd.kv_full_growth is not None:
            self._marker(painter, x(used + bd.kv_full_growth), y, colours.pair(term_pair("kv_full")),
                         self.tr("full ctx"), "kv_full")
        if self._what_if_peak is not None:
            self._marker(painter, x(used + self._what_if_peak), y, QColor(colours.text), self.tr("what if"), "what_if")

    def _whisker(self, painter, left: int, right: int, y: int) -> None:
        """The error bar: a thin range line along the row's lower edge with short caps."""
        y += self._g.row_h - 3
        painter.setPen(QPen(QColor(self._colours.text), 1))
        painter.drawLine(left, y, right, y)
        for end in (left, right):
            painter.drawLine(end, y - 3, end, y)

    def _marker(self, painter, at: int, y: int, colour: QColor, text: str, key: str) -> None:
        """A dashed line across the row, labelled below it: right of the line, else left of
        it, else (both collide with an earlier label) the label is left to the tooltip."""
        right = self.width() - 2
        if at > right:  # off the scale (e.g. KV at full context beyond the device): point there
            at, text = right, f"{text} ▸"
        painter.setPen(QPen(colour, 1, Qt.PenStyle.DashLine))
        painter.drawLine(at, y - 3, at, y + self._g.row_h + 3)
        self._hit_list.append((QRectF(at - 3, y - 3, 6, self._g.row_h + 6), key))
        width = self._entry(text)[1]
        for left in (min(at + 3, self.width() - width - 2), max(at - width - 3, 0)):
            box = QRectF(left, y + self._g.row_h, width, self._g.label_h)
            if not any(box.intersects(placed) for placed in self._labels):
                painter.setPen(colour)
                self._text(painter, text, left, y + self._g.row_h, width, self._g.label_h, "left")
                self._labels.append(box.adjusted(-2, 0, 2, 0))
                return

    # ----- tooltips -------------------------------------------------------------------------
    def tooltip_at(self, pos: QPointF) -> str:
        """Text of the term under ``pos`` (widget coordinates), "" over nothing; the numbers are
        the latest breakdown's (the picture may be a cached one)."""
        keys = [key for rect, key in self._hits[0] + self._hits[1] if rect.contains(pos)]
        return self._tip(keys[-1]) if keys and self._bd is not None else ""

    def _tip(self, key: str) -> str:
        bd = self._bd
        special = {
            "in_use": lambda: self.tr("In use now: {0}").format(format_bytes(bd.in_use)),
            "free_after": lambda: self.tr("Free after this turn: {0}").format(format_bytes(bd.headroom)),
            "margin": lambda: self.tr("Safety margin kept free: {0}").format(format_bytes(bd.margin)),
            "kv_full": lambda: self.tr("KV at full context: {0}").format(format_bytes(bd.kv_at_full_context or 0)),
            "what_if": lambda: self.tr("What-if peak: +{0} on top of what is in use").format(
                format_bytes(self._what_if_peak or 0)),
        }
        if key in special:
            return special[key]()
        nbytes = {"kv_turn": bd.kv_turn, "prefill": bd.prefill_spike, **dict(bd.now_terms())}[key]
        return f"{term_text(key, bd.kind) or key}: {format_bytes(nbytes)}"

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            tip = self.tooltip_at(QPointF(event.pos()))
            if tip:
                QToolTip.showText(event.globalPos(), tip, self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)
