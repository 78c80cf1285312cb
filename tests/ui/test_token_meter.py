"""The context-usage line under the composer."""

import pytest
from PySide6.QtGui import QColor, QPalette

from app.ui.application import load_stylesheet
from app.ui.theme import PAIRS
from app.ui.token_meter import TokenMeter


@pytest.fixture
def meter(qtbot, qapp):
    old = qapp.styleSheet()
    qapp.setStyleSheet(load_stylesheet())
    widget = TokenMeter()
    qtbot.addWidget(widget)
    widget.show()
    yield widget
    qapp.setStyleSheet(old)


def colour(widget) -> str:
    return widget.palette().color(QPalette.ColorRole.WindowText).name()


def test_counts_read_like_a_sentence(meter):
    meter.set_counts(812, 1536, 4, 3)
    assert meter.text() == "812 / 1,536 tokens in context · 4 turns in window · 3 folded into summary"
    assert meter.level() == "ok"
    assert colour(meter) == QColor(PAIRS["muted"][0]).name()


def test_pinned_notes_are_said_in_the_count(meter):
    meter.set_pinned("My name is Ada.", 12)
    meter.set_counts(812, 1536, 4, 0)
    assert meter.text() == "812 / 1,536 tokens in context · 4 turns in window · ≈12 for pinned notes"
    meter.set_pinned("", 0)
    meter.set_counts(812, 1536, 4, 0)
    assert "pinned" not in meter.text()


def test_singular_and_no_summary(meter):
    meter.set_counts(40, 1536, 1, 0)
    assert meter.text() == "40 / 1,536 tokens in context · 1 turn in window"


def test_amber_near_the_budget(meter):
    meter.set_counts(1383, 1536, 9, 2)  # 90.0 %
    assert meter.level() == "warn"
    assert colour(meter) == QColor(PAIRS["warning"][0]).name()
    assert "153 tokens left" in meter.toolTip()
    meter.set_counts(1382, 1536, 9, 2)
    assert meter.level() == "ok"


def test_red_over_the_budget(meter):
    meter.set_counts(1600, 1536, 1, 12)
    assert meter.level() == "over"
    assert colour(meter) == QColor(PAIRS["error"][0]).name()
    assert "does not fit" in meter.toolTip()
    meter.set_counts(0, 0, 0, 0)
    assert meter.level() == "over"


def test_reset(meter):
    meter.set_counts(1600, 1536, 1, 12)
    meter.reset()
    assert meter.text() == "" and meter.level() == "ok"


def test_a_budget_eaten_by_max_new_tokens_is_said_not_shown_negative(qtbot):
    """New-user trial: a 2,048-token context with max new tokens 2,048 showed "39 / -256 tokens"."""
    from app.ui.token_meter import TokenMeter

    meter = TokenMeter()
    qtbot.addWidget(meter)
    meter.set_counts(39, -256, 1, 0)
    assert meter.text().startswith("39 tokens: no room left beside max new tokens") and "-256" not in meter.text()


@pytest.mark.parametrize("palette_name", ["light", "dark"])
def test_a_file_attached_to_the_next_message_shows_in_the_count(qtbot, qapp, make_window, tiny_model_dir, tmp_path,
                                                               palette_name):
    """Trial 5: the token line left out the attached files. With the tiny model: after a turn,
    attaching a note raises the count by ≈ its tokens; removing it puts the count back."""
    import os
    from pathlib import Path

    from tests.helpers.palettes import fusion_palette

    def used() -> int:
        return int(window.token_meter.text().split(" / ")[0].replace(",", ""))

    with fusion_palette(qapp, palette_name):
        window = make_window(max_new_tokens=4)
        window.resize(900, 600)
        with qtbot.waitSignal(window.model_ready, timeout=60000):
            window.open_model(tiny_model_dir)
        with qtbot.waitSignal(window.turn_finished, timeout=60000):
            window.chat.turns.send("Hello there")
        qtbot.waitUntil(lambda: window.token_meter.text() != "" and not window.chat.turns.active, timeout=10000)
        qtbot.wait(200)  # the recount after the turn
        before = used()
        note = tmp_path / "note.txt"
        note.write_text("The pass code is 4711. Keep it safe and tell nobody.\n" * 4, encoding="utf-8")
        window.chat.attachments.add([str(note)])
        qtbot.waitUntil(lambda: used() > before + 40, timeout=10000)
        with_note = used()
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        window.grab().save(str(folder / f"meter-with-attachment-{palette_name}.png"))
        [ticket] = list(window.attachment_bar.chips)
        window.chat.attachments.remove(ticket)
        qtbot.waitUntil(lambda: used() == before, timeout=10000)
    assert before + 40 < with_note < before + 120  # four lines of ~13 tokens, with the file's header
