"""Stop during a long CPU prefill (issue 14, trial findings): how long after Stop is pressed does
the reply end, with the chunking the app runs (`stream_reply` with the turn runner's
CPU_PREFILL_CHUNK, chunks sized to ~CPU_CHUNK_SECONDS by their measured time) against the fixed
256-token chunks it ran before; and what the sized chunks cost a prefill that runs to the end.

The real default model (SmolLM2-135M-Instruct), a prompt of `--tokens` random tokens, Stop
pressed `--stop-after` seconds into the prefill, each case `--repeats` times, the two chunkings
alternating, CPU threads chosen as the turn runner chooses them:

    python -m tests.benchmarks.prefill_stop_cpu --tokens 4096 --stop-after 20 --out tests/benchmarks/results

Prints a table and writes prefill_stop_cpu.json (machine, load average, figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.core.paths import default_model_path
from app.engine.events import ReplyFinished
from app.engine.loading.loader import load_model, resolve_model_folder
from app.engine.local import generation
from app.engine.local.cpu_threads import CpuLoadMeter, apply_cpu_threads
from app.engine.local.generation import CPU_PREFILL_CHUNK, SamplingParams, stream_reply
from app.engine.local.kv_session import KVSession


def fixed_chunks():
    """The old behaviour: every chunk CPU_PREFILL_CHUNK tokens, whatever it costs."""
    saved = generation.CPU_FIRST_CHUNK, generation.CPU_CHUNK_SECONDS
    generation.CPU_FIRST_CHUNK, generation.CPU_CHUNK_SECONDS = CPU_PREFILL_CHUNK, 1e6
    return saved


def restore(saved) -> None:
    generation.CPU_FIRST_CHUNK, generation.CPU_CHUNK_SECONDS = saved


def run_once(loaded, ids: list[int], stop_after: float | None, meter: CpuLoadMeter) -> dict:
    """One reply to `ids` (1 new token) with the turn runner's CPU thread choice; Stop set
    `stop_after` s in (None: never). Seconds."""
    threads = apply_cpu_threads(0, meter)
    stop = threading.Event()
    pressed = []
    if stop_after is not None:
        timer = threading.Timer(stop_after, lambda: (pressed.append(time.perf_counter()), stop.set()))
        timer.start()
    started = time.perf_counter()
    finished = None
    for event in stream_reply(loaded.model, loaded.tokenizer, ids, SamplingParams(max_new_tokens=1, temperature=0),
                              loaded.stop_ids, stop, (), CPU_PREFILL_CHUNK, session=KVSession()):
        if isinstance(event, ReplyFinished):
            finished = event
    ended = time.perf_counter()
    if stop_after is not None:
        timer.cancel()
    return {"seconds": round(ended - started, 2), "stop_reason": finished.stop_reason, "threads": threads,
            "stop_latency_s": round(ended - pressed[0], 2) if pressed else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--stop-after", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    meter = CpuLoadMeter()  # as the turn runner: threads = the cores other programs leave idle
    loaded = load_model(resolve_model_folder(default_model_path()))
    ids = torch.randint(1_000, 40_000, (args.tokens,), generator=torch.Generator().manual_seed(0)).tolist()
    results: dict[str, list[dict]] = {}
    # the two chunkings alternate, so a change in the machine's load hits both alike
    for repeat in range(args.repeats):
        for case, stop_after in (("stop", args.stop_after), ("full", None)):
            for name in ("fixed 256", "sized"):
                saved = fixed_chunks() if name == "fixed 256" else None
                try:
                    run = run_once(loaded, ids, stop_after, meter)
                finally:
                    if saved is not None:
                        restore(saved)
                results.setdefault(f"{name} / {case}", []).append(run)
                print(f"{repeat} {name:10} {case:5} {run['seconds']:6.1f} s ({run['stop_reason']}, "
                      f"{run['threads']} threads, stop latency {run['stop_latency_s']} s)", flush=True)
    report = {"machine": platform.node(), "cpus": os.cpu_count(), "threads": torch.get_num_threads(),
              "load_average": os.getloadavg(), "prompt_tokens": args.tokens, "stop_after_s": args.stop_after,
              "cpu_chunk_seconds": generation.CPU_CHUNK_SECONDS, "results": results}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "prefill_stop_cpu.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
