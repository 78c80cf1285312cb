"""The app's look in a palette, for a screenshot test, put back afterwards."""

from contextlib import contextmanager

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QStyleFactory

from app.ui.theme import stylesheet
from tests.ui.test_theme import dark_palette


@contextmanager
def fusion_palette(qapp, palette_name: str | QPalette):
    """Fusion with the light (its standard) or dark palette, or the QPalette given, and the app's
    stylesheet, as the app sets them; style, palette, stylesheet and font are restored on exit."""
    if isinstance(palette_name, QPalette):
        palette = palette_name
    else:
        palette = QStyleFactory.create("Fusion").standardPalette() if palette_name == "light" else dark_palette()
    old_style, old_palette, old_sheet, old_font = qapp.style().name(), qapp.palette(), qapp.styleSheet(), qapp.font()
    qapp.setStyle("Fusion")
    qapp.setPalette(palette)
    qapp.setStyleSheet(stylesheet(palette))
    try:
        yield palette
    finally:
        qapp.setFont(old_font)
        qapp.setStyleSheet(old_sheet)
        qapp.setPalette(old_palette)
        qapp.setStyle(old_style)
