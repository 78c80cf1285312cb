"""The live VRAM panel (a dock): headroom gauge, stacked memory bar, legend with every term,
allocated vs reserved, a timeline of the last minutes and a "what if" control.

It only draws what it receives: samples (``show_sample``, ≈4 Hz from a MemoryMonitor), the
pending turn's projection (``show_projection``) and what-if projections (``show_what_if``). On a
machine without CUDA the samples are process RSS against system memory, and the labels say so.
"""

import os

from PySide6.QtCore import QEvent, Qt, Signal, Slot
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.engine.memory.admission import TurnProjection
from app.engine.memory.sample import MemorySample
from app.engine.memory.units import format_bytes
from app.ui.headroom_gauge import HeadroomGauge, verdict_text
from app.ui.memory_bar import MemoryBar
from app.ui.memory_breakdown import DEFAULT_SAFETY_MARGIN, MemoryBreakdown
from app.ui.memory_legend import MemoryLegend
from app.ui.memory_timeline import MemoryTimeline
from app.ui.panel_colours import PanelColours
from app.ui.panel_font import panel_font
from app.ui.server_metrics_view import ServerMetricsView
from app.ui.what_if import WhatIfControl

# px: the panel's width beside the chat (its bars whole, the legend's names on a line or two
# beside their values); on a small screen it narrows down to MIN_WIDTH while the chat column
# keeps its own minimum (MainWindow), scrolling sideways what its content cannot narrow to
PREFERRED_WIDTH, MIN_WIDTH = 360, 120


