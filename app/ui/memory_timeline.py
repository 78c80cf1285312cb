"""Timeline of the last minutes (pyqtgraph): allocated, reserved, the pending turn's projected
peak and the limit allocated can reach (reserved + free), in GiB against seconds before now.

Appending a sample is O(1) into preallocated numpy rings. The curves are redrawn by their own
timer once per ``redraw_interval_s`` (1 s), not per sample: pushing 4 × 1,200 points through
pyqtgraph and repainting the plot costs ~2-3 ms, more than the whole 2 ms per-sample budget, so
the plot is throttled to 1 Hz (a 5-minute window at ~1 px per second loses nothing visible) and
the per-sample path never touches it. Both costs are measured in tests/ui/test_vram_panel.py.
"""

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QEvent, Qt, QTimer, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.engine.memory.sample import MemorySample
from app.engine.memory.units import GiB
from app.ui.theme import blend, pick, readable

# (column, legend name, colour pair in app/ui/theme.py, pen style). Pens are 1 px (cosmetic):
# wider or dashed pens over 1,200 points cost the raster engine 3-4 ms per repaint, 1 px solid
# ones ~0.3 ms (measured).
_SERIES = (
    ("allocated", QT_TRANSLATE_NOOP("MemoryTimeline", "allocated"), "accent", Qt.PenStyle.SolidLine),
    ("reserved", QT_TRANSLATE_NOOP("MemoryTimeline", "reserved"), "plotReserved", Qt.PenStyle.SolidLine),
    ("projected", QT_TRANSLATE_NOOP("MemoryTimeline", "projected peak"), "plotProjected", Qt.PenStyle.DashLine),
    ("limit", QT_TRANSLATE_NOOP("MemoryTimeline", "limit (reserved + free)"), "error", Qt.PenStyle.SolidLine),
)


