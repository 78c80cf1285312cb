"""What the VRAM panel draws: one memory sample (plus the pending turn's projection) split into
named terms that add up to the device, and the headroom verdict. Pure Python, no Qt: the widgets
(memory_bar, headroom_gauge, vram_panel) only paint what this computes.

Terms, all bytes, from :class:`app.engine.memory.probe.MemorySample` and
:class:`app.engine.memory.admission.TurnProjection`:

* now, adding up to ``total``: CUDA context/overhead + other processes + weights + KV & live
  tensors (allocated − weights) + cached (reserved − allocated) + free. On CPU allocated and
  reserved are the process RSS, "other" is everything else the system uses and free is
  ``available``, so cached and context are 0.
* the pending turn, laid on top of what is in use now: KV this turn + prefill spike ± error bar;
  a marker where the KV would end if the conversation filled the whole context window.

The verdict is admission's own (:func:`app.engine.memory.admission.headroom_verdict`, the same
arithmetic as ``admit_turn``): red when growth + error bar + safety margin > free; amber when
the headroom left after the turn is below 15 % of the device; else ok. Nothing is recomputed here.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.memory.admission import (
    MIN_SAFETY_MARGIN,
    HeadroomVerdict,
    TurnProjection,
    headroom_verdict,
)
from app.engine.memory.sample import MemorySample

DEFAULT_SAFETY_MARGIN = MIN_SAFETY_MARGIN
"""Bytes kept free on top of the projection when no margin function is given."""


def QT_TRANSLATE_NOOP(_context: str, text: str) -> str:  # noqa: N802 - the name lupdate looks for
    """Marks `text` for Qt's lupdate without importing Qt (this module stays pure Python)."""
    return text


