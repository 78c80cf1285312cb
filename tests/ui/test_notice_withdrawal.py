"""Notices that say something that can stop holding go when it does: why a model did not open
("load", once another opens) and the open model's limit on max new tokens ("limit", once the
context or the setting changes); the others stay."""

from app.ui.chat_view import ChatView
from app.ui.notice import Notice


def shown(view) -> list[str]:
    return [n.text() for n in view._column.findChildren(Notice) if not n.isHidden()]


def test_each_kind_of_stale_notice_goes_alone(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.show()
    view.add_notice("Could not open the model.", "load")
    view.add_notice("Its answers get at most 128 tokens.", "limit")
    view.add_notice("A summary was written.", "info")
    qtbot.wait(20)  # the layout shows what was added to it
    assert shown(view) == ["Could not open the model.", "Its answers get at most 128 tokens.",
                           "A summary was written."]
    limit = view._column.findChildren(Notice)[1]
    assert limit.property("kind") == "info"  # said as information, not as an error
    view.withdraw_limit_notices()
    assert shown(view) == ["Could not open the model.", "A summary was written."]
    view.withdraw_load_notices()
    assert shown(view) == ["A summary was written."]
