"""The window at its minimum size (trial 9, 640 x 480): the cards wrap to the transcript's width,
every control of the chat bar shows its whole text, nothing is cut off at the right edge; in
English and Korean. Screenshots go to $HEADROOM_SCREENSHOT_DIR (else the test's folder)."""

import os
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QStyle, QStyleOptionComboBox, QWidget

from app.core.conversation import Message, MessageStatus, ReplyStats, Role
from app.core.kv_precision import KV_AUTO
from app.core.presets import BUILTIN_PRESETS
from app.core.store import Store
from app.ui.fonts import install_hangul_fallback
from app.ui.main_window import MINIMUM_SIZE
from tests.helpers.palettes import fusion_palette
from tests.ui.test_chat_bar_summary import Clock

LONG_ANSWER = ("Sure, hello in one word. I'd say it's \"straightforward\" or \"strange\" but more specifically, "
               "\"straightforward\" and \"strange\" are not a complete sentence but a pair of rhyming words.")
CODE_ANSWER = ("Here it is:\n\n```python\ndef check_range(x, y, min_x, max_x, min_y, max_y, min_z, max_z):\n"
               "    return x < 10 and y > 5 and max_y - min_y <= max_z - min_z <= max_z - min_x\n```\n\nDone.")


def trial_chat(store_path) -> int:
    """Trial 9's chat B: a stopped answer, a code block, short turns."""
    with Store(store_path) as store:
        cid = store.create_conversation("Chat B: list 20 fruits, one per line.")
        store.append_message(cid, Message(Role.USER, "Write a poem about the sea."))
        store.append_message(cid, Message(Role.ASSISTANT, "A place where the light of the sea,\n" * 6,
                                          status=MessageStatus.STOPPED))
        store.append_message(cid, Message(Role.USER, "Write a Python function that checks if x < 10 and y > 5."))
        store.append_message(cid, Message(Role.ASSISTANT, CODE_ANSWER))
        store.append_message(cid, Message(Role.USER, "Say hello in one word."))
        store.append_message(cid, Message(Role.ASSISTANT, LONG_ANSWER))
    return cid


def open_trial_chat(qtbot, make_fake_window, tmp_path):
    db = tmp_path / "trial9.sqlite3"
    cid = trial_chat(db)
    window = make_fake_window(store_path=db)
    window.sidebar.open_requested.emit(cid)
    view = window.chat_view
    qtbot.waitUntil(lambda: len(view.bubbles()) == 6, timeout=5000)
    stats = ReplyStats(1_668, 18, 1_650, 48, 0.255, 10.8, "eager", "float32", "SmolLM2-135M-Instruct.Q4_1.gguf · cpu")
    for bubble in view.bubbles()[1::2]:
        bubble.set_stats(stats)
    # trial 10: the longest line, an answer extended with Continue on an eager path, was cut at 640 px
    view.bubbles()[1].set_stats(replace(stats, new_tokens=1_106, continued_tokens=106, ttft_s=0.235,
                                        decode_path="eager-static (8-bit KV step not compiled yet)"))
    view.show_summary("The user asked for a poem about the sea and a list of fruits; " * 3, 1, 456, 1_024)
    view.set_versions([(1, 1)] * 5 + [(2, 2)])
    view.add_notice("The answer failed: the model ran out of memory while reading the prompt.", "retry")
    window.chat_bar.set_presets(list(BUILTIN_PRESETS), "Balanced")
    window.chat_bar.set_kv_precision(KV_AUTO)
    window.chat_bar.show_notes("Answer briefly.", 20)
    return window


def settled_cut_off(qtbot, view, timeout_ms: int = 2000) -> list[str]:
    """`cut_off` once the transcript's layout has settled after a resize (it reflows in later event-loop
    turns: on a loaded 2-core CI box 50 ms was not enough), or what is still cut after `timeout_ms`."""
    found: list[str] = []

    def settled() -> bool:
        found[:] = cut_off(view)
        return not found

    try:
        qtbot.waitUntil(settled, timeout=timeout_ms)
    except qtbot.TimeoutError:
        pass
    return found


