"""How many document tokens the KV cache can take this turn: admission's side of "fits".

The turn is first projected without the document (app.engine.memory.admission.project_turn_peak:
history not yet cached + the user's message, then max_new_tokens). Adding d document tokens
makes the prompt d tokens longer with the same cached prefix (the document goes into the newest
message, after everything cached), so the KV the turn adds and the prefill spike both grow. The
answer is the largest d whose projection still gets admission's verdict (`headroom_verdict`,
the same arithmetic as `admit_turn`: growth + error bar + safety margin ≤ driver-free bytes).
It feeds `kv_tokens` of app.core.document_prompt.document_budget. No torch, no Qt.
"""

from __future__ import annotations

from app.engine.memory.admission import TurnProjection, headroom_verdict, project_turn_peak


def with_extra_prompt(projection: TurnProjection, extra_tokens: int) -> TurnProjection:
    """The projected turn with `extra_tokens` more prompt tokens after the same cached prefix."""
    b = projection.basis
    return project_turn_peak(
        b.model, b.calibration, now_allocated=b.now_allocated, prompt_tokens=b.prompt_tokens + extra_tokens,
        max_new_tokens=b.max_new_tokens, resident_tokens=b.resident_tokens, chunk_size=b.chunk_size,
        full_context_tokens=b.full_context_tokens, logits_positions=b.logits_positions,
    )


def kv_document_tokens(projection: TurnProjection, free_bytes: int, total_bytes: int, margin_bytes: int,
                       upper_tokens: int) -> int:
    """Largest d in [0, upper_tokens] such that the turn with d more prompt tokens is admitted
    for memory; 0 when even the turn without a document is not (admission then refuses it and
    says why). Bytes in, tokens out; O(log upper_tokens) projections."""

    def fits(extra: int) -> bool:
        turn = with_extra_prompt(projection, extra)
        return headroom_verdict(turn, free_bytes, total_bytes, margin_bytes).state != "red"

    if upper_tokens <= 0 or not fits(0):
        return 0
    lo, hi = 0, upper_tokens
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo
