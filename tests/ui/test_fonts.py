"""Korean renders as glyphs, not boxes, whatever fonts the desktop has."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter
from PySide6.QtWidgets import QApplication

from app.ui.fonts import install_hangul_fallback, load_bundled_hangul


def _render(text: str, font: QFont) -> QImage:
    image = QImage(64, 32, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(font)
    painter.setPen(QColor("black"))
    painter.drawText(image.rect(), Qt.AlignmentFlag.AlignCenter, text)
    painter.end()
    return image


def test_bundled_font_covers_hangul_syllables_and_latin(qapp):
    family = load_bundled_hangul()
    assert family == "Headroom Hangul"
    metrics = QFontMetrics(QFont(family))
    for ch in "가힣한국어ㄱㅏAz!":
        assert metrics.inFontUcs4(ord(ch)), ch


def test_hangul_falls_back_to_a_real_font(qapp):
    """Two different syllables must draw differently (missing glyphs are identical boxes)."""
    original = QFont(QApplication.font())
    try:
        family = install_hangul_fallback(qapp)
        assert family
        assert family in QApplication.font().families()
        font = QApplication.font()
        assert _render("가", font) != _render("나", font)
        assert _render("한국어", font) != _render("", font)
        assert QApplication.font().pointSizeF() == original.pointSizeF()  # sizes follow the desktop
    finally:
        QApplication.setFont(original)
