"""Notes a summary proposes, in the window (issue 17, item 5): shown above the composer, each
pinned or dismissed by the user, never pinned silently. Light and dark palettes are grabbed."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.ui.note_proposals import NoteProposals
from tests.helpers.palettes import fusion_palette

SUMMARY = "Her name is Ada and she lives in Lisbon. The budget is 1,200 euros. They said hello."


def test_pin_and_dismiss_in_the_window(qtbot, make_window):
    window = make_window()
    chat = window.chat
    chat.turns.send("My name is Ada.")  # no model: the turn fails, the chat and its row exist
    qtbot.waitUntil(lambda: not chat.turns.active, timeout=10000)
    chat.notes.propose(SUMMARY)
    QApplication.processEvents()
    proposals = window.note_proposals
    assert proposals.isVisible() and proposals.texts == [
        "Her name is Ada and she lives in Lisbon.", "The budget is 1,200 euros."]
    assert chat.pinned_notes == ""
    qtbot.mouseClick(proposals.rows[1][1], Qt.MouseButton.LeftButton)  # Pin the budget
    assert chat.pinned_notes == "The budget is 1,200 euros."
    assert window.chat_bar.notes_button.text().startswith("Notes · ≈")
    qtbot.mouseClick(proposals.rows[0][2], Qt.MouseButton.LeftButton)  # Dismiss the name
    QApplication.processEvents()
    assert not proposals.isVisible() and chat.pinned_notes == "The budget is 1,200 euros."
    assert chat.store.load_conversation(chat.conversation_id).pinned_notes == "The budget is 1,200 euros."


@pytest.mark.parametrize("palette_name", ["light", "dark"])
def test_the_proposals_read_in_both_palettes(qtbot, qapp, tmp_path, palette_name):
    with fusion_palette(qapp, palette_name):
        widget = NoteProposals()
        qtbot.addWidget(widget)
        widget.set_proposals(["Her name is Ada and she lives in Lisbon.", "The budget is 1,200 euros."])
        widget.resize(600, widget.sizeHint().height())
        widget.show()
        qtbot.waitExposed(widget)
        qtbot.wait(30)
        widget.grab().save(str(tmp_path / f"note_proposals_{palette_name}.png"))
        label = widget.rows[0][0]
        assert label.palette().color(label.foregroundRole()) != label.palette().color(label.backgroundRole())


def test_a_proposal_reads_its_inline_markdown_and_is_pinned_as_written(qtbot):
    """Trial 10: "`reverseString`" showed its backticks. The label shows code as code; Pin gives
    the note as the summary wrote it."""
    from PySide6.QtGui import QTextDocument

    widget = NoteProposals()
    qtbot.addWidget(widget)
    note = "The helper is called `reverseString` and takes **one** argument."
    widget.set_proposals([note])
    label = widget.rows[0][0]
    shown = QTextDocument()
    shown.setHtml(label.text())
    assert shown.toPlainText().strip() == "The helper is called reverseString and takes one argument."
    assert "<code" in label.text() and label.accessibleName() == note
    with qtbot.waitSignal(widget.accepted) as pinned:
        qtbot.mouseClick(widget.rows[0][1], Qt.MouseButton.LeftButton)
    assert pinned.args == [note]


def test_many_proposals_show_three_at_a_time_and_can_all_be_dismissed(qtbot, make_window):
    """Trial 4: 19 proposals after a long chat crushed the transcript to ~60 px."""
    window = make_window()
    window.resize(1000, 700)
    chat = window.chat
    chat.turns.send("Plan my trip.")
    qtbot.waitUntil(lambda: not chat.turns.active, timeout=10000)
    names = ("Ada", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kim", "Lu")
    cities = ("Lisbon", "Porto", "Seoul", "Busan", "Osaka", "Lima", "Quito", "Oslo", "Rome", "Nice", "Bern", "Kyiv")
    summaries = [" ".join(f"{names[i]} lives in {cities[i]} with {i + 2} cats." for i in range(k, k + 3))
                 for k in range(0, 12, 3)]  # four summaries, three facts each
    for summary in summaries:
        chat.notes.propose(summary)
    QApplication.processEvents()
    proposals = window.note_proposals
    assert len(proposals.texts) == 12 and len(proposals.rows) == 3
    assert proposals.more.isVisible() and proposals.more.text() == "9 more after these"
    assert proposals.height() < 200 and window.chat_view.height() > 250  # the transcript keeps its room
    qtbot.mouseClick(proposals.rows[0][1], Qt.MouseButton.LeftButton)  # Pin one: the next comes up
    pinned = chat.pinned_notes
    assert pinned in summaries[0] and len(proposals.texts) == 11 and len(proposals.rows) == 3
    qtbot.mouseClick(proposals.dismiss_all, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    assert not proposals.isVisible() and chat.pinned_notes == pinned
    for summary in summaries:  # dismissed ones are not offered again
        chat.notes.propose(summary)
    assert window.note_proposals.texts == []