def cut_off(view) -> list[str]:
    """The shown widgets of the transcript whose right edge lies past the viewport's, and its
    one-line labels and buttons narrower than their text (a squeezed header cuts its text)."""
    right = view.viewport().width()
    problems = []
    for widget in view.widget().findChildren(QWidget):
        if not widget.isVisible() or widget.window() is not view.window():
            continue
        name = f"{type(widget).__name__} {widget.objectName()!r}"
        end = widget.mapTo(view.viewport(), widget.rect().topRight()).x()
        if end >= right:
            problems.append(f"{name} ends at {end}")
        one_line = isinstance(widget, QAbstractButton) or (isinstance(widget, QLabel) and not widget.wordWrap())
        if one_line and widget.width() < widget.sizeHint().width():
            problems.append(f"{name}: {widget.width()} px of the {widget.sizeHint().width()} its text needs")
        wrapped = isinstance(widget, QLabel) and widget.wordWrap() and widget.text()
        if wrapped and widget.height() < widget.heightForWidth(widget.width()):
            problems.append(f"{name}: {widget.height()} px high of the {widget.heightForWidth(widget.width())} "
                            f"its lines need")
    return problems


def unreadable(bar) -> list[str]:
    """The chat bar's controls that show less than their whole text or lie outside the bar."""
    problems = []
    controls = [bar.preset_combo, bar.kv_combo, bar.notes_button, bar.summarize_button, *bar.findChildren(QWidget)]
    for widget in dict.fromkeys(controls):
        if not widget.isVisible() or not isinstance(widget, QLabel | QAbstractButton | QComboBox):
            continue
        name = widget.objectName() or type(widget).__name__
        where = QRect(widget.mapTo(bar, widget.rect().topLeft()), widget.size())
        if not bar.rect().contains(where):
            problems.append(f"{name} at {where} outside the bar {bar.rect()}")
        if widget.width() < widget.sizeHint().width():
            problems.append(f"{name}: {widget.width()} px of the {widget.sizeHint().width()} it needs")
        if isinstance(widget, QComboBox):
            option = QStyleOptionComboBox()
            widget.initStyleOption(option)
            field = widget.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                                  QStyle.SubControl.SC_ComboBoxEditField, widget)
            if widget.fontMetrics().horizontalAdvance(widget.currentText()) > field.width():
                problems.append(f"{name}: {widget.currentText()!r} cut to {field.width()} px")
    return problems


def shot(qtbot, window, tmp_path, name: str) -> Path:
    qtbot.wait(50)
    folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    assert window.grab().save(str(path))
    return path


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("size", [MINIMUM_SIZE, (640, 480)], ids=["minimum", "640x480"])
def test_at_the_minimum_size_cards_wrap_and_every_control_reads(qapp, qtbot, make_fake_window, tmp_path, request,
                                                                language, size):
    if language == "ko":
        request.getfixturevalue("korean")
    with fusion_palette(qapp, "light"):
        install_hangul_fallback(qapp)
        window = open_trial_chat(qtbot, make_fake_window, tmp_path)
        window.resize(*size)
        qtbot.waitUntil(lambda: window.size().toTuple() == size, timeout=3000)
        view, bar = window.chat_view, window.chat_bar
        qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > 0, timeout=3000)
        view.verticalScrollBar().setValue(0)  # the summary block and the first cards
        qtbot.wait(50)
        assert view.verticalScrollBar().value() == 0
        assert view.widget().width() <= view.viewport().width()
        assert cut_off(view) == []
        assert unreadable(bar) == []
        column = window.splitter.widget(1)
        assert QRect(bar.mapTo(column, bar.rect().topLeft()), bar.size()).right() < column.width()
        shot(qtbot, window, tmp_path, f"small-window-{language}-{size[0]}x{size[1]}-top")
        view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
        assert cut_off(view) == []
        last = view.bubbles()[-1]  # its "⋯" menu in view (trial 9: past the right edge)
        assert last.more_button.isVisible()
        assert last.more_button.mapTo(view.viewport(), last.more_button.rect().topRight()).x() < view.viewport().width()

        bar.set_summarizing(True)  # the busy bar, the seconds and Stop: a line of their own
        bar._summary_clock = Clock((9 * 60 + 58) * 1000)  # the longest text of the first ten minutes
        bar._show_summary_seconds()
        qtbot.wait(50)
        assert unreadable(bar) == []
        assert bar.summary_stop_button.isVisible()
        shot(qtbot, window, tmp_path, f"small-window-{language}-{size[0]}x{size[1]}-summarizing")
        bar.set_summarizing(False)