class VramPanel(QDockWidget):
    """Dockable memory panel.

    Signals:
        what_if_changed(int context_tokens, int max_new_tokens): the user moved a what-if slider;
            answer with ``show_what_if(reproject(projection, context_tokens=…, max_new_tokens=…))``.
        diagnostics_requested(): "Save diagnostics…" clicked.
        breakdown_changed(object MemoryBreakdown | None): drawn again (≈4 Hz while sampling), for
            the compact gauge in the status bar.

    ``breakdown`` is the MemoryBreakdown last drawn (None before the first sample); ``legend``
    shows each term's value (keys: memory_breakdown.TERM_KEYS); ``readout.lines()`` the
    allocated/reserved line and the projected peak.
    """

    what_if_changed = Signal(int, int)
    diagnostics_requested = Signal()
    breakdown_changed = Signal(object)

    def __init__(self, parent=None, *, safety_margin=DEFAULT_SAFETY_MARGIN,
                 history_s: float = 300.0, interval_s: float = 0.25):
        super().__init__("VRAM", parent)
        self.setObjectName("vramPanel")
        self.setAllowedAreas(Qt.DockWidgetArea.LeftDockWidgetArea
                             | Qt.DockWidgetArea.RightDockWidgetArea)
        self.breakdown: MemoryBreakdown | None = None
        self._sample: MemorySample | None = None
        self._projection: TurnProjection | None = None
        self._kv_dtype = ""  # the open chat's KV cache dtype, said beside the device
        self._what_if: TurnProjection | None = None
        self._what_if_beyond: tuple[int, int, int] | None = None  # (context, new, limit) when over the limit
        self._weights = 0
        self._margin = safety_margin
        self._kind = ""
        self.device_label = QLabel(self.tr("No memory sample yet"))
        self.device_label.setObjectName("panelDevice")
        self.device_label.setWordWrap(True)
        self.server = ServerMetricsView()  # a remote backend's view, shown only while one is chosen
        self.server.setVisible(False)
        self.gauge = HeadroomGauge()
        self.bar = MemoryBar()
        self.legend = MemoryLegend()
        self.readout = _Readout(3)
        self.timeline = MemoryTimeline(history_s, interval_s)
        self.what_if = WhatIfControl()
        self.diagnostics_button = QPushButton(self.tr("Save diagnostics…"))
        self.diagnostics_button.setToolTip(self.tr("Write a report (memory summary, model, recent turns' "
                                                   "projected vs measured peaks) to attach to a bug report"))
        self.setWidget(self._build_body())
        self.what_if.changed.connect(self._on_changed)
        self.what_if.follow_requested.connect(self._on_follow_requested)
        self.diagnostics_button.clicked.connect(self.diagnostics_requested)
        self._set_kind("cuda")
        self._refresh()

    def _build_body(self) -> QScrollArea:
        body = QWidget()
        body.setObjectName("vramBody")
        # the palette's base colour, as the painted children fill theirs (they are opaque)
        body.setBackgroundRole(QPalette.ColorRole.Base)
        body.setAutoFillBackground(True)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(6)
        layout.addWidget(self.server)
        layout.addWidget(self.device_label)
        layout.addWidget(self.gauge)
        layout.addWidget(self.bar)
        layout.addWidget(self.legend)
        layout.addWidget(self.readout)
        layout.addWidget(self.timeline)
        layout.addWidget(self.what_if)
        layout.addWidget(self.diagnostics_button, 0, Qt.AlignmentFlag.AlignRight)
        layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setObjectName("vramScroll")
        scroll.setWidgetResizable(True)
        # narrower than its content (a small window, where the chat keeps its width: new-user
        # trial 10), the panel scrolls sideways rather than squeezing the chat
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        scroll.setMinimumWidth(MIN_WIDTH)
        return scroll

    def preferred_width(self) -> int:
        """The width (px) the panel opens at beside the chat, and that a window too narrow for
        both widens by: PREFERRED_WIDTH, or its minimum if that is wider."""
        return max(PREFERRED_WIDTH, self.minimumSizeHint().width())

    # ----- public API -----------------------------------------------------------------------
    @Slot(object)
    def show_sample(self, sample: MemorySample) -> None:
        """Draw one MemorySample (connect MemoryMonitor.sample_taken here)."""
        self._sample = sample
        if sample.kind != self._kind:
            self._set_kind(sample.kind)
        self._refresh()
        self.timeline.append(sample, self._projection.peak if self._projection else None)

    def show_history(self, samples) -> None:
        """Replay earlier samples into the timeline (oldest first), then draw the last."""
        samples = list(samples)
        for sample in samples[:-1]:
            self.timeline.append(sample, None)
        if samples:
            self.show_sample(samples[-1])

    def show_projection(self, projection: TurnProjection | None, weights_bytes: int) -> None:
        """The pending turn's projection (None: no turn pending) and the model's weight bytes
        (LoadReport.weight_bytes; 0 when no model is loaded)."""
        self._projection = projection
        self._weights = max(int(weights_bytes), 0)
        if projection is not None:
            b = projection.basis
            self.what_if.sync_to(b.resident_tokens + b.prompt_tokens, b.max_new_tokens)
        self._refresh()

    def show_kv_dtype(self, dtype: str) -> None:
        """The KV cache dtype the open chat runs with ("bfloat16", "float32", "int8" for 8-bit
        KV; "" when unknown), said beside the device."""
        self._kv_dtype = dtype
        self._refresh()

    def set_what_if_limits(self, max_context: int, max_new_tokens_max: int) -> None:
        """Slider ranges in tokens: the model's positions and the largest max_new_tokens a turn
        could have on it."""
        self.what_if.set_limits(max_context, max_new_tokens_max)

    def show_what_if(self, projection: TurnProjection | None) -> None:
        """The projection for the what-if sizes, as the listener of what_if_changed made it."""
        self._what_if, self._what_if_beyond = projection, None
        self._refresh()

    def show_what_if_beyond(self, context_tokens: int, max_new_tokens: int, limit: int) -> None:
        """The what-if sizes add up to more than the chat's context `limit` (tokens): no turn runs
        at that size (older turns are folded first, or the turn is refused), so there is no peak
        to project; said in red instead."""
        self._what_if, self._what_if_beyond = None, (context_tokens, max_new_tokens, limit)
        self._refresh()

    def show_remote(self, display: str | None) -> None:
        """A remote backend answers ("model @ host"): show the server's view above this
        computer's; None hides it (local backend)."""
        self.server.setVisible(display is not None)
        if display is not None:
            self.server.set_server(display)

    @Slot(object)
    def show_server_metrics(self, metrics) -> None:
        """One ServerMetrics reading (connect ServerMonitor.metrics_sampled here)."""
        self.server.show_metrics(metrics)

    def set_safety_margin(self, margin) -> None:
        """What admission keeps free on top of the projection (the red threshold): bytes, or a
        function of the MemorySample giving bytes (e.g. ``Foresight.safety_margin``)."""
        self._margin = margin
        self._refresh()

    def _margin_bytes(self, sample: MemorySample) -> int:
        margin = self._margin(sample) if callable(self._margin) else self._margin
        return max(int(margin), 0)

    @property
    def gauge_state(self) -> str:
        """"ok", "amber", "red", or "none" before the first sample."""
        return self.gauge.state

    # ----- drawing ----------------------------------------------------------------------------
    def _set_kind(self, kind: str) -> None:
        self._kind = kind
        self.setWindowTitle(self.tr("VRAM") if kind == "cuda" else self.tr("Memory — RSS / system memory"))
        self.legend.set_kind(kind)
        self.timeline.set_kind(kind)

    def _refresh(self) -> None:
        self._redraw()
        self.breakdown_changed.emit(self.breakdown)

    def _redraw(self) -> None:
        sample = self._sample
        if sample is None:
            self.breakdown = None
            self.gauge.set_breakdown(None)
            self.bar.set_breakdown(None)
            self.readout.set_lines([self.tr("Sampling memory ≈4 times a second…"), "", ""])
            return
        margin = self._margin_bytes(sample)
        bd = MemoryBreakdown.build(sample, self._projection, self._weights, margin)
        self.breakdown = bd
        what_if_bd = None
        if self._what_if is not None:
            what_if_bd = MemoryBreakdown.build(sample, self._what_if, self._weights, margin)
        self.gauge.set_breakdown(bd)
        self.bar.set_breakdown(bd, what_if_bd.growth if what_if_bd else None)
        self._set_text(self.device_label, self._device_text(bd))
        self.legend.set_values(self._values(bd))
        self.readout.set_lines([self._summary_text(bd), *self._projection_text(bd)])
        if what_if_bd is not None:
            self.what_if.show_result(self._what_if_text(what_if_bd), what_if_bd.state)
        elif self._what_if_beyond is not None:
            context_tokens, new_tokens, limit = self._what_if_beyond
            # counted by the context ("context of 1 token"), the sum being more than 1 anyway
            self.what_if.show_result(self.tr("{0} + {1} tokens is more than this chat's context of {2} tokens: "
                                             "no turn runs at this size.", "", limit).format(
                f"{context_tokens:,}", f"{new_tokens:,}", f"{limit:,}"), "red")
        elif self._projection is None:
            self.what_if.show_result(self.tr("Drag a slider to see a turn's peak at other sizes; a message "
                                             "you send is projected before it runs."), "none")
        else:
            self.what_if.show_result(self.tr("Drag a slider to see this turn's peak at other sizes."), "none")

    @staticmethod
    def _set_text(label: QLabel, text: str) -> None:
        if label.text() != text:  # unchanged labels cost nothing (no relayout)
            label.setText(text)

    def _device_text(self, bd: MemoryBreakdown) -> str:
        what = self.tr("VRAM") if bd.kind == "cuda" else self.tr("RSS / system memory")
        device = bd.device_name
        if bd.kind == "cpu":  # in the window's language (trial 8: "(2 threads)" in the Korean panel)
            device += " " + self.tr("(%n threads)", "", os.cpu_count() or 1)
        text = f"<b>{what}</b> · {device} · {format_bytes(bd.total)}"
        return text + " · " + self.tr("KV cache {0}").format(self._kv_dtype) if self._kv_dtype else text

    def _values(self, bd: MemoryBreakdown) -> dict[str, str]:
        def projected(nbytes: int | None) -> str:
            return "—" if not bd.has_projection or nbytes is None else f"+{format_bytes(nbytes)}"

        return {
            "weights": format_bytes(bd.weights) if bd.weights else "—",
            "kv_now": format_bytes(bd.kv_now),
            "kv_turn": (f"{format_bytes(bd.kv_end_of_turn)} (+{format_bytes(bd.kv_turn)})"
                        if bd.has_projection else "—"),
            "prefill": projected(bd.prefill_spike),
            "kv_full": format_bytes(bd.kv_at_full_context) if bd.kv_at_full_context is not None
            else "—",
            "cached": format_bytes(bd.cached),
            "other": self.tr("unknown") if bd.other_processes is None else format_bytes(bd.other_processes),
            "context": format_bytes(bd.context_overhead),
            "free": format_bytes(bd.free),
            "margin": format_bytes(bd.margin),
        }

    def _summary_text(self, bd: MemoryBreakdown) -> str:
        if bd.kind == "cuda":
            return self.tr("Allocated {0} · reserved {1} · peak {2}").format(
                format_bytes(bd.allocated), format_bytes(bd.reserved), format_bytes(bd.peak))
        return self.tr("RSS {0} · peak RSS {1}").format(format_bytes(bd.allocated), format_bytes(bd.peak))

    def _projection_text(self, bd: MemoryBreakdown) -> tuple[str, str]:
        if not bd.has_projection:
            # two lines of their own (one sentence cut in two read as text wrapped at half width)
            return self.tr("No turn running."), self.tr("A message is projected when you send it.")
        return (self.tr("Projected peak {0} ± {1} (±{2} of the turn)").format(
                    format_bytes(bd.projected_peak), format_bytes(bd.error_bar),
                    f"{bd.error_bar / max(bd.growth, 1):.0%}"),
                self.tr("needs {0} of {1} free (margin {2})").format(
                    format_bytes(bd.needed), format_bytes(bd.free), format_bytes(bd.margin)))

    def _what_if_text(self, bd: MemoryBreakdown) -> str:
        return self.tr("KV +{0} · prefill +{1} ± {2} → peak {3}, headroom {4} ({5}): {6}").format(
            format_bytes(bd.kv_turn), format_bytes(bd.prefill_spike), format_bytes(bd.error_bar),
            format_bytes(bd.projected_peak), format_bytes(bd.headroom), f"{bd.headroom_fraction:.0%}",
            verdict_text(bd.state))

    # ----- slots ------------------------------------------------------------------------------
    @Slot(int, int)
    def _on_changed(self, context_tokens: int, max_new_tokens: int) -> None:
        self.what_if_changed.emit(context_tokens, max_new_tokens)

    @Slot()
    def _on_follow_requested(self) -> None:
        self._what_if = self._what_if_beyond = None
        if self._projection is not None:
            b = self._projection.basis
            self.what_if.sync_to(b.resident_tokens + b.prompt_tokens, b.max_new_tokens)
        self._refresh()


