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


def chip_bar(qtbot, width: int) -> AttachmentBar:
    """A bar of chips alone (Attach… lent, as in the window), `width` px wide, shown."""
    bar = AttachmentBar()
    qtbot.addWidget(bar)
    bar.lend_attach_button()
    bar.setMinimumSize(1, 1)  # as narrow as the window's column makes it
    return bar


def lines(bar) -> list[list[int]]:
    """The chips' keys by the line they are on, top to bottom."""
    rows: dict[int, list[int]] = {}
    for key, chip in bar.chips.items():
        rows.setdefault(chip.geometry().top(), []).append(key)
    return [rows[top] for top in sorted(rows)]


def test_chips_that_do_not_fit_side_by_side_go_on_the_next_line_whole(qtbot):
    """New-user trial 11: at 1000 x 460 beside the memory panel the chips shared the row and cut every
    status ("cp949.txt · 23 c…", "a_re…d.md · 1…": "18 characters" read as 1). A chip keeps its
    whole text and goes on the next line, as the chips under a sent message do; the row grows."""
    long_name = "a-really-long-report-name-2024-final-v3.pdf"
    bar = chip_bar(qtbot, 1200)
    bar.show_attachment(1, long_name, "12,345 characters, 3 pages")
    bar.show_attachment(2, "cp949.txt", "44 characters, cp949")
    bar.show_attachment(3, "s.txt", "18 characters")
    bar.resize(1200, 40)
    bar.show()
    qtbot.waitExposed(bar)
    whole = {1: f"{long_name} · 12,345 characters, 3 pages  ✕", 2: "cp949.txt · 44 characters, cp949  ✕",
             3: "s.txt · 18 characters  ✕"}
    assert {key: chip.text() for key, chip in bar.chips.items()} == whole
    qtbot.waitUntil(lambda: lines(bar) == [[1, 2, 3]])
    one_line = bar.height()
    needed = bar.chips[1].sizeHint().width() + 24 + 6  # the long chip, the row's margins and a spacing
    bar.resize(needed + 60, bar.heightForWidth(needed + 60))  # room for it, not for the next beside it
    qtbot.waitUntil(lambda: lines(bar) == [[1], [2, 3]])
    assert {key: chip.text() for key, chip in bar.chips.items()} == whole  # nothing shortened
    assert bar.heightForWidth(bar.width()) > one_line
    for chip in bar.chips.values():
        assert chip.width() >= chip.sizeHint().width() and chip.geometry().right() < bar.width()
    bar.resize(1200, 40)
    qtbot.waitUntil(lambda: lines(bar) == [[1, 2, 3]])


def test_a_chip_wider_than_the_row_shortens_its_name_then_drops_its_status_never_cuts_it(qtbot):
    """Only a chip wider than a whole line is shortened: the name in the middle, the status whole;
    where a few characters of the name leave no room for the status, the status goes rather than
    read "1…" (trial 11). The tooltip says it all."""
    long_name = "a-really-long-report-name-2024-final-v3.pdf"
    bar = chip_bar(qtbot, 360)
    bar.show_attachment(1, long_name, "12,345 characters, 3 pages")
    bar.show_attachment(2, "cp949.txt", "44 characters")
    bar.resize(360, 80)
    bar.show()
    qtbot.waitExposed(bar)
    qtbot.waitUntil(lambda: "…" in bar.chips[1].text())
    shortened = bar.chips[1].text()
    assert shortened.startswith("a-r") and shortened.endswith("3.pdf · 12,345 characters, 3 pages  ✕")
    assert bar.chips[2].text() == "cp949.txt · 44 characters  ✕"
    qtbot.waitUntil(lambda: lines(bar) == [[1], [2]])
    for chip in bar.chips.values():
        assert chip.width() >= chip.sizeHint().width() and chip.geometry().right() < bar.width()
    assert bar.chips[1].toolTip() == f"{long_name} · 12,345 characters, 3 pages\nRemove this attachment"
    bar.resize(240, 80)  # a few characters of the name and the status do not fit: no status
    qtbot.waitUntil(lambda: " · " not in bar.chips[1].text())
    assert bar.chips[1].text().startswith("a-r") and "…" in bar.chips[1].text()
    assert bar.chips[1].text().endswith("3.pdf  ✕")  # the name's room: all the status had
    assert bar.chips[2].text() == "cp949.txt · 44 characters  ✕"  # still fits a line
    bar.resize(130, 80)
    qtbot.waitUntil(lambda: bar.chips[2].text() == "cp949.txt  ✕")  # not "cp949.txt · 4…"
    bar.resize(1200, 80)
    qtbot.waitUntil(lambda: bar.chips[1].text() == f"{long_name} · 12,345 characters, 3 pages  ✕")


def test_a_removed_chip_gives_its_room_back_at_once(qtbot):
    """New-user trial 11: ten files attached, six refused: at 1000 x 750 the four chips left had no
    counts ("cp949.txt  ✕", "a_re…d.md  ✕") and ~400 px of the row stood empty. A removed chip stayed
    in the row until deleted, taking room from the others, and nothing fitted them again after."""
    bar = chip_bar(qtbot, 800)
    bar.resize(800, 40)
    bar.show()
    qtbot.waitExposed(bar)
    for key in range(10):
        bar.show_attachment(key, f"f{key}.txt", "reading…")
    qtbot.waitUntil(lambda: all(chip.isVisible() for chip in bar.chips.values()))  # read for a while
    for key in range(4, 10):
        bar.show_attachment(key, f"f{key}.txt", "")  # refused
    for key in range(4):
        bar.show_attachment(key, f"f{key}.txt", "18 characters")
    qtbot.wait(50)  # the removed chips are deleted
    assert [chip.text() for chip in bar.chips.values()] == [
        f"f{key}.txt · 18 characters  ✕" for key in range(4)]
    assert lines(bar) == [[0, 1, 2, 3]]


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
