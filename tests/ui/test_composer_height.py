"""The composer's editor grows with its text (trial 10: a fixed 80 px left a 640 x 420 window's
transcript 130 px): two lines when empty, one more per wrapped line up to eight, fewer in a small
window, and back to two once the message is sent."""

from app.ui.composer import Composer


def lines_high(editor, lines: int) -> int:
    """The height the editor needs to show `lines` lines without scrolling (px)."""
    return round(lines * editor.fontMetrics().lineSpacing() + 2 * editor.frameWidth()
                 + 2 * editor.document().documentMargin()) + 1


def spare_px(editor) -> int:
    """The viewport's height below the last line of text, with the first line at the top (px;
    negative: the last line is cut)."""
    assert editor.verticalScrollBar().value() == 0
    last = editor.document().lastBlock()
    bottom = editor.blockBoundingGeometry(last).translated(editor.contentOffset()).bottom()
    return int(editor.viewport().height() - bottom)


def test_the_editor_grows_with_its_lines_and_shrinks_after_sending(qtbot, make_window):
    window = make_window()
    window.resize(1100, 900)
    qtbot.waitUntil(lambda: window.height() == 900, timeout=3000)
    composer = window.composer
    editor = composer.editor
    empty = editor.height()
    assert empty == lines_high(editor, Composer.MIN_LINES) < 60
    editor.setPlainText("one\ntwo\nthree\nfour")
    qtbot.waitUntil(lambda: editor.height() == lines_high(editor, 4), timeout=2000)
    qtbot.wait(50)
    assert spare_px(editor) in range(0, editor.fontMetrics().lineSpacing())  # all four in view, no empty line
    editor.setPlainText("one\ntwo\nthree\nfour\nfive")
    qtbot.waitUntil(lambda: editor.height() == lines_high(editor, 5), timeout=2000)
    words = "a long line that wraps " * 25  # wrapped lines count too
    editor.setPlainText(words)
    qtbot.waitUntil(lambda: editor.document().lineCount() > 2, timeout=2000)
    assert editor.document().lineCount() <= Composer.MAX_LINES  # 125 words: fewer lines than the cap
    assert editor.height() == lines_high(editor, editor.document().lineCount())
    assert spare_px(editor) in range(0, editor.fontMetrics().lineSpacing())
    editor.setPlainText("line\n" * 30)
    qtbot.waitUntil(lambda: editor.height() == lines_high(editor, Composer.MAX_LINES), timeout=2000)
    assert editor.verticalScrollBar().isVisible()  # the rest scrolls
    editor.clear()
    qtbot.waitUntil(lambda: editor.height() == empty, timeout=2000)


def test_a_small_window_gives_the_editor_at_most_a_quarter_of_its_height(qtbot, make_window):
    window = make_window()
    window.resize(700, 420)
    qtbot.waitUntil(lambda: window.height() == 420, timeout=3000)
    editor = window.composer.editor
    editor.setPlainText("line\n" * 30)
    qtbot.waitUntil(lambda: editor.document().lineCount() > 8, timeout=2000)
    qtbot.wait(50)
    assert lines_high(editor, Composer.MIN_LINES) < editor.height() <= 420 / 4
    window.resize(700, 900)  # taller: the editor may take its eight lines again
    qtbot.waitUntil(lambda: editor.height() == lines_high(editor, Composer.MAX_LINES), timeout=3000)