class MemoryTimeline(QWidget):
    """A pyqtgraph plot of samples; no signals. ``redraws`` counts plot refreshes (1 Hz timer or
    :meth:`redraw`); ``points()`` the samples held."""

    def __init__(self, window_s: float = 300.0, interval_s: float = 0.25,
                 redraw_interval_s: float = 1.0, parent=None):
        super().__init__(parent)
        self.setObjectName("memoryTimeline")
        self.window_s = window_s
        self.redraws = 0
        capacity = int(math.ceil(window_s / interval_s)) + 8
        self._t = np.full(capacity, np.nan)
        self._y = np.full((len(_SERIES), capacity), np.nan)
        self._n = 0  # points written so far (the ring index is n % capacity)
        self._dirty = False
        self._y_top = 0.0
        self._timer = QTimer(self)
        self._timer.setObjectName("timelineRedraw")
        self._timer.setInterval(round(redraw_interval_s * 1000))
        self._timer.timeout.connect(self._on_timeout)
        self.plot = pg.PlotWidget()
        self.plot.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.plot.setFixedHeight(170)
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        item = self.plot.getPlotItem()
        # pyqtgraph makes its "Plot Options" menu without a parent: a top-level widget that lived
        # until Python's cycle collector freed the plot item, at any moment, once inside Qt's loop
        # over every widget in QApplication.setStyleSheet (a segfault in CI). Owned by the plot
        # widget, it goes when the plot goes; its popup flags are kept.
        item.ctrlMenu.setParent(self.plot, item.ctrlMenu.windowFlags())
        item.setLabel("left", "GiB")
        item.setLabel("bottom", self.tr("seconds before now"))
        item.setXRange(-window_s, 0, padding=0)
        self.curves = {  # drawn in reverse so allocated lies on top of reserved when they meet
            key: item.plot([], []) for key, *_rest in reversed(_SERIES)
        }
        for curve in self.curves.values():  # at most ~2 points per pixel column, peaks kept
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
        self.legend = QLabel()
        self.legend.setObjectName("timelineLegend")
        self.legend.setWordWrap(True)
        self._kind = ""
        self._colours: dict[str, str] = {}
        self._apply_palette()
        self.set_kind("cuda")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.plot)
        layout.addWidget(self.legend)

    def _apply_palette(self) -> None:
        """Plot background, axes and series in the palette's colours (light/dark pairs for the
        series, each readable on the background)."""
        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        self.plot.setBackground(background)
        item = self.plot.getPlotItem()
        for axis in ("left", "bottom"):
            item.getAxis(axis).setTextPen(readable(blend(text, background, 0.3), background))
            item.getAxis(axis).setPen(blend(text, background, 0.5))
        self._colours = {key: readable(pick(pair, palette), background, 3.0).name()
                         for key, _name, pair, _style in _SERIES}
        for key, _name, _pair, style in _SERIES:
            self.curves[key].setPen(pg.mkPen(self._colours[key], width=1, style=style))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
            kind, self._kind = self._kind, ""
            self.set_kind(kind)

    def set_kind(self, kind: str) -> None:
        """"cuda": allocated, reserved, limit = reserved + free; "cpu": RSS (reserved is RSS too,
        so that curve is hidden) and limit = RSS + available."""
        if kind == self._kind:
            return
        self._kind = kind
        names = {key: QCoreApplication.translate("MemoryTimeline", name) for key, name, *_rest in _SERIES}
        if kind != "cuda":
            names.update(allocated="RSS", limit=self.tr("limit (RSS + available)"))
        self.curves["reserved"].setVisible(kind == "cuda")
        marks = {Qt.PenStyle.SolidLine: "━", Qt.PenStyle.DashLine: "╍"}
        self.legend.setText("&nbsp;&nbsp;".join(
            f'<span style="color:{self._colours[key]}">{marks[style]}</span>&nbsp;{names[key]}'
            for key, _name, _pair, style in _SERIES if kind == "cuda" or key != "reserved"))
        self.legend.setToolTip(
            self.tr("GiB against seconds before now, sampled ≈4 Hz, drawn once a second.") + " "
            + (self.tr("allocated: live tensors; reserved: held by the caching allocator; "
                       "projected peak: the pending turn's; limit: what allocated can reach "
                       "(reserved + driver-free).") if kind == "cuda" else
               self.tr("RSS: this process's resident memory; projected peak: the pending turn's; "
                       "limit: what RSS can reach (RSS + available system memory).")))

    def append(self, sample: MemorySample, projected_peak: int | None) -> None:
        """Record one sample (bytes → GiB). O(1): the curves are redrawn by the 1 Hz timer."""
        capacity = self._t.shape[0]
        i = self._n % capacity
        self._t[i] = sample.timestamp
        self._y[:, i] = (sample.allocated / GiB, sample.reserved / GiB,
                         np.nan if projected_peak is None else projected_peak / GiB,
                         (sample.reserved + sample.free) / GiB)
        self._n += 1
        self._dirty = True
        top = sample.total / GiB
        if top != self._y_top:
            self._y_top = top
            self.plot.getPlotItem().setYRange(0, top * 1.05, padding=0)
        if not self._timer.isActive():
            self._timer.start()

    @Slot()
    def _on_timeout(self) -> None:
        if not self._dirty:
            self._timer.stop()  # nothing new: sleep until the next sample
            return
        if self.isVisible():
            self.redraw()

    def redraw(self) -> None:
        """Push the rings to the curves now (x = timestamp − newest timestamp, seconds)."""
        count = min(self._n, self._t.shape[0])
        if count == 0:
            return
        order = np.arange(self._n - count, self._n) % self._t.shape[0]
        t = self._t[order]
        now = t[-1]
        keep = t >= now - self.window_s
        x = t[keep] - now
        for row, (key, *_rest) in enumerate(_SERIES):
            self.curves[key].setData(x, self._y[row, order][keep], connect="finite")
        self._dirty = False
        self.redraws += 1

    def clear(self) -> None:
        self._t[:] = np.nan
        self._y[:] = np.nan
        self._n = 0
        self._dirty = False
        for curve in self.curves.values():
            curve.setData([], [])

    def points(self) -> int:
        """Samples held (at most the window's worth)."""
        return min(self._n, self._t.shape[0])
