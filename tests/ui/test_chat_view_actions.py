"""Chat view: restore a transcript, Edit / Regenerate / Continue with indexes, truncate, the
summary block on top, and actions locked while a reply streams."""

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication

from app.core.conversation import Message, MessageStatus, Role
from app.ui.chat_view import ChatView
from app.ui.notice import Notice
from app.ui.summary_block import SummaryBlock


def transcript():
    return [
        Message(Role.USER, "What is a KV cache?"),
        Message(Role.ASSISTANT, "Keys and values kept per token."),
        Message(Role.USER, "How big is it?"),
        Message(Role.ASSISTANT, "For Llama-3-8B, 128 KiB per", MessageStatus.STOPPED),
    ]


@pytest.fixture
def view(qtbot):
    widget = ChatView()
    qtbot.addWidget(widget)
    widget.resize(640, 600)
    widget.load_messages(transcript())
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def visible_actions(bubble):
    QApplication.processEvents()  # widgets added to a shown parent appear on the next loop turn
    buttons = {"Edit": bubble.edit_button, "Regenerate": bubble.regenerate_button,
               "Continue": bubble.continue_button}
    return [name for name, button in buttons.items() if button.isVisible()]


def test_load_messages_restores_roles_texts_and_statuses(view):
    bubbles = view.bubbles()
    assert [b.role for b in bubbles] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assert [b.text for b in bubbles] == [m.content for m in transcript()]
    assert [b.status for b in bubbles] == [MessageStatus.COMPLETE] * 3 + [MessageStatus.STOPPED]
    assert bubbles[3]._header.text() == "Assistant — stopped"
    view.load_messages(transcript()[:2])  # replaces, does not append
    assert [b.text for b in view.bubbles()] == ["What is a KV cache?", "Keys and values kept per token."]


def test_actions_per_bubble(view):
    assert [visible_actions(b) for b in view.bubbles()] == [
        ["Edit"], [], ["Edit"], ["Regenerate", "Continue"]]


def test_complete_last_answer_offers_regenerate_only(view):
    view.load_messages(transcript()[:2])
    assert [visible_actions(b) for b in view.bubbles()] == [["Edit"], ["Regenerate"]]


def test_failed_answer_without_text_cannot_be_continued(view):
    view.load_messages([Message(Role.USER, "hi"), Message(Role.ASSISTANT, "", MessageStatus.FAILED)])
    assert visible_actions(view.bubbles()[1]) == ["Regenerate"]
    assert "(no text)" in view.bubbles()[1].shown_text()  # not the "…" of a reply still coming
    assert "…" in view.begin_stream().shown_text()
    view.load_messages([Message(Role.USER, "hi"), Message(Role.ASSISTANT, "Hel", MessageStatus.FAILED)])
    assert visible_actions(view.bubbles()[1]) == ["Regenerate", "Continue"]


