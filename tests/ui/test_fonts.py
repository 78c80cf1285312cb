"""Korean renders as glyphs, not boxes, whatever fonts the desktop has."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontInfo, QFontMetrics, QImage, QPainter
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


def test_latin_keeps_the_desktop_font(qapp):
    """The fallback is for what the desktop font lacks: Latin, digits and '.' stay in the family the
    desktop font resolves to, even when it is named by an alias such as "Sans Serif" (field bug:
    "2.5" drawn as "2,5" in the bundled font's glyphs)."""
    original = QFont(QApplication.font())
    try:
        QApplication.setFont(QFont("Sans Serif", original.pointSize()))
        desktop = QFontInfo(QApplication.font()).family()
        assert desktop != "Headroom Hangul"
        install_hangul_fallback(qapp)
        assert QFontInfo(QApplication.font()).family() == desktop
        assert _render("2.5", QApplication.font()) == _render("2.5", QFont(desktop, original.pointSize()))
    finally:
        QApplication.setFont(original)


def test_demibold_korean_is_drawn_bold_with_only_the_bundled_font(qapp):
    """New-user trial: the role headers "나" and "어시스턴트" (style.qss: font-weight 600) were drawn in
    the regular weight while "You" and "Assistant" were bold: the bundled font had no bold weight, and
    Qt synthesizes bold only from 700 up."""
    family = load_bundled_hangul()
    regular, demibold = QFont(family, 14), QFont(family, 14)
    demibold.setWeight(QFont.Weight.DemiBold)
    assert QFontInfo(demibold).family() == family and QFontInfo(demibold).weight() >= QFont.Weight.DemiBold
    assert _ink(_render("나", demibold)) > 1.5 * _ink(_render("나", regular))
    assert QFontMetrics(demibold).inFontUcs4(ord("힣"))


def _ink(image: QImage) -> int:
    return sum(image.pixelColor(x, y).lightness() < 128 for y in range(image.height()) for x in range(image.width()))
