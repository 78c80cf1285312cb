"""Why a message's turn was refused, in the Store's SQLite file, so that a chat opened again
(after a restart, or from the sidebar) shows the refusal under the message as it did (new-user
trial: after a restart the refused message stood there with no notice).

A refusal is kept on the user message whose turn was refused (messages.refusal_json), as the
facts the transcript's line is said from (the admission decision's cause, reason, reason_kind,
facts and max_new_tokens_fit: app.engine.memory.admission.AdmissionDecision), not as the line
itself, so that it is said in the window's language of the day. NULL: not refused, or run since.
It goes with its message (deleted with it); a branch does not copy it. No Qt.
"""

from __future__ import annotations

import json
from typing import Any

# v10: the refusal of a user message's turn (JSON; NULL: none).
V10_REFUSALS = ["ALTER TABLE messages ADD COLUMN refusal_json TEXT"]


def refusal_json(refusal: dict[str, Any] | None) -> str | None:
    """The messages.refusal_json value of `refusal` (None clears it)."""
    return json.dumps(refusal, ensure_ascii=False, sort_keys=True) if refusal else None


def refusal_from(text: str | None) -> dict[str, Any] | None:
    """The refusal in a messages.refusal_json value; None for none or a damaged value (the
    conversation still opens)."""
    try:
        refusal = json.loads(text) if text else None
    except ValueError:
        return None
    return refusal if isinstance(refusal, dict) else None
