"""The decode step compiled by Inductor and captured as one CUDA graph per cache (issue 5,
item 3; issue 12).

transformers does not compile bitsandbytes 4-bit models in `generate()` (its bnb quantizer says
`is_compileable = False`), so Headroom compiles its own decode step: one token through the
model over a preallocated `StaticCache`. ``torch.compile`` (Inductor, no CUDA graphs of its own)
makes the kernels; `CapturedStep` records them once per cache as a CUDA graph
(``torch.cuda.CUDAGraph``) and every later step of that cache is one replay. Measured there for
the Llama-3-8B shape in NF4: eager 16.1 tok/s, static cache 34.8, the compiled step 178.5.

Why not ``mode="reduce-overhead"`` (its CUDA-graph trees, used until 2026-12-02): every new
cache (a new chat, a growth, a chat restored from host memory) recorded another graph in the
tree, 0.07-0.17 s inside the turn (~1 s for some growths, H200, 8B), each
recording kept its own pool, and every step checked its inputs against the recordings kept.
Captured by hand on the H200 (tests/benchmarks/results/decode_anatomy_h200_reduce_overhead.json): 15 ms per
capture, the step replays in 5.92 ms at 21k tokens. Only one graph is kept: the one of the cache
decoding now; another cache captures again (one eager Inductor step, ~16 ms, then the capture).

`warm_up(loaded, kv_bits=...)` compiles once per KV format after load, off the GUI thread, and
reports "compiling" → "ready" or "failed" (with the reason) through a callback and the returned
`CompiledDecode.status`. Until it is ready, or when compiling fails, or on the CPU, generation
decodes eagerly; `ReplyFinished.decode_path` says which path ran.

One compile per KV format serves every cache capacity (issues 12 and 16): sessions build their
caches with `static_cache.new_static_cache`, whose layers expose the capacity only as a dynamic
tensor dimension, so the step is traced once per format with a symbolic capacity (``dynamic=None``
honours the dimension marked dynamic and keeps every other shape static); nothing recompiles
when a chat grows. A cache of another format (16-bit vs 8-bit keys and values,
`static_cache.kv_format_of`) is another graph: Dynamo would recompile inside the
turn (≈50 s for the 8B on an H200, cold Inductor cache), so readiness is kept per format and
`can_run` is False for a format not warmed up: that turn decodes eagerly, its
``decode_path`` says why ("eager-static (8-bit KV step not compiled yet)"), and the caller
compiles the format after the turn (`missing`, then `warm_up(..., kv_bits=(8,), decoder=...)`).
Caches of plain `StaticCache` layers (no symbolic capacity) still run compiled only at
capacities warmed up explicitly.
Inductor's and Triton's on-disk caches go to the user cache folder (`use_compile_caches`), so a
second launch loads the compiled kernels instead of generating them again.

One decoder layer is compiled for all of them (regional compilation, issue 12 item 3): the
warm-up spent its time tracing and lowering the same layer 32 times (H200, 8B: Dynamo 11.7 s,
AOT + Inductor 60 s of a 78 s warm-up, results/decode_anatomy_h200_kv16.json). The model's own
forward runs around the layers, each decoder layer's forward replaced for the step by
`_layer_step` over its own cache layer (`_LayerCache`: the layer index is never read, so no guard
tells the layers apart, and the capacity stays dynamic), all inside the captured CUDA graph.
Models whose layers are not known to be alike (`regional_reason`), or whose layer-at-a-time step
fails its warm-up check (capture, or logits against the model's own forward), compile the whole
forward as before; the status says which.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
import time
import types
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch

from app.engine.local import add_rms_norm, nf4_hook, norm_fold, nucleus_kernel, nvrtc, rope_attention
from app.engine.local.generation import cache_kwarg
from app.engine.local.kv_quant import KV8_FORMAT
from app.engine.local.kv_session import CAPACITY_STEP
from app.engine.local.static_cache import (
    KV16_FORMAT,
    advance_fill,
    capacity_of,
    is_span_cache,
    kv_format_of,
    new_static_cache,
)

log = logging.getLogger(__name__)

WARM_UP_PROMPT_TOKENS = 8
WARM_UP_STEPS = 3  # 1: compile and run + CUDA-graph capture, 2 and 3: replays
REGIONAL_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3"})
"""Model types whose decode step compiles one decoder layer for all (`regional_reason`): their
forward is embeddings → alike decoder layers → norm → head, each layer reading the cache only
through ``cache.update``."""
REGIONAL_CHECK_TOLERANCE_PER_LAYER = 3e-3
"""Largest relative L2 difference of the layer-at-a-time step's logits from the model's own eager
forward at warm-up, per decoder layer (at least REGIONAL_CHECK_TOLERANCE_FLOOR); above it the whole
forward is compiled. Inductor's fused layer rounds bf16 differently from the eager one, and the
difference grows with depth: 7.6e-3 over 6 layers, 5e-2 over 32 (1.3e-3 and 1.6e-3 per layer,
H200, random-init NF4 Llama shapes, 2026-12-02; a flat 2e-2 set the 8B's layer step aside). A
step that is wrong, not rounded, differs by O(1) (a layer output scaled by 1.5: > 0.5)."""
REGIONAL_CHECK_TOLERANCE_FLOOR = 2e-2
REGIONAL_REPLAY_SLACK = 2.0
"""A replay of the step's CUDA graph may differ from the eager forward at most this many times
as much as the step it captured (plus 1e-3): a host value baked into the capture (a position, a
length) shows as replays drifting from the first step, before it exceeds the tolerance."""


@dataclass(frozen=True)
class DecodeStatus:
    """state: "eager" (nothing compiled: CPU, or not warmed up), "compiling", "ready" (a step is
    compiled for at least one KV format) or "failed" (none is). reason: one line for the user
    (why eager, what is compiled, what failed). capacities: static-cache sizes (tokens) warmed
    up (every size runs compiled once one is ready, see the module docstring). seconds: warm-up
    time. kv_bits: the KV precisions (16, 8) whose step is compiled and ready. compiling_kv_bits:
    while "compiling", those being compiled now, in order. cause: "no-cuda" when eager for want
    of a CUDA device (the window says that one in its own language), else ""."""

    state: str
    reason: str = ""
    capacities: tuple[int, ...] = ()
    seconds: float = 0.0
    kv_bits: tuple[int, ...] = ()
    compiling_kv_bits: tuple[int, ...] = ()
    cause: str = ""


def kv_format_for(kv_bits: int) -> str:
    """The cache format a session of ``kv_bits`` (16 or 8) builds (`new_static_cache`)."""
    return KV16_FORMAT if kv_bits == 16 else KV8_FORMAT


def _bits_of(kv_format: str) -> int:
    return 16 if kv_format == KV16_FORMAT else 8


def _bits_label(kv_bits) -> str:
    """(16, 8) -> "16-bit and 8-bit KV"."""
    return " and ".join(f"{bits}-bit" for bits in kv_bits) + " KV"


class CompiledDecode:
    """The compiled decode step of one loaded model; pass it to generation as ``decoder=``.

    status: the latest DecodeStatus. can_run(cache) -> bool: a compiled step is ready for this
    cache's format and shape. step(input_ids (1, 1) long, cache) -> last-position logits (vocab,)
    float32, valid until the next step (CUDA-graph output buffer).
    """

    def __init__(self, model, compiler: Callable | None = None):
        self.model = model
        self.status = DecodeStatus("eager", "not warmed up yet")
        self._compiler = compiler or _inductor
        self._compiled = None
        self._ready: set[tuple[str, int]] = set()  # (KV format, capacity) compiled and warmed up
        self._failed: dict[str, str] = {}  # KV format -> why its compile failed (not retried)
        self._lock = threading.Lock()
        self._cache_kw = cache_kwarg(type(model))
        self.captures = model.device.type == "cuda"  # CUDA graphs exist on CUDA only
        self._graph: CapturedStep | None = None  # the cache decoding now, captured
        self.warm_up_phases: dict[str, dict[str, float]] = {}  # compile_capacity's seconds per part
        self._capture_failed = ""  # why capturing failed (then never tried again)
        # one decoder layer compiled for all of them ("" = possible), else the whole forward
        self.regional_failure = regional_reason(model)
        self._layer_compiled: Callable | None = None
        self._layer_code = None  # this decoder's copy of _layer_step's code (Dynamo's cache key)
        self._outer_compiled: dict[str, Callable] = {}  # "rotary_emb", "norm": `_outer_step` compiled
        self._takes_cache_position = "cache_position" in inspect.signature(type(model).forward).parameters
        self.fold_failure = "not built yet"  # why the layers' norms are not folded (norm_fold), "" when they are
        self._fold_set_aside = ""  # why a folded step failed its warm-up (then built unfolded)
        self._buffers = _StepBuffers()  # the regional step's constant tensors, kept between steps
        self._token_in: torch.Tensor | None = None  # every capture's token buffer (`token_buffer`)

    @property
    def regional(self) -> bool:
        """The step compiles one decoder layer, run for every layer (`_regional_forward`)."""
        return self._layer_compiled is not None

    def _forward(self, input_ids: torch.Tensor, cache) -> torch.Tensor:
        out = self.model(input_ids=input_ids, use_cache=True, logits_to_keep=1,
                         **{self._cache_kw: cache})
        return out.logits[0, -1].float()

    def _regional_forward(self, input_ids: torch.Tensor, cache) -> torch.Tensor:
        """`_forward` with each decoder layer's forward replaced, for this call, by the one compiled
        layer step (`_layer_step`): the model's own code runs around the layers eagerly (inside
        the CUDA graph when captured, so only its kernels replay). The positions are given, read
        on the device from the fill counter, so no host read of the cache's length breaks the
        capture."""
        counter = cache.layers[0].cumulative_length
        if input_ids.shape[1] == 1:  # read before advance_fill moves it: no arange and add kernels
            positions = counter.reshape(-1)[:1].view(1, 1)
        else:
            positions = (counter.reshape(-1)[:1]
                         + torch.arange(input_ids.shape[1], device=input_ids.device)).view(1, -1)
        extra = {"position_ids": positions, "attention_mask": self._causal_mask(cache, positions)}
        if self._takes_cache_position:  # models whose forward still takes it (no Llama-family in 5.17+)
            extra["cache_position"] = positions[0]
        with self._layers_compiled(cache):
            out = self.model(input_ids=input_ids, use_cache=True, logits_to_keep=1,
                             **{self._cache_kw: cache}, **extra)
        advance_fill(cache, input_ids.shape[1])  # the layers wrote without moving their counters
        return out.logits[0, -1].float()

    def _causal_mask(self, cache, positions: torch.Tensor) -> torch.Tensor | None:
        """(1, 1, n, capacity) bool for the step's n queries at ``positions`` (1, n): slot s visible to
        the query at position p where s <= p. The mask transformers builds for a chat without padding
        over a span cache (slot = position, offset 0), which ``create_causal_mask`` passes through as
        it is when given 4-D: one compare kernel a step instead of its chain of arange, add and
        compare kernels (7 launches on the 8B step, H200). The warm-up's check against the model's
        own forward, which builds its own mask, stands guard. None (transformers then does what it
        does) where the attention does not take transformers' "sdpa" mask ("fa2+static" takes none,
        eager a float one), or where the cache's slots are not its positions (an offset)."""
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

        try:  # only where transformers would build the boolean "sdpa" mask: "fa2+static" takes none
            # at all (it raises for a mask), eager attention adds its own kind of mask
            builds_sdpa_mask = ALL_MASK_ATTENTION_FUNCTIONS[self.model.config._attn_implementation] is sdpa_mask
        except KeyError:
            builds_sdpa_mask = False
        capacity, offset = cache.layers[0].get_mask_sizes(positions.shape[-1])
        if offset or not builds_sdpa_mask:  # offset: slots are not positions (a sliding layer)
            return None
        slots = self._buffers.slots(capacity, positions.device)
        return slots.view(1, 1, 1, -1) <= positions.reshape(1, 1, -1, 1)

    @contextmanager
    def _layers_compiled(self, cache):
        """Each decoder layer's forward is `_LayerCall` over its cache layer for the block, and each
        of OUTER_MODULES the model has calls its compiled `_outer_step`; after it (also after an
        error, even halfway through patching) every one of them has what it had. Single-threaded,
        like the model itself: the generating thread only."""
        layers = self.model.model.layers
        outer = [(module, compiled) for name, compiled in self._outer_compiled.items()
                 if (module := getattr(self.model.model, name, None)) is not None]
        saved = [(layer, vars(layer).get("forward")) for layer in [*layers, *(module for module, _ in outer)]]
        final_norm = getattr(self.model.model, "norm", None)
        halves = _Halves(self._buffers, norm_adds=any(module is final_norm for module, _ in outer),
                         first_input=self._outer_compiled.get(FOLD_INPUT))
        head = getattr(self.model, "lm_head", None)
        fp32_head = LOGITS_FP32 and _takes_fp32_logits(head)
        if fp32_head:
            saved.append((head, vars(head).get("forward")))
        if final_norm is not None:  # the fused kernels built and checked before the layers are traced
            add_rms_norm.check(final_norm)
        if len(layers):
            rope_attention.check(getattr(layers[0], "self_attn", None), cache.layers[0])
        try:
            if fp32_head:
                head.forward = functools.partial(_logits_fp32, head.weight)
            for index, layer in enumerate(layers):
                cache_layer = cache.layers[getattr(getattr(layer, "self_attn", None), "layer_idx", index)]
                last = index == len(layers) - 1
                next_norm = final_norm if last else getattr(layers[index + 1], "input_layernorm", None)
                layer.forward = _LayerCall(self._layer_compiled, layer, cache_layer, halves, first=index == 0,
                                           last=last, next_norm=next_norm)
            for module, compiled in outer:
                if module is final_norm:  # the last layer's halves: residual in, delta here
                    module.forward = lambda hidden, module=module, compiled=compiled: compiled(module, hidden,
                                                                                              halves.delta)
                else:
                    module.forward = functools.partial(compiled, module)
            yield
        finally:
            norm_fold.clear()  # a step that raised halfway leaves no folded norm for another launch
            for layer, own in saved:
                vars(layer).pop("forward", None)  # the class's forward again (prefill, eager decode)
                if own is not None:
                    layer.forward = own

    @property
    def ready_kv_bits(self) -> tuple[int, ...]:
        """KV precisions (16, 8) whose step is compiled, largest first."""
        return tuple(sorted({_bits_of(fmt) for fmt, _ in self._ready}, reverse=True))

    @property
    def capacities(self) -> tuple[int, ...]:
        return tuple(sorted({capacity for _, capacity in self._ready}))

    def can_run(self, cache) -> bool:
        """A compiled step is ready for ``cache``: its KV format was warmed up (any capacity of a
        span cache, else only the capacities warmed up). Never compiles."""
        if self._compiled is None or not self._ready:
            return False
        fmt = kv_format_of(cache)
        if self.regional and not is_span_cache(cache):
            return False  # the layer step writes through SpanLayer.update
        if is_span_cache(cache):
            return any(ready == fmt for ready, _ in self._ready)
        return (fmt, capacity_of(cache)) in self._ready

    def eager_reason(self, cache) -> str:
        """Why a span cache decodes eagerly while the step is compiled for another KV format:
        "8-bit KV step not compiled yet" or "8-bit KV step failed to compile"; "" when the step
        runs, when nothing is compiled at all (``status`` says why) or for other caches."""
        if not self._ready or not is_span_cache(cache) or self.can_run(cache):
            return ""
        fmt = kv_format_of(cache)
        state = "failed to compile" if fmt in self._failed else "not compiled yet"
        return f"{_bits_label((_bits_of(fmt),))} step {state}"

    def missing(self, kv_bits: int) -> bool:
        """The step for ``kv_bits`` KV is worth compiling now: this decoder compiles (a step is
        ready for another format) and this format is neither compiled nor failed."""
        fmt = kv_format_for(kv_bits)
        return (bool(self._ready) and fmt not in self._failed
                and not any(ready == fmt for ready, _ in self._ready))

    def step(self, input_ids: torch.Tensor, cache) -> torch.Tensor:
        """One decode step: a replay of the cache's CUDA graph, or, for a cache not captured yet,
        its graph recorded and replayed (a KV format already warmed up: `can_run`), else
        Inductor's kernels run once and the graph captured for the next steps. Off CUDA (or when
        a capture failed) the compiled function runs as it is."""
        if not self.captures or self._capture_failed:
            return self._compiled(input_ids, cache)
        graph = self._graph
        if graph is not None and graph.serves(cache):
            return graph.replay(input_ids)
        self._graph = graph = None  # the old graph's memory goes back before the new capture
        if self.can_run(cache):
            # a format already warmed up: record the new cache's step straight away (the capture
            # runs nothing) and replay it, instead of an eager Inductor step and then the capture
            # (H200, 8B NF4, a chat's first turn at 1k: 254 against 240 tok/s, its pause after the
            # first token 0.08 against 0.13-0.14 s; likewise when the cache grows)
            try:
                self._graph = self._capture(input_ids, cache)
                return self._graph.replay(input_ids)
            except Exception as exc:  # noqa: BLE001 - e.g. a recompile that cannot run while capturing
                log.info("recording a new cache's decode step first failed (%s); eager step, then capture", exc)
                self._graph = None
        logits = self._compiled(input_ids, cache)  # this token's step; any recompile happens here
        try:
            self._graph = self._capture(input_ids, cache)
        except Exception as exc:  # a capture failure costs speed, never the answer
            log.warning("CUDA-graph capture of the decode step failed; Inductor kernels run without it",
                        exc_info=exc)
            self._capture_failed = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
            self.status = replace(self.status, reason=f"{self.status.reason}; CUDA-graph capture failed "
                                  f"({self._capture_failed}), compiled kernels run without a graph")
        return logits

    def token_buffer(self) -> torch.Tensor:
        """The (1, 1) long tensor on the model's device that every captured step reads its token from:
        a caller that writes the next token here (the sampler's output, `generation._OneStepAhead`)
        spares each replay a copy kernel on the decode step's critical path."""
        if self._token_in is None:
            with torch.inference_mode(False):  # a normal tensor: written in place in and out of inference mode
                self._token_in = torch.zeros((1, 1), dtype=torch.long, device=self.model.device)
        return self._token_in

    def _capture(self, input_ids: torch.Tensor, cache) -> CapturedStep:
        """`CapturedStep` of ``cache`` over `token_buffer` (``input_ids`` copied there), its step's constant
        tensors made first (`_StepBuffers.reserve`): made inside the capture they would be kernels in
        every replay."""
        if self.regional:
            self._buffers.reserve(cache, self.model)
        buffer = self.token_buffer()
        if input_ids is not buffer:
            buffer.copy_(input_ids)
        return CapturedStep(self._compiled, buffer, cache)

    def prepare(self, cache) -> bool:
        """Capture the step's CUDA graph for ``cache`` now, before its next turn: for a chat the
        user switched back to, whose cache was restored into new device memory, so that its first
        token replays at once instead of paying one eager Inductor step and a capture inside the
        turn (~16 + 15 ms on the 8B, H200; the 1.39× first-turn TTFT of
        tests/benchmarks/results/chat_path_h200_fa2.json). The capture records the step and runs
        nothing, so the cache is left as it was. Only for a cache that already decoded with this
        compiled step's kernels (any restored chat); a capture that fails here is logged and
        left to the next step (which captures after a real step, as always). Returns True when a
        graph serves ``cache`` afterwards."""
        if not self.captures or self._capture_failed or not self.can_run(cache):
            return False
        if self._graph is not None and self._graph.serves(cache):
            return True
        self._graph = None
        try:
            with self._lock, torch.inference_mode():
                self._graph = self._capture(self.token_buffer(), cache)
        except Exception as exc:  # the next step captures the usual way
            log.info("early CUDA-graph capture of a restored cache failed: %s", exc)
            return False
        return True

    def compile_capacity(self, capacity: int, kv_bits: int = 16) -> None:
        """Compile, warm up and record the step for a span cache of ``capacity`` tokens holding
        ``kv_bits`` KV (16 or 8), on a scratch cache that is freed afterwards. Raises whatever
        torch.compile raises."""
        model = self.model
        phases, clock = {}, time.perf_counter()

        def lap(name: str) -> None:  # seconds of each part of the warm-up (the second launch's 10 s bar)
            nonlocal clock
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            phases[name] = round(time.perf_counter() - clock, 3)
            clock = time.perf_counter()

        with self._lock, torch.inference_mode():
            if self._compiled is None:
                self._compiled = self._build()
            cache = new_static_cache(model.config, capacity, kv_bits)
            prompt = torch.zeros((1, WARM_UP_PROMPT_TOKENS), dtype=torch.long, device=model.device)
            model(input_ids=prompt, use_cache=True, logits_to_keep=1, **{self._cache_kw: cache})
            lap("eager_prefill")
            token = torch.zeros((1, 1), dtype=torch.long, device=model.device)
            failure, graphs_before = "", self._layer_graphs()
            try:
                for i in range(WARM_UP_STEPS):
                    self.step(token, cache)
                    lap("first_step_compile_and_capture" if i == 0 else f"replay_{i}")
            except Exception as exc:  # a layer step that cannot run: the whole forward may
                if not self.regional:
                    raise
                failure = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            fmt = kv_format_of(cache)
            self._graph = None  # the scratch cache's graph: its memory goes with the cache
            del cache, prompt, token
            if self.regional and not failure:
                failure = self._regional_check(capacity, kv_bits, graphs_before)
                lap("regional_check")
        self.warm_up_phases[f"{kv_bits}-bit, {capacity} tokens"] = phases
        log.info("decode warm-up, %d-bit KV, %d tokens: %s s", kv_bits, capacity, phases)
        if failure and not self.fold_failure:  # the layer step with its norms unfolded first
            log.warning("folded norms set aside: %s", failure)
            self._fold_set_aside = f"set aside ({failure})"
            self._rebuild(sorted(self._ready) + [(fmt, capacity)])
            return
        if failure:  # the whole forward, compiled as before (its own warm-up), for every format
            log.warning("layer-at-a-time decode step set aside: %s", failure)
            self.regional_failure = failure
            self._rebuild(sorted(self._ready) + [(fmt, capacity)])
            return
        self._ready.add((fmt, capacity))

    def _rebuild(self, ready: list[tuple[str, int]]) -> None:
        """Compile and warm up again, from `_build`, every (KV format, capacity) of ``ready``: after the
        step that was built failed its warm-up (`regional_failure` or `_fold_set_aside` now says why)."""
        self._ready.clear()
        self._layer_compiled, self._compiled, self._outer_compiled = None, None, {}
        self._capture_failed, self._graph = "", None
        for ready_fmt, ready_capacity in dict.fromkeys(ready):
            self.compile_capacity(ready_capacity, _bits_of(ready_fmt))

    def _build(self) -> Callable:
        """The step's function: one compiled decoder layer inside the model's own forward
        (`_regional_forward`), or, where the model's layers are not known to be alike or that
        failed, the whole forward compiled. Either is this decoder's own copy of the function (a
        code object of its own), so Dynamo's cache of graphs, and its limit of recompiles per code
        object (8), are this model's, not shared with the models loaded before it in the process."""
        self.fold_failure = "no layer-at-a-time step"
        if not self.regional_failure:
            self.fold_failure = self._fold_set_aside or fold_reason(self.model)
            layer_step = _own_copy(_folded_layer_step if not self.fold_failure else _layer_step)
            self._layer_code = layer_step.__code__
            self._layer_compiled = self._compiler(layer_step)
            self._outer_compiled = {name: self._compiler(_own_copy(_final_norm if name == "norm" else _outer_step))
                                    for name in OUTER_MODULES}
            if not self.fold_failure:
                self._outer_compiled[FOLD_INPUT] = self._compiler(_own_copy(norm_fold.first_input))
            log.info("decode step norms: %s", self.fold_failure or "folded into the NF4 launches (HEADROOM_NORM_FOLD)")
            return self._regional_forward
        return self._compiler(types.MethodType(_own_copy(CompiledDecode._forward), self))

    def _layer_graphs(self) -> int | None:
        """How many graphs Dynamo holds for this decoder's layer step (None when not known)."""
        code = self._layer_code
        if code is None:
            return None
        try:
            return len(torch._dynamo.eval_frame._debug_get_cache_entry_list(code))
        except Exception:  # a private helper: gone in some torch, then not checked
            return None

    def _regional_check(self, capacity: int, kv_bits: int, graphs_before: int | None) -> str:
        """Why the layer-at-a-time step cannot stand, "" when it stands: its CUDA-graph capture
        failed during the warm-up; Dynamo traced more than one graph for this format (a guard
        told the layers apart: past its recompile limit the other layers would run eagerly);
        or three steps (a real one, then replays of its graph where there are graphs) differ
        from the model's own eager forward on a twin scratch cache by more than
        `regional_tolerance`, or replays differ more than REGIONAL_REPLAY_SLACK times the
        captured step (a host value baked into the capture shows on the replays)."""
        graphs = self._layer_graphs()
        if graphs is not None and graphs_before is not None and graphs - graphs_before > 1:
            return f"the layers were compiled apart ({graphs - graphs_before} graphs for one KV format)"
        model = self.model
        prompt = torch.arange(1, WARM_UP_PROMPT_TOKENS + 1, device=model.device).view(1, -1)
        caches = []
        for _ in range(2):
            caches.append(new_static_cache(model.config, capacity, kv_bits))
            model(input_ids=prompt, use_cache=True, logits_to_keep=1, **{self._cache_kw: caches[-1]})
        errors = []
        try:
            for token_id in (3, 5, 7):
                token = torch.full((1, 1), token_id, dtype=torch.long, device=model.device)
                got = self.step(token, caches[0]).clone()
                want = self._forward(token, caches[1])
                errors.append(float((got - want).norm() / want.norm().clamp_min(1e-30)))
        finally:
            self._graph = None  # the twin cache's graph goes with it
            del caches
        if self._capture_failed:
            return f"CUDA-graph capture failed ({self._capture_failed})"
        tolerance = regional_tolerance(model)
        if not all(error <= tolerance for error in errors):  # NaN included
            worst = max(errors, key=lambda error: float("inf") if error != error else error)
            return f"its logits differ from the model's forward (relative error {worst:.2g} > {tolerance:.2g})"
        if any(error > REGIONAL_REPLAY_SLACK * errors[0] + 1e-3 for error in errors[1:]):
            return ("its replays drift from the step they captured (relative errors "
                    + " / ".join(f"{error:.2g}" for error in errors) + ")")
        return ""


