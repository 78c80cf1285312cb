"""A refused message the user leaves unanswered (new-user trial: a 180,000-character paste was
refused, stayed in the chat and was later folded into the summary): when another message goes,
the refused one leaves the transcript and its text comes back to the message box, beside anything
typed meanwhile; the status bar says so. The worker is a FakeWorker whose part the test plays.
Screenshots go to $HEADROOM_SCREENSHOT_DIR (else the test's folder)."""

import pytest
from PySide6.QtCore import Qt

from app.engine.memory.admission import AdmissionDecision
from tests.chat.conftest import finished, record
from tests.ui.test_chat_switch_states import fake_window_in, send, shot

PASTE = "A very long pasted log"


def refused_for_length() -> AdmissionDecision:
    return AdmissionDecision(admitted=False, cause="positions", reason="too long", reason_kind="message",
                             facts=dict(message=40_020, context=8_192, max_new_tokens=512, summary_reserve=512,
                                        room=7_168, shorten_by=32_852))


@pytest.mark.parametrize("language", ["en", "ko"])
def test_a_message_sent_while_a_refused_one_stops_goes_alone_and_the_refused_text_comes_back(
        request, qtbot, qapp, make_fake_window, tmp_path, language):
    window = fake_window_in(language, request, qapp, make_fake_window)
    worker, editor = window.chat.worker, window.composer.editor
    rid = send(qtbot, window, PASTE)
    worker.prefill_progressed.emit(rid, 512, 40_020)  # begun: admission is next
    window.composer.request_stop()
    send(qtbot, window, "Just the last error, please")  # sent while Stop takes effect: next in line
    qtbot.keyClicks(editor, "and a draft")  # typed meanwhile: it must stay
    worker.turn_refused.emit(rid, refused_for_length())
    assert [m.content for m in worker.requests[-1].messages] == ["Just the last error, please"]
    assert [m.content for m in window.chat.conversation.messages] == ["Just the last error, please", ""]
    assert editor.toPlainText() == f"{PASTE}\n\nand a draft"
    assert editor.textCursor().position() == len(editor.toPlainText())  # the user's cursor did not jump
    expected = {"en": "Your earlier message got no answer, so it was taken out of the chat; its text is back in "
                      "the message box.",
                "ko": "앞서 보낸 메시지는 답변을 받지 못해 채팅에서 뺐습니다. "
                      "그 내용은 메시지 입력란에 다시 넣어 두었습니다."}
    assert window.status.currentMessage() == expected[language]
    shot(qtbot, window, tmp_path, f"refused-left-unanswered-{language}")


def test_a_message_put_back_in_an_empty_box_is_typed_after(qtbot):
    """New-user trial: after closing the remedies dialog the refused text came back with the cursor
    at its start, so "hi" typed next went in front of the 180,000 characters."""
    from app.ui.composer import Composer

    composer = Composer()
    qtbot.addWidget(composer)
    composer.put_back(PASTE)
    qtbot.keyClicks(composer.editor, " hi")
    assert composer.editor.toPlainText() == f"{PASTE} hi"


def test_a_refused_message_withdrawn_at_the_next_send_brings_its_files_back_to_the_composer(
        qtbot, make_fake_window, tmp_path):
    """New-user trial: the text came back to the message box, the attached log did not."""
    window = make_fake_window()
    log = tmp_path / "build.log"
    log.write_text("ERROR disk full\n", encoding="utf-8")
    window.chat.attachments.add([str(log)])
    qtbot.waitUntil(lambda: bool(window.chat.attachments.ready))
    rid = send(qtbot, window, PASTE)
    assert window.attachment_bar.chips == {}  # taken by Send
    window.chat.worker.turn_refused.emit(rid, refused_for_length())
    send(qtbot, window, "Just the last error, please")
    assert window.composer.editor.toPlainText() == PASTE
    assert [chip.text() for chip in window.attachment_bar.chips.values()] == ["build.log · 16 characters  ✕"]
    assert window.attachment_bar.isVisible()


def restarted_after_a_kill(make_fake_window, window):
    """`window`, with its remedies dialog open, ended as by a kill (its Cancel never runs: a window
    closed over the dialog cancels it, and the message goes back to the composer), and a new
    window on its store and session: the chat open then opens again."""
    cid = window.chat.conversation_id
    window.dialogs.admission_dialog.remedy_chosen.disconnect()
    window.close()
    again = make_fake_window()
    assert again.chat.conversation_id == cid is not None
    return again


