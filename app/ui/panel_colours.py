"""Colours of the painted memory panel (bar, legend, gauge, readout, what-if, status-bar gauge)
for one palette: the palette's base and text colours, and light/dark pairs from app.ui.theme."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette

from app.ui.theme import PAIRS, STATE_PAIRS, blend, contrast_ratio, is_dark, pick, readable


@dataclass(frozen=True)
class PanelColours:
    """Colours of the painted memory panel (bar, legend, gauge, readout) for one palette, as hex
    strings (hashable: the widgets' picture caches key on them). Text colours reach WCAG AA on
    `background`, the palette's base colour."""

    background: str
    text: str
    muted: str
    edge: str
    track: str
    error: str
    dark: bool

    @classmethod
    def from_palette(cls, palette: QPalette) -> PanelColours:
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        return cls(background=base.name(), text=text.name(),
                   muted=readable(pick("muted", palette), base).name(),
                   edge=blend(base, text, 0.45).name(), track=blend(base, text, 0.2).name(),
                   error=readable(pick("error", palette), base).name(), dark=is_dark(palette))

    def pair(self, name: str) -> QColor:
        """Member of pair `name` for this palette; "" is the background. KeyError if unknown."""
        return QColor(PAIRS[name][self.dark] if name else self.background)

    def state_text(self, state: str) -> QColor:
        """Text colour of a headroom verdict, readable on the background."""
        return readable(self.pair(STATE_PAIRS[state][0]), QColor(self.background))

    def state_fill(self, state: str) -> QColor:
        return self.pair(STATE_PAIRS[state][1])

    def on_fill(self, fill: QColor) -> QColor:
        """The palette's text or background colour, whichever reads better on `fill`."""
        text, background = QColor(self.text), QColor(self.background)
        return text if contrast_ratio(text, fill) >= contrast_ratio(background, fill) else background
