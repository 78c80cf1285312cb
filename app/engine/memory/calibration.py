"""Calibration of the prefill-spike model from measured turns, and the error bar it carries.

Pure Python, no torch, no Qt; sizes are bytes (int). The raw spike of app.engine.memory.prefill_spike
is multiplied by a correction learnt from measured peaks (CUDA ``max_memory_allocated`` after
``reset_peak_memory_stats``; peak RSS on CPU), and every projection carries an error bar in
bytes learnt from how far recent projections were off (app.engine.memory.admission adds it before
admitting a turn).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from app.engine.memory.units import MiB

if TYPE_CHECKING:
    from app.engine.memory.admission import TurnProjection


@dataclass(frozen=True)
class Calibration:
    """Measured correction of the prefill-spike model, and how wrong projections have been.

    ``correction`` multiplies the raw spike; it is an exponential moving average (weight
    ``alpha``) of measured spike / raw spike, the first measurement taken as is, each ratio
    clamped to [0.25, 4] against bad readings. ``relative_error`` is the largest recent
    out-of-sample error |projected − measured| of the turn's growth over the measured prefill
    spike (growth − KV, at least ``min_signal_bytes``) over the last ``window`` turns, never below
    ``floor`` (3 %); ``prior_error`` until measured. Turns whose growth is below
    ``min_signal_bytes`` carry too little signal and are ignored. Immutable: :meth:`updated`
    returns a new Calibration.

    The error *bar* (:meth:`error_bar`) bounds each recent error both ways: what turn i implies
    for a new turn is min(its absolute error, its relative error × the new turn's spike). The KV
    term is exact to the byte (H200, tests/benchmarks/results/memory_foresight_h200.json), so
    the error is the spike model's and scales with the spike, not with the growth: a 16k-token
    one-shot prefill 453 MB under its projection put 453 MB (its absolute error, the smaller of
    the two as a share of a 6 GB growth) on a 128-token chunk whose 69 MB spike was projected
    within 11 MB, and the 12 GiB card's 8-bit limit fell from 97.6k to 93.2k tokens (H200,
    2026-12-02, tests/benchmarks/results/memory_foresight_h200_kv8.json); and an absolute error
    learnt on a huge turn (21 GB off a 100 GB eager prefill, attention_backends_h200.json) must
    not refuse a short one (it refused every prompt on the 12 GiB card).
    """

    correction: float = 1.0
    samples: int = 0
    recent_errors: tuple[float, ...] = ()
    recent_abs_errors: tuple[int, ...] = ()
    alpha: float = 0.5
    window: int = 8
    floor: float = 0.03
    prior_error: float = 0.15
    min_signal_bytes: int = 16 * MiB

    kv_floor: float = 0.005  # allocator rounding on the exact KV term

    def error_bar(self, kv_bytes: int, spike_bytes: int) -> int:
        """Bytes to add to a projection of ``kv_bytes`` + ``spike_bytes``: ``prior_error`` of the
        growth before any measurement; after, the largest of what each recent turn implies
        (min(absolute error, relative error × this spike)), at least ``floor`` of the spike
        plus ``kv_floor`` of the KV."""
        growth = kv_bytes + spike_bytes
        if not self.recent_abs_errors:
            return round(max(self.prior_error, self.floor) * growth)
        implied = (min(abs_error, round(rel_error * spike_bytes))
                   for abs_error, rel_error in zip(self.recent_abs_errors, self.recent_errors, strict=False))
        return max(max(implied), round(self.floor * spike_bytes + self.kv_floor * kv_bytes))

    @property
    def relative_error(self) -> float:
        if not self.recent_errors:
            return max(self.prior_error, self.floor)
        return max(max(self.recent_errors), self.floor)

    def updated(self, projection: TurnProjection, measured_peak: int) -> Calibration:
        """Fold in one turn: ``projection`` as the turn actually ran (max_new_tokens = tokens
        generated) and ``measured_peak``, the peak allocated bytes during it (CUDA
        ``max_memory_allocated`` after ``reset_peak_memory_stats``; peak RSS on CPU)."""
        measured_growth = measured_peak - projection.now_allocated
        projected_growth = projection.kv_for_turn + projection.prefill_spike
        if max(measured_growth, projected_growth) < self.min_signal_bytes:
            return self
        measured_spike = max(measured_growth - projection.kv_for_turn, 0)
        error = abs(projected_growth - measured_growth) / max(measured_spike, self.min_signal_bytes)
        errors = (*self.recent_errors, error)[-self.window:]
        abs_errors = (*self.recent_abs_errors, abs(projected_growth - measured_growth))[-self.window:]
        correction = self.correction
        if projection.raw_prefill_spike >= self.min_signal_bytes:
            ratio = min(max(measured_spike / projection.raw_prefill_spike, 0.25), 4.0)
            correction = ratio if self.samples == 0 else (
                (1 - self.alpha) * self.correction + self.alpha * ratio)
        return replace(self, correction=correction, samples=self.samples + 1,
                       recent_errors=errors, recent_abs_errors=abs_errors)
