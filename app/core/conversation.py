"""Messages and conversations: plain data, no Qt, no torch."""

import time
from dataclasses import dataclass, field, replace
from enum import Enum


class Role(str, Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


class MessageStatus(str, Enum):
    COMPLETE = "complete"
    STREAMING = "streaming"
    STOPPED = "stopped"   # the user pressed Stop; the partial answer is kept
    FAILED = "failed"     # generation raised; the partial answer is kept


@dataclass
class Message:
    """One chat message.

    `id` is the store's row id (None until persisted); `created_at` is Unix time in seconds.
    Neither takes part in equality, so two messages with the same role, content and status
    compare equal whether or not they have been saved.
    """

    role: Role
    content: str
    status: MessageStatus = MessageStatus.COMPLETE
    id: int | None = field(default=None, compare=False)
    created_at: float = field(default_factory=time.time, compare=False)

    def as_chat_dict(self) -> dict[str, str]:
        """The `{"role", "content"}` form that `apply_chat_template` takes."""
        return {"role": self.role.value, "content": self.content}


@dataclass
class Conversation:
    """An ordered list of messages. The system prompt lives in the settings, not here."""

    messages: list[Message] = field(default_factory=list)

    def add(self, role: Role, content: str, status: MessageStatus = MessageStatus.COMPLETE) -> Message:
        message = Message(role, content, status)
        self.messages.append(message)
        return message

    def chat_dicts(self, system_prompt: str = "") -> list[dict[str, str]]:
        """Messages for the chat template: system prompt first (if any), then every turn
        except empty assistant placeholders."""
        out = [{"role": Role.SYSTEM.value, "content": system_prompt}] if system_prompt else []
        out += [m.as_chat_dict() for m in self.messages if m.content or m.role is Role.USER]
        return out


def copy_messages(messages: list[Message]) -> tuple[Message, ...]:
    """Snapshot for another thread: the GUI keeps mutating its own Message objects."""
    return tuple(replace(m) for m in messages)