@pytest.mark.parametrize("language", ["en", "ko"])
def test_a_long_title_goes_above_the_actions_where_it_does_not_fit_beside_them(qtbot, make_fake_window, tmp_path,
                                                                            request, language):
    """Trial 8: at 640 px "Assistant — stopped: max new tokens reached" wrapped a word a line beside
    the version arrows, Continue and Regenerate; now it takes one line above them, and wider
    windows keep it beside them."""
    if language == "ko":
        request.getfixturevalue("korean")
    window = open_trial_chat(qtbot, make_fake_window, tmp_path)
    last = window.chat_view.bubbles()[-1]
    last.set_status(MessageStatus.STOPPED, "max new tokens reached")
    title = last._header
    for width, stacked in ((640, True), (1400, False)):
        window.resize(width, 600)
        qtbot.waitUntil(lambda width=width: window.width() == width, timeout=3000)
        qtbot.wait(50)
        assert last.continue_button.isVisible() and last.older_button.isVisible()
        assert title.height() < 2 * title.fontMetrics().lineSpacing(), width  # one line
        if stacked:
            assert title.geometry().bottom() < last.continue_button.geometry().top()
        else:
            assert title.geometry().top() == last.continue_button.geometry().top()
        assert settled_cut_off(qtbot, window.chat_view) == []


def test_the_chat_bar_keeps_one_line_where_it_fits(qtbot, make_fake_window, tmp_path):
    window = open_trial_chat(qtbot, make_fake_window, tmp_path)
    bar = window.chat_bar
    window.resize(1200, 700)
    qtbot.waitUntil(lambda: window.width() == 1200, timeout=3000)
    y = {w.mapTo(bar, w.rect().center()).y() for w in (bar.preset_combo, bar.kv_combo, bar.notes_button,
                                                        bar.summarize_button)}
    assert max(y) - min(y) <= 2  # one line: every control's centre at the same height
    right = bar.summarize_button.mapTo(bar, bar.summarize_button.rect().topRight()).x()
    assert bar.width() - 1 - right == bar.layout().contentsMargins().right()  # Summarize now at the right edge
    window.resize(*MINIMUM_SIZE)
    qtbot.waitUntil(lambda: window.width() == MINIMUM_SIZE[0], timeout=3000)
    assert bar.notes_button.mapTo(bar, bar.notes_button.rect().topLeft()).y() > bar.preset_combo.height()
    assert bar.height() == bar.heightForWidth(bar.width()) > bar.sizeHint().height()


class WideScreen:
    """A 1920 px screen (the offscreen platform's is 800 px wide)."""

    def availableGeometry(self):
        return QRect(0, 0, 1920, 1040)


