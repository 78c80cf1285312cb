"""Documents and sources in the transcript (issue 18, items 3-4): the files kept with a sent
message show under it and can be removed; an answer lists the excerpts it was given, and a
click opens one with its file, place and text. Light and dark palettes are grabbed."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel

from app.core.attached_document import ExtractedDocument
from app.core.conversation import Message, Role
from app.core.document_prompt import Citation, without_document
from app.ui.chat_view import ChatView
from app.ui.fonts import install_hangul_fallback
from tests.helpers.palettes import fusion_palette

MANUAL = ExtractedDocument("manual.pdf", "pdf", "x" * 5000, tuple(range(0, 5000, 16)), 900_000)
NOTE = ExtractedDocument("note.md", "markdown", "The pass code is 4711.", (), 22, "utf-8")
SOURCES = (Citation("manual.pdf", 17, "Install > Linux", 12, 40_120, 40_610,
                    "Run the installer as root. The pass code for the vault is 4711."),
           Citation("manual.pdf", 18, "Install > Linux", 12, 40_610, 41_002, "Then reboot."),
           Citation("note.md", 1, "", None, 0, 22, "The pass code is 4711."))


@pytest.fixture
def view(qtbot):
    widget = ChatView()
    qtbot.addWidget(widget)
    widget.resize(640, 420)
    widget.load_messages([Message(Role.USER, "What is the pass code?", documents=(MANUAL, NOTE)),
                          Message(Role.ASSISTANT, "It is 4711.", sources=SOURCES)])
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_the_documents_of_a_message_show_under_it_and_can_be_removed(qtbot, view):
    question = view.bubbles()[0]
    assert [c.text() for c in question.documents.chips] == ["manual.pdf · 313 pages", "note.md · 22 characters"]
    assert question.documents.isVisible() and not view.bubbles()[1].documents.isVisible()
    with qtbot.waitSignal(view.document_remove_requested) as removed:
        qtbot.mouseClick(question.documents.remove_buttons[1], Qt.MouseButton.LeftButton)
    assert removed.args == [0, 1]
    view.show_documents(0, (MANUAL,))
    QApplication.processEvents()
    assert [c.text() for c in question.documents.chips] == ["manual.pdf · 313 pages"]
    view.set_actions_enabled(False)  # while a reply is written
    assert not question.documents.remove_buttons[0].isEnabled()


def test_an_answers_sources_are_links_that_open_the_excerpt(qtbot, view):
    line = view.bubbles()[1].sources
    assert line.isVisible() and not view.bubbles()[0].sources.isVisible()
    assert "manual.pdf #17, page 12" in line.text() and "#18, page 12" in line.text() and "note.md #1" in line.text()
    line.linkActivated.emit("0")  # what a click on the first link does
    dialog = line.dialog
    assert dialog.isVisible() and dialog.windowTitle() == "Source: manual.pdf"
    assert dialog.place_label.text() == ("manual.pdf · excerpt 17 · Install > Linux · page 12 · "
                                         "characters 40,120–40,610")
    assert dialog.text_view.toPlainText() == "Run the installer as root. The pass code for the vault is 4711."
    assert dialog.text_view.isReadOnly()
    dialog.reject()
    view.show_reply_sources(SOURCES[2:])
    assert "manual.pdf" not in line.text() and "note.md #1" in line.text()


@pytest.mark.parametrize("palette_name", ["light", "dark"])
def test_documents_and_sources_read_in_both_palettes(qtbot, qapp, tmp_path, palette_name):
    with fusion_palette(qapp, palette_name):
        widget = ChatView()
        qtbot.addWidget(widget)
        widget.resize(640, 360)
        widget.load_messages([Message(Role.USER, "What is the pass code?", documents=(MANUAL, NOTE)),
                              Message(Role.ASSISTANT, "It is 4711.", sources=SOURCES)])
        widget.show()
        qtbot.waitExposed(widget)
        qtbot.wait(50)  # the bodies lay out on the next loop turns
        widget.grab().save(str(tmp_path / f"documents_{palette_name}.png"))
        line = widget.bubbles()[1].sources
        dialog = line.open_source(0)
        qtbot.waitExposed(dialog)
        dialog.grab().save(str(tmp_path / f"source_{palette_name}.png"))
        dialog.reject()
        chip = widget.bubbles()[0].documents.chips[0]
        assert chip.palette().color(chip.foregroundRole()) != chip.palette().color(chip.backgroundRole())


def test_a_removed_files_excerpts_are_named_as_removed_not_linked_nor_readable(qtbot, view):
    """Product trial: removing a file for privacy left its excerpts readable under the answer."""
    line = view.bubbles()[1].sources
    view.show_sources(1, without_document(SOURCES, "note.md"))
    assert line.text() == ('Sources: <a href="0">manual.pdf #17, page 12</a> · <a href="1">#18, page 12</a>'
                           " · note.md (removed attachment)")
    assert "4711" not in "".join(c.text for c in line.sources[2:])
    view.show_sources(1, without_document(without_document(SOURCES, "note.md"), "manual.pdf"))
    assert line.text() == "Sources: manual.pdf (removed attachment) · note.md (removed attachment)"
    assert line.isVisible()
    view.load_messages([Message(Role.USER, "What is the pass code?", documents=(MANUAL,)),  # reopened
                        Message(Role.ASSISTANT, "It is 4711.", sources=without_document(SOURCES, "note.md"))])
    assert view.bubbles()[1].sources.text().endswith(" · note.md (removed attachment)")
    assert view.bubbles()[1].text == "It is 4711."  # the answer itself stays


@pytest.mark.parametrize("palette_name", ["light", "dark"])
def test_removed_sources_read_in_both_palettes_and_in_korean(qtbot, qapp, korean, tmp_path, palette_name):
    with fusion_palette(qapp, palette_name):
        install_hangul_fallback(qapp)  # as the app does at start: Hangul, not boxes
        widget = ChatView()
        qtbot.addWidget(widget)
        widget.resize(640, 300)
        widget.load_messages([Message(Role.USER, "비밀번호가 뭐예요?", documents=(MANUAL,)),
                              Message(Role.ASSISTANT, "4711입니다.", sources=without_document(SOURCES, "note.md"))])
        widget.show()
        qtbot.waitExposed(widget)
        qtbot.wait(50)
        line = widget.bubbles()[1].sources
        assert line.text().endswith(" · note.md (삭제된 첨부 파일)") and line.text().startswith("출처: ")
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        widget.grab().save(str(folder / f"ko-removed-source-{palette_name}.png"))


LONG_NAME = "quarterly-financial-report-for-the-board-of-directors-2024-final-revised-v3.pdf"


@pytest.mark.parametrize("width", [330, 420])
def test_document_chips_too_narrow_for_one_line_wrap_and_shorten_only_the_name(qtbot, width):
    """New-user trial 10: "cp949.txt · 44 characte", "notes.json · 1,837 chara" under a sent
    message (a narrow transcript), cut mid-word with no "…". Each chip now shows its whole text
    on a line of its own where they do not fit side by side; one wider than the line shortens
    the file's name in the middle, keeps its size whole and says everything in its tooltip."""
    documents = (ExtractedDocument("cp949.txt", "text", "x" * 44, (), 44, "cp949"),
                 ExtractedDocument("notes.json", "text", "y" * 1837, (), 1837, "utf-8"),
                 ExtractedDocument(LONG_NAME, "pdf", "z" * 5000, tuple(range(0, 5000, 50)), 900_000))
    widget = ChatView()
    qtbot.addWidget(widget)
    widget.resize(width, 420)
    widget.load_messages([Message(Role.USER, "What is in these files?", documents=documents)])
    widget.show()
    qtbot.waitExposed(widget)
    qtbot.wait(50)
    row = widget.bubbles()[0].documents
    assert row.height() >= row.heightForWidth(row.width())  # every line of chips shown
    bottoms = set()
    for chip, remove, document in zip(row.chips, row.remove_buttons, documents, strict=True):
        shown, metrics = QLabel.text(chip), chip.fontMetrics()  # the text drawn
        assert metrics.horizontalAdvance(shown) <= chip.contentsRect().width(), shown  # drawn whole
        assert remove.isVisible() and remove.mapTo(row, remove.rect().topRight()).x() < row.width()
        if document.name == LONG_NAME:
            assert shown.endswith(" · 100 pages") and "…" in shown and shown.startswith("quarterly-")
            assert chip.toolTip().startswith(f"{LONG_NAME} · 100 pages\n")
        else:
            assert shown == chip.text() == f"{document.name} · {len(document.text):,} characters"
        bottoms.add(chip.mapTo(row, chip.rect().bottomLeft()).y())
    assert len(bottoms) > 1  # not all on one line at this width
