"""The window icon comes from the committed PNG renditions (no SVG plugin needed frozen)."""

from app.desktop_entry import ICON_SIZES
from app.ui.application import load_app_icon


def test_app_icon_has_every_rendition(qapp):
    icon = load_app_icon()
    assert not icon.isNull()
    assert sorted(size.width() for size in icon.availableSizes()) == list(ICON_SIZES)
