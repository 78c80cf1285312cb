"""Undo after ✕ on a sent file (product trial: it was removed with no way back): the status bar
says "Removed manual.pdf" with an Undo button for a few seconds; Undo puts the file back on the
message, its excerpts' words under the answer, and in the Store. Grabbed in English and Korean."""

import json
import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.core.attached_document import ExtractedDocument
from app.core.conversation import Message, Role
from app.core.document_prompt import Citation
from app.ui.fonts import install_hangul_fallback
from tests.helpers.palettes import fusion_palette

MANUAL = ExtractedDocument("manual.pdf", "pdf", "Run the installer as root. Then reboot.", (0,), 900_000)
NOTE = ExtractedDocument("note.md", "markdown", "The pass code is 4711.", (), 22, "utf-8")
SOURCES = (Citation("manual.pdf", 17, "Install", 1, 0, 26, "Run the installer as root."),
           Citation("note.md", 1, "", None, 0, 22, "The pass code is 4711."))


def window_with_a_sent_file(make_window):
    window = make_window()
    store = window.chat.store
    cid = store.create_conversation("Pass code")
    store.append_message(cid, Message(Role.USER, "What is the pass code?", documents=(MANUAL, NOTE)))
    store.append_message(cid, Message(Role.ASSISTANT, "It is 4711.", sources=SOURCES))
    window.chat.conversations.open_conversation(cid)
    return window, cid


def shown(window):
    """(names of the question's files, the answer's sources line) as the transcript shows them."""
    question, answer = window.chat_view.bubbles()
    return [chip.text().split(" · ")[0] for chip in question.documents.chips], answer.sources.text()


def exported(window, cid) -> dict:
    whole = json.loads(window.chat.store.export_json(cid))
    del whole["updated_at"]  # the removal and its undo are changes to the chat
    return whole


def test_undo_puts_a_removed_file_back_and_the_offer_expires(qtbot, make_window, monkeypatch):
    monkeypatch.setattr("app.ui.undo_notice.UNDO_MS", 300)
    window, cid = window_with_a_sent_file(make_window)
    before, export_before = shown(window), exported(window, cid)
    notice = window.undo_notice
    assert not notice.isVisible()
    qtbot.mouseClick(window.chat_view.bubbles()[0].documents.remove_buttons[1], Qt.MouseButton.LeftButton)
    assert notice.isVisible() and notice.label.text() == "Removed note.md"
    assert shown(window)[0] == ["manual.pdf"] and shown(window)[1].endswith("note.md (removed attachment)")
    assert "4711." not in window.chat.store.export_json(cid).replace("It is 4711.", "")
    qtbot.mouseClick(notice.undo_button, Qt.MouseButton.LeftButton)
    assert not notice.isVisible()
    assert shown(window) == before and exported(window, cid) == export_before
    assert "note.md is back" in window.status.currentMessage()
    qtbot.mouseClick(window.chat_view.bubbles()[0].documents.remove_buttons[0], Qt.MouseButton.LeftButton)
    assert notice.isVisible() and notice.label.text() == "Removed manual.pdf"
    qtbot.waitUntil(lambda: not notice.isVisible(), timeout=3000)  # the offer runs out: removed for good
    window.chat.attachments.undo_remove()
    assert shown(window)[0] == ["note.md"]
    reopened = window.chat.store.load_conversation(cid).conversation.messages[0]
    assert [d.name for d in reopened.documents] == ["note.md"]


@pytest.mark.parametrize("language, palette_name", [("en", "light"), ("ko", "dark"), ("ko", "light")])
def test_the_undo_notice_reads_in_english_and_korean(request, qtbot, qapp, make_window, tmp_path, language,
                                                     palette_name):
    if language == "ko":
        request.getfixturevalue("korean")
    with fusion_palette(qapp, palette_name):
        install_hangul_fallback(qapp)
        window, _cid = window_with_a_sent_file(make_window)
        window.resize(900, 520)
        qtbot.mouseClick(window.chat_view.bubbles()[0].documents.remove_buttons[0], Qt.MouseButton.LeftButton)
        notice = window.undo_notice
        expected = {"en": ("Removed manual.pdf", "Undo"), "ko": ("manual.pdf을(를) 뺐습니다", "실행 취소")}[language]
        assert (notice.label.text(), notice.undo_button.text()) == expected
        qtbot.wait(50)
        assert notice.undo_button.width() >= notice.undo_button.sizeHint().width()  # not cut
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        window.grab().save(str(folder / f"undo-remove-{language}-{palette_name}.png"))


@pytest.mark.parametrize("palette_name", ["light", "dark"])
def test_a_files_whole_file_note_goes_with_the_file_and_comes_back_with_undo(qtbot, qapp, make_window, tmp_path,
                                                                           palette_name):
    """Trial 5: the "whole file" note stayed in the transcript after its file was removed."""
    from app.ui.notice import Notice

    with fusion_palette(qapp, palette_name):
        window, _cid = window_with_a_sent_file(make_window)
        window.resize(900, 520)
        window.show()
        chat, view = window.chat, window.chat_view
        chat.document_noted.emit(0, "manual.pdf", "manual.pdf: too large for this turn (220,000 tokens): "
                                                  "retrieving 3 of 900 excerpts, 1,200 tokens")
        chat.document_noted.emit(0, "note.md", "note.md: whole file, 8 tokens")

        def notes():
            return [n.text() for n in view.findChildren(Notice) if n.isVisible()]

        qtbot.waitUntil(lambda: len(notes()) == 2)
        qtbot.mouseClick(view.bubbles()[0].documents.remove_buttons[1], Qt.MouseButton.LeftButton)  # note.md
        assert notes() == ["manual.pdf: too large for this turn (220,000 tokens): retrieving 3 of 900 excerpts, "
                           "1,200 tokens"]
        qtbot.wait(50)
        folder = Path(os.environ.get("HEADROOM_SCREENSHOT_DIR") or tmp_path)
        window.grab().save(str(folder / f"document-note-removed-{palette_name}.png"))
        qtbot.mouseClick(window.undo_notice.undo_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: len(notes()) == 2)  # back with its file
        assert notes()[1] == "note.md: whole file, 8 tokens"
