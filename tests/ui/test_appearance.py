"""Settings → Appearance: System / Light / Dark (trial 9: under a bare X session Qt reports no
colour scheme, and there was no way to get a dark window). The offscreen platform is such a
session: Qt's setColorScheme is not taken there, so Light and Dark come from Fusion palettes.
Disabled buttons look disabled in dark (trial 9: a disabled "지금 요약" looked like the enabled
"메모"). Screenshots go to $HEADROOM_SCREENSHOT_DIR (else the test's folder)."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, Qt, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from app.core.settings import Settings, load_settings, save_settings
from app.ui.fonts import install_hangul_fallback
from app.ui.theme import AA_TEXT, PAIRS, apply_theme, is_dark, stylesheet
from tests.helpers.palettes import fusion_palette
from tests.ui.test_theme import dark_palette, pixel_contrast

WINDOW = QPalette.ColorRole.Window


@pytest.fixture
def restored(qapp):
    """The application's look (style, palette, stylesheet, font) put back after the test."""
    sheet, font = qapp.styleSheet(), qapp.font()
    yield
    apply_theme(qapp, "system")
    qapp.setStyleSheet(sheet)
    qapp.setFont(font)


def test_light_and_dark_where_the_desktop_has_no_colour_scheme(qapp, restored):
    assert qapp.styleHints().colorScheme() == Qt.ColorScheme.Unknown  # as under a bare X session
    desktop = qapp.palette().color(WINDOW).name()
    assert apply_theme(qapp, "dark") == "palette"
    assert is_dark(qapp.palette())
    assert qapp.palette().color(WINDOW).name() == "#202326"
    assert f"{PAIRS['accent'][1]}" in qapp.styleSheet() and qapp.styleSheet() == stylesheet(qapp.palette())
    assert apply_theme(qapp, "light") == "palette"
    assert not is_dark(qapp.palette()) and PAIRS["accent"][0] in qapp.styleSheet()
    assert apply_theme(qapp, "system") == "system"  # the desktop's palette again, as before the setting
    assert qapp.palette().color(WINDOW).name() == desktop and qapp.palette().resolveMask() == 0


def test_the_setting_is_kept_and_an_unknown_value_follows_the_desktop(tmp_path):
    path = tmp_path / "settings.json"
    assert Settings().appearance == "system"
    save_settings(Settings(appearance="dark"), path)
    assert load_settings(path).appearance == "dark"
    path.write_text(path.read_text(encoding="utf-8").replace('"dark"', '"sepia"'), encoding="utf-8")
    assert load_settings(path).appearance == "system"


def text_contrast(window, widget) -> float:
    """The contrast of `widget`'s text with what is behind it, on its pixels in the window."""
    shot = window.grab().toImage()
    return pixel_contrast(shot.copy(QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())))


def choose_in_settings(qtbot, window, appearance: str) -> list[str]:
    """Open Settings (modal), pick `appearance`, press OK; returns the combo's entries."""
    entries = []

    def choose():
        dialog = QApplication.activeModalWidget()
        combo = dialog.appearance
        entries.extend(combo.itemText(i) for i in range(combo.count()))
        combo.setCurrentIndex(combo.findData(appearance))
        dialog.accept()

    QTimer.singleShot(200, choose)
    window.settings_action.trigger()
    return entries


@pytest.mark.parametrize("language", ["en", "ko"])
def test_dark_is_chosen_in_settings_applied_at_once_and_disabled_buttons_look_disabled(
        qtbot, qapp, make_fake_window, restored, request, tmp_path, language):
    if language == "ko":
        request.getfixturevalue("korean")
    install_hangul_fallback(qapp)
    window = make_fake_window()
    window.resize(900, 560)
    entries = choose_in_settings(qtbot, window, "dark")
    assert entries == (["System (the desktop's)", "Light", "Dark"] if language == "en"
                       else ["시스템 (데스크톱 설정)", "라이트", "다크"])
    assert window.chat.settings.appearance == "dark" and load_settings().appearance == "dark"  # kept
    assert is_dark(window.palette()) and is_dark(qapp.palette())  # at once, no restart
    bar = window.chat_bar
    assert bar.notes_button.isEnabled() and not bar.summarize_button.isEnabled()  # an empty chat
    qtbot.wait(50)
    enabled, disabled = text_contrast(window, bar.notes_button), text_contrast(window, bar.summarize_button)
    assert enabled >= AA_TEXT
    assert disabled < 3.5 and enabled > 3 * disabled  # dimmed: not read as a second enabled button
    folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(folder / f"appearance-dark-{language}.png"))
    choose_in_settings(qtbot, window, "system")
    assert not is_dark(qapp.palette()) and load_settings().appearance == "system"


def test_a_desktop_dark_palette_with_a_light_mid_still_dims_disabled_buttons(qtbot, qapp, make_fake_window):
    """Trial 9's dark desktop drew a disabled button's text in its palette's Mid (#919191 on
    #2b2b2b, 5.2:1): as readable as an enabled one's. The stylesheet's disabled colour is its own."""
    palette = dark_palette()
    for role, colour in ((QPalette.ColorRole.Window, "#2b2b2b"), (QPalette.ColorRole.Mid, "#919191")):
        palette.setColor(role, QColor(colour))
    with fusion_palette(qapp, palette):
        window = make_fake_window()
        window.resize(900, 560)
        qtbot.wait(50)
        bar = window.chat_bar
        assert not bar.summarize_button.isEnabled()
        assert text_contrast(window, bar.summarize_button) < 3.5 <= text_contrast(window, bar.notes_button)
