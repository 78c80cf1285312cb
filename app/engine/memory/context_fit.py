"""The largest context that fits: KV cache + prefill spike of a full-context prompt within a budget.

Pure functions; no torch, no Qt. Sizes are bytes, lengths tokens. The KV term is
app.engine.memory.kv_layout.kv_cache_bytes (sliding layers capped at their window), the spike is
app.engine.memory.prefill_spike.prefill_breakdown of a prompt that fills the context, prefilled
in the app's chunks — the worst turn the context allows. Used by the fit plan before a load
(app.engine.loading.fit_plan) and by the "auto" context setting after one (the budget is then
what is free with the weights resident).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.memory.kv_layout import kv_cache_bytes
from app.engine.memory.prefill_spike import PrefillModel, prefill_breakdown

MIN_USEFUL_CONTEXT = 256
"""Below this many tokens a chat cannot hold one exchange: the model "does not fit"."""


@dataclass(frozen=True)
class ContextCost:
    """Memory of a context of `tokens` tokens, bytes: the KV cache and the prefill spike of a
    prompt that fills it."""

    tokens: int
    kv_bytes: int
    prefill_spike: int

    @property
    def total(self) -> int:
        return self.kv_bytes + self.prefill_spike


def context_cost(model: PrefillModel, tokens: int, chunk_size: int | None) -> ContextCost:
    """KV of `tokens` tokens + the raw prefill spike of prefilling all of them in `chunk_size`
    chunks (None: one shot), logits of the last position only (the long-paste logits spike, transformers #30860)."""
    tokens = max(int(tokens), 0)
    spike = prefill_breakdown(model, tokens, 0, chunk_size).total if tokens else 0
    return ContextCost(tokens, kv_cache_bytes(model.layout, tokens), spike)


def largest_context(model: PrefillModel, budget_bytes: int, max_tokens: int,
                    chunk_size: int | None) -> int:
    """Largest context in [0, max_tokens] whose :func:`context_cost` total is ≤ budget_bytes
    (binary search; the cost grows with the context). 0 when not even one token fits."""
    if max_tokens <= 0 or context_cost(model, 1, chunk_size).total > budget_bytes:
        return 0
    lo, hi = 1, int(max_tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if context_cost(model, mid, chunk_size).total <= budget_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


def auto_context(fitting_tokens: int, trained_context: int) -> int:
    """The "auto" context setting: the largest context that fits, capped by the model's trained
    context (both tokens; 0 when nothing fits)."""
    return max(0, min(int(fitting_tokens), int(trained_context)))
