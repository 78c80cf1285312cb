"""Memory foresight for one loaded model: window the history, project the turn, admit it.

Glue between the pure policies (app.core.history, app.engine.memory.admission) and a loaded model: it
counts tokens with the model's own prompt format, reads the device through a MemoryProbe, and
keeps the measured calibration of the prefill model up to date after every turn.
"""

import os
from dataclasses import dataclass, replace

from app.core.conversation import Message
from app.core.history import SummaryState, TokenBudget, WindowResult, select_window, summary_reserve
from app.core.kv_precision import KV_16, KV_AUTO, kv8_supported, kv_bits_choices
from app.engine.events import TurnPlan, window_refusal
from app.engine.local.chat_format import encode_messages
from app.engine.local.kv_session import common_prefix, round_capacity
from app.engine.memory.admission import (
    AdmissionDecision,
    TurnProjection,
    admit_turn,
    project_turn_peak,
    safety_margin,
    with_kv8_remedy,
)
from app.engine.memory.calibration import Calibration
from app.engine.memory.context_fit import MIN_USEFUL_CONTEXT, auto_context, largest_context
from app.engine.memory.model_config import model_max_positions
from app.engine.memory.prefill_spike import PrefillModel, dequant_workspace_bytes
from app.engine.memory.probe import MemoryProbe
from app.engine.memory.sample import MemorySample
from app.engine.memory.units import dtype_nbytes

# Prefill chunks tried on CUDA, largest first: the first whose projection is admitted runs
# (issue 12, item 4: one shot up to 16k tokens when memory allows, as fast as the plain recipe;
# smaller chunks only when memory demands it, shared/gpu/README.md 12 GiB table; on the simulated
# 12 GiB card the 256-token floor admitted 89.4 % of the KV limit, 128 tokens 91 %,
# tests/benchmarks/results/memory_foresight_h200_app_settings*.json).
CUDA_CHUNK_LADDER = (16384, 1024, 256, 128)

RECENT_PROMPTS = 4  # encoded windows kept by Foresight.prompt_ids
TEMPLATE_TOKENS_PER_MESSAGE = 5  # ChatML / Llama-3 headers and end-of-turn tokens, about
MAX_KEPT_CONTENT_COUNTS = 4096  # message texts whose token count is kept for estimates