def regional_tolerance(model) -> float:
    """The regional check's tolerance for ``model``: REGIONAL_CHECK_TOLERANCE_PER_LAYER per decoder
    layer, at least REGIONAL_CHECK_TOLERANCE_FLOOR (relative L2 error of the logits)."""
    layers = int(getattr(model.config, "num_hidden_layers", 0) or 0)
    return max(REGIONAL_CHECK_TOLERANCE_FLOOR, REGIONAL_CHECK_TOLERANCE_PER_LAYER * layers)


def _own_copy(function: Callable) -> Callable:
    """``function`` with a copy of its code object: Dynamo keys its compiled graphs by code."""
    return types.FunctionType(function.__code__.replace(), function.__globals__, function.__name__)


def regional_reason(model) -> str:
    """Why the decode step of ``model`` cannot compile one decoder layer for all (issue 12, item
    3: Dynamo and Inductor then work on one layer, not 32), or "" when it can: a model type of
    REGIONAL_MODEL_TYPES with one kind of decoder layer, every layer full attention (a sliding
    window masks each layer its own way)."""
    config = model.config
    layers = getattr(getattr(model, "model", None), "layers", None)
    if config.model_type not in REGIONAL_MODEL_TYPES:
        return f"{config.model_type} layers are not known to be alike"
    if not layers or len({type(layer) for layer in layers}) != 1:
        return "decoder layers of more than one kind"
    if any("forward" in vars(layer) for layer in layers):
        return "decoder layers with a forward of their own (hooks)"
    rope = getattr(config, "rope_scaling", None) or getattr(config, "rope_parameters", None) or {}
    rope_type = str(rope.get("rope_type", rope.get("type", "default"))) if isinstance(rope, dict) else "default"
    if "dynamic" in rope_type or rope_type == "longrope":  # they read the positions on the host
        return f"{rope_type} RoPE"
    if any(kind != "full_attention" for kind in (getattr(config, "layer_types", None) or ())) or (
            getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True)):
        return "sliding-window attention"
    return ""


