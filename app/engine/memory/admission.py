"""Turn projection and admission: how many bytes a turn will need, and whether it may start.

Pure functions; no torch, no Qt. All sizes are bytes (int), all lengths tokens (int).

* Projection — the KV the turn adds (app.engine.memory.kv_layout) plus the prefill spike
  (app.engine.memory.prefill_spike) × the measured correction, ± the error bar of an
  app.engine.memory.calibration ``Calibration``.
* Admission — a turn is admitted only when its projected growth plus error bar plus safety margin
  fits the free memory reported by the driver (``torch.cuda.mem_get_info``; fragmentation: reserved is not free, dolly
  #79), and when
  prompt + max_new_tokens fits min(model positions, user context) (prompt + max_new_tokens beyond the model's
  positions, transformers #530). A refusal names
  its remedies: tokens to trim, a max_new_tokens that fits, chunked prefill.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from app.core.plural import counted
from app.engine.memory.calibration import Calibration
from app.engine.memory.kv_layout import kv_cache_bytes
from app.engine.memory.prefill_spike import PrefillModel, prefill_breakdown
from app.engine.memory.units import MiB, format_bytes

# --------------------------------------------------------------------------- projection


@dataclass(frozen=True)
class ProjectionBasis:
    """Inputs of a projection, kept so a remedy can re-project with fewer tokens."""

    model: PrefillModel
    calibration: Calibration
    now_allocated: int
    resident_tokens: int
    prompt_tokens: int
    max_new_tokens: int
    chunk_size: int | None
    full_context_tokens: int | None
    logits_positions: int


@dataclass(frozen=True)
class TurnProjection:
    """Projected memory of one turn, bytes.

    now_allocated: allocated before the turn (measured). kv_for_turn: KV the turn adds, i.e. the
    cache for resident + prompt + max_new_tokens tokens less what is already resident.
    prefill_spike: corrected transient of the worst prefill chunk. peak = now_allocated +
    kv_for_turn + prefill_spike (conservative: the spike is counted on top of the final KV).
    error_bar_bytes: Calibration.error_bar (bytes; see there). kv_at_full_context: KV held
    if the conversation fills the whole context window. kv_resident: KV already cached for the
    conversation when the projection was made (part of now_allocated).
    """

    now_allocated: int
    kv_for_turn: int
    prefill_spike: int
    peak: int
    error_bar_bytes: int
    kv_at_full_context: int
    raw_prefill_spike: int
    correction: float
    relative_error: float
    basis: ProjectionBasis = field(repr=False, compare=False)
    kv_resident: int = 0

    @property
    def growth(self) -> int:
        """Bytes the turn needs on top of what is allocated now."""
        return self.kv_for_turn + self.prefill_spike


def project_turn_peak(
    model: PrefillModel, calibration: Calibration, *, now_allocated: int, prompt_tokens: int,
    max_new_tokens: int, resident_tokens: int = 0, chunk_size: int | None = None,
    full_context_tokens: int | None = None, logits_positions: int = 1,
) -> TurnProjection:
    """Project the peak of a turn that prefills ``prompt_tokens`` (history not in the cache plus
    the new message) after ``resident_tokens`` already cached (their KV is in now_allocated), then
    decodes up to ``max_new_tokens``. chunk_size: prefill chunk (None = one shot).
    full_context_tokens: context window for kv_at_full_context (default: this turn's length)."""
    basis = ProjectionBasis(model, calibration, now_allocated, resident_tokens, prompt_tokens,
                            max_new_tokens, chunk_size, full_context_tokens, logits_positions)
    layout = model.layout
    end = resident_tokens + prompt_tokens + max_new_tokens
    kv_resident = kv_cache_bytes(layout, resident_tokens)
    kv_for_turn = kv_cache_bytes(layout, end) - kv_resident
    raw = prefill_breakdown(model, prompt_tokens, resident_tokens, chunk_size,
                            logits_positions).total
    spike = round(raw * calibration.correction)
    rel = calibration.relative_error
    return TurnProjection(
        now_allocated=now_allocated, kv_for_turn=kv_for_turn, prefill_spike=spike,
        peak=now_allocated + kv_for_turn + spike,
        error_bar_bytes=calibration.error_bar(kv_for_turn, spike),
        kv_at_full_context=kv_cache_bytes(layout, full_context_tokens or end),
        raw_prefill_spike=raw, correction=calibration.correction, relative_error=rel,
        basis=basis, kv_resident=kv_resident,
    )


def reproject(projection: TurnProjection, *, context_tokens: int | None = None,
              max_new_tokens: int | None = None, chunk_size: Any = ...) -> TurnProjection:
    """The same turn with another size. A changed ``context_tokens`` (resident + prompt) drops
    the resident cache (trimmed history changes the prefix) and prefills everything again."""
    b = projection.basis
    now, resident, prompt = b.now_allocated, b.resident_tokens, b.prompt_tokens
    if context_tokens is not None and context_tokens != resident + prompt:
        now -= kv_cache_bytes(b.model.layout, resident)
        resident, prompt = 0, context_tokens
    return project_turn_peak(
        b.model, b.calibration, now_allocated=now, prompt_tokens=prompt,
        max_new_tokens=b.max_new_tokens if max_new_tokens is None else max_new_tokens,
        resident_tokens=resident, chunk_size=b.chunk_size if chunk_size is ... else chunk_size,
        full_context_tokens=b.full_context_tokens, logits_positions=b.logits_positions,
    )


# --------------------------------------------------------------------------- admission

# Kept free on top of the projection's error bar: cuBLAS/cuDNN workspaces and the allocator's
# rounding (measured on the H200: a one-time 32 MiB cuBLAS workspace on the first turn).
MIN_SAFETY_MARGIN = 256 * MiB
SAFETY_FRACTION = 0.02  # and at least 2 % of the device
AMBER_HEADROOM_FRACTION = 0.15
"""Headroom after the turn, as a fraction of the device, below which the verdict is amber."""


def safety_margin(total_bytes: int) -> int:
    """Bytes admission keeps free on top of a turn's projected peak and error bar:
    max(256 MiB, 2 % of the device's `total_bytes`)."""
    return max(MIN_SAFETY_MARGIN, int(total_bytes * SAFETY_FRACTION))


@dataclass(frozen=True)
class HeadroomVerdict:
    """What the headroom gauge shows, decided here so that it always agrees with admission.

    state: "red" when growth + error bar + margin > free (admission would refuse for memory),
    "amber" when the headroom left after the turn is below AMBER_HEADROOM_FRACTION of the device,
    else "ok". needed: what admission asks of free memory, bytes. headroom: free bytes left after
    the turn's peak and its error bar (free now without a projection); negative when over.
    """

    state: str
    needed: int
    headroom: int
    headroom_fraction: float


def headroom_verdict(projection: TurnProjection | None, free_bytes: int, total_bytes: int,
                     margin_bytes: int) -> HeadroomVerdict:
    """The verdict for a pending turn (or for the device now when `projection` is None), with
    the same arithmetic as :func:`admit_turn`'s memory test. All arguments in bytes."""
    if projection is None:
        needed, headroom = margin_bytes, free_bytes
    else:
        needed = _needed(projection, margin_bytes)
        headroom = free_bytes - projection.growth - projection.error_bar_bytes
    fraction = headroom / total_bytes if total_bytes else 0.0
    state = "red" if needed > free_bytes else "amber" if fraction < AMBER_HEADROOM_FRACTION else "ok"
    return HeadroomVerdict(state, needed, headroom, fraction)


@dataclass(frozen=True)
class AdmissionDecision:
    """Whether a turn may start. cause: "ok", "positions" (prompt + max_new_tokens beyond the model's positions,
    transformers #530) or "memory".

    shortfall_bytes: needed − free (0 unless refused for memory). trim_tokens: fewest prompt
    tokens to drop so the turn fits (None: trimming alone cannot help). max_new_tokens_fit:
    largest max_new_tokens that fits with the prompt as is (None: not even 1).
    kv8_needed_bytes: what the same turn needs with the chat's KV cache in 8 bits, when that
    fits and is offered as a remedy ("switch this chat to 8-bit KV", issue 16); None otherwise.

    `reason` and `remedies` are English sentences (logs, diagnostics, the headless CLI). A UI
    that speaks another language says them from reason_kind (which sentence: "fits",
    "fits_server", "positions", "memory", "message": the newest message alone is too long, or
    "system" / "notes": the system prompt / the pinned notes are, app.engine.events.window_refusal)
    and facts (the numbers in it by name: tokens or bytes; chunk_tokens when chunked prefill
    would fit; trim_needed / lower_needed: bytes the trim and lower-max-new-tokens remedies
    would need), so the engine stays free of Qt and of translation.
    """

    admitted: bool
    cause: str
    reason: str
    needed_bytes: int = 0
    free_bytes: int = 0
    shortfall_bytes: int = 0
    context_limit: int = 0
    trim_tokens: int | None = None
    max_new_tokens_fit: int | None = None
    remedies: tuple[str, ...] = ()
    reason_kind: str = ""
    facts: Mapping[str, int] = field(default_factory=dict, compare=False)
    kv8_needed_bytes: int | None = None


def context_limit(model_max_positions: int, context_setting: int | None) -> int:
    """min(model positions, user context setting); a setting of None or ≤ 0 means "model's"."""
    if context_setting and context_setting > 0:
        return min(model_max_positions, context_setting)
    return model_max_positions


def admit_turn(
    projection: TurnProjection, free_bytes: int, safety_margin_bytes: int,
    model_max_positions: int, prompt_tokens: int, max_new_tokens: int,
    context_setting: int | None,
) -> AdmissionDecision:
    """Decide before the turn starts. prompt_tokens: every position the input occupies (history
    plus new message as rendered). free_bytes: driver-free memory (``mem_get_info``; reserved but
    unallocated memory is not counted as free, fragmentation: reserved is not free, dolly #79).

    Refuses when prompt + max_new_tokens > min(model positions, context setting) — so a
    position overflow never reaches the model's device-side assert (prompt + max_new_tokens beyond the model's
    positions, transformers #530) — or when growth +
    error bar + safety margin > free_bytes, with the tokens to trim and the max_new_tokens that
    would fit.
    """
    limit = context_limit(model_max_positions, context_setting)
    if prompt_tokens + max_new_tokens > limit:
        return _refuse_positions(limit, model_max_positions, context_setting,
                                 prompt_tokens, max_new_tokens)
    needed = _needed(projection, safety_margin_bytes)
    if needed <= free_bytes:
        return AdmissionDecision(
            True, "ok",
            f"fits: needs {format_bytes(needed)} of {format_bytes(free_bytes)} free "
            f"(KV {format_bytes(projection.kv_for_turn)} + prefill "
            f"{format_bytes(projection.prefill_spike)} ± {format_bytes(projection.error_bar_bytes)}"
            f" + margin {format_bytes(safety_margin_bytes)})",
            needed, free_bytes, 0, limit, reason_kind="fits",
            facts=dict(needed=needed, free=free_bytes))
    return _refuse_memory(projection, needed, free_bytes, safety_margin_bytes, limit)


def _needed(projection: TurnProjection, margin: int) -> int:
    return projection.growth + projection.error_bar_bytes + margin


def _refuse_positions(limit: int, model_pos: int, setting: int | None, prompt: int,
                      max_new: int) -> AdmissionDecision:
    over = prompt + max_new - limit
    trim = over if over < prompt else None
    fit = limit - prompt if limit - prompt >= 1 else None
    remedies = []
    if trim is not None:
        remedies.append(f"trim at least {counted(trim, 'token')} of history or prompt")
    if fit is not None:
        remedies.append(f"lower max_new_tokens to {fit:,}")
    setting_text = f", context setting {setting:,}" if setting and setting > 0 else ""
    reason = (f"prompt {prompt:,} + max_new_tokens {max_new:,} = {counted(prompt + max_new, 'token')} "
              f"exceeds the context limit of {counted(limit, 'token')} (model positions {model_pos:,}"
              f"{setting_text}); the prompt budget is {counted(max(limit - max_new, 0), 'token')}")
    return AdmissionDecision(False, "positions", reason, context_limit=limit, trim_tokens=trim,
                             max_new_tokens_fit=fit, remedies=tuple(remedies), reason_kind="positions",
                             facts=dict(prompt=prompt, max_new_tokens=max_new, limit=limit,
                                        model_positions=model_pos, setting=setting or 0))


def _largest_fitting(lo: int, hi: int, fits: Callable[[int], bool]) -> int | None:
    """Largest x in [lo, hi] with fits(x), fits monotone decreasing in x; None if none."""
    if hi < lo or not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def _refuse_memory(projection: TurnProjection, needed: int, free: int, margin: int,
                   limit: int) -> AdmissionDecision:
    b = projection.basis
    context = b.resident_tokens + b.prompt_tokens

    def fits(p: TurnProjection) -> bool:
        return _needed(p, margin) <= free

    kept = _largest_fitting(1, context - 1, lambda t: fits(reproject(projection, context_tokens=t)))
    trim = None if kept is None else context - kept
    fit_new = _largest_fitting(
        1, b.max_new_tokens - 1, lambda m: fits(reproject(projection, max_new_tokens=m)))
    remedies = []
    facts = dict(needed=needed, free=free, shortfall=needed - free)
    if trim is not None:
        facts["trim_needed"] = _needed(reproject(projection, context_tokens=kept), margin)
        remedies.append(f"trim at least {counted(trim, 'token')} of history (or summarize it): needs "
                        f"{format_bytes(facts['trim_needed'])}")
    if fit_new is not None:
        facts["lower_needed"] = _needed(reproject(projection, max_new_tokens=fit_new), margin)
        remedies.append(f"lower max_new_tokens to {fit_new:,}: needs {format_bytes(facts['lower_needed'])}")
    if (b.chunk_size is None or b.chunk_size > 1024) and b.prompt_tokens > 1024 and fits(
            reproject(projection, chunk_size=1024)):
        remedies.append("prefill in 1,024-token chunks")
        facts["chunk_tokens"] = 1024
    remedies.append("close other programs using this device, or load a smaller model")
    shortfall = needed - free
    reason = (f"not enough memory: the turn needs {format_bytes(needed)} (KV "
              f"{format_bytes(projection.kv_for_turn)} + prefill spike "
              f"{format_bytes(projection.prefill_spike)} ± "
              f"{format_bytes(projection.error_bar_bytes)} + margin {format_bytes(margin)}) "
              f"but {format_bytes(free)} is free: short by {format_bytes(shortfall)}")
    return AdmissionDecision(False, "memory", reason, needed, free, shortfall, limit, trim,
                             fit_new, tuple(remedies), reason_kind="memory", facts=facts)


def with_kv8_remedy(decision: AdmissionDecision, kv8: AdmissionDecision) -> AdmissionDecision:
    """``decision`` (refused for memory with a 16-bit KV cache) offering "switch this chat to
    8-bit KV" when ``kv8``, the same turn admitted with 8-bit keys and values, fits; unchanged
    otherwise. The remedy goes before the last (advice-only) one."""
    if decision.admitted or decision.cause != "memory" or not kv8.admitted:
        return decision
    offer = (f"switch this chat to 8-bit KV: needs {format_bytes(kv8.needed_bytes)} "
             f"(its cache is rebuilt once)")
    remedies = (*decision.remedies[:-1], offer, *decision.remedies[-1:])
    return replace(decision, remedies=remedies, kv8_needed_bytes=kv8.needed_bytes)
