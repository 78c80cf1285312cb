"""A long chat opens with its last SHOWN_AT_OPEN messages built and the older ones a page at a
time (trial of 2026-12-05: a 1,000-message chat froze the window 35 s as it opened). Every index
the view takes or gives stays the message's position in the conversation."""

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication

from app.core.conversation import Message, Role
from app.ui.chat_view import EARLIER_PAGE, SHOWN_AT_OPEN, ChatView

PAIRS = 75  # 150 messages: 20 shown, 130 hidden, seven pages to show them all


def chat(pairs: int = PAIRS) -> list[Message]:
    messages = []
    for i in range(pairs):
        messages += [Message(Role.USER, f"question {i}"), Message(Role.ASSISTANT, f"answer {i}. " * 12)]
    return messages


@pytest.fixture
def view(qtbot):
    widget = ChatView()
    qtbot.addWidget(widget)
    widget.resize(600, 500)
    widget.show()
    qtbot.waitExposed(widget)
    widget.load_messages(chat())
    settle(qtbot)
    return widget


def settle(qtbot) -> None:
    for _ in range(3):
        QApplication.processEvents()
        qtbot.wait(30)


def test_a_long_chat_opens_with_its_last_messages_and_shows_the_rest_on_demand(qtbot, view):
    assert (SHOWN_AT_OPEN, EARLIER_PAGE) == (20, 20)
    assert len(view.bubbles()) == 20 and view.hidden_count() == 130
    assert view.bubbles()[0].text == "question 65" and view.bubbles()[-1].text.startswith("answer 74.")
    assert view.earlier_button.isVisible() and view.earlier_button.text() == "Show 130 earlier messages"
    bar = view.verticalScrollBar()
    assert bar.value() == bar.maximum() > 0  # opened at its end, as before
    view.earlier_button.click()
    assert view.hidden_count() == 110 and view.bubbles()[0].text == "question 55"
    assert view.earlier_button.text() == "Show 110 earlier messages"
    for _ in range(6):
        view.show_earlier()
    assert view.hidden_count() == 0 and not view.earlier_button.isVisible()
    assert [b.text for b in view.bubbles()[::2]] == [f"question {i}" for i in range(PAIRS)]
    view.show_earlier()  # nothing left: nothing happens
    assert len(view.bubbles()) == 150
    view.load_messages(chat(10) + [Message(Role.USER, "one more")])
    assert view.hidden_count() == 1 and view.earlier_button.text() == "Show 1 earlier message"
    view.load_messages(chat(3))  # a short chat: everything, no button
    assert len(view.bubbles()) == 6 and view.hidden_count() == 0 and not view.earlier_button.isVisible()


def test_indexes_stay_the_messages_positions(qtbot, view):
    with qtbot.waitSignal(view.regenerate_requested) as regenerate:
        view.bubbles()[-1].regenerate_button.click()
    assert regenerate.args == [149]
    view.show_earlier()
    first_shown = view.bubbles()[0]  # message 110
    with qtbot.waitSignal(view.branch_requested) as branch:
        first_shown.branch_requested.emit()
    assert branch.args == [110]
    view.truncate(140)  # a shown message: the view keeps 0 … 139
    assert view.hidden_count() + len(view.bubbles()) == 140
    view.truncate(10)  # one not built yet: everything from it goes
    assert view.hidden_count() == 10 and view.bubbles() == []
    view.show_earlier()
    assert [b.text for b in view.bubbles()][-1].startswith("answer 4.")


def test_what_arrives_for_a_hidden_message_shows_when_it_is_built(qtbot, view):
    versions = [(1, 1)] * 150
    versions[4] = (2, 3)
    versions[140] = (1, 2)
    view.set_versions(versions)
    assert view.bubbles()[140 - 130].version_label.text() == "1 / 2"
    view.add_document_note(4, "notes.txt", "notes.txt: whole file, 12 tokens")
    view.show_documents(4, ())
    for _ in range(7):
        view.show_earlier()
    bubble = view.bubbles()[4]
    assert bubble.version_label.text() == "2 / 3"
    notes = [w for w in view.widget().findChildren(type(view.add_notice("x"))) if getattr(w, "about_document", None)]
    assert [(n.about_document[0] is bubble, n.text()) for n in notes] == [(True, "notes.txt: whole file, 12 tokens")]


def test_the_fold_marker_waits_for_its_turn_to_be_built(qtbot, view):
    view.show_summary("The user asked about many things.", 10, 40, 512)  # folds turns 0-9
    assert view.fold_marker is None  # before question 10, not built yet
    for _ in range(7):
        view.show_earlier()
    assert view.fold_marker is not None
    layout = view.widget().layout()
    assert layout.indexOf(view.fold_marker) + 1 == layout.indexOf(view.bubbles()[20])  # question 10


def test_earlier_messages_come_in_above_without_moving_what_is_read(qtbot, view):
    bar = view.verticalScrollBar()
    reading = view.bubbles()[0]
    bar.setValue(bar.minimum() + 1)  # near the top, the first shown question in view
    settle(qtbot)
    before = reading.mapTo(view.viewport(), QPoint(0, 0)).y()
    view.show_earlier()
    settle(qtbot)
    assert abs(reading.mapTo(view.viewport(), QPoint(0, 0)).y() - before) <= 2
    assert view.hidden_count() == 110
    qtbot.wait(400)  # later than the 200 ms the place was kept for (trial 5: pushed 1,400 px down)
    view.bubbles()[0].set_text("A long answer that wraps. " * 400)  # one above grows
    settle(qtbot)
    assert abs(reading.mapTo(view.viewport(), QPoint(0, 0)).y() - before) <= 2
    view.verticalScrollBar().triggerAction(view.verticalScrollBar().SliderAction.SliderSingleStepAdd)
    moved = reading.mapTo(view.viewport(), QPoint(0, 0)).y()  # the reader scrolled: the place is theirs
    view.bubbles()[1].set_text("Another long one. " * 400)
    settle(qtbot)
    assert reading.mapTo(view.viewport(), QPoint(0, 0)).y() > moved + 100


def test_scrolling_to_the_top_brings_the_next_page(qtbot, view):
    view.verticalScrollBar().setValue(0)
    qtbot.waitUntil(lambda: view.hidden_count() == 110, timeout=3000)
    settle(qtbot)
    assert view.verticalScrollBar().value() > 0  # the reader is where they were, above them more to read
