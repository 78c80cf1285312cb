"""Messages and conversations: plain data, no Qt, no torch."""

import math
import time
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from typing import Any


class Role(str, Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


class MessageStatus(str, Enum):
    COMPLETE = "complete"
    STREAMING = "streaming"
    STOPPED = "stopped"   # the user pressed Stop; the partial answer is kept
    FAILED = "failed"     # generation raised; the partial answer is kept


@dataclass(frozen=True)
class ReplyStats:
    """How one answer was made (issue 17, item 6). Tokens: the prompt's, of which `prefilled`
    ran through the model and `reused` came from the KV cache, and the `new` ones generated;
    ttft_s: seconds to the first new token; tokens_per_s: decode speed after it; decode_path:
    "compiled", "eager-static", "eager" or "remote"; kv_precision: the KV cache's dtype ("" when
    a server keeps it); backend: what answered, in a few words.
    continued_tokens: for an answer extended with Continue, the new tokens of its last part (0:
    made in one go); new_tokens then counts the whole answer, while the prompt, TTFT and speed
    are the last part's (see :meth:`continued_by`).
    stop_reason: why it (its last part) ended, the engine's ReplyFinished.stop_reason: "eos",
    "stop_string", "length" (max_new_tokens reached) or "stopped" (Stop); "" in rows written
    before it was kept (trial 8: reopened, "max new tokens reached" was no longer said)."""

    prompt_tokens: int
    prefilled_tokens: int
    reused_tokens: int
    new_tokens: int
    ttft_s: float
    tokens_per_s: float
    decode_path: str = ""
    kv_precision: str = ""
    backend: str = ""
    continued_tokens: int = 0
    stop_reason: str = ""

    def continued_by(self, part: "ReplyStats") -> "ReplyStats":
        """The stats of this answer after Continue added `part` (the continuation's own stats):
        new_tokens in total, continued_tokens = part's, the rest from `part`. A part without
        tokens (stopped at once) leaves the answer, and so its stats, as they were, but for its
        stop_reason: the answer ended as that part did."""
        if part.new_tokens <= 0:
            return self if part.stop_reason == self.stop_reason else replace(self, stop_reason=part.stop_reason)
        return replace(part, new_tokens=self.new_tokens + part.new_tokens, continued_tokens=part.new_tokens)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: object) -> "ReplyStats | None":
        """The stats in `raw` (a dict from to_json); None when it is not usable (a newer or damaged
        row shows no stats rather than failing to open the conversation)."""
        if not isinstance(raw, dict):
            return None
        known = {f.name: f.type for f in fields(cls)}
        try:
            stats = cls(**{k: v for k, v in raw.items() if k in known})
        except TypeError:
            return None
        numbers = (stats.prompt_tokens, stats.prefilled_tokens, stats.reused_tokens, stats.new_tokens,
                   stats.ttft_s, stats.tokens_per_s, stats.continued_tokens)
        if not all(isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n) for n in numbers):
            return None
        return stats if isinstance(stats.stop_reason, str) else replace(stats, stop_reason="")


@dataclass
class Message:
    """One chat message.

    `id` is the store's row id (None until persisted); `created_at` is Unix time in seconds;
    `stats`: how an answer was made (None for user messages and answers from before stats);
    `documents`: the files attached to a user message (app.core.attached_document
    ExtractedDocuments), sent again when it is edited or answered again; `sources`: the document
    excerpts an answer was given (app.core.document_prompt Citations, their text included);
    `failure`: why a FAILED answer failed, the worker's one-line English reason ("" when it did not,
    or was cut off by a stop of Headroom), said in the window's language by app.chat.error_text.
    None of these takes part in equality, so two messages with the same role, content and
    status compare equal whether or not they have been saved.
    """

    role: Role
    content: str
    status: MessageStatus = MessageStatus.COMPLETE
    id: int | None = field(default=None, compare=False)
    created_at: float = field(default_factory=time.time, compare=False)
    stats: ReplyStats | None = field(default=None, compare=False)
    documents: tuple = field(default=(), compare=False)
    sources: tuple = field(default=(), compare=False)
    failure: str = field(default="", compare=False)

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