def test_the_memory_panel_docked_widens_the_window_instead_of_squeezing_the_chat(qtbot, make_fake_window, tmp_path,
                                                                               monkeypatch):
    """At 640 px the panel took 360 of them and left the chat 156 (every control cut)."""
    window = open_trial_chat(qtbot, make_fake_window, tmp_path)
    monkeypatch.setattr(window, "screen", lambda: WideScreen())
    window.resize(*MINIMUM_SIZE)
    qtbot.waitUntil(lambda: window.width() == MINIMUM_SIZE[0], timeout=3000)
    chat_width = window.splitter.widget(1).width()
    window.vram_panel.setVisible(True)
    qtbot.waitUntil(lambda: window.width() > MINIMUM_SIZE[0], timeout=3000)
    qtbot.wait(100)  # the docks' layout settles
    assert window.width() >= MINIMUM_SIZE[0] + window.vram_panel.preferred_width()
    assert window.splitter.widget(1).width() >= chat_width
    assert unreadable(window.chat_bar) == [] and cut_off(window.chat_view) == []
    window.vram_panel.setVisible(False)
    qtbot.waitUntil(lambda: window.width() == MINIMUM_SIZE[0], timeout=3000)  # trial 10: it stayed wide
    assert window.minimumWidth() == MINIMUM_SIZE[0]
    window.vram_panel.setVisible(True)
    qtbot.waitUntil(lambda: window.width() > MINIMUM_SIZE[0], timeout=3000)
    opened = window.width()
    window.resize(opened + 100, window.height())  # the user's width now
    qtbot.waitUntil(lambda: window.width() == opened + 100, timeout=3000)
    wanted = window.width()
    window.vram_panel.setVisible(False)
    qtbot.wait(100)
    assert window.width() == wanted  # kept: only the width the panel forced is given back


def test_the_docked_panel_never_makes_the_window_wider_than_the_screen(qtbot, make_fake_window, tmp_path):
    """On the offscreen platform's 800 px screen, 640 px plus the panel would run off it."""
    window = open_trial_chat(qtbot, make_fake_window, tmp_path)
    room = window.screen().availableGeometry().width()
    assert room < MINIMUM_SIZE[0] + window.vram_panel.preferred_width()  # the case this is about
    window.resize(*MINIMUM_SIZE)
    window.vram_panel.setVisible(True)
    qtbot.waitUntil(lambda: window.minimumWidth() > MINIMUM_SIZE[0], timeout=3000)
    assert window.minimumWidth() == room


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("width", [800, 1000])
def test_on_a_small_screen_the_docked_panel_narrows_and_the_chat_keeps_its_width(qtbot, make_fake_window, tmp_path,
                                                                              request, language, width):
    """New-user trial 10: in an 800 x 460 window (the screen's width) the 360 px panel kept its
    width and left the message box 66 px ("Headroo / 메시지 — / Enter…") and the transcript 233.
    Now the chat column keeps its width at the window's minimum size, where every control reads,
    and the panel narrows, scrolling sideways what no longer fits."""
    if language == "ko":
        request.getfixturevalue("korean")
    window = open_trial_chat(qtbot, make_fake_window, tmp_path)
    window.resize(MINIMUM_SIZE[0], 460)
    qtbot.waitUntil(lambda: window.width() == MINIMUM_SIZE[0], timeout=3000)
    column, editor = window.splitter.widget(1), window.composer.editor
    at_minimum = (column.width(), editor.width())  # the panel closed
    window.vram_panel.setVisible(True)
    window.resize(width, 460)
    qtbot.waitUntil(lambda: window.width() == width, timeout=3000)
    qtbot.wait(100)  # the docks' layout settles
    panel = window.vram_panel
    assert (column.width(), editor.width()) >= at_minimum
    assert window.chat_view.width() >= at_minimum[0]
    assert unreadable(window.chat_bar) == []
    assert panel.isVisible() and panel.width() <= panel.preferred_width()
    scroll = panel.widget()
    body = scroll.widget()
    if scroll.viewport().width() < body.minimumSizeHint().width():  # too narrow for its content: it scrolls
        assert scroll.horizontalScrollBar().maximum() > 0
        assert body.width() >= body.minimumSizeHint().width()
