"""Headroom gauge: how much of the device the pending turn's peak leaves free, coloured green,
amber (< 15 % left) or red (peak ± error over free − safety margin), before the limit is hit."""

from PySide6.QtCore import QCoreApplication, QEvent, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.engine.memory.admission import AMBER_HEADROOM_FRACTION
from app.engine.memory.units import format_bytes
from app.ui.memory_breakdown import MemoryBreakdown
from app.ui.panel_colours import PanelColours
from app.ui.panel_font import panel_font, panel_scale


def verdict_text(state: str) -> str:
    """The verdict word for a state ("ok", "amber", "red"; "" for "none"), translated."""
    return {"ok": QCoreApplication.translate("HeadroomGauge", "fits"),
            "amber": QCoreApplication.translate("HeadroomGauge", "tight"),
            "red": QCoreApplication.translate("HeadroomGauge", "won't fit")}.get(state, "")


class HeadroomGauge(QWidget):
    """Paints the headroom of a MemoryBreakdown; no signals. ``state`` is "ok", "amber", "red",
    or "none" before the first sample; ``text`` is the caption drawn above the meter."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("headroomGauge")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # Qt skips the parent beneath
        self.state = "none"
        self.text = self.tr("Headroom: waiting for a sample…")
        self._used_fraction = 0.0
        self._font = panel_font(self.font(), 12, bold=True)
        self._scale = panel_scale(self.font())
        self._cache: QPixmap | None = None
        self._cache_key: tuple | None = None
        self._colours = PanelColours.from_palette(self.palette())

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._colours = PanelColours.from_palette(self.palette())
            self.update()
        elif event.type() == QEvent.Type.FontChange:  # text and track grow with the font (panel_font)
            self._font, self._scale = panel_font(self.font(), 12, bold=True), panel_scale(self.font())
            self._cache_key = None
            self.updateGeometry()
            self.update()

    def sizeHint(self) -> QSize:
        return QSize(320, round(36 * self._scale))

    def set_breakdown(self, bd: MemoryBreakdown | None) -> None:
        if bd is None or bd.total <= 0:
            self.state, self.text, self._used_fraction = "none", self.tr("Headroom: no sample"), 0.0
        else:
            self.state = bd.state
            verdict = verdict_text(self.state)
            if bd.headroom < 0:
                self.text = (self.tr("Over by {0} after this turn — {1}") if bd.has_projection
                             else self.tr("Over by {0} now — {1}")).format(format_bytes(-bd.headroom), verdict)
            else:
                self.text = (self.tr("Headroom after this turn: {0} ({1}) — {2}") if bd.has_projection
                             else self.tr("Headroom now: {0} ({1}) — {2}")).format(
                    format_bytes(bd.headroom), f"{bd.headroom_fraction:.0%}", verdict)
            self._used_fraction = min(max(1 - bd.headroom_fraction, 0.0), 1.0)
        self._set_tooltip_once(self.tr(
            "Free memory left at the pending turn's projected peak (plus its error bar), as a share "
            "of the device. Amber below {0}; red when the peak ± error plus the safety margin exceeds "
            "free memory — admission control would refuse the turn.").format(f"{AMBER_HEADROOM_FRACTION:.0%}"))
        if self._key() != self._cache_key:
            self.update()

    def _set_tooltip_once(self, text: str) -> None:
        if self.toolTip() != text:
            self.setToolTip(text)

    def _key(self) -> tuple:
        return (self.width(), self.height(), self.devicePixelRatioF(), self._colours, self.state, self.text,
                round(self._used_fraction * self.width() * 4))

    def paintEvent(self, _event) -> None:
        """Blit the cached picture; re-render only when the text, state or fill pixel changed."""
        dpr = self.devicePixelRatioF()
        key = self._key()
        if key != self._cache_key:
            self._cache = QPixmap(round(self.width() * dpr), round(self.height() * dpr))
            self._cache.setDevicePixelRatio(dpr)
            self._cache.fill(QColor(self._colours.background))
            self._render(QPainter(self._cache))
            self._cache_key = key
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._cache)
        painter.end()

    def _render(self, painter: QPainter) -> None:
        colours = self._colours
        colour = colours.state_text(self.state)
        painter.setFont(self._font)
        painter.setPen(colour)
        scale = self._scale
        painter.drawText(QRectF(0, 0, self.width(), round(18 * scale)), Qt.AlignmentFlag.AlignLeft
                         | Qt.AlignmentFlag.AlignVCenter, self.text)
        track = QRectF(0.5, round(21 * scale) + 0.5, self.width() - 1, round(10 * scale))
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(colours.edge), 1))
        painter.setBrush(QColor(colours.track))
        painter.drawRoundedRect(track, 4, 4)
        fill = QRectF(track.left(), track.top(), track.width() * self._used_fraction, track.height())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colours.state_fill(self.state))
        painter.drawRoundedRect(fill, 4, 4)
        amber_x = track.left() + track.width() * (1 - AMBER_HEADROOM_FRACTION)
        painter.setPen(QPen(QColor(colours.muted), 1, Qt.PenStyle.DotLine))
        painter.drawLine(amber_x, track.top() - 2, amber_x, track.bottom() + 2)
        painter.end()
