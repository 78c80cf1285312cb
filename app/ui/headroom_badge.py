"""The compact headroom gauge in the status bar: a small meter and "Headroom 3.1 GiB (41 %)"
coloured by admission's verdict. A click (or Space) opens and closes the full memory panel, so
the panel can stay closed and leave the window to the conversation.
"""

from PySide6.QtCore import QEvent, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QAbstractButton, QSizePolicy

from app.engine.memory.units import format_bytes
from app.ui.memory_breakdown import MemoryBreakdown
from app.ui.panel_colours import PanelColours
from app.ui.theme import readable

_METER_W, _METER_H, _GAP = 36, 8, 6


class HeadroomBadge(QAbstractButton):
    """A checkable button (checked: the memory panel is open); signals are QAbstractButton's
    (`toggled(bool)`, `clicked()`). ``state`` is "ok", "amber", "red" or "none"; ``text()`` the
    words shown."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("headroomBadge")
        self.setCheckable(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.setAccessibleName(self.tr("Memory headroom"))
        self.state = "none"
        self._used_fraction = 0.0
        self.setText(self.tr("Headroom: no sample"))
        self.set_remote(False)

    def set_remote(self, remote: bool) -> None:
        """Whether a remote server answers the turns: then this gauge is this computer's memory,
        not the next turn's (trial 14: a remote chat's status bar showed the local gauge as if it
        were the turn's), and its tooltip says so."""
        self.setToolTip(self.tr("This computer's memory: turns go to the remote server, which keeps its own. "
                                "Click to show or hide the memory panel.") if remote else
                        self.tr("Memory left for the next turn. Click to show or hide the memory panel."))

    def set_breakdown(self, bd: MemoryBreakdown | None) -> None:
        """Show the headroom of `bd` (None: no sample yet); repaints only on a visible change."""
        if bd is None or bd.total <= 0:
            state, text, used = "none", self.tr("Headroom: no sample"), 0.0
        else:
            state, used = bd.state, min(max(1 - bd.headroom_fraction, 0.0), 1.0)
            if bd.headroom < 0:
                text = self.tr("Over by {0}").format(format_bytes(-bd.headroom))
            else:
                text = self.tr("Headroom {0} ({1:.0%})").format(format_bytes(bd.headroom), bd.headroom_fraction)
        if (state, text, round(used * _METER_W)) != (self.state, self.text(), round(self._used_fraction * _METER_W)):
            self.state, self._used_fraction = state, used
            self.setText(text)  # QAbstractButton repaints and updates the size hint
            self.setAccessibleDescription(text)

    def sizeHint(self) -> QSize:
        metrics = self.fontMetrics()
        widest = max(metrics.horizontalAdvance(self.text()),
                     metrics.horizontalAdvance(self.tr("Headroom {0} ({1:.0%})").format("888.8 GiB", 1.0)))
        return QSize(_METER_W + _GAP + widest + 8, max(metrics.height() + 4, _METER_H + 6))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange):
            self.updateGeometry()
            self.update()

    def paintEvent(self, _event) -> None:
        """Meter, then the text, both in the verdict's colour (readable on the window colour)."""
        colours = PanelColours.from_palette(self.palette())
        window = self.palette().color(self.backgroundRole())
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if self.isChecked() or self.underMouse() or self.hasFocus():
            painter.fillRect(self.rect(), QColor(colours.track if self.isChecked() else window.darker(105)))
        top = (self.height() - _METER_H) / 2
        track = QRectF(4.5, top + 0.5, _METER_W - 1, _METER_H - 1)
        painter.setPen(QPen(QColor(colours.edge), 1))
        painter.setBrush(QColor(colours.background))
        painter.drawRoundedRect(track, 3, 3)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colours.state_fill(self.state))
        painter.drawRoundedRect(QRectF(track.left(), track.top(), track.width() * self._used_fraction,
                                       track.height()), 3, 3)
        background = QColor(colours.track) if self.isChecked() else window
        painter.setPen(readable(colours.state_text(self.state), background))
        painter.drawText(QRectF(4 + _METER_W + _GAP, 0, self.width(), self.height()),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self.text())
        painter.end()
