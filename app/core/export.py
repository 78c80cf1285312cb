"""A stored conversation as a file: JSON (format "headroom-conversation") or Markdown. Both hold
the active branch (the path shown; other versions stay in the database), its summary and its
pinned notes."""

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from app.core.conversation import MessageStatus

if TYPE_CHECKING:
    from app.core.store import StoredConversation


def conversation_json(c: "StoredConversation") -> str:
    """JSON, format "headroom-conversation" v1 (times in Unix seconds); "pinned_notes" is absent
    when there are none."""
    data = {
        "format": "headroom-conversation", "version": 1, "title": c.info.title,
        "created_at": c.info.created_at, "updated_at": c.info.updated_at,
        "settings": c.settings,
        "summary": {"content": c.summary.content, "folded_through": c.summary.folded_through,
                    "tokens": c.summary.tokens} if c.summary.content else None,
        "messages": [{"role": m.role.value, "content": m.content, "status": m.status.value,
                      "created_at": m.created_at} for m in c.conversation.messages],
    }
    if c.pinned_notes:
        data["pinned_notes"] = c.pinned_notes
    return json.dumps(data, ensure_ascii=False, indent=2)


def conversation_markdown(c: "StoredConversation") -> str:
    """Markdown: a heading per message; unfinished answers are marked."""
    lines = [f"# {c.info.title or 'Untitled conversation'}", "",
             f"_Exported from Headroom; started {_iso(c.info.created_at)}._", ""]
    if c.pinned_notes:
        lines += ["> **Pinned notes:** " + c.pinned_notes.replace("\n", "\n> "), ""]
    if c.summary.content:
        lines += ["> **Summary of earlier turns:** " + c.summary.content, ""]
    for m in c.conversation.messages:
        lines += [f"## {m.role.value.capitalize()}", "", m.content, ""]
        if m.status is not MessageStatus.COMPLETE:
            lines += [f"_({m.status.value})_", ""]
    return "\n".join(lines)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
