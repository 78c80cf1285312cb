"""The decode step captured as CUDA graphs by `torch.compile(mode="reduce-overhead")` (issue 5,
item 3).

transformers does not compile bitsandbytes 4-bit models in `generate()` (its bnb quantizer says
`is_compileable = False`), so Headroom compiles its own decode step: one token through the
model over a preallocated `StaticCache`, with `torch.compiler.cudagraph_mark_step_begin()`
before every step so a replay may overwrite the previous step's outputs (without it the graph
output is "overwritten by a later run", ../shared/gpu/README.md). Measured there for the
Llama-3-8B shape in NF4: eager 16.1 tok/s, static cache 34.8, this path 178.5.

`warm_up(loaded)` compiles once after load, off the GUI thread, and reports "compiling" →
"ready" or "failed" (with the reason) through a callback and the returned
`CompiledDecode.status`. Until it is ready, or when compiling fails, or on the CPU, generation
decodes eagerly; `ReplyFinished.decode_path` says which path ran.

One compile serves every cache capacity (issue 12): sessions build their caches with
`static_cache.new_static_cache`, whose layers expose the capacity only as a dynamic tensor
dimension, so the step is traced once with a symbolic capacity (``dynamic=None`` honours the
dimension marked dynamic and keeps every other shape static). With CUDA graphs, the first steps
at a capacity not seen before record one more graph (milliseconds; still the compiled path);
nothing recompiles when a chat grows. Caches of plain `StaticCache` layers (no symbolic
capacity) still run compiled only at capacities warmed up explicitly.
CUDA-graph trees are per thread: warm up in the thread that will generate, or the first steps
in another thread record the graph again (about a second, not a recompile).
Inductor's on-disk caches go to the user cache folder (`inductor_cache_dir`), so a second launch
loads the compiled kernels instead of generating them again.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from app.engine.local.generation import cache_kwarg
from app.engine.local.kv_session import CAPACITY_STEP
from app.engine.local.static_cache import capacity_of, is_span_cache, new_static_cache

log = logging.getLogger(__name__)

WARM_UP_PROMPT_TOKENS = 8
WARM_UP_STEPS = 3  # 1: compile + eager warm-up run, 2: CUDA-graph record, 3: first replay


@dataclass(frozen=True)
class DecodeStatus:
    """state: "eager" (nothing compiled: CPU, or not warmed up), "compiling", "ready" or
    "failed". reason: one line for the user (why eager, or why compiling failed).
    capacities: static-cache sizes (tokens) warmed up (every size runs compiled once one is
    ready, see the module docstring). seconds: warm-up time."""

    state: str
    reason: str = ""
    capacities: tuple[int, ...] = ()
    seconds: float = 0.0


class CompiledDecode:
    """The compiled decode step of one loaded model; pass it to generation as ``decoder=``.

    status: the latest DecodeStatus. can_run(cache) -> bool: a compiled step is ready for this
    cache's shape. step(input_ids (1, 1) long, cache) -> last-position logits (vocab,) float32,
    valid until the next step (CUDA-graph output buffer).
    """

    def __init__(self, model, compiler: Callable | None = None):
        self.model = model
        self.status = DecodeStatus("eager", "not warmed up yet")
        self._compiler = compiler or _reduce_overhead
        self._compiled = None
        self._ready: set[int] = set()
        self._lock = threading.Lock()
        self._cache_kw = cache_kwarg(type(model))

    def _forward(self, input_ids: torch.Tensor, cache) -> torch.Tensor:
        out = self.model(input_ids=input_ids, use_cache=True, logits_to_keep=1,
                         **{self._cache_kw: cache})
        return out.logits[0, -1].float()

    def can_run(self, cache) -> bool:
        """A compiled step is ready for ``cache``: any capacity of a span cache once one
        capacity compiled, else only the capacities warmed up."""
        if self._compiled is None or not self._ready:
            return False
        return is_span_cache(cache) or capacity_of(cache) in self._ready

    def step(self, input_ids: torch.Tensor, cache) -> torch.Tensor:
        torch.compiler.cudagraph_mark_step_begin()
        return self._compiled(input_ids, cache)

    def compile_capacity(self, capacity: int) -> None:
        """Compile, warm up and record the step for a StaticCache of ``capacity`` tokens, on a
        scratch cache that is freed afterwards. Raises whatever torch.compile raises."""
        model = self.model
        with self._lock, torch.inference_mode():
            if self._compiled is None:
                self._compiled = self._compiler(self._forward)
            cache = new_static_cache(model.config, capacity)
            prompt = torch.zeros((1, WARM_UP_PROMPT_TOKENS), dtype=torch.long, device=model.device)
            model(input_ids=prompt, use_cache=True, logits_to_keep=1, **{self._cache_kw: cache})
            token = torch.zeros((1, 1), dtype=torch.long, device=model.device)
            for _ in range(WARM_UP_STEPS):
                self.step(token, cache)
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            del cache, prompt, token
            self._ready.add(capacity)


def _reduce_overhead(fn: Callable) -> Callable:
    # dynamic=None: only the dimensions marked dynamic (the cache capacity) are symbolic
    return torch.compile(fn, mode="reduce-overhead", dynamic=None)


def inductor_cache_dir() -> str:
    """Where torch.compile keeps its on-disk caches: ``TORCHINDUCTOR_CACHE_DIR`` when the user set
    it, else ``<user cache folder>/torchinductor`` (platformdirs, e.g. ~/.cache/headroom/...),
    put in the environment so Inductor's FX-graph, AOT-autograd and Triton caches land there and
    a second launch reuses them. torch writes its own /tmp default into the variable the first
    time it looks; that default is replaced."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    path = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not path or os.path.abspath(path) == os.path.abspath(default_cache_dir()):
        try:
            import platformdirs

            base = platformdirs.user_cache_dir("headroom", appauthor=False)
        except ImportError:
            base = os.path.join(os.path.expanduser("~"), ".cache", "headroom")
        path = os.path.join(base, "torchinductor")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    return path