def test_regenerate_and_continue_carry_the_index(qtbot, view):
    last = view.bubbles()[3]
    with qtbot.waitSignal(view.regenerate_requested) as blocker:
        qtbot.mouseClick(last.regenerate_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [3]
    with qtbot.waitSignal(view.continue_requested) as blocker:
        qtbot.mouseClick(last.continue_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [3]


def test_edit_a_user_message_inline(qtbot, view):
    bubble = view.bubbles()[2]
    qtbot.mouseClick(bubble.edit_button, Qt.MouseButton.LeftButton)
    assert bubble.is_editing() and bubble.editor.isVisible()
    assert bubble.editor.toPlainText() == "How big is it?"
    assert not bubble._body.isVisible() and not bubble.edit_button.isVisible()
    assert "answers below stay as the older version" in bubble._edit_hint.text()
    bubble.editor.setPlainText("  How big is it at 8k tokens?\n")
    with qtbot.waitSignal(view.edit_requested) as blocker:
        qtbot.mouseClick(bubble.save_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [2, "How big is it at 8k tokens?"]
    assert not bubble.is_editing() and bubble._body.isVisible()
    assert bubble.text == "How big is it at 8k tokens?"
    assert len(view.bubbles()) == 4  # the window decides what to drop (truncate)


def test_edit_cancel_and_keyboard(qtbot, view):
    bubble = view.bubbles()[0]
    bubble.begin_edit()
    bubble.editor.setPlainText("changed")
    with qtbot.assertNotEmitted(view.edit_requested):
        qtbot.keyClick(bubble.editor, Qt.Key.Key_Escape)
    assert not bubble.is_editing() and bubble.text == "What is a KV cache?"
    bubble.begin_edit()
    bubble.editor.setPlainText("What is a KV cache, briefly?")
    with qtbot.waitSignal(view.edit_requested) as blocker:
        qtbot.keyClick(bubble.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert blocker.args == [0, "What is a KV cache, briefly?"]


def test_an_empty_edit_cannot_be_saved(qtbot, view):
    bubble = view.bubbles()[0]
    bubble.begin_edit()
    bubble.editor.setPlainText("   ")
    assert not bubble.save_button.isEnabled()
    with qtbot.assertNotEmitted(view.edit_requested):
        qtbot.keyClick(bubble.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert bubble.is_editing()


def test_only_user_messages_can_be_edited(view):
    with pytest.raises(ValueError):
        view.bubbles()[1].begin_edit()


def test_actions_disabled_while_generating(qtbot, view):
    view.set_actions_enabled(False)
    bubbles = view.bubbles()
    assert not bubbles[0].edit_button.isEnabled()
    assert not bubbles[3].regenerate_button.isEnabled() and not bubbles[3].continue_button.isEnabled()
    with qtbot.assertNotEmitted(view.regenerate_requested):
        qtbot.mouseClick(bubbles[3].regenerate_button, Qt.MouseButton.LeftButton)
    view.set_actions_enabled(True)
    assert bubbles[3].regenerate_button.isEnabled()


def test_an_open_editor_cannot_save_while_generating(view):
    bubble = view.bubbles()[0]
    bubble.begin_edit()
    view.set_actions_enabled(False)
    assert not bubble.save_button.isEnabled()
    view.set_actions_enabled(True)
    assert bubble.save_button.isEnabled()


def test_streaming_locks_actions_and_moves_regenerate_to_the_new_answer(qtbot, view):
    view.add_message(Role.USER, "Thanks!")
    streaming = view.begin_stream()
    assert visible_actions(streaming) == []  # nothing to do with a reply still coming
    assert not view.bubbles()[0].edit_button.isEnabled()
    assert visible_actions(view.bubbles()[3]) == []  # no longer the last answer
    view.append_stream("You're welcome.")
    view.end_stream(MessageStatus.COMPLETE)
    assert streaming.text == "You're welcome."
    assert visible_actions(streaming) == ["Regenerate"]
    assert view.bubbles()[0].edit_button.isEnabled()


def test_truncate_drops_bubbles_and_notices_below(view):
    notice = view.add_notice("The reply failed: out of memory", "error")
    QApplication.processEvents()
    assert notice.isVisible()
    view.truncate(2)
    assert [b.text for b in view.bubbles()] == ["What is a KV cache?", "Keys and values kept per token."]
    assert view.transcript_text() == "What is a KV cache?\n\nKeys and values kept per token."
    assert notice.isHidden()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    assert view.findChildren(Notice) == []
    assert visible_actions(view.bubbles()[1]) == ["Regenerate"]  # now the last answer
    view.truncate(5)  # past the end: nothing happens
    assert len(view.bubbles()) == 2
    with pytest.raises(IndexError):
        view.truncate(-1)


def test_a_refusal_notice_goes_when_its_turn_runs_after_all(view):
    """New-user trial: after the remedy ran, "This turn was not started" stayed between the question
    and its answer. Older notices and a refusal above the last message stay."""
    kept = view.add_notice("Loaded SmolLM2")
    view.add_message(Role.USER, "hi")
    refused = view.add_notice("This turn was not started. The new message needs 110 tokens.", "refused")
    QApplication.processEvents()
    assert refused.isVisible() and refused.property("kind") == "error"  # styled as an error
    view.begin_stream()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    assert view.findChildren(Notice) == [kept]
    view.end_stream(MessageStatus.COMPLETE)
    older = view.add_notice("This turn was not started: short by 120 MiB", "refused")
    view.add_message(Role.USER, "next")
    view.begin_stream()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    assert view.findChildren(Notice) == [kept, older]  # about another turn: it stays


def test_truncate_keeps_notices_above(view):
    view.truncate(4)
    notice = view.add_notice("Loaded SmolLM2")
    view.add_message(Role.USER, "Next question")
    view.truncate(4)
    QApplication.processEvents()
    assert notice.isVisible() and len(view.bubbles()) == 4


def test_truncate_closes_an_open_stream(view):
    view.begin_stream()
    view.append_stream("partial")
    view.truncate(3)
    view.flush()
    assert [b.text for b in view.bubbles()][-1] == "How big is it?"
    assert view.bubbles()[0].edit_button.isEnabled()  # no stream open any more
    view.end_stream()  # harmless


def test_regenerate_flow_replaces_the_last_answer(view):
    view.truncate(3)  # what the window does on regenerate_requested(3)
    view.begin_stream()
    view.append_stream("About 1 GB at 8k tokens.")
    view.end_stream()
    assert [b.text for b in view.bubbles()][-1] == "About 1 GB at 8k tokens."
    assert len(view.bubbles()) == 4


def test_continue_streams_into_the_stopped_answer(view):
    bubble = view.continue_stream()
    assert bubble is view.bubbles()[3]
    assert bubble.status is MessageStatus.STREAMING and bubble._header.text() == "Assistant"
    assert visible_actions(bubble) == []
    view.append_stream(" token in fp16.")
    view.end_stream(MessageStatus.COMPLETE)
    assert bubble.text == "For Llama-3-8B, 128 KiB per token in fp16."
    assert visible_actions(bubble) == ["Regenerate"]
    assert len(view.bubbles()) == 4


def test_continue_needs_an_assistant_message(view):
    view.add_message(Role.USER, "another question")
    with pytest.raises(ValueError):
        view.continue_stream()


def test_summary_block_sits_above_the_transcript(qtbot, view):
    assert isinstance(view.summary_block, SummaryBlock)
    assert view.summary_block.isHidden()
    view.summary_block.set_summary("Earlier we talked about GPUs.", 3, 20, 256)
    qtbot.waitUntil(lambda: view.summary_block.isVisible())
    first = view.bubbles()[0]
    assert view.summary_block.geometry().bottom() < first.geometry().top()
    view.truncate(0)
    assert view.summary_block.isVisible()  # truncating messages keeps the summary


def test_clear_empties_everything_at_once(view):
    view.summary_block.set_summary("Earlier we talked about GPUs.", 3, 20, 256)
    view.add_notice("hello")
    view.clear()
    assert view.bubbles() == [] and view.transcript_text() == ""
    assert view.summary_block.isHidden() and view.summary_block.text() == ""
    assert view.summary_block.parent() is not None  # reused, not deleted


def test_a_huge_message_is_shown_shortened_but_kept_whole(qtbot):
    from app.core.conversation import Role
    from app.ui.message_bubble import MAX_SHOWN_CHARS, MessageBubble

    text = ("word " * 200 + "\n") * 2000  # ~2 MB, a pasted log
    bubble = MessageBubble(Role.USER, text)
    qtbot.addWidget(bubble)
    assert bubble.text == text  # kept, stored and sent whole
    shown = bubble.shown_text()
    assert len(shown) < MAX_SHOWN_CHARS * 2 and "more characters not shown" in shown
    assert f"{len(text) - MAX_SHOWN_CHARS:,}" in shown  # grouped as every count in the window


def test_version_switcher_shows_where_there_are_versions_and_carries_the_index(qtbot, view):
    view.set_versions([(1, 1), (2, 3), (1, 1), (1, 1)])
    QApplication.processEvents()
    plain, versioned = view.bubbles()[0], view.bubbles()[1]
    assert not plain.version_label.isVisible() and not plain.older_button.isVisible()
    assert versioned.version_label.isVisible() and versioned.version_label.text() == "2 / 3"
    assert versioned.older_button.isEnabled() and versioned.newer_button.isEnabled()
    with qtbot.waitSignal(view.version_requested) as blocker:
        qtbot.mouseClick(versioned.older_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [1, -1]
    with qtbot.waitSignal(view.version_requested) as blocker:
        qtbot.mouseClick(versioned.newer_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [1, 1]
    view.set_versions([(1, 1), (3, 3)])  # the newest: nothing newer; bubbles past the list: none
    assert not versioned.newer_button.isEnabled() and versioned.older_button.isEnabled()
    assert not view.bubbles()[3].version_label.isVisibleTo(view)
    view.set_actions_enabled(False)
    assert not versioned.older_button.isEnabled()


def test_branch_and_pin_are_offered_on_settled_messages_and_carry_the_index(qtbot, view):
    QApplication.processEvents()
    assert all(b.more_button.isVisible() for b in view.bubbles())
    assert [a.text() for a in view.bubbles()[0].more_button.menu().actions()] == [
        "Copy", "Branch into a new chat", "Pin to notes"]
    with qtbot.waitSignal(view.branch_requested) as blocker:
        view.bubbles()[2].branch_action.trigger()
    assert blocker.args == [2]
    with qtbot.waitSignal(view.pin_requested) as blocker:
        view.bubbles()[1].pin_action.trigger()
    assert blocker.args == [1]
    streaming = view.begin_stream()
    QApplication.processEvents()
    assert not streaming.more_button.isVisible()


def test_copy_puts_the_messages_markdown_source_on_the_clipboard(qtbot, view):
    from PySide6.QtGui import QGuiApplication

    from app.ui.message_bubble import MAX_SHOWN_CHARS

    source = "**Compare** with `<`:\n\n```c\nif (a < b && c > d) {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    view.load_messages([Message(Role.USER, "Show me"), Message(Role.ASSISTANT, source)])
    QGuiApplication.clipboard().setText("before")
    view.bubbles()[1].copy_action.trigger()
    assert QGuiApplication.clipboard().text() == source  # Markdown as written: no HTML, no entities
    huge = "line of a pasted log\n" * (MAX_SHOWN_CHARS // 10)  # longer than the bubble shows
    view.load_messages([Message(Role.USER, huge)])
    view.bubbles()[0].copy_action.trigger()
    assert QGuiApplication.clipboard().text() == huge


def test_a_fold_marker_sits_below_the_folded_turns_and_opens_the_summary(qtbot, view):
    view.summary_block.set_expanded(False)
    view.show_summary("The user asked what a KV cache is.", 1, 12, 64)
    marker = view.fold_marker
    assert marker is not None and "1 turn above is folded" in marker.label.text()
    layout = view._layout
    assert layout.indexOf(marker) == layout.indexOf(view.bubbles()[2]) - 1  # between turn 1 and turn 2
    with qtbot.waitSignal(marker.summary_requested):
        qtbot.mouseClick(marker.show_button, Qt.MouseButton.LeftButton)
    assert view.summary_block.is_expanded()
    view.show_summary("", 0, 0, 64)  # summary forgotten: no marker
    assert view.fold_marker is None
    view.show_summary("Both turns.", 2, 12, 64)  # the newest turn is never folded: nowhere to put it
    assert view.fold_marker is None
    view.show_summary("First turn.", 1, 12, 64)
    view.truncate(1)  # the marker goes with the bubbles below it
    assert view.fold_marker is None


def test_an_answer_shows_how_it_was_made_small_with_details_on_hover(view):
    from app.core.conversation import ReplyStats

    stats = ReplyStats(812, 40, 772, 12, 0.25, 10.0, "compiled", "bfloat16", "Llama-3-8B · cuda:0")
    view.load_messages([Message(Role.USER, "hi"), Message(Role.ASSISTANT, "Hello!", stats=stats)])
    QApplication.processEvents()
    answer = view.bubbles()[1]
    assert answer.stats_label.isVisible() and not view.bubbles()[0].stats_label.isVisible()
    assert answer.stats_label.text() == "12 tokens · TTFT 250 ms · 10.0 tok/s · compiled decode"
    assert answer.stats_label.toolTip().splitlines() == [
        "Prompt: 812 tokens (40 prefilled, 772 reused from the KV cache)", "Answer: 12 new tokens",
        "Time to first token: 250 ms", "Decode: 10.0 tokens/s (compiled decode)", "KV cache precision: bfloat16",
        "Answered by: Llama-3-8B · cuda:0"]
    streaming = view.begin_stream()
    QApplication.processEvents()
    view.show_reply_stats(stats)  # the stream is still open: shown once it ends
    assert not streaming.stats_label.isVisibleTo(view)
    view.end_stream()
    assert streaming.stats_label.isVisibleTo(view)


def test_an_answer_without_tokens_has_no_speed_line():
    from app.core.conversation import ReplyStats
    from app.ui.reply_stats_text import stats_line

    assert stats_line(ReplyStats(812, 812, 0, 0, 6.4, 0.0, "eager", "bfloat16", "cpu")) == "no tokens"


def test_an_answer_of_one_token_has_a_ttft_and_no_speed():
    """Decode speed is measured after the first token: one token has none (trial 8: "0.0 tok/s")."""
    from app.core.conversation import ReplyStats
    from app.ui.reply_stats_text import stats_line, stats_tooltip

    one = ReplyStats(812, 812, 0, 1, 0.536, 0.0, "eager", "bfloat16", "cpu")
    assert stats_line(one) == "1 token · TTFT 536 ms · eager decode"
    assert "Decode: one token, no speed to measure (eager decode" in stats_tooltip(one)
    continued = ReplyStats(812, 1, 811, 41, 0.125, 0.0, "", "bfloat16", "cpu", continued_tokens=1)
    assert stats_line(continued) == "41 tokens · last part: 1 token, TTFT 125 ms"


def test_a_continued_answer_counts_all_its_tokens_and_says_the_speed_is_the_last_parts(view):
    from app.core.conversation import ReplyStats

    stats = ReplyStats(852, 1, 851, 1_052, 0.125, 9.5, "compiled", "bfloat16", "Llama-3-8B · cuda:0",
                       continued_tokens=40)
    view.load_messages([Message(Role.USER, "hi"), Message(Role.ASSISTANT, "Hello!", stats=stats)])
    answer = view.bubbles()[1]
    assert answer.stats_label.text() == "1,052 tokens · last part: 40 tokens, TTFT 125 ms, 9.5 tok/s · compiled decode"
    assert answer.stats_label.toolTip().splitlines()[:5] == [
        "Answer: 1,052 new tokens, 40 of them in the last part (Continue)", "Last part:",
        "Prompt: 852 tokens (1 prefilled, 851 reused from the KV cache)", "Time to first token: 125 ms",
        "Decode: 9.5 tokens/s (compiled decode)"]


TYPED = ["a &amp; b", "<div>hi</div>", "*not italic* and __not bold__", "# not a heading",
         "1) x\n2) y", "- not a bullet", "> not a quote", "[link](http://example.com)",
         "two  spaces,\ttab\n\n\nthree breaks", "    four spaces in front", "```\nnot code\n```"]


def _blocks(document):
    block = document.begin()
    while block.isValid():
        yield block
        block = block.next()


def test_a_user_message_is_shown_and_copied_as_typed_never_as_markdown(qtbot, view):
    from PySide6.QtGui import QGuiApplication

    view.load_messages([Message(Role.USER, text) for text in TYPED])
    for bubble, text in zip(view.bubbles(), TYPED, strict=True):
        assert bubble.shown_text() == text  # "&amp;" stays "&amp;", "<div>" stays, breaks kept
        (prose,) = bubble._body.parts()
        for block in _blocks(prose.document()):
            assert block.textList() is None and block.blockFormat().headingLevel() == 0
            assert block.blockFormat().indent() == 0 and not block.charFormat().fontItalic()
            for fragment in (it.fragment() for it in block):
                assert not fragment.charFormat().fontItalic() and not fragment.charFormat().isAnchor()
        bubble.copy_action.trigger()
        assert QGuiApplication.clipboard().text() == text
    assert view.bubbles()[0].copy_action.toolTip() == "Copy this message as you typed it"
    view.load_messages([Message(Role.ASSISTANT, "a &amp; b *italic*\n# heading")])  # answers: Markdown
    assert view.bubbles()[0].shown_text() == "a & b italic\nheading"


def test_a_long_typed_line_wraps_inside_the_column(qtbot, view):
    line = "x" * 3000 + " " + "word " * 400
    view.load_messages([Message(Role.USER, line)])
    QApplication.processEvents()
    bubble = view.bubbles()[0]
    (prose,) = bubble._body.parts()
    assert bubble.width() <= view.width()
    assert prose.document().size().width() <= prose.width() + 1
    assert prose.height() > 10 * prose.fontMetrics().lineSpacing()  # wrapped onto many lines
    assert bubble.shown_text() == line


def test_a_files_note_goes_under_its_question_once(view):
    """A note on how a file went in sits right under its question (a reopened chat says every
    question's notes again: not below the last answer) and a new one for the same file replaces it."""
    def column():  # what the layout holds, top to bottom (a replaced note is out of it)
        items = (view._layout.itemAt(i).widget() for i in range(view._layout.count()))
        return [w.text() if isinstance(w, Notice) else w.role.value for w in items
                if isinstance(w, Notice) or w in view.bubbles()]

    view.add_document_note(0, "a.txt", "a.txt: whole file, 5 tokens")
    view.add_document_note(0, "b.txt", "b.txt: whole file, 7 tokens")
    view.add_document_note(0, "a.txt", "a.txt: whole file, 6 tokens")  # the same question's next turn
    view.add_document_note(2, "c.txt", "c.txt: whole file, 9 tokens")
    assert column() == ["user", "b.txt: whole file, 7 tokens", "a.txt: whole file, 6 tokens", "assistant",
                        "user", "c.txt: whole file, 9 tokens", "assistant"]