class _Readout(QWidget):
    """Lines of text under the legend, painted: a fixed height, so new text (4 times a second)
    repaints this strip and never re-lays out the panel (a relayout of the dock costs ~1 ms)."""

    def __init__(self, lines: int, parent=None):
        super().__init__(parent)
        self.setObjectName("panelReadout")
        self._lines = [""] * lines
        self._set_font_sizes()
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # Qt skips the parent beneath
        self._colours = PanelColours.from_palette(self.palette())

    def _set_font_sizes(self) -> None:
        """12 px text, larger with a larger font (app.ui.panel_font), and the height of its lines."""
        self._font = panel_font(self.font(), 12)
        self._line_h = QFontMetrics(self._font).height() + 3
        self.setFixedHeight(len(self._lines) * self._line_h)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._colours = PanelColours.from_palette(self.palette())
            self.update()
        elif event.type() == QEvent.Type.FontChange:
            self._set_font_sizes()
            self.update()

    def lines(self) -> list[str]:
        return list(self._lines)

    def set_lines(self, texts) -> None:
        texts = list(texts)
        if texts != self._lines:
            self._lines = texts
            self.setAccessibleDescription("\n".join(texts))
            self.update()

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(self._colours.background))
        painter.setFont(self._font)
        painter.setPen(QColor(self._colours.text))
        metrics = painter.fontMetrics()
        for i, text in enumerate(self._lines):
            painter.drawText(0, i * self._line_h + metrics.ascent() + 1,
                             metrics.elidedText(text, Qt.TextElideMode.ElideRight, self.width()))
        painter.end()