class Foresight:
    """Per-model projection state. Not thread-safe: used from the generation worker only."""

    def __init__(self, loaded, probe: MemoryProbe, prefill_chunk_tokens: int | None = None):
        from app.engine.local import split_kv_attention
        from app.engine.local.generation import default_prefill_chunk

        self.loaded = loaded
        self.probe = probe
        device = loaded.model.device
        # the same chunking and cache kind that stream_reply and KVSession will use
        self.chunk = prefill_chunk_tokens or default_prefill_chunk(device)
        self.static_cache = device.type == "cuda"
        # chunks tried by plan(), largest first; a chunk given by the caller is the only one
        self.chunk_ladder = ((self.chunk,) if prefill_chunk_tokens or not self.static_cache
                             else CUDA_CHUNK_LADDER)
        report = loaded.report
        shape = dict(attn_implementation=report.attention, quantized_4bit="4-bit" in report.quantization,
                     nf4_prefill_sliced=report.nf4_prefill_sliced)
        self.prefill_model = PrefillModel.from_config(
            loaded.model.config, dtype_nbytes(report.compute_dtype), dynamic_cache=not self.static_cache, **shape)
        # 8-bit keys and values (issue 16) are read by Headroom's attention only: its packed SDPA,
        # or its FA2 path (packed 8-bit decode, FA2 over one dequantized block at a time for prefill)
        self.prefill_model_kv8 = PrefillModel.from_config(
            loaded.model.config, dtype_nbytes(report.compute_dtype), kv_bits=8,
            kv8_kernel=split_kv_attention.kernel_runs_on(device), **shape
        ) if kv8_supported(report.attention) else None
        # A sliced NF4 prefill (nf4_prefill) can run whole weights too: one dequantize and one
        # GEMM per layer instead of a launch pair and a Python call per slice. admit() tries the
        # whole weights first for each chunk and slices only when memory demands it
        # (HEADROOM_NF4_PREFILL=sliced: always slice, to compare).
        self.prefill_models_whole: dict[int, PrefillModel] = {}
        if report.nf4_prefill_sliced and os.environ.get("HEADROOM_NF4_PREFILL", "auto") != "sliced":
            whole = dequant_workspace_bytes(loaded.model.config, dtype_nbytes(report.compute_dtype))
            self.prefill_models_whole = {
                bits: replace(model, dequant_bytes=whole, nf4_sliced=False)
                for bits, model in ((16, self.prefill_model), (8, self.prefill_model_kv8)) if model is not None}
        self.calibration = Calibration()
        self._recent_ids: dict[tuple, tuple[int, ...]] = {}
        self._content_tokens: dict[str, int] = {}
        self.max_positions = model_max_positions(loaded.model.config)
        sample = probe.sample()
        # post-load baseline (memory creeping across turns, text-generation-webui #1304; an OOM not recovered, pytorch
        # #27600)
        self.baseline_allocated = sample.allocated
        # "auto" context: the largest that fits what is free with the weights resident
        # (app.engine.memory.context_fit; the plan before loading used the same arithmetic)
        room = sample.free - self.safety_margin(sample)
        self.auto_context = auto_context(largest_context(self.prefill_model, room, self.max_positions, self.chunk),
                                         self.max_positions)
        # the same with 8-bit KV: a chat that may run 8-bit gets the larger window (issue 16)
        self.auto_context_kv8 = auto_context(largest_context(
            self.prefill_model_kv8, room, self.max_positions, self.chunk), self.max_positions
        ) if self.prefill_model_kv8 is not None else self.auto_context

    # ----- tokens ---------------------------------------------------------------------------
    def count_tokens(self, messages: list[dict]) -> int:
        """Tokens of the rendered prompt for `messages`, template overhead included."""
        return len(self.prompt_ids(messages))

    def prompt_ids(self, messages: list[dict]) -> tuple[int, ...]:
        """Token ids of the rendered prompt for `messages` (generation prompt included). The
        latest few are kept: planning a turn counts the same windows more than once, and the
        window it picks is the prompt it then encodes."""
        key = tuple((m["role"], m["content"]) for m in messages)
        ids = self._recent_ids.pop(key, None)
        if ids is None:
            tok, fmt = self.loaded.tokenizer, self.loaded.prompt_format
            ids = tuple(encode_messages(tok, fmt, messages))
        self._recent_ids[key] = ids  # most recent last
        while len(self._recent_ids) > RECENT_PROMPTS:
            self._recent_ids.pop(next(iter(self._recent_ids)))
        return ids

    def estimate_tokens(self, messages: list[dict]) -> int:
        """A cheap estimate of `count_tokens`: each message's text tokenized alone (kept between
        turns, so only new messages cost anything) plus TEMPLATE_TOKENS_PER_MESSAGE. Only guides
        the window search, which checks its answer with exact counts."""
        total = 0
        for m in messages:
            n = self._content_tokens.get(m["content"])
            if n is None:
                n = len(self.loaded.tokenizer.encode(m["content"], add_special_tokens=False, split_special_tokens=True))
                if len(self._content_tokens) >= MAX_KEPT_CONTENT_COUNTS:
                    self._content_tokens.clear()
                self._content_tokens[m["content"]] = n
            total += n + TEMPLATE_TOKENS_PER_MESSAGE
        return total

    def context_tokens(self, context_setting: int, kv_bits: int = 16) -> int:
        """The context in force: min(model positions, setting); a setting ≤ 0 means "auto", the
        largest context that fits here with a KV cache of ``kv_bits`` (at least
        MIN_USEFUL_CONTEXT, so admission can refuse with its own reasons rather than a zero
        budget)."""
        if context_setting > 0:
            return min(self.max_positions, context_setting)
        fitting = self.auto_context_kv8 if kv_bits == 8 else self.auto_context
        return min(self.max_positions, max(fitting, MIN_USEFUL_CONTEXT))

    def budget(self, context_setting: int, max_new_tokens: int, kv_bits: int = 16) -> TokenBudget:
        context = self.context_tokens(context_setting, kv_bits)
        return TokenBudget.for_model(self.max_positions, context, max_new_tokens, summary_reserve(context))

    # ----- planning ---------------------------------------------------------------------------
    def window(self, messages: list[Message], summary: SummaryState, system_prompt: str, max_new_tokens: int,
               context_setting: int = 0, fold_at: float = 1.0, keep_turns: int = 1,
               kv_precision: str = KV_16) -> WindowResult:
        """The turns a prompt of `messages` keeps (select_window against this model's budget,
        counted with its tokenizer); no memory is sampled or projected. A chat that may run 8-bit
        KV is windowed to what fits at 8-bit ("auto": the wider of the two). Raises ValueError
        when there is no turn to keep (app.core.history.select_window)."""
        widest = 16 if kv_precision == KV_16 or not self.kv8_available else 8
        if kv_precision == KV_AUTO and self.auto_context_kv8 <= self.auto_context:
            widest = 16
        budget = self.budget(context_setting, max_new_tokens, widest)
        policy = dict(count_tokens=self.count_tokens, system_allowed=self.loaded.prompt_format.system_role,
                      fold_at=fold_at, keep_turns=keep_turns, estimate_tokens=self.estimate_tokens)
        window = select_window(messages, system_prompt=system_prompt, summary=summary, budget=budget, **policy)
        if context_setting <= 0 and not window.fits:
            # "auto" shrank the context to what memory allows at full length; a turn that alone
            # overflows it is judged by memory admission (numbers, remedies, send anyway), not
            # refused for positions the model does have
            budget = self.budget(self.max_positions, max_new_tokens)
            window = select_window(messages, system_prompt=system_prompt, summary=summary, budget=budget,
                                   **policy)
        return window

    def plan(self, messages: list[Message], summary: SummaryState, system_prompt: str,
             max_new_tokens: int, context_setting: int = 0, continue_final: bool = False,
             cached_ids: list[int] | tuple[int, ...] = (), held_capacity: int = 0,
             fold_at: float = 1.0, keep_turns: int = 1, kv_precision: str = KV_16,
             held_kv_bits: int = 16, held_bytes: int = 0) -> TurnPlan:
        """Select the window, render it, project the peak and decide admission.

        cached_ids: token ids whose KV the session already holds (KV reuse); the common prefix
        with the new prompt is resident — in the probe's allocated bytes, not prefilled again.
        held_capacity: slots of the session's static cache (tokens, 0 = none); a turn that
        outgrows it grows the cache by copying, one old layer at a time (`static_cache`), so the
        projection adds one old layer's KV on top of the new capacity.
        The prefill chunk and the cache capacity are chosen by `admit`;
        ``plan.projection.basis.chunk_size`` is the chunk that runs, ``plan.capacity_tokens`` the
        static cache's slots. fold_at, keep_turns: when older turns leave the window for the
        summary (select_window).
        kv_precision: the chat's KV cache precision ("16-bit", "8-bit", "auto":
        app.core.kv_precision); held_kv_bits / held_bytes: the precision and bytes of the cache
        the session holds now. A turn in another precision drops that cache (its bytes count as
        free, nothing is resident) and prefills everything; ``plan.kv_bits`` says which runs.
        A 16-bit turn refused for memory offers 8-bit KV when that would fit
        (``decision.kv8_needed_bytes``).
        """
        fmt = self.loaded.prompt_format
        window = self.window(messages, summary, system_prompt, max_new_tokens, context_setting, fold_at, keep_turns,
                             kv_precision)
        budget, auto = window.budget, context_setting <= 0
        sample = self.probe.sample()
        if not window.fits:
            return TurnPlan(window, (), None, window_refusal(window, max_new_tokens), sample)
        if continue_final:
            ids = tuple(encode_messages(self.loaded.tokenizer, fmt, list(window.messages), continue_final))
        else:  # counted while the window was chosen
            ids = self.prompt_ids(list(window.messages))
        resident = min(common_prefix(list(cached_ids), list(ids)), len(ids) - 1)
        context = None if auto else budget.context_tokens

        def admit(bits: int):
            if bits == held_kv_bits:
                return self.admit(len(ids), resident, max_new_tokens, held_capacity, sample, context, kv_bits=bits)
            return self.admit(len(ids), 0, max_new_tokens, 0, sample, context, kv_bits=bits, released_bytes=held_bytes)

        for bits in kv_bits_choices(kv_precision, self.kv8_available):
            projection, decision, capacity = admit(bits)
            if decision.admitted or decision.cause != "memory":
                break
        if bits == 16 and self.kv8_available and decision.cause == "memory" and not decision.admitted:
            decision = with_kv8_remedy(decision, admit(8)[1])
        return TurnPlan(window, ids, projection, decision, sample, capacity, bits)

    @property
    def kv8_available(self) -> bool:
        """8-bit KV can run for this model (its attention is Headroom's "sdpa+gqa-packed")."""
        return self.prefill_model_kv8 is not None

    def model_for(self, kv_bits: int) -> PrefillModel:
        """The memory model of a turn with a KV cache of ``kv_bits`` (16 or 8). ValueError for 8
        when this model cannot run 8-bit KV."""
        if kv_bits == 16:
            return self.prefill_model
        if kv_bits == 8 and self.prefill_model_kv8 is not None:
            return self.prefill_model_kv8
        raise ValueError(f"no {kv_bits}-bit KV cache for this model")

    def admit(self, prompt_tokens: int, resident_tokens: int, max_new_tokens: int, held_capacity: int,
              sample: MemorySample, context_tokens: int | None = None, kv_bits: int = 16,
              released_bytes: int = 0) -> tuple[TurnProjection, AdmissionDecision, int | None]:
        """Project and admit a turn of ``prompt_tokens`` (``resident_tokens`` of them cached) as
        it would run: returns (projection, decision, static-cache capacity in tokens or None).

        A static cache (CUDA) is sized ``round_capacity(prompt + max_new_tokens)`` so a growing
        chat grows rarely; when memory does not admit that, exactly prompt + max_new_tokens
        slots are tried (the last up-to-2,047 tokens matter on a full card). For each capacity
        the prefill chunks of ``chunk_ladder`` are tried largest first, each with the NF4
        weights dequantized whole and then in slices (`prefill_models_whole`; the projection's
        ``basis.model.nf4_sliced`` says which was admitted). Without an admitted
        combination the last one tried is returned, refused with its numbers.
        kv_bits: the KV precision (8-bit always runs in a static cache); released_bytes: cache
        bytes dropped before the turn (a precision switch), counted out of allocated and into
        free (the caching allocator hands them out again)."""
        model = self.model_for(kv_bits)
        if released_bytes:
            sample = replace(sample, allocated=sample.allocated - released_bytes, free=sample.free + released_bytes)
        targets: tuple[int | None, ...] = (None,)
        if self.static_cache or not model.dynamic_cache:  # KVSession preallocates the whole capacity
            need = prompt_tokens + max_new_tokens
            targets = (held_capacity,) if held_capacity >= need else tuple(dict.fromkeys(
                (round_capacity(need), need)))
        for target in targets:
            kv_new_tokens = max_new_tokens if target is None else target - prompt_tokens
            if target is not None and resident_tokens and target > held_capacity:
                # growth copies layer by layer: one old layer's KV on top of the new capacity
                layers = max(len(model.layout.layers), 1)
                kv_new_tokens += -(-held_capacity // layers)
            for chunk in self.chunk_ladder:
                for variant in self.dequant_variants(kv_bits):
                    projection = self.project(prompt_tokens - resident_tokens, kv_new_tokens, resident_tokens,
                                              sample, chunk=chunk, kv_bits=kv_bits, model=variant)
                    decision = admit_turn(projection, sample.free, self.safety_margin(sample), self.max_positions,
                                          prompt_tokens, max_new_tokens, context_tokens)
                    if decision.admitted:
                        return projection, decision, target
        return projection, decision, target

    def dequant_variants(self, kv_bits: int) -> tuple[PrefillModel, ...]:
        """The memory models a turn of ``kv_bits`` may run with, fastest first: NF4 weights
        dequantized whole (when the prefill can also be sliced), then the model's own."""
        whole = self.prefill_models_whole.get(kv_bits)
        return (whole, self.model_for(kv_bits)) if whole is not None else (self.model_for(kv_bits),)

    def project(self, prompt_tokens: int, max_new_tokens: int, resident_tokens: int = 0,
                sample: MemorySample | None = None, full_context_tokens: int | None = None,
                chunk: int | None = None, kv_bits: int = 16, model: PrefillModel | None = None) -> TurnProjection:
        """Projection of a turn prefilled in ``chunk``-token slices (None = ``self.chunk``) with a
        KV cache of ``kv_bits``; ``model``: one of `dequant_variants` (None: the model's own)."""
        sample = sample or self.probe.sample()
        return project_turn_peak(
            model or self.model_for(kv_bits), self.calibration, now_allocated=sample.allocated,
            prompt_tokens=prompt_tokens, max_new_tokens=max_new_tokens, resident_tokens=resident_tokens,
            chunk_size=chunk or self.chunk, full_context_tokens=full_context_tokens or self.max_positions)

    @staticmethod
    def safety_margin(sample: MemorySample) -> int:
        return safety_margin(sample.total)

    # ----- measurement --------------------------------------------------------------------------
    def begin_measurement(self) -> None:
        self.probe.reset_peak()

    def end_measurement(self, projection: TurnProjection | None, prefilled: int, generated: int) -> int:
        """Peak allocated bytes during the turn; on CUDA the calibration learns from it (the
        projection is re-made for the tokens that actually ran)."""
        peak = self.probe.sample().peak
        if projection is not None and self.probe.kind == "cuda":
            b = projection.basis
            as_ran = project_turn_peak(
                b.model, self.calibration, now_allocated=b.now_allocated, prompt_tokens=prefilled,
                # a static cache holds its whole capacity whatever was generated
                max_new_tokens=generated if b.model.dynamic_cache else b.max_new_tokens,
                resident_tokens=b.resident_tokens, chunk_size=b.chunk_size,
                full_context_tokens=b.full_context_tokens)
            self.calibration = self.calibration.updated(as_ran, peak)
        return peak

    def snapshot(self) -> "ForesightSnapshot":
        """What the GUI needs to re-project for the "what if" control without the model."""
        return ForesightSnapshot(self.prefill_model, self.calibration, self.max_positions,
                                 self.chunk, self.baseline_allocated)


@dataclass(frozen=True)
class ForesightSnapshot:
    """Immutable copy of the projection inputs; pure math, safe to use on the GUI thread."""

    prefill_model: PrefillModel
    calibration: Calibration
    max_positions: int
    chunk: int | None
    baseline_allocated: int

    def project(self, now_allocated: int, context_tokens: int, max_new_tokens: int) -> TurnProjection:
        return project_turn_peak(self.prefill_model, self.calibration, now_allocated=now_allocated,
                                 prompt_tokens=max(context_tokens, 1), max_new_tokens=max_new_tokens,
                                 chunk_size=self.chunk, full_context_tokens=self.max_positions)
