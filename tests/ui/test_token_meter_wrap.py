"""The token meter under the composer reads whole at the window's narrowest (new-user trial 9:
with a pinned note and a summary, "… · 3 folded into summary · ≈32 for pinned notes" was cut at
"pinned not" at 800 px and "pinned n" at 640 px): it wraps after a "·", never inside a part, and
nothing else in the composer area is cut. In English and Korean, light and dark. Screenshots go
to $HEADROOM_SCREENSHOT_DIR (else the test's folder)."""

import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QTextLayout, QTextOption
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QWidget

from app.ui.fonts import install_hangul_fallback
from app.ui.main_window import MINIMUM_SIZE
from app.ui.token_meter import TokenMeter
from tests.helpers.palettes import fusion_palette
from tests.ui.test_small_window import open_trial_chat, shot, unreadable


def meter_lines(meter: TokenMeter) -> list[str]:
    """The lines the meter's text is drawn in at its width, as QLabel breaks a word-wrapped text."""
    layout = QTextLayout(QLabel.text(meter), meter.font())  # as drawn: non-breaking spaces within parts
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)
    layout.setTextOption(option)
    layout.beginLayout()
    lines, text = [], layout.text()
    while (line := layout.createLine()).isValid():
        line.setLineWidth(meter.contentsRect().width())
        lines.append(text[line.textStart():line.textStart() + line.textLength()].replace("\u00a0", " ").strip())
    layout.endLayout()
    return lines


def cut_in_the_composer_area(window) -> list[str]:
    """Shown widgets of the chat bar, attachment bar, composer and meter that lie outside the chat
    column, or are one-line labels and buttons narrower than their text."""
    column = window.splitter.widget(1)
    problems = []
    areas = (window.chat_bar, window.attachment_bar, window.composer, window.token_meter)
    for widget in [w for area in areas for w in (area, *area.findChildren(QWidget))]:
        if not widget.isVisible() or not isinstance(widget, QLabel | QAbstractButton | QComboBox | TokenMeter):
            continue
        name = f"{type(widget).__name__} {widget.objectName()!r}"
        where = QRect(widget.mapTo(column, widget.rect().topLeft()), widget.size())
        if not column.rect().contains(where):
            problems.append(f"{name} at {where} outside the column {column.rect()}")
        one_line = isinstance(widget, QAbstractButton) or (isinstance(widget, QLabel) and not widget.wordWrap())
        if one_line and widget.width() < widget.sizeHint().width():
            problems.append(f"{name}: {widget.width()} px of the {widget.sizeHint().width()} its text needs")
        if isinstance(widget, QLabel) and widget.wordWrap() and widget.height() < widget.heightForWidth(widget.width()):
            problems.append(f"{name}: {widget.height()} px high of the {widget.heightForWidth(widget.width())}")
    return problems


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("palette", ["light", "dark"])
@pytest.mark.parametrize("size", [MINIMUM_SIZE, (800, 600)], ids=["640", "800"])
def test_the_meter_wraps_between_its_parts_and_the_composer_area_reads(qapp, qtbot, make_fake_window, request,
                                                                      tmp_path, language, palette, size):
    if language == "ko":
        request.getfixturevalue("korean")
    with fusion_palette(qapp, palette):
        install_hangul_fallback(qapp)
        window = open_trial_chat(qtbot, make_fake_window, tmp_path)
        meter = window.token_meter
        meter.set_pinned("My dog is called Rex.", 32)
        meter.set_counts(147, 7_124, 2, 3)  # the trial's line: a summary and a pinned note
        window.resize(*size)
        qtbot.waitUntil(lambda: window.size().toTuple() == size, timeout=3000)
        qtbot.wait(50)
        parts = meter.text().split(" · ")
        assert len(parts) == 4 and "32" in parts[-1]
        lines = meter_lines(meter)
        metrics = meter.fontMetrics()
        assert all(metrics.horizontalAdvance(line) <= meter.contentsRect().width() for line in lines), lines
        assert " · ".join(line.removesuffix(" ·") for line in lines) == meter.text()  # nothing lost
        for part in parts:  # each part whole on one line, no line starts with the dot
            assert any(part in line for line in lines), (part, lines)
        assert not any(line.startswith("·") for line in lines)
        assert meter.height() >= meter.heightForWidth(meter.width())  # every line shown
        assert cut_in_the_composer_area(window) == []
        assert unreadable(window.chat_bar) == []
        shot(qtbot, window, tmp_path, f"token-meter-{language}-{palette}-{size[0]}")


def test_at_a_wide_window_the_meter_keeps_one_line(qtbot, make_fake_window, tmp_path):
    window = open_trial_chat(qtbot, make_fake_window, tmp_path)
    meter = window.token_meter
    meter.set_pinned("My dog is called Rex.", 32)
    meter.set_counts(147, 7_124, 2, 3)
    window.resize(1400, 700)
    qtbot.waitUntil(lambda: window.width() == 1400, timeout=3000)
    qtbot.wait(50)
    assert meter_lines(meter) == [meter.text()]
    assert meter.height() < 2 * meter.fontMetrics().lineSpacing() + meter.contentsMargins().bottom()
