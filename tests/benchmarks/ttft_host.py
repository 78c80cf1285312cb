"""Headroom's own host time in a new chat's TTFT (issue 12, item 4): one turn of the window's path
(`TurnRunner.run_turn`, default settings) from "turn sent" to its first TextDelta, split into the
model's forward passes (the prefill, timed around ``model.forward``) and everything else.

Each measured turn is a NEW chat (its own conversation key, activated first as the window does
on "New chat"), with one user message of about ``--tokens`` tokens of English-like text. Before
them one throwaway turn loads what loads once per process (lazy imports, tokenizer caches).
Reported per turn: send-to-first-text ms, forward ms, host ms outside the forward (the
difference), and the planning part of it (up to TurnPlanned). With ``--profile`` one more turn
runs under cProfile with the profiler paused inside ``model.forward``, so the table is the host
work outside the forward only (cProfile's own overhead inflates Python-heavy rows). On CUDA,
``--synced-forward`` syncs around each forward so that forward_ms is the device's own time
(before_prefill_ms: turn sent to the first forward, planned_to_prefill_ms the part after
TurnPlanned: cache set-up and the generator's own; after_prefill_ms: the last forward's end to
the first text: sampling, the token's copy back, detokenizing), and ``--sync-log`` lists every
operation that waits for the device on one more turn (torch.cuda.set_sync_debug_mode).

Each row also counts Python's garbage collections inside the window and their ms per generation
(``gc_collections``, ``gc_ms``): the 1k-token TTFTs of one H200 run were 103 / 54 / 91 ms for the
same turn (results/chat_path_h200.md), and a full collection is tens of ms in a process this size.

``--static`` gives each new chat a static cache (as on CUDA: `new_static_cache`, allocated on the
first prefill) instead of the CPU's DynamicCache.

    python3 -m tests.benchmarks.ttft_host --profile              # CPU, the default model (SmolLM2-135M)
    python3 -m tests.benchmarks.ttft_host --tiny --profile       # 2-layer random Llama, same tokenizer
    python3 -m tests.benchmarks.ttft_host --model-dir DIR --synced-forward --sync-log --out $OUT  # H200
    python3 -m tests.benchmarks.ttft_host --model-dir DIR --synced-forward --idle-s 3 --out $OUT  # GPU idle first

Each row also has the caching allocator's cudaMalloc / cudaFree calls inside the window and the SM
clock when the message is sent: on an idle H200 the synced 1k prefill forward alone took 48-102 ms
for 7 alike new chats (results/ttft_host_h200.json), so the spread is on the device.

CPU figures are CPU figures: the forward dominates there; what matters is the host part.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine import events as ev
from app.engine.loading.loader import load_model
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import pick_probe


def english(tokens: int, seed: int, tokenizer) -> str:
    """About ``tokens`` tokens of distinct English-like text (distinct per seed, so no prefix is
    shared between chats)."""
    words = ("the", "memory", "of", "a", "turn", "cache", "holds", "keys", "and", "values", "for",
             "every", "token", "that", "was", "seen", "before", "model", "answers", "quickly")
    out, i = [], seed * 7919
    text = ""
    while True:
        out.extend(f"{words[(i + j * 13) % len(words)]}{(i + j) % 97}" for j in range(64))
        i += 64
        text = " ".join(out)
        if len(tokenizer.encode(text, add_special_tokens=False)) >= tokens:
            return text


class ForwardClock:
    """Wraps ``model.forward``: seconds spent inside it, calls, when the first began and the last
    ended (perf_counter); pauses ``profiler`` inside. synced: a device sync before and after each
    call (CUDA), so the seconds are the forward's own and the rest is host time outside it (the
    syncs are the benchmark's, not the app's)."""

    def __init__(self, model, synced: bool = False):
        self.model, self.inner, self.synced = model, model.forward, synced and torch.cuda.is_available()
        self.profiler = None
        self.reset()
        model.forward = self

    def __call__(self, *args, **kwargs):
        if self.profiler is not None:
            self.profiler.disable()
        if self.synced:
            torch.cuda.synchronize()
        t = time.perf_counter()
        self.first_began = self.first_began or t
        try:
            return self.inner(*args, **kwargs)
        finally:
            if self.synced:
                torch.cuda.synchronize()
            self.last_ended = time.perf_counter()
            self.seconds += self.last_ended - t
            self.calls += 1
            if self.profiler is not None:
                self.profiler.enable()

    def reset(self):
        self.seconds, self.calls, self.first_began, self.last_ended = 0.0, 0, 0.0, 0.0


class SyncLog:
    """CUDA operations that synchronize with the device (torch.cuda.set_sync_debug_mode "warn"),
    each with the innermost frames of the app or transformers that led to it."""

    def __init__(self):
        self.hits: list[dict] = []

    def __enter__(self):
        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("always")
        warnings.showwarning = self._show
        torch.cuda.set_sync_debug_mode("warn")
        return self

    def __exit__(self, *exc):
        torch.cuda.set_sync_debug_mode("default")
        self._catch.__exit__(*exc)

    def _show(self, message, category, filename, lineno, file=None, line=None):
        frames = [f"{f.filename.split('site-packages/')[-1].split('/work/')[-1]}:{f.lineno} {f.name}"
                  for f in traceback.extract_stack()[:-1]
                  if ("/app/" in f.filename or "transformers" in f.filename or "bitsandbytes" in f.filename)]
        self.hits.append({"warning": str(message)[:120], "frames": frames[-6:]})


class GcClock:
    """Python's cyclic garbage collections while it is entered: how many per generation and their
    ms (gc.callbacks), so a pause of the collector inside a TTFT shows (a full collection took ~200
    ms on the 2-core CPU box with transformers imported; the H200 process also holds Dynamo's and
    Inductor's objects)."""

    def __init__(self):
        self.counts, self.ms, self._began = [0, 0, 0], [0.0, 0.0, 0.0], 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.counts[info["generation"]] += 1
            self.ms[info["generation"]] += 1e3 * (time.perf_counter() - self._began)

    def __enter__(self):
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)