def warm_up(loaded, capacities: Iterable[int] = (CAPACITY_STEP,),
            on_status: Callable[[DecodeStatus], None] | None = None,
            decoder: CompiledDecode | None = None, compiler: Callable | None = None,
            require_cuda: bool = True) -> CompiledDecode:
    """Compile the decode step of ``loaded.model`` for static caches of ``capacities`` tokens.

    Blocking (one compile: 80.6 s for an 8B NF4 model on an H200 with a cold Inductor cache,
    19.0 s with a warm one, tests/benchmarks/results/chat_path_h200.json; other capacities only
    record CUDA graphs): call it from a worker thread after load. Reports
    DecodeStatus("compiling") then "ready" or "failed" (reason = exception type and first
    line) via ``on_status`` and returns the decoder (pass an existing one to add capacities).
    On the CPU (require_cuda) nothing is compiled: status "eager" with the reason. Never raises
    for a compile failure; generation then stays eager.
    """
    model = loaded.model
    decoder = decoder or CompiledDecode(model, compiler)
    capacities = tuple(sorted(set(int(c) for c in capacities)))

    def report(status: DecodeStatus) -> None:
        decoder.status = status
        if on_status is not None:
            on_status(status)

    if require_cuda and model.device.type != "cuda":
        report(DecodeStatus("eager", "no CUDA device: decode runs eagerly (CUDA graphs need a GPU)"))
        return decoder
    if require_cuda:
        inductor_cache_dir()
    report(DecodeStatus("compiling", f"optimizing decode for {', '.join(map(str, capacities))} tokens",
                        tuple(sorted(decoder._ready))))
    started = time.perf_counter()
    failure = None
    for capacity in capacities:
        if capacity in decoder._ready:
            continue
        try:
            decoder.compile_capacity(capacity)
        except Exception as exc:  # any compile/capture failure: stay eager, say why
            log.warning("compiled decode failed for %d tokens", capacity, exc_info=exc)
            lines = str(exc).strip().splitlines()
            failure = f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
            break
    seconds = time.perf_counter() - started
    ready = tuple(sorted(decoder._ready))
    if failure is not None:
        if not ready:
            decoder._compiled = None
        report(DecodeStatus("failed", f"compiled decode unavailable, eager fallback ({failure})",
                            ready, seconds))
    else:
        report(DecodeStatus("ready", "compiled decode for every cache size (torch.compile "
                            "reduce-overhead, CUDA graphs)",
                            ready, seconds))
    return decoder
