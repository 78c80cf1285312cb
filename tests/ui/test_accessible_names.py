"""Screen readers name the main widgets (issue 14, item 8): composer, transcript, messages and
their parts (the message text, code blocks and their Copy button)."""

from app.core.conversation import MessageStatus, Role
from app.ui.chat_view import ChatView
from app.ui.composer import Composer


def test_composer_transcript_and_messages_have_accessible_names(qtbot):
    composer = Composer()
    chat = ChatView()
    qtbot.addWidget(composer)
    qtbot.addWidget(chat)
    assert composer.editor.accessibleName() == "Message"
    assert "Enter sends" in composer.editor.accessibleDescription()
    assert chat.accessibleName() == "Conversation"
    chat.add_message(Role.USER, "hi")
    answer = chat.add_message(Role.ASSISTANT, "```\nx\n```", MessageStatus.STOPPED)
    assert [b.accessibleName() for b in chat.bubbles()] == ["You message", "Assistant message"]
    assert answer.accessibleDescription() == "Assistant — stopped"
    assert answer._body.accessibleName() == "Message text"
    code = answer._body.code_blocks()[0]
    assert code.copy_button.accessibleName() == "Copy code" and code.text_view.accessibleName() == "Code"
