"""Attaching a file as a person does: drop it on the message box (or pick it with Attach…), see it
read, send, and read in the transcript how it went into the turn."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QPlainTextEdit, QVBoxLayout, QWidget

from app.ui import attachment_bar
from app.ui.attachment_bar import AttachmentBar


def drop(bar, widget, *paths, text=None) -> bool:
    """Drop `paths` (or `text`) on `widget` as the bar's event filter sees it; whether it took
    them. (Qt delivers a drop only to the target of a real drag, so sendEvent cannot stand in.)"""
    mime = QMimeData()
    if paths:
        mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    if text is not None:
        mime.setText(text)
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    assert widget.acceptDrops()
    return bar.eventFilter(widget, event) and event.isAccepted()


def test_files_dropped_on_the_message_box_are_attached_and_text_is_not(qtbot, tmp_path):
    bar = AttachmentBar()
    target = QPlainTextEdit()
    qtbot.addWidget(bar)
    qtbot.addWidget(target)
    bar.watch(target)
    with qtbot.waitSignal(bar.files_chosen) as chosen:
        assert drop(bar, target.viewport(), tmp_path / "a.pdf", tmp_path / "b.md")
    assert chosen.args == [[str(tmp_path / "a.pdf"), str(tmp_path / "b.md")]]
    with qtbot.assertNotEmitted(bar.files_chosen):
        assert not drop(bar, target.viewport(), text="plain words")  # text still goes into the editor


def bar_over_a_message_box(qtbot):
    """An active window with the bar above a message box it watches, as in the main window."""
    window = QWidget()
    bar, editor = AttachmentBar(), QPlainTextEdit()
    layout = QVBoxLayout(window)
    layout.addWidget(bar)
    layout.addWidget(editor)
    bar.watch(editor)
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=2000)
    return window, bar, editor


@pytest.mark.parametrize("picked", [["/tmp/a.txt"], []], ids=["file chosen", "cancelled"])
def test_after_attach_the_keyboard_types_into_the_message_not_the_button(qtbot, monkeypatch, picked):
    _window, bar, editor = bar_over_a_message_box(qtbot)
    dialogs = []
    monkeypatch.setattr(attachment_bar, "open_paths", lambda *args: dialogs.append(args) or picked)
    bar.attach_button.setFocus()
    qtbot.keyClick(bar.attach_button, Qt.Key.Key_Space)  # Attach… from the keyboard
    assert len(dialogs) == 1
    qtbot.keyClicks(QApplication.focusWidget(), "a b")  # the user goes on typing
    assert editor.toPlainText() == "a b"
    assert len(dialogs) == 1  # the space did not open the dialog again


def test_a_drop_or_removing_the_focused_chip_leaves_the_keyboard_in_the_message_box(qtbot, tmp_path):
    _window, bar, editor = bar_over_a_message_box(qtbot)
    bar.attach_button.setFocus()
    assert drop(bar, editor.viewport(), tmp_path / "a.txt")
    assert QApplication.focusWidget() is editor
    bar.show_attachment(1, "a.txt", "12 characters")
    qtbot.waitUntil(bar.chips[1].isVisible)
    bar.chips[1].setFocus()  # Tab to the chip, Space removes it
    assert bar.chips[1].hasFocus()
    bar.show_attachment(1, "a.txt", "")
    assert QApplication.focusWidget() is editor


def test_chips_show_each_attachment_and_remove_it_on_click(qtbot):
    bar = AttachmentBar()
    qtbot.addWidget(bar)
    bar.show_attachment(3, "report.pdf", "reading 40%")
    bar.show_attachment(3, "report.pdf", "12,345 characters, 3 pages")
    assert bar.chips[3].text() == "report.pdf · 12,345 characters, 3 pages  ✕"
    # cut in the middle when the bar is narrow: whole in the tooltip (new-user trial)
    assert bar.chips[3].toolTip() == "report.pdf · 12,345 characters, 3 pages\nRemove this attachment"
    with qtbot.waitSignal(bar.remove_requested) as removed:
        bar.chips[3].click()
    assert removed.args == [3]
    bar.show_attachment(3, "report.pdf", "")
    assert bar.chips == {}


def test_chips_too_wide_for_the_bar_shorten_the_name_and_keep_the_status(qtbot):
    """New-user trial 10: Qt cut a narrow chip's text in its middle, the status too ("cp949.txt ·
    44 ...cters, cp949"). The long name is shortened ("…") and the status stays whole, each
    chip's text drawn as set; wide again, every chip says it all."""
    bar = AttachmentBar()
    qtbot.addWidget(bar)
    long_name = "a-really-long-report-name-2024-final-v3.pdf"
    bar.show_attachment(1, long_name, "12,345 characters, 3 pages")
    bar.show_attachment(2, "cp949.txt", "44 characters")
    bar.lend_attach_button()  # the chips alone in the row, as in the window
    bar.setMinimumSize(1, 1)  # as narrow as the window's column makes it (its layout would keep it wider)
    bar.resize(1200, 40)
    bar.show()
    qtbot.waitExposed(bar)
    whole = {1: f"{long_name} · 12,345 characters, 3 pages  ✕", 2: "cp949.txt · 44 characters  ✕"}
    assert {key: chip.text() for key, chip in bar.chips.items()} == whole
    bar.resize(560, 40)
    qtbot.waitUntil(lambda: bar.chips[1].text() != whole[1])
    qtbot.wait(20)  # the row lays the chips out at their new widths
    shortened = bar.chips[1].text()
    assert "…" in shortened and shortened.startswith("a-") and shortened.endswith(" · 12,345 characters, 3 pages  ✕")
    assert bar.chips[2].text() == whole[2]  # short enough for its share
    for chip in bar.chips.values():
        assert chip.width() >= chip.sizeHint().width()  # Qt does not cut it again
        assert chip.geometry().right() < bar.width()
    assert bar.chips[1].toolTip() == f"{long_name} · 12,345 characters, 3 pages\nRemove this attachment"
    bar.resize(360, 40)  # too narrow for the status whole: a few characters of the name, the status cut
    qtbot.waitUntil(lambda: bar.chips[1].text().endswith("…  ✕"))
    assert bar.chips[1].text().startswith("a-r") and "3.pdf · 12," in bar.chips[1].text()
    bar.resize(1200, 40)
    qtbot.waitUntil(lambda: bar.chips[1].text() == whole[1])


