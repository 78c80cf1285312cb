"""User text (chat titles, file names, server errors) shows literally wherever Qt would guess
rich text: a label of user text is plain, a tooltip of it is escaped (new-user trial, item 1)."""

from PySide6.QtGui import Qt, QTextDocument
from PySide6.QtWidgets import QApplication

from app.ui.notice import Notice
from app.ui.plain_text import plain_tooltip
from app.ui.retry_notice import RetryNotice

TITLE = "a &amp; b <div> *x*"  # Qt renders it as "a & b", a line break, "*x*"


def one_line(label) -> bool:
    """Whether the label takes one line at a width where its text fits on one (its height is
    that of the same label showing "x": same font, margins and stylesheet padding)."""
    text = label.text()
    height = label.heightForWidth(4000)
    label.setText("x")
    one = label.heightForWidth(4000)
    label.setText(text)
    return height == one


def tooltip_reads(tooltip: str) -> str:
    """What a tooltip shows: Qt renders it as HTML when it looks like HTML."""
    if not Qt.mightBeRichText(tooltip):
        return tooltip
    document = QTextDocument()
    document.setHtml(tooltip)
    return document.toPlainText()


def test_the_reply_goes_on_notice_shows_the_title_as_typed(qtbot, make_fake_window, tmp_path):
    window = make_fake_window()
    window.chat.turns.send(TITLE)  # the chat's title is its first message
    window.chat.worker.token_streamed.emit(window.chat.worker.last_id, "Hi")
    window.new_chat_action.trigger()  # the line of a switch while streaming
    notice = window.chat_view.findChildren(Notice)[-1]
    assert f"“{TITLE}”" in notice.text() and notice.text() == window.chat_view.reply_elsewhere_text()
    assert "&amp; b <div> *x*" in notice.document().toPlainText()  # shown as typed, never read as HTML
    window.resize(1000, 700)
    QApplication.processEvents()
    notice.grab().save(str(tmp_path / "reply_goes_on_notice.png"))


def test_notices_keep_markup_characters_on_one_line(qtbot):
    notice, retry = Notice(f"Could not read “{TITLE}”."), RetryNotice(f"The server said {TITLE}")
    qtbot.addWidget(notice)
    qtbot.addWidget(retry)
    for label in (notice, retry.label):
        assert one_line(label), label.text()


def test_tooltips_of_user_text_read_as_typed():
    assert tooltip_reads(plain_tooltip(TITLE)) == TITLE
    assert tooltip_reads(plain_tooltip(f"{TITLE}\n3 messages")) == f"{TITLE}\n3 messages"
    assert plain_tooltip("Remove notes.txt from this chat") == "Remove notes.txt from this chat"  # plain stays


def test_the_conversation_list_shows_the_title_as_typed(qtbot, make_window):
    window = make_window()
    conversation_id = window.chat.store.create_conversation(TITLE)
    window.chat.conversations.refresh_sidebar()
    item = window.sidebar.item_for(conversation_id)
    assert item.text() == TITLE
    assert tooltip_reads(item.toolTip()).split("\n")[0] == TITLE
    window.sidebar.show_undo(conversation_id, TITLE)
    assert tooltip_reads(window.sidebar.undo_label.toolTip()) == TITLE
    with qtbot.waitSignal(window.sidebar.search_changed):  # debounced: settled before the window closes
        window.sidebar.search_edit.setText(TITLE)
    window.sidebar.set_conversations([], None)  # nothing matches
    assert window.sidebar.empty_label.textFormat() == Qt.TextFormat.PlainText
    assert one_line(window.sidebar.empty_label)
