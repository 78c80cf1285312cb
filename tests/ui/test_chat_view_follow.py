"""Follow-the-end scrolling (issue 14, items 2 and 4): while an answer streams the transcript
stays at its end, through the final render of the answer and bursts taller than the follow
slack, and it stays where a user who scrolled up left it."""

import pytest
from PySide6.QtWidgets import QApplication

from app.core.conversation import Message, MessageStatus, Role
from app.ui.chat_view import ChatView

CODE = "```python\n" + "\n".join(f"total_{i} = fits(a < b and c > d, {i})  # <ok> & done"
                                 for i in range(30)) + "\n```\n"


@pytest.fixture
def view(qtbot):
    widget = ChatView()
    qtbot.addWidget(widget)
    widget.resize(520, 360)
    widget.load_messages([Message(Role.USER, "Earlier question"), Message(Role.ASSISTANT, "Earlier answer. " * 80),
                          Message(Role.USER, "Show me the code")])
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def settle(qtbot) -> None:
    """Let layouts and the frame timer run (relayouts of a scroll area are posted)."""
    for _ in range(3):
        QApplication.processEvents()
        qtbot.wait(30)


def stream(qtbot, view, pieces) -> None:
    for piece in pieces:
        view.append_stream(piece)
        view.flush()
        settle(qtbot)


def at_end(view) -> bool:
    bar = view.verticalScrollBar()
    return bar.maximum() > 0 and bar.value() == bar.maximum()


def test_the_end_of_an_answer_stays_in_view_through_its_final_render(qtbot, view):
    bar = view.verticalScrollBar()
    settle(qtbot)
    assert at_end(view)
    view.begin_stream()
    stream(qtbot, view, ["Here it is:\n\n", CODE[:200], CODE[200:], "Each line is " + "long text " * 60])
    assert at_end(view)
    before = bar.maximum()
    view.end_stream(MessageStatus.STOPPED, "max new tokens reached")  # header, Continue button, final render
    settle(qtbot)
    assert bar.maximum() != before  # the final render moved the end …
    assert at_end(view)  # … and the view followed it
    last = view.bubbles()[-1]
    bottom = last.mapTo(view.viewport(), last.rect().bottomLeft()).y()
    assert bottom <= view.viewport().height()  # the Continue button and last lines are on screen


def test_a_burst_taller_than_the_follow_slack_is_followed(qtbot, view):
    view.begin_stream()
    stream(qtbot, view, ["Start. "])
    stream(qtbot, view, [CODE + CODE])  # ~60 lines arrive in one frame
    assert at_end(view)


def test_a_user_who_scrolled_up_stays_where_they_are(qtbot, view):
    bar = view.verticalScrollBar()
    view.begin_stream()
    stream(qtbot, view, ["Here it is:\n\n", CODE[:300]])
    bar.setValue(bar.maximum() // 3)  # the user scrolls up to reread
    kept = bar.value()
    stream(qtbot, view, [CODE[300:], "More text " * 80])
    view.end_stream()
    settle(qtbot)
    assert bar.value() == kept and bar.maximum() > kept + 200


def test_scrolling_back_to_the_end_follows_again(qtbot, view):
    bar = view.verticalScrollBar()
    view.begin_stream()
    stream(qtbot, view, [CODE])
    bar.setValue(0)
    bar.setValue(bar.maximum())  # back at the end
    stream(qtbot, view, [CODE, "tail " * 50])
    view.end_stream()
    settle(qtbot)
    assert at_end(view)


def test_a_new_message_brings_the_end_back_into_view(qtbot, view):
    bar = view.verticalScrollBar()
    bar.setValue(0)
    view.add_message(Role.USER, "A new question")
    settle(qtbot)
    assert at_end(view)
