"""A Hangul-capable font for every Linux desktop, so Korean never shows as boxes.

Many minimal Linux installs (and the desktop bundle's users) have no CJK font at all; Qt then
draws each Hangul syllable as an empty box. Headroom ships `resources/fonts/HeadroomHangul-
Regular.ttf` and `-Bold.ttf` (renamed subsets of NanumGothic and NanumGothic Bold, SIL OFL 1.1:
Hangul syllables and jamo, Latin, punctuation; 1.3 MB each; without the bold one Qt drew bold
Korean, the role headers "나" and "어시스턴트", in the regular weight) and appends the family to
the application font's family list, so Qt falls back to it for characters the desktop's own font
lacks while Latin text keeps the system font. A system font that covers Korean (Noto Sans CJK:
`fonts-noto-cjk`, or `fonts-nanum`) is used first when installed. Sizes are untouched: they follow the desktop.
"""

from __future__ import annotations

import logging
from importlib import resources

from PySide6.QtGui import QFont, QFontDatabase, QFontInfo
from PySide6.QtWidgets import QApplication

log = logging.getLogger(__name__)

BUNDLED_HANGUL_FILES = ("HeadroomHangul-Regular.ttf", "HeadroomHangul-Bold.ttf")  # one family, two weights


_bundled_font_ids: list[int] | None = None  # QFontDatabase ids once registered (-1: failed)


def korean_system_families() -> list[str]:
    """Font families of this desktop that declare Korean support (empty on many minimal Linux);
    the bundled font, once registered, is not one of them."""
    bundled = [family for font_id in _bundled_font_ids or ()
               for family in QFontDatabase.applicationFontFamilies(font_id)]
    return [f for f in QFontDatabase.families(QFontDatabase.WritingSystem.Korean) if f not in bundled]


def load_bundled_hangul() -> str:
    """Register the bundled fonts once; returns their family name ("" when the regular one could not
    be loaded)."""
    global _bundled_font_ids  # one registration per process, like Qt's own font database
    if _bundled_font_ids is None:
        fonts = resources.files("app.resources").joinpath("fonts")
        _bundled_font_ids = [QFontDatabase.addApplicationFontFromData(fonts.joinpath(name).read_bytes())
                             for name in BUNDLED_HANGUL_FILES]
    regular = _bundled_font_ids[0]
    families = QFontDatabase.applicationFontFamilies(regular) if regular >= 0 else []
    return families[0] if families else ""


def install_hangul_fallback(app: QApplication) -> str:
    """Append a Korean-capable family to the application font's fallback list: the desktop's
    own when it has one, else the bundled one. Returns the family used ("" when none)."""
    system = korean_system_families()
    family = system[0] if system else load_bundled_hangul()
    if not family:
        log.warning("no Korean-capable font: Hangul may show as boxes")
        return ""
    font = QFont(app.font())
    families = font.families() or [font.family()]
    if family not in families:
        # The desktop's family may be a fontconfig alias ("Sans Serif" where Qt has no platform
        # theme: bare X, offscreen) that is no installed family; Qt would then skip it and draw
        # Latin in the appended font. Name the family it really resolves to first.
        resolved = QFontInfo(font).family()
        font.setFamilies([*([resolved] if resolved not in families else []), *families, family])
        app.setFont(font)
    log.info("Hangul font: %s (%s)", family, "system" if system else "bundled")
    return family