# key: (label on CUDA, label on CPU, colour pair in app/ui/theme.py PAIRS ("" = the palette's
# base colour), projected?, tooltip on CUDA, tooltip on CPU). The texts are English; the widgets
# say them through QCoreApplication.translate("MemoryTerms", …).
TERMS: tuple[tuple[str, str, str, str, bool, str, str], ...] = (
    ("weights", QT_TRANSLATE_NOOP("MemoryTerms", "Weights"),
     QT_TRANSLATE_NOOP("MemoryTerms", "Weights (in RSS)"), "termWeights", False,
     QT_TRANSLATE_NOOP("MemoryTerms", "Parameters and buffers of the loaded model as allocated after load, bytes "
                                      "(LoadReport.weight_bytes, from get_memory_footprint)."),
     QT_TRANSLATE_NOOP("MemoryTerms", "Parameters and buffers of the loaded model, bytes; on CPU they are part of "
                                      "the process RSS (LoadReport.weight_bytes, from get_memory_footprint).")),
    ("kv_now", QT_TRANSLATE_NOOP("MemoryTerms", "KV cache & live tensors"),
     QT_TRANSLATE_NOOP("MemoryTerms", "Rest of our RSS (KV, runtime)"), "termKv", False,
     QT_TRANSLATE_NOOP("MemoryTerms", "allocated − weights, bytes: the conversation's KV cache plus working "
                                      "buffers right now (torch.cuda.memory_allocated, sampled ≈4 Hz)."),
     QT_TRANSLATE_NOOP("MemoryTerms", "process RSS − weights, bytes: KV cache, activations and the Python/torch "
                                      "runtime (psutil memory_info().rss, sampled ≈4 Hz).")),
    ("kv_turn", QT_TRANSLATE_NOOP("MemoryTerms", "KV at end of turn (projected)"),
     QT_TRANSLATE_NOOP("MemoryTerms", "KV at end of turn (projected)"), "termKvTurn", True,
     QT_TRANSLATE_NOOP("MemoryTerms", "KV cache once the pending turn has run to max_new_tokens, bytes; in "
                                      "brackets what the turn adds (history + prompt + max_new_tokens beyond what "
                                      "is cached). Per token: Σ layers 2 × KV heads × head_dim × bytes per "
                                      "element, sliding layers capped at their window "
                                      "(app.engine.memory.kv_layout.kv_cache_bytes)."),
     QT_TRANSLATE_NOOP("MemoryTerms", "KV cache once the pending turn has run to max_new_tokens, bytes; in "
                                      "brackets what the turn adds. Per token: Σ layers 2 × KV heads × head_dim × "
                                      "bytes per element (app.engine.memory.kv_layout.kv_cache_bytes).")),
    ("prefill", QT_TRANSLATE_NOOP("MemoryTerms", "Prefill spike (projected)"),
     QT_TRANSLATE_NOOP("MemoryTerms", "Prefill spike (projected)"), "termPrefill", True,
     QT_TRANSLATE_NOOP("MemoryTerms", "Transient activations of the worst prefill chunk (MLP/attention workspace, "
                                      "mask, logits), bytes, × the correction measured on earlier turns "
                                      "(max_memory_allocated). Gone after prefill; the ± error bar (bytes) comes "
                                      "from how far recent projections were off."),
     QT_TRANSLATE_NOOP("MemoryTerms", "Transient activations of the worst prefill chunk, bytes, × the correction "
                                      "measured on earlier turns (peak RSS). Gone after prefill; ± is the largest "
                                      "recent projection error.")),
    ("kv_full", QT_TRANSLATE_NOOP("MemoryTerms", "KV at full context"),
     QT_TRANSLATE_NOOP("MemoryTerms", "KV at full context"), "termKv", True,
     QT_TRANSLATE_NOOP("MemoryTerms", "KV cache if the conversation fills the whole context window, bytes (dashed "
                                      "marker on the 'Peak' row: where the bar would end)."),
     QT_TRANSLATE_NOOP("MemoryTerms", "KV cache if the conversation fills the whole context window, bytes (dashed "
                                      "marker on the 'Peak' row: where the bar would end).")),
    ("cached", QT_TRANSLATE_NOOP("MemoryTerms", "Fragmentation / cached (reserved − allocated)"),
     "", "termKv", False,
     QT_TRANSLATE_NOOP("MemoryTerms", "reserved − allocated, bytes: held by PyTorch's caching allocator but by no "
                                      "tensor. PyTorch can reuse it, other programs cannot; fragmented blocks may "
                                      "fail a large allocation while memory looks free "
                                      "(torch.cuda.memory_reserved − memory_allocated)."),
     ""),
    ("other", QT_TRANSLATE_NOOP("MemoryTerms", "Other processes"),
     QT_TRANSLATE_NOOP("MemoryTerms", "Other programs"), "termOther", False,
     QT_TRANSLATE_NOOP("MemoryTerms", "Other programs' use of this GPU, bytes (NVML via nvidia-ml-py). 'unknown' "
                                      "without NVML: then it is counted in CUDA context / overhead."),
     QT_TRANSLATE_NOOP("MemoryTerms", "System memory used by everything but this process, bytes: total − "
                                      "available − our RSS (psutil.virtual_memory; inside a container, its "
                                      "memory limit is the total).")),
    ("context", QT_TRANSLATE_NOOP("MemoryTerms", "CUDA context / overhead"),
     "", "termContext", False,
     QT_TRANSLATE_NOOP("MemoryTerms", "(total − free) − reserved − other processes, bytes: the CUDA context, "
                                      "cuBLAS/cuDNN workspaces and libraries (torch.cuda.mem_get_info)."),
     ""),
    ("free", QT_TRANSLATE_NOOP("MemoryTerms", "Free"),
     QT_TRANSLATE_NOOP("MemoryTerms", "Available"), "", False,
     QT_TRANSLATE_NOOP("MemoryTerms", "Free memory the driver reports, bytes (torch.cuda.mem_get_info). "
                                      "Reserved-but-unused memory is not counted as free (fragmentation: reserved "
                                      "is not free, dolly #79)."),
     QT_TRANSLATE_NOOP("MemoryTerms", "Memory the OS can hand out without swapping, bytes "
                                      "(psutil.virtual_memory().available; inside a container, no more than "
                                      "its memory limit less what it uses).")),
    ("margin", QT_TRANSLATE_NOOP("MemoryTerms", "Safety margin (kept free)"),
     QT_TRANSLATE_NOOP("MemoryTerms", "Safety margin (kept free)"), "", False,
     QT_TRANSLATE_NOOP("MemoryTerms", "Memory a turn must leave free at its peak, bytes: the larger of 256 MiB "
                                      "and 2 % of the device (admission.safety_margin); the cross-hatched "
                                      "end of the Peak row."),
     QT_TRANSLATE_NOOP("MemoryTerms", "Memory a turn must leave free at its peak, bytes: the larger of 256 MiB "
                                      "and 2 % of system memory (admission.safety_margin); the cross-hatched "
                                      "end of the Peak row.")),
)
TERM_KEYS = tuple(term[0] for term in TERMS)


