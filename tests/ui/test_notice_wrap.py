"""A notice in the transcript shows all of its text at any width (new-user trial: a notice's last
word was cut at the right edge). A word longer than the line (a file name, a URL) wraps inside it
instead of running past the notice's edge; the notice is as tall as its lines. Screenshots go to
$HEADROOM_SCREENSHOT_DIR (else the test's folder)."""

import os
from pathlib import Path

import pytest
from PySide6.QtGui import QTextLayout, QTextOption

from app.core.conversation import Role
from app.ui.chat_view import ChatView
from app.ui.notice import Notice
from app.ui.retry_notice import RetryNotice

LONG_NAME = "Quarterly_Report_2024_final_version_reviewed_by_legal_department_v3.txt"
TEXTS = [f"Could not attach {LONG_NAME}: the file has no text",
         f"Could not attach notes.txt: its text is about 9,000,000 characters; up to 2,000,000 can be attached; "
         f"see {LONG_NAME}"]


def line_widths(notice) -> list[float]:
    """The width of each line the notice shows, laid out as it lays out its text (px)."""
    document = notice.document()
    widths = []
    block = document.begin()
    while block.isValid():
        layout: QTextLayout = block.layout()
        widths += [layout.lineAt(i).naturalTextWidth() for i in range(layout.lineCount())]
        block = block.next()
    return widths


@pytest.mark.parametrize("width", [380, 520, 760])
def test_a_notice_wraps_a_word_longer_than_its_line_instead_of_cutting_it(qtbot, qapp, tmp_path, width):
    from app.ui.application import load_stylesheet

    qapp.setStyleSheet(load_stylesheet())
    view = ChatView()
    qtbot.addWidget(view)
    view.add_message(Role.USER, "What went wrong?")
    notices = [view.add_notice(text, kind) for text in TEXTS for kind in ("error", "retry")]
    view.resize(width, 600)
    view.show()
    qtbot.wait(50)
    folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
    view.grab().save(str(folder / f"notice-long-word-{width}.png"))
    for notice in notices:
        shown = notice.label if isinstance(notice, RetryNotice) else notice
        assert isinstance(shown, Notice)
        assert shown.text() in TEXTS  # the text as given, with no soft breaks put into it
        room = shown.viewport().width()
        assert 0 < room and max(line_widths(shown)) <= room  # no line runs past the notice's edge
        assert shown.wordWrapMode() == QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere
        document_height = shown.document().size().height()
        assert shown.viewport().height() >= document_height  # every line shows, none cut at the bottom
        assert shown.geometry().right() <= view.viewport().width()
