"""The "Earlier in this conversation" block: show, collapse, edit, summarizing + cancel."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.ui.summary_block import SummaryBlock

SUMMARY = "The user runs Llama-3-8B on a 12 GB GPU; we covered KV-cache growth."


@pytest.fixture
def block(qtbot):
    host = QWidget()  # a parent, as in the chat view, so showing the block opens no window
    qtbot.addWidget(host)
    widget = SummaryBlock()
    QVBoxLayout(host).addWidget(widget)
    host.resize(600, 300)
    host.show()
    qtbot.waitExposed(host)
    yield widget  # (keeps `host` alive: pytest-qt holds widgets weakly)


def test_hidden_without_summary(block):
    assert block.isHidden()
    block.set_summary("   ", 0, 0, 256)
    assert block.isHidden()


def test_shows_summary_turns_and_tokens(block):
    block.set_summary(SUMMARY, 6, 142, 256)
    assert block.isVisible()
    assert block.toggle_button.text() == "▾  Earlier in this conversation"
    assert block.meta_label.text() == "6 turns folded in · 142 / 256 tokens"
    assert block.text_label.text() == SUMMARY and block.text_label.isVisible()
    assert block.edit_button.isVisible() and block.edit_button.isEnabled()
    assert not block.busy_row.isVisible()
    assert block.meta_label.property("over") is False
    block.set_summary(SUMMARY, 1, 1300, 1024)
    assert block.meta_label.text() == "1 turn folded in · 1,300 / 1,024 tokens"
    assert block.meta_label.property("over") is True


def test_collapse_and_expand(qtbot, block):
    block.set_summary(SUMMARY, 2, 40, 256)
    qtbot.mouseClick(block.toggle_button, Qt.MouseButton.LeftButton)
    assert not block.is_expanded()
    assert block.toggle_button.text() == "▸  Earlier in this conversation"
    assert not block.text_label.isVisible()
    assert block.meta_label.isVisible()  # still says what is folded
    block.set_summary(SUMMARY + " More.", 3, 50, 256)
    assert not block.is_expanded()  # the user's choice survives an update
    qtbot.mouseClick(block.toggle_button, Qt.MouseButton.LeftButton)
    assert block.text_label.isVisible() and block.text_label.text().endswith("More.")


def test_edit_and_save(qtbot, block):
    block.set_summary(SUMMARY, 6, 142, 256)
    qtbot.mouseClick(block.edit_button, Qt.MouseButton.LeftButton)
    assert block.is_editing() and block.editor.isVisible()
    assert block.editor.toPlainText() == SUMMARY
    assert not block.text_label.isVisible() and not block.edit_button.isVisible()
    block.editor.setPlainText("  The user has a 24 GB GPU.  ")
    with qtbot.waitSignal(block.summary_edited) as blocker:
        qtbot.mouseClick(block.save_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["The user has a 24 GB GPU."]
    assert not block.is_editing()
    assert block.text_label.text() == "The user has a 24 GB GPU." and block.text_label.isVisible()


def test_ctrl_enter_saves_and_escape_cancels(qtbot, block):
    block.set_summary(SUMMARY, 6, 142, 256)
    block.begin_edit()
    block.editor.setPlainText("Shorter.")
    with qtbot.assertNotEmitted(block.summary_edited):
        qtbot.keyClick(block.editor, Qt.Key.Key_Escape)
    assert not block.is_editing() and block.text_label.text() == SUMMARY
    block.begin_edit()
    block.editor.setPlainText("Shorter.")
    with qtbot.waitSignal(block.summary_edited) as blocker:
        qtbot.keyClick(block.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert blocker.args == ["Shorter."]


def test_a_new_summary_does_not_overwrite_an_open_draft(block):
    block.set_summary(SUMMARY, 6, 142, 256)
    block.begin_edit()
    block.editor.setPlainText("my draft")
    block.set_summary("model's newer summary", 7, 150, 256)
    assert block.editor.toPlainText() == "my draft"
    assert block.meta_label.text() == "7 turns folded in · 150 / 256 tokens"
    block.cancel_edit()
    assert block.text_label.text() == "model's newer summary"


def test_summarizing_state_with_cancel(qtbot, block):
    block.set_summarizing(True)
    assert block.isVisible() and block.busy_row.isVisible()
    assert block.busy_label.text() == "Summarizing earlier turns…"
    assert block.meta_label.text() == "" and not block.edit_button.isVisible()
    with qtbot.waitSignal(block.cancel_summary_requested):
        qtbot.mouseClick(block.cancel_button, Qt.MouseButton.LeftButton)
    block.set_summarizing(False)
    assert block.isHidden()


def test_summarizing_over_an_existing_summary_disables_edit(block):
    block.set_summary(SUMMARY, 6, 142, 256)
    block.set_summarizing(True)
    assert block.text_label.isVisible() and block.busy_row.isVisible()
    assert not block.edit_button.isEnabled()
    block.set_summarizing(False)
    assert block.edit_button.isEnabled() and not block.busy_row.isVisible()


def test_clear(block):
    block.set_summary(SUMMARY, 6, 142, 256)
    block.set_summarizing(True)
    block.begin_edit()
    block.clear()
    assert block.isHidden() and block.text() == "" and not block.is_editing()