def term_label(key: str, kind: str) -> str:
    """Legend label of a term on a "cuda" or "cpu" device ("" when the term does not exist there)."""
    term = TERMS[TERM_KEYS.index(key)]
    return term[1] if kind == "cuda" else term[2]


def term_pair(key: str) -> str:
    """Name of the term's light/dark colour pair (app.ui.theme.PAIRS); "" for the palette's
    base colour (free memory)."""
    return TERMS[TERM_KEYS.index(key)][3]


def term_projected(key: str) -> bool:
    return TERMS[TERM_KEYS.index(key)][4]


def term_tooltip(key: str, kind: str) -> str:
    term = TERMS[TERM_KEYS.index(key)]
    return term[5] if kind == "cuda" else term[6]


@dataclass(frozen=True)
class MemoryBreakdown:
    """One sample split into terms (bytes); see the module docstring. Build with :meth:`build`.

    Projected fields are 0 / None without a projection. kv_resident: KV already cached for the
    conversation (from the projection's basis). kv_full_growth: KV still to come before the
    context window is full (kv_at_full_context − kv_resident).
    """

    kind: str
    device_name: str
    total: int
    weights: int
    kv_now: int
    cached: int
    other_processes: int | None
    context_overhead: int
    free: int
    allocated: int
    reserved: int
    peak: int
    margin: int
    has_projection: bool = False
    kv_turn: int = 0
    prefill_spike: int = 0
    error_bar: int = 0
    relative_error: float = 0.0
    projected_peak: int | None = None
    kv_at_full_context: int | None = None
    kv_full_growth: int | None = None
    kv_resident: int = 0

    @property
    def kv_end_of_turn(self) -> int:
        """KV cache held when the turn ends: resident + what the turn adds, bytes."""
        return self.kv_resident + self.kv_turn

    verdict: HeadroomVerdict | None = None

    @classmethod
    def build(cls, sample: MemorySample, projection: TurnProjection | None = None,
              weights_bytes: int = 0, margin_bytes: int = DEFAULT_SAFETY_MARGIN) -> MemoryBreakdown:
        """Split ``sample``; weights are capped at what is allocated (they live inside it). The
        verdict comes from admission (``headroom_verdict``) for this sample and projection."""
        weights = min(max(weights_bytes, 0), sample.allocated)
        projected = {}
        if projection is not None:
            resident_kv = projection.kv_resident
            projected = dict(
                has_projection=True, kv_turn=projection.kv_for_turn,
                prefill_spike=projection.prefill_spike, error_bar=projection.error_bar_bytes,
                relative_error=projection.relative_error, projected_peak=projection.peak,
                kv_at_full_context=projection.kv_at_full_context,
                kv_full_growth=max(projection.kv_at_full_context - resident_kv, 0),
                kv_resident=resident_kv)
        return cls(
            kind=sample.kind, device_name=sample.device_name, total=sample.total, weights=weights,
            kv_now=sample.allocated - weights, cached=sample.cached_unused,
            other_processes=sample.other_processes, context_overhead=sample.context_overhead,
            free=sample.free, allocated=sample.allocated, reserved=sample.reserved,
            peak=sample.peak, margin=margin_bytes,
            verdict=headroom_verdict(projection, sample.free, sample.total, margin_bytes), **projected)

    @property
    def in_use(self) -> int:
        """Everything but free: total − free as the sample reports it, bytes."""
        return self.context_overhead + (self.other_processes or 0) + self.reserved

    @property
    def growth(self) -> int:
        """Bytes the pending turn adds at its peak (KV this turn + prefill spike)."""
        return self.kv_turn + self.prefill_spike

    @property
    def needed(self) -> int:
        """growth + error bar + safety margin: what admission asks of free memory, bytes."""
        return self.verdict.needed

    @property
    def headroom(self) -> int:
        """Free bytes left after the turn's peak and its error bar (free now without a projection);
        negative when the turn would not fit."""
        return self.verdict.headroom

    @property
    def headroom_fraction(self) -> float:
        return self.verdict.headroom_fraction

    @property
    def state(self) -> str:
        """Admission's verdict: "red", "amber" or "ok" (see HeadroomVerdict)."""
        return self.verdict.state

    def now_terms(self) -> tuple[tuple[str, int], ...]:
        """(key, bytes) of the 'Now' row, left to right; sums to in_use + free."""
        return (("context", self.context_overhead), ("other", self.other_processes or 0),
                ("weights", self.weights), ("kv_now", self.kv_now), ("cached", self.cached),
                ("free", self.free))
