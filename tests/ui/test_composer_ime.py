"""IME input in the composer (issue 14, item 4), with synthetic QInputMethodEvents as an IME
sends them: Korean Enter in the middle of a syllable sends the whole message once; Japanese
Enter during a conversion confirms it and sends nothing. The offscreen platform has no input
method, so the composer's own commit path is the one exercised (a real IME's commit arrives as
the same kind of event)."""

import pytest
from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QColor, QInputMethodEvent, QTextCharFormat

from app.ui.composer import Composer

Attribute = QInputMethodEvent.Attribute
TextFormat = QInputMethodEvent.AttributeType.TextFormat


def composing(text: str) -> QInputMethodEvent:
    """A Hangul syllable (or a kana reading) being typed: preedit `text`, underlined."""
    underline = QTextCharFormat()
    underline.setFontUnderline(True)
    return QInputMethodEvent(text, [Attribute(TextFormat, 0, len(text), underline)])


def converting(text: str) -> QInputMethodEvent:
    """A reading under conversion: preedit `text` with its clause highlighted (mozc, MS-IME)."""
    highlight = QTextCharFormat()
    highlight.setBackground(QColor("#3874d8"))
    highlight.setForeground(QColor("#ffffff"))
    return QInputMethodEvent(text, [Attribute(TextFormat, 0, len(text), highlight)])


def committed(text: str) -> QInputMethodEvent:
    event = QInputMethodEvent()
    event.setCommitString(text)
    return event


@pytest.fixture
def composer(qtbot):
    widget = Composer()
    qtbot.addWidget(widget)
    widget.set_can_send(True)
    widget.show()
    qtbot.waitExposed(widget)
    widget.editor.setFocus()
    return widget


def ime(editor, *events) -> None:
    for event in events:
        QCoreApplication.sendEvent(editor, event)


def sent(qtbot, composer, key=Qt.Key.Key_Return) -> list[str]:
    messages = []
    composer.send_requested.connect(messages.append)
    qtbot.keyClick(composer.editor, key)
    QCoreApplication.processEvents()
    return messages


def test_korean_enter_mid_syllable_sends_the_syllable_once(qtbot, composer):
    editor = composer.editor
    ime(editor, composing("ㅇ"), composing("아"), composing("안"), composing("안ㄴ"), committed("안"),
        composing("녀"), composing("녕"), committed("녕"), composing("ㅎ"), composing("하"))
    assert editor.toPlainText() == "안녕" and editor.preedit == "하"  # 하 is still being composed
    assert sent(qtbot, composer) == ["안녕하"]
    assert editor.toPlainText() == "" and editor.preedit == ""  # nothing left behind to send again
    ime(editor, composing("ㄷ"))  # the next message starts clean
    assert editor.toPlainText() == "" and editor.preedit == "ㄷ"


def test_korean_enter_after_the_ime_committed_sends_once(qtbot, composer):
    """IBus / Fcitx Hangul commit the syllable first and then pass Enter on."""
    ime(composer.editor, composing("세"), committed("세"), composing("요"), committed("요"))
    assert sent(qtbot, composer) == ["세요"]
    assert composer.editor.toPlainText() == ""


def test_korean_shift_enter_mid_syllable_keeps_the_syllable_and_adds_a_line(qtbot, composer):
    editor = composer.editor
    ime(editor, composing("가"))
    messages = []
    composer.send_requested.connect(messages.append)
    qtbot.keyClick(editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert editor.toPlainText() == "가\n" and messages == []


def test_japanese_enter_confirms_the_conversion_and_sends_nothing(qtbot, composer):
    editor = composer.editor
    ime(editor, composing("に"), composing("にほ"), composing("にほん"), composing("にほんご"),
        converting("日本語"))
    assert editor.toPlainText() == ""
    assert sent(qtbot, composer) == []  # Enter belongs to the IME: it confirms 日本語
    assert editor.toPlainText() == "日本語" and editor.preedit == ""
    assert sent(qtbot, composer) == ["日本語"]  # the next Enter sends, once


def test_japanese_conversion_confirmed_by_the_ime_itself_sends_nothing(qtbot, composer):
    """Where the IME swallows Enter (IBus mozc) only its commit arrives: no key, no send."""
    editor = composer.editor
    messages = []
    composer.send_requested.connect(messages.append)
    ime(editor, composing("とうきょう"), converting("東京"), committed("東京"))
    assert editor.toPlainText() == "東京" and messages == []


def test_send_button_mid_syllable_sends_the_syllable(qtbot, composer):
    messages = []
    composer.send_requested.connect(messages.append)
    ime(composer.editor, committed("고마"), composing("워"))
    composer.send_button.click()
    assert messages == ["고마워"] and composer.editor.toPlainText() == ""


def test_tab_leaves_the_message_box_and_types_no_tab(qtbot, composer):
    """Third new-user trial: Tab typed a tab into the message, so Send and Attach… could not be
    reached by keyboard."""
    qtbot.keyClicks(composer.editor, "hi")
    composer.activateWindow()
    composer.editor.setFocus()
    qtbot.keyClick(composer.editor, Qt.Key.Key_Tab)
    assert composer.editor.toPlainText() == "hi"
    assert composer.editor.tabChangesFocus()