ALLOCATOR_COUNTS = ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_sync_all_streams")
"""torch.cuda.memory_stats() counters read around each turn: cudaMalloc / cudaFree calls by the
caching allocator (each can wait for the device), its retries after a failed cudaMalloc (a free of
every cached block, then a sync), and its whole-device syncs."""


def allocator_counts() -> dict[str, int]:
    """The ALLOCATOR_COUNTS now ({} off CUDA or in a torch without them)."""
    if not torch.cuda.is_available():
        return {}
    stats = torch.cuda.memory_stats()
    return {k: int(stats[k]) for k in ALLOCATOR_COUNTS if k in stats}


def sm_clock_mhz() -> int | None:
    """The GPU's current SM clock (NVML; None without pynvml or CUDA): an idle GPU lowers it, and a
    turn that starts before it ramps up runs slower (one lead for the 1k TTFT spread)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:  # no pynvml, no driver, no CUDA
        return None


def first_text(runner: TurnRunner, key: str, text: str, settings: GenerationSettings, clock: ForwardClock,
               static: bool, profiler: cProfile.Profile | None = None, sync_log: bool = False,
               idle_s: float = 0.0) -> dict:
    """One new chat's turn up to its first TextDelta; the rest of the turn runs after the clock
    stops. ``idle_s``: seconds the GPU idles after the chat is opened, before the message is sent
    (a user typing). Returns ms figures, plus the allocator's calls inside the window
    (`allocator_counts`) and the SM clock when the message is sent."""
    runner.activate(key, settings.kept_chat_cache_mib)  # "New chat", before the message is typed
    if static:
        runner.session.static = True
        prepare = getattr(runner.session, "prepare", None)  # absent before issue 12 item 4's change
        if prepare is not None:
            prepare(runner.loaded.model)  # what activate() prepared was a dynamic one
    messages = [Message(Role.USER, text)]
    clock.reset()
    clock.profiler = profiler
    row: dict = {}
    stop = threading.Event()
    syncs = SyncLog() if sync_log and torch.cuda.is_available() else contextlib.nullcontext()
    if idle_s > 0:
        time.sleep(idle_s)
    row["sm_clock_mhz"] = sm_clock_mhz()
    allocations = allocator_counts()
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    events = runner.run_turn(messages, SummaryState(), settings, stop, conversation_key=key)
    with syncs, GcClock() as collections:
        for event in events:
            if isinstance(event, ev.TurnPlanned):
                planned = time.perf_counter()
                row["planned_ms"] = 1e3 * (planned - started)
                row["prompt_tokens"] = len(event.plan.prompt_ids)
            elif isinstance(event, ev.TextDelta):
                break
            elif isinstance(event, (ev.TurnRefused, ev.TurnFailed)):
                raise RuntimeError(f"turn not run: {event}")
    done = time.perf_counter()
    wall = done - started
    if profiler is not None:
        profiler.disable()
    clock.profiler = None
    row.update(first_text_ms=1e3 * wall, forward_ms=1e3 * clock.seconds, forward_calls=clock.calls,
               host_ms=1e3 * (wall - clock.seconds), before_prefill_ms=1e3 * (clock.first_began - started),
               after_prefill_ms=1e3 * (done - clock.last_ended),
               planned_to_prefill_ms=1e3 * (clock.first_began - planned),
               gc_collections=collections.counts, gc_ms=[round(ms, 2) for ms in collections.ms],
               allocator={k: v - allocations.get(k, 0) for k, v in allocator_counts().items()})
    if isinstance(syncs, SyncLog):
        row["syncs"] = syncs.hits
    stop.set()
    for event in events:  # the rest of the turn (TurnCompleted), off the clock
        if isinstance(event, ev.TurnCompleted):
            row["ttft_ms"] = 1e3 * event.finished.ttft_s
    return row


def profile_table(profiler: cProfile.Profile, top: int) -> str:
    s = io.StringIO()
    stats = pstats.Stats(profiler, stream=s)
    stats.sort_stats("cumulative").print_stats(top)
    s.write("\n--- by own time ---\n")
    stats.sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true", help="2-layer random Llama with the default model's tokenizer")
    ap.add_argument("--model-dir", default=None, help="a model folder (default: the installed default model)")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--static", action="store_true", help="a static cache per new chat, as on CUDA")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--synced-forward", action="store_true",
                    help="CUDA: sync around each forward, so forward_ms is the device's and host_ms the rest")
    ap.add_argument("--sync-log", action="store_true",
                    help="CUDA: list the operations that synchronize with the device up to the first text")
    ap.add_argument("--idle-s", type=float, default=0.0,
                    help="seconds the GPU idles between opening each new chat and sending (a user typing)")
    ap.add_argument("--top", type=int, default=45)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    if args.model_dir:
        folder = Path(args.model_dir)
    else:
        from app.core.paths import default_model_path
        from app.engine.loading.loader import resolve_model_folder

        folder = resolve_model_folder(default_model_path())
        if args.tiny:
            from tests.helpers.tiny_models import build_tiny_llama

            folder = build_tiny_llama(Path(tempfile.mkdtemp(prefix="tiny-llama-")), folder)
    loaded = load_model(folder)
    runner = TurnRunner(loaded, pick_probe())
    runner.warm_up()
    settings = GenerationSettings(max_new_tokens=8)
    clock = ForwardClock(loaded.model, args.synced_forward)
    tokens = min(args.tokens, loaded.model.config.max_position_embeddings // 2)  # below the window's budget
    tok = loaded.tokenizer
    first_text(runner, "warm", english(64, 1, tok), settings, clock, args.static)  # once-per-process costs
    rows = [first_text(runner, f"chat-{i}", english(tokens, 100 + i, tok), settings, clock, args.static,
                       idle_s=args.idle_s) for i in range(args.turns)]
    for r in rows:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))
    summary = {k: statistics.median(r[k] for r in rows)
               for k in ("first_text_ms", "forward_ms", "host_ms", "planned_ms", "planned_to_prefill_ms",
                         "before_prefill_ms", "after_prefill_ms", "ttft_ms")}
    print("median", json.dumps({k: round(v, 2) for k, v in summary.items()}))
    R = {"model": str(folder), "tokens": tokens, "static": args.static, "idle_s": args.idle_s,
         "rows": rows, "median": summary,
         "device": str(loaded.model.device)}
    if args.sync_log:
        row = first_text(runner, "sync-log", english(tokens, 998, tok), settings, clock, args.static,
                         sync_log=True)
        R["sync_log"] = row.get("syncs", "no CUDA")
        print("syncs", json.dumps(R["sync_log"], indent=1))
    if args.profile:
        profiler = cProfile.Profile()
        row = first_text(runner, "profiled", english(tokens, 999, tok), settings, clock, args.static, profiler)
        print("profiled", json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}))
        table = profile_table(profiler, args.top)
        print(table)
        R["profiled"] = row
        R["profile"] = table
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        name = f"ttft_host_{loaded.model.device.type}{'_tiny' if args.tiny else ''}{'_static' if args.static else ''}"
        (Path(args.out) / f"{name}.json").write_text(json.dumps(R, indent=1, default=str))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