def test_a_dropped_file_goes_into_the_turn_and_the_transcript_says_how(qtbot, make_window, tiny_model_dir,
                                                                      tmp_path):
    window = make_window(max_new_tokens=4)
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        window.open_model(tiny_model_dir)
    note = tmp_path / "note.txt"
    note.write_text("The pass code is 4711.\n", encoding="utf-8")
    assert drop(window.attachment_bar, window.composer.editor.viewport(), note)
    qtbot.waitUntil(lambda: any("characters" in c.text() for c in window.attachment_bar.chips.values()))
    [chip] = window.attachment_bar.chips.values()
    assert chip.text() == "note.txt · 23 characters  ✕"
    folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(folder / "attachment-light.png"))
    with qtbot.waitSignal(window.turn_finished, timeout=60000):
        qtbot.keyClicks(window.composer.editor, "What is the pass code?")
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.attachment_bar.chips == {})
    notices = [n.text() for n in window.chat_view.findChildren(type(window.chat_view.add_notice("x")))]
    [line] = [t for t in notices if t.startswith("note.txt: ")]
    assert line.startswith("note.txt: whole file, ") and line.endswith(" tokens")
    tokens = int(line.split(", ")[1].split()[0])
    assert 10 < tokens < 40
    from transformers import AutoTokenizer

    prompt = AutoTokenizer.from_pretrained(tiny_model_dir).decode(list(window.chat.turns.last_plan.prompt_ids))
    assert 'Attached document "note.txt" (whole):\nThe pass code is 4711.\n\nQuestion: What is the pass code?' in prompt
    window.grab().save(str(folder / "attachment-sent-light.png"))


def test_in_the_window_attach_sits_beside_the_message_box_and_the_chip_row_shows_only_with_chips(qtbot,
                                                                                                  make_window):
    """Trial 10: at 640 x 420 the row of the Attach… button alone took ~30 px of the transcript's
    ~130. The button is in the composer's row, left of the message box; the row above it holds
    the chips and is shown only while there are some."""
    window = make_window()
    window.resize(640, 420)
    qtbot.waitUntil(lambda: window.height() == 420, timeout=3000)
    bar, button, editor = window.attachment_bar, window.attachment_bar.attach_button, window.composer.editor
    assert button.parent() is window.composer and button.isVisible()
    assert button.geometry().right() < editor.geometry().left()  # left of the message box
    assert button.geometry().top() < editor.geometry().bottom() and editor.geometry().top() < button.geometry().bottom()
    assert not bar.isVisible()
    bar.show_attachment(7, "report.pdf", "reading 40%")
    qtbot.waitUntil(bar.isVisible, timeout=2000)
    assert bar.chips[7].isVisible()
    bar.show_attachment(7, "report.pdf", "")
    qtbot.waitUntil(lambda: not bar.isVisible(), timeout=2000)