@pytest.mark.parametrize("language", ["en", "ko"])
def test_a_refused_message_shows_its_refusal_again_after_a_restart(request, qtbot, qapp, make_fake_window,
                                                                    language):
    """New-user trial: after a restart the refused message stood there with no red notice."""
    from app.ui.notice import Notice

    window = fake_window_in(language, request, qapp, make_fake_window)
    rid = send(qtbot, window, PASTE)
    window.chat.worker.turn_refused.emit(rid, refused_for_length())
    [before] = [(n.text(), n.property("kind")) for n in window.chat_view.findChildren(Notice)]

    again = restarted_after_a_kill(make_fake_window, window)
    assert [b.text for b in again.chat_view.bubbles()] == [PASTE]
    qtbot.waitUntil(lambda: bool(again.chat_view.findChildren(Notice)))
    assert [(n.text(), n.property("kind")) for n in again.chat_view.findChildren(Notice)] == [before]
    assert before[0].startswith({"en": "This turn was not started. The new message needs 40,020 tokens with the "
                                       "system prompt",
                                 "ko": "이번 턴을 시작하지 않았습니다."}[language])
    send(qtbot, again, "Just the last error, please")  # withdrawn at the next send: its notice goes with it
    assert again.chat_view.findChildren(Notice) == [] or all(
        not n.isVisible() for n in again.chat_view.findChildren(Notice))


def test_attach_as_a_file_in_the_dialog_empties_the_box_and_shows_the_paste_as_a_file(qtbot, make_fake_window):
    """New-user trial: a long paste refused with only Cancel; "Attach as a file" in the window's
    dialog reaches the chat flow: the message leaves the chat, the box is empty for the question,
    the paste is a chip that Send takes."""
    window = make_fake_window()
    rid = send(qtbot, window, PASTE)
    window.chat.worker.turn_refused.emit(rid, refused_for_length())
    dialog = window.dialogs.admission_dialog
    qtbot.waitExposed(dialog)
    qtbot.mouseClick(dialog.buttons["attach"], Qt.MouseButton.LeftButton)
    assert window.chat_view.bubbles() == [] and window.composer.editor.toPlainText() == ""
    assert [chip.text() for chip in window.attachment_bar.chips.values()] == [
        f"pasted text.txt · {len(PASTE)} characters  ✕"]
    assert window.status.currentMessage() == ("Your message is attached as pasted text.txt. Write your question "
                                              "about it and send it.")
    send(qtbot, window, "What failed?")
    assert [d.text for d in window.chat.worker.requests[-1].documents] == [PASTE]


def test_a_long_refused_message_does_not_say_it_was_sent_until_a_remedy_sends_it(qtbot, make_fake_window):
    """New-user trial: a refused 100 KB paste said under it "the whole message is kept and sent",
    though it never went to the model; so it did again after a restart."""
    paste = ("ERROR disk full on /var " * 1300).strip()  # 31,199 characters: 11,199 not laid out
    not_sent = "… 11,199 more characters not shown here (the whole message is kept, but it was not sent)"
    sent = "… 11,199 more characters not shown here (the whole message is kept and sent)"

    def send_paste(window):
        window.composer.editor.setPlainText(paste)
        window.composer.editor.setFocus()
        qtbot.keyClick(window.composer.editor, Qt.Key.Key_Return)
        return window.chat_view.bubbles()[-2]  # above its answer's

    window = make_fake_window()
    bubble = send_paste(window)
    assert bubble.shown_text().endswith(sent)  # on its way to the model
    window.chat.worker.turn_refused.emit(window.chat.worker.last_id, AdmissionDecision(
        admitted=False, cause="memory", reason="short by 120 MiB", max_new_tokens_fit=100))
    assert window.chat_view.bubbles() == [bubble] and bubble.shown_text().endswith(not_sent)
    dialog = window.dialogs.admission_dialog
    qtbot.waitExposed(dialog)
    qtbot.mouseClick(dialog.buttons["lower_max_new_tokens"], Qt.MouseButton.LeftButton)
    assert window.chat.worker.requests[-1].settings.max_new_tokens == 100  # sent after all
    assert bubble.shown_text().endswith(sent)
    window.chat.worker.reply_finished.emit(window.chat.worker.last_id, finished("Disk full."), record())

    window.new_chat_action.trigger()
    bubble = send_paste(window)
    window.chat.worker.turn_refused.emit(window.chat.worker.last_id, refused_for_length())
    assert bubble.shown_text().endswith(not_sent)
    again = restarted_after_a_kill(make_fake_window, window)  # its refusal said again
    [bubble] = again.chat_view.bubbles()
    qtbot.waitUntil(lambda: bubble.shown_text().endswith(not_sent))
