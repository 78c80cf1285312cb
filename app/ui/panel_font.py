"""The memory panel's painted text, sized from the widget's font: its pieces were laid out for
12 px text, the usual 9-point UI font, and grow with a larger one (a desktop set to 11 or 14 points,
a user who needs larger text), so the panel's figures are never smaller than the window's.
A smaller UI font keeps the 12 px layout: below it the figures would be hard to read."""

from PySide6.QtGui import QFont, QFontInfo

DESIGN_PX = 12  # the text size the panel's pixel geometry was drawn for


def panel_scale(font: QFont) -> float:
    """How much larger than DESIGN_PX `font` is, as a factor ≥ 1.0 for the panel's pixel sizes."""
    return max(QFontInfo(font).pixelSize() / DESIGN_PX, 1.0)


def panel_font(font: QFont, design_px: int, bold: bool = False) -> QFont:
    """A copy of `font` at `design_px` (the size at DESIGN_PX) scaled as `panel_scale` says."""
    scaled = QFont(font)
    scaled.setPixelSize(round(design_px * panel_scale(font)))
    scaled.setBold(bold)
    return scaled