class _LayerCache:
    """One cache layer as its decoder layer sees the whole cache: ``update`` writes this layer
    (a SpanLayer: `can_run` takes no other cache for the layer step) without moving its fill
    counter; `_regional_forward` moves all the counters once, after the last layer. The layer
    index transformers passes is never read, so Dynamo keeps no guard on it and one compiled
    layer serves every layer."""

    def __init__(self, layer):
        self.layer = layer

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        return self.layer.write(key_states, value_states)


def _layer_step(layer, residual: torch.Tensor, delta: torch.Tensor, cache_layer, cache_kw: str, args: tuple,
                kwargs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoder layer over its own cache layer: what `CompiledDecode` compiles. Parameters,
    cache tensors and activations are inputs (torch.compile's inlined modules), the capacity a
    dynamic dimension, so the first layer's compile serves all layers and capacities.

    The layer's residual add is shifted by one layer: its input is the previous layer's two
    halves, ``residual + delta`` (hidden size, the compute dtype), and it returns its own halves,
    (the hidden state after attention, the MLP's output), unadded. The add then happens in the next
    layer's graph, where Inductor fuses it into the input RMSNorm's kernel (or `_add_norm` runs both
    as one ``headroom::add_rms_norm``), instead of a kernel of its own at the end of every layer.
    With `advance_fill` (one counter increment a step, not one a layer): H200, 8B at 1k, 3.434 →
    3.372 ms a step, 382 → 321 launches, 282.0 → 288.1 tok/s on the app path, the same run
    (results/decode_anatomy_h200_shifted.json).
    Otherwise the decoder layer of the REGIONAL_MODEL_TYPES as transformers writes it (Llama,
    Mistral, Qwen2, Qwen3: pre-norm attention then pre-norm MLP); the warm-up's check against the
    model's own forward (`_regional_check`) stands guard. Raises TypeError for positional layer
    arguments (the models pass keywords)."""
    if args:
        raise TypeError("a decoder layer called with positional arguments")
    hidden, normed = _add_norm(layer.input_layernorm, residual, delta)
    if rope_attention.applies(layer.self_attn, cache_layer, normed, kwargs):  # RoPE and cache write in the attention
        attention = rope_attention.attention_forward(layer.self_attn, normed, cache_layer, kwargs)
    else:
        attention, _ = layer.self_attn(hidden_states=normed, **kwargs, **{cache_kw: _LayerCache(cache_layer)})
    hidden, normed = _add_norm(layer.post_attention_layernorm, hidden, attention)
    return hidden, layer.mlp(normed)


def _folded_layer_step(layer, hidden: torch.Tensor, normed: torch.Tensor, ssq: torch.Tensor,
                       next_weight: torch.Tensor, cache_layer, cache_kw: str, args: tuple,
                       kwargs: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`_layer_step` with the layer's two RMSNorms folded into its NF4 launches (norm_fold; where
    `fold_reason` allows): takes the hidden state h (1, 1, H), its input norm's folded g (1, 1, H) and row
    tiles' sums of squares ssq, and returns the same three for the next layer, whose input norm weight is
    ``next_weight`` (the final norm's after the last layer). q/k/v's group launch reads g and scales by the
    norm; o_proj writes h + its output, g and ssq for the MLP's norm; the gate/up pair reads those; down
    writes the next layer's. No norm launch is left. Raises TypeError for positional layer arguments,
    RuntimeError when a launch did not take its part (norm_fold.made)."""
    if args:
        raise TypeError("a decoder layer called with positional arguments")
    attention_norm, mlp_norm = layer.input_layernorm, layer.post_attention_layernorm
    norm_fold.expect(normed, ssq, attention_norm.variance_epsilon, layer.self_attn.o_proj, hidden, mlp_norm.weight)
    if rope_attention.applies(layer.self_attn, cache_layer, normed, kwargs):
        hidden = rope_attention.attention_forward(layer.self_attn, normed, cache_layer, kwargs)
    else:
        hidden, _ = layer.self_attn(hidden_states=normed, **kwargs, **{cache_kw: _LayerCache(cache_layer)})
    normed, ssq = norm_fold.made()
    normed = normed.view_as(hidden)
    norm_fold.expect(normed, ssq, mlp_norm.variance_epsilon, layer.mlp.down_proj, hidden, next_weight)
    hidden = layer.mlp(normed)
    normed, ssq = norm_fold.made()
    return hidden, normed.view_as(hidden), ssq


def fold_reason(model) -> str:
    """"" when the regional step of ``model`` folds its norms (norm_fold.FOLD set, every layer's two norms a
    LlamaRMSNorm-like one with weights of the model's dtype, a final norm, and nf4_hook.fold_reason's
    launches), else why not (one line)."""
    if not norm_fold.FOLD:
        return "HEADROOM_NORM_FOLD is not set"
    layers = getattr(getattr(model, "model", None), "layers", None) or []
    norms = [getattr(layer, name, None) for layer in layers for name in ("input_layernorm", "post_attention_layernorm")]
    if not layers or not all(add_rms_norm.takes(norm) and norm.weight.dtype == model.dtype for norm in norms):
        return "norms that are not RMSNorms of the Llama kind in the model's dtype"
    if getattr(model.model, "norm", None) is None:
        return "no final norm"
    return nf4_hook.fold_reason(layers)


def _add_norm(norm, residual: torch.Tensor, delta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hidden, norm(hidden)) for hidden = residual + delta: one ``headroom::add_rms_norm`` launch where
    its kernel serves the norm (add_rms_norm.serves), otherwise the add and the module, which Inductor
    fuses into one kernel of its own."""
    if add_rms_norm.serves(norm):
        return torch.ops.headroom.add_rms_norm(residual, delta, norm.weight, norm.variance_epsilon)
    hidden = residual + delta
    return hidden, norm(hidden)


OUTER_MODULES = ("rotary_emb", "norm")
"""The model's own modules around the layers that the regional step also runs compiled (`_outer_step`),
one Inductor kernel each instead of ATen's chain: the rotary embedding's cos and sin (a matmul, cat,
cos, sin, two scales, two casts: 8 kernels) and the final RMSNorm (7). With the one-token positions
read straight from the fill counter (2 kernels fewer): 305 against 321 kernels a step, and the 8B
step on the H200 3.098-3.106 against 3.121 ms at 1k, 3.179-3.180 against 3.201-3.204 at 4k
(alternating runs, results/decode_anatomy_h200_outer_compiled.json)."""


FOLD_INPUT = "fold_input"  # _outer_compiled's norm_fold.first_input (the first layer's folded input norm)


def _outer_step(module, *args, **kwargs):
    """``module``'s own forward (its class's: the instance's is this function while patched), for
    torch.compile. The modules (OUTER_MODULES) take the step's hidden state and positions, static
    shapes, so one graph each."""
    return type(module).forward(module, *args, **kwargs)


LOGITS_FP32 = os.environ.get("HEADROOM_LOGITS_FP32", "1") != "0"
"""The regional step's lm_head (a bias-free Linear, 16-bit weights, CUDA) writes float32 logits in its own
cuBLAS call (`_logits_fp32`) instead of bf16 logits and a kernel converting them (the step returns
float32 logits either way). The logits are then not rounded to bf16: 4.4e-6 against 1.7e-3 relative
error to a float32 product (tests/benchmarks/lm_head_step.py). H200, Llama-3-8B shape: the lm_head
and conversion 247.9 against 252.5 µs after the final norm (results/lm_head_step_h200.json); on the app
path the step 3.010 against 3.015 ms at 1k and 3.092 against 3.099 at 4k (two alternating rounds,
results/decode_anatomy_h200_step_buffers.json). HEADROOM_LOGITS_FP32=0: bf16 logits, as the model's own
forward gives them. Where the loader swapped in the 8-bit lm_head (int8_head.Int8LmHead, the default on CUDA)
that head writes float32 logits itself and this does not apply."""


def _takes_fp32_logits(head) -> bool:
    """`_logits_fp32` can stand in for ``head``: a plain bias-free Linear with 16-bit weights on CUDA
    (``torch.mm``'s ``out_dtype`` is a CUDA feature)."""
    return (type(head) is torch.nn.Linear and head.bias is None and head.weight.is_cuda
            and head.weight.dtype in (torch.bfloat16, torch.float16))


def _logits_fp32(weight: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """hidden (..., H) → logits (..., V) float32 = hidden @ weightᵀ, accumulated in float32 and not rounded
    to the weight's dtype (torch.mm's ``out_dtype``, CUDA)."""
    flat = hidden.reshape(-1, hidden.shape[-1])
    return torch.mm(flat, weight.t(), out_dtype=torch.float32).view(*hidden.shape[:-1], weight.shape[0])


def _final_norm(module, residual: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """The model's final norm of the last layer's two halves, ``residual + delta``, for torch.compile:
    the add fuses into the norm's kernel instead of a kernel of its own after the last layer."""
    if add_rms_norm.serves(module):
        return torch.ops.headroom.add_rms_norm(residual, delta, module.weight, module.variance_epsilon)[1]
    return type(module).forward(module, residual + delta)  # the class's: the instance's is this, patched


class _Halves:
    """The hidden state between the layers of one regional step as two tensors whose sum it is
    (`_layer_step`); ``buffers`` gives the first layer its zero delta (`_StepBuffers`)."""

    residual: torch.Tensor | None = None
    delta: torch.Tensor | tuple | None = None  # folded layers (`_folded_layer_step`): (g, ssq) between them

    def __init__(self, buffers: _StepBuffers, norm_adds: bool, first_input: Callable | None = None):
        self.buffers = buffers
        self.norm_adds = norm_adds  # the final norm adds delta to what the last layer returns
        self.first_input = first_input  # folded layers: norm_fold.first_input, compiled


class _StepBuffers:
    """Constant tensors a regional step reads and never writes, made outside a capture and kept, so
    that a captured step replays no kernel to make them again: the slot numbers its causal mask
    compares with (`CompiledDecode._causal_mask`), the first layer's zero delta. One made during a
    capture belongs to that graph's memory pool and is not kept; `CompiledDecode._capture` makes them
    first (a new cache of a warmed-up format is captured without an eager step before it).

    With the final norm adding the last layer's halves (`_final_norm`): 263 against 273 kernels a step,
    and on the H200 (Llama-3-8B shape, NF4) the step 3.015 against 3.023 ms at 1k and 3.099 against
    3.106 at 4k, two alternating rounds (results/decode_anatomy_h200_step_buffers.json, "new" and
    "base")."""

    def __init__(self):
        self._slots: torch.Tensor | None = None
        self._zeros: dict[tuple, torch.Tensor] = {}  # (shape, dtype, device) → zeros
        self._retired: list[torch.Tensor] = []  # slot numbers outgrown: a captured graph may still read them

    def reserve(self, cache, model) -> None:
        """Make (outside a capture) what a step of ``model`` over ``cache`` will ask for."""
        embeddings = model.get_input_embeddings().weight
        self.slots(cache.layers[0].get_mask_sizes(1)[0], embeddings.device)
        self.zeros_like(torch.empty((1, 1, embeddings.shape[-1]), dtype=embeddings.dtype, device=embeddings.device))

    def slots(self, capacity: int, device: torch.device) -> torch.Tensor:
        """0, 1, ..., capacity - 1 (long) on ``device``. Grown by doubling; an outgrown tensor is kept
        (a graph captured before may replay it), so all of them hold less than twice the largest."""
        slots = self._slots
        if slots is None or slots.numel() < capacity or slots.device != device:
            slots = torch.arange(max(CAPACITY_STEP, 1 << (capacity - 1).bit_length()), device=device)
            if not _capturing(device):
                if self._slots is not None:
                    self._retired.append(self._slots)
                self._slots = slots
        return slots[:capacity]

    def zeros_like(self, hidden: torch.Tensor) -> torch.Tensor:
        """Zeros of ``hidden``'s shape, dtype and device, one tensor each (kept: a graph reads it)."""
        key = (tuple(hidden.shape), hidden.dtype, hidden.device)
        zeros = self._zeros.get(key)
        if zeros is None:
            zeros = torch.zeros_like(hidden)
            if not _capturing(hidden.device):
                self._zeros[key] = zeros
        return zeros


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


class _LayerCall:
    """A decoder layer's forward for one regional step: its own cache layer, the compiled step.
    The first layer splits the model's hidden state into (it, zeros); the step passes the halves
    on through ``halves``; the last layer returns its residual half, and the model's final norm
    (`_final_norm`, while patched) adds the delta half."""

    def __init__(self, compiled: Callable, layer, cache_layer, halves: _Halves, first: bool, last: bool,
                 next_norm=None):
        self.compiled, self.layer, self.cache_layer = compiled, layer, cache_layer
        self.halves, self.first, self.last = halves, first, last
        self.next_norm = next_norm  # folded layers: the norm after this layer (the next one's input norm)

    def __call__(self, hidden_states: torch.Tensor, *args, **kwargs):
        cache_kw = "cache" if "cache" in kwargs else "past_key_values"
        kwargs.pop(cache_kw, None)
        mask = kwargs.get("attention_mask")
        if isinstance(mask, torch.Tensor) and not torch.compiler.is_compiling():
            torch._dynamo.maybe_mark_dynamic(mask, mask.dim() - 1)  # its last dimension is the capacity
        halves = self.halves
        if halves.first_input is not None:  # folded norms: (h, g, ssq) from layer to layer
            if self.first:
                halves.residual = hidden_states
                halves.delta = halves.first_input(self.layer.input_layernorm.weight, hidden_states)
            halves.residual, *folded = self.compiled(self.layer, halves.residual, *halves.delta,
                                                     self.next_norm.weight, self.cache_layer, cache_kw, args, kwargs)
            # after the last layer the final norm adds a zero delta: its own launch, as unfolded
            halves.delta = halves.buffers.zeros_like(halves.residual) if self.last else tuple(folded)
        else:
            if self.first:
                halves.residual, halves.delta = hidden_states, halves.buffers.zeros_like(hidden_states)
            halves.residual, halves.delta = self.compiled(self.layer, halves.residual, halves.delta,
                                                          self.cache_layer, cache_kw, args, kwargs)
        if self.last and not halves.norm_adds:
            return halves.residual + halves.delta
        return halves.residual


COMBO_KERNELS_OPT_OUT = "HEADROOM_COMBO_KERNELS"
"""Set to 0 to compile without Inductor's combo kernels. On by default: they launch a layer's
independent small kernels as one (the q RoPE, the k RoPE + cache write and the v cache write, three
kernels → one), which took the 8B decode step on the H200 from 3.531 to 3.449 ms at 1k (274.5 →
281.6 tok/s, 446 → 382 launches a step; results/decode_anatomy_h200_combo.json), for ~3 s more
compile at warm-up."""


def _inductor(fn: Callable) -> Callable:
    # dynamic=None: only the dimensions marked dynamic (the cache capacity) are symbolic; no
    # CUDA graphs here (CapturedStep captures them, one per cache)
    options = {} if os.environ.get(COMBO_KERNELS_OPT_OUT) == "0" else {"combo_kernels": True}
    if nvrtc.PDL and INDUCTOR_PDL != "off" and _inductor_waits_first():
        options["triton.enable_pdl"] = True
    return torch.compile(fn, dynamic=None, options=options)


INDUCTOR_PDL = "wait_first"
"""How Inductor's kernels take part in programmatic dependent launch (nvrtc.PDL on): "wait_first" (each
waits for the kernel before it ahead of its first load or store, then lets the next one start: no
kernel can see a predecessor's memory early, whatever Inductor's dependency analysis makes of the
custom ops and of buffers the allocator reuses), "as_is" (Inductor's own rule: a wait only before
reading or overwriting what its scheduler's previous node touched) or "off". On the H200 both give
the plain step's logits bit for bit and the same speed (tests/benchmarks/results/pdl_logits_h200.json)."""


def _inductor_waits_first() -> bool:
    """Make Inductor's PDL wait ahead of every kernel's first memory access when INDUCTOR_PDL is
    "wait_first" (a wrapper of TritonKernel._handle_pdl_before_access, installed once: it treats each
    access as depending on the kernel before). False where this torch has no such hook (no PDL then)."""
    try:
        from torch._inductor.codegen.triton import TritonKernel
        from torch._inductor.virtualized import V
    except ImportError:
        return False
    original = getattr(TritonKernel, "_handle_pdl_before_access", None)
    if original is None:
        return False
    if getattr(original, "_headroom_waits_first", False):
        return True

    def before_access(self, wait_buffer, *dependencies, consider_reads=False):
        scheduler = V.graph.scheduler if INDUCTOR_PDL == "wait_first" else None
        if scheduler is None:
            return original(self, wait_buffer, *dependencies, consider_reads=consider_reads)
        previous, scheduler.previous_node = scheduler.previous_node, None  # None: "wait" (Inductor's rule)
        try:
            return original(self, wait_buffer, *dependencies, consider_reads=consider_reads)
        finally:
            scheduler.previous_node = previous

    before_access._headroom_waits_first = True
    TritonKernel._handle_pdl_before_access = before_access
    return True


def _cache_tensors(cache) -> tuple[torch.Tensor, ...]:
    """Every tensor a decode step reads or writes in ``cache``: each layer's keys, values and
    fill counter (a growth or a restore replaces them, and the graph holds their addresses)."""
    return tuple(t for layer in cache.layers
                 for t in (layer.keys, layer.values, getattr(layer, "cumulative_length", None))
                 if isinstance(t, torch.Tensor))


def _layout(tensors) -> tuple:
    """Address, shape and dtype of each tensor: what a captured graph was recorded for (a freed
    cache's memory may come back at the same address with another capacity, or another format)."""
    return tuple((t.data_ptr(), tuple(t.shape), t.dtype) for t in tensors)


class CapturedStep:
    """The compiled decode step of one cache recorded as a CUDA graph.

    Built right after ``compiled(input_ids, cache)`` ran for real (so nothing compiles or
    autotunes while capturing): the capture records the same call on a side stream and runs
    nothing. The graph holds the addresses of its token buffer ``input_ids`` (1, 1) long, kept as
    given (`CompiledDecode.token_buffer`), of the cache's tensors and of its logits output (vocab,)
    float32; `serves(cache)` is True while the cache's tensors have the addresses and shapes it was
    recorded for; `replay(input_ids)` copies the token in (unless it is already there: the buffer
    itself), replays, and returns the logits (overwritten by the next replay).
    capture_error_mode "thread_local": another thread asking the driver something (the VRAM
    panel) does not spoil the capture. Raises what the capture raises (the caller falls back to
    the compiled function)."""

    def __init__(self, compiled: Callable, input_ids: torch.Tensor, cache):
        # addresses and shapes only: holding the tensors would keep a grown or parked cache's
        # old memory alive until the next step (a growth must never hold old and new in full)
        self._layout = _layout(_cache_tensors(cache))
        self.input_ids = input_ids
        self.graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream(device=input_ids.device)
        stream.wait_stream(torch.cuda.current_stream(input_ids.device))
        with torch.cuda.stream(stream):
            self.graph.capture_begin(capture_error_mode="thread_local")
            try:
                self.logits = compiled(self.input_ids, cache)
            finally:
                self.graph.capture_end()
        torch.cuda.current_stream(input_ids.device).wait_stream(stream)

    def serves(self, cache) -> bool:
        return _layout(_cache_tensors(cache)) == self._layout

    def replay(self, input_ids: torch.Tensor) -> torch.Tensor:
        if input_ids is not self.input_ids:
            self.input_ids.copy_(input_ids)
        self.graph.replay()
        return self.logits


def use_compile_caches() -> str:
    """Point torch.compile's and Triton's on-disk caches at the user cache folder and return
    Inductor's: ``TORCHINDUCTOR_CACHE_DIR`` when the user set it, else ``<user cache
    folder>/torchinductor`` (platformdirs, e.g. ~/.cache/headroom/...; torch writes its own /tmp
    default into the variable the first time it looks, and that default is replaced), and
    ``TRITON_CACHE_DIR`` when set, else ``<user cache folder>/triton``, so a second launch loads
    the compiled kernels instead of generating them again. Call it before the first Triton
    kernel compiles (`load_model` does).

    Why Triton's too: left unset, Triton's cache is ~/.triton/cache until the first Inductor
    kernel object sets the variable to Inductor's folder (torch._inductor.runtime.
    triton_heuristics), so Headroom's own kernels (split-KV attention, merge, KV append, NF4)
    were cached in one folder on a first launch and looked up in the other on the next, where
    Inductor's cache hit changes that order: the H200's second launch compiled 9 Triton kernels
    again, ~3.5 s of a 9.0 s first decode step (cProfile, 2026-12-02 session notes)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    try:
        import platformdirs

        base = platformdirs.user_cache_dir("headroom", appauthor=False)
    except ImportError:
        base = os.path.join(os.path.expanduser("~"), ".cache", "headroom")
    path = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not path or os.path.abspath(path) == os.path.abspath(default_cache_dir()):
        path = os.path.join(base, "torchinductor")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(base, "triton"))
    return path


def warm_up(loaded, capacities: Iterable[int] = (CAPACITY_STEP,),
            on_status: Callable[[DecodeStatus], None] | None = None,
            decoder: CompiledDecode | None = None, compiler: Callable | None = None,
            require_cuda: bool = True, kv_bits: Iterable[int] = (16,)) -> CompiledDecode:
    """Compile the decode step of ``loaded.model`` for span caches of ``capacities`` tokens
    holding keys and values in each of ``kv_bits`` (16, 8; compiled in that order: the open
    chat's first).

    Blocking (one compile per KV format; for an 8B NF4 model on an H200, one decoder layer for
    all took 11.5 s with cold Inductor and Triton caches and 2.6 s in a second launch,
    tests/benchmarks/results/chat_path_h200.json; the 8-bit format 8.3 s more,
    decode_anatomy_h200.json; the whole
    forward 57.2 / 14.4 s, chat_path_h200_fa2.json; other
    capacities only capture a CUDA graph, on their first step): call it off the GUI thread. Reports
    DecodeStatus("compiling", compiling_kv_bits=...) then "ready" (at least one format
    compiled; a format that failed is named in the reason and decodes eagerly) or "failed"
    (none) via ``on_status`` and returns the decoder (pass an existing one to add formats or
    capacities; those already compiled or failed are skipped). On the CPU (require_cuda)
    nothing is compiled: status "eager" with the reason. Never raises for a compile failure.
    """
    model = loaded.model
    decoder = decoder or CompiledDecode(model, compiler)
    capacities = tuple(sorted(set(int(c) for c in capacities)))
    todo = tuple(bits for bits in dict.fromkeys(int(b) for b in kv_bits)
                 if kv_format_for(bits) not in decoder._failed
                 and any((kv_format_for(bits), c) not in decoder._ready for c in capacities))

    def report(status: DecodeStatus) -> None:
        decoder.status = status
        if on_status is not None:
            on_status(status)

    if require_cuda and model.device.type != "cuda":
        report(DecodeStatus("eager", "no CUDA device: decode runs eagerly (CUDA graphs need a GPU)", cause="no-cuda"))
        return decoder
    if not todo:
        return decoder
    if require_cuda:
        use_compile_caches()
        sampler_reason = nucleus_kernel.unavailable_reason(model.device)  # built here, not at the first token
        if sampler_reason:
            log.info("sampled tokens use the sort-based draw: %s", sampler_reason)
    report(DecodeStatus("compiling", f"optimizing decode for {_bits_label(todo)} "
                        f"({', '.join(map(str, capacities))} tokens)",
                        decoder.capacities, 0.0, decoder.ready_kv_bits, todo))
    started = time.perf_counter()
    for bits in todo:
        for capacity in capacities:
            if (kv_format_for(bits), capacity) in decoder._ready:
                continue
            try:
                decoder.compile_capacity(capacity, bits)
            except Exception as exc:  # any compile/capture failure: this format stays eager, say why
                log.warning("compiled decode failed for %d-bit KV, %d tokens", bits, capacity, exc_info=exc)
                lines = str(exc).strip().splitlines()
                decoder._failed[kv_format_for(bits)] = (f"{type(exc).__name__}: {lines[0][:200]}" if lines
                                                        else type(exc).__name__)
                break
    seconds = time.perf_counter() - started
    ready = decoder.ready_kv_bits
    failures = "; ".join(f"{_bits_label((_bits_of(fmt),))}: {why}" for fmt, why in decoder._failed.items()
                         if _bits_of(fmt) not in ready)  # a format ready at one capacity runs at all
    if not ready:
        decoder._compiled = None
        report(DecodeStatus("failed", f"compiled decode unavailable, eager fallback ({failures})",
                            (), seconds))
        return decoder
    how = ("one decoder layer compiled for all" if decoder.regional
           else f"the whole forward compiled: {decoder.regional_failure}")
    if decoder.regional and norm_fold.FOLD:  # asked for (HEADROOM_NORM_FOLD): say whether it holds
        how += (", its norms folded into the NF4 launches" if not decoder.fold_failure
                else f", norms not folded: {decoder.fold_failure}")
    reason = (f"compiled decode for {_bits_label(ready)} at every cache size (torch.compile, {how}; "
              "one CUDA graph per cache)")
    if failures:
        reason += f"; eager fallback for {failures}"
    report(DecodeStatus("ready", reason, decoder.capacities, seconds, ready))
    return decoder
