"""Where a chat turn's decode time goes on the app path (issues 12 and 16): the window's
`TurnRunner`, default settings, Llama-3-8B shape in NF4 (random init, `speed.build_model`).

Per depth (a new chat whose first message is that long, then a short second turn, then the same
with greedy sampling): decode tok/s, the largest gap between two streamed tokens (a CUDA-graph
recording for a new cache shows there), and, on the chat's own cache, the compiled step alone
(CUDA events over back-to-back replays) and the default sampler alone, so that

    1 / tok/s  ≈  step + sampler + what the host adds.

Then the 8-bit KV step: its warm-up, and the same turns at 4k and 16k (issue 16: ≥ 0.95× 16-bit
at 4k). With ``--profile`` the warm-up runs under cProfile and its 40 costliest functions are kept;
with ``--kernels`` each depth keeps the step's kernels by GPU time (torch.profiler). ``--depths ''``
measures 8-bit only and compiles only the 8-bit step.

    python3 -m tests.benchmarks.decode_anatomy --out $OUT       # H200
    python3 -m tests.benchmarks.decode_anatomy --tiny --out /tmp/da  # CPU smoke test

Writes decode_anatomy_<machine>.json and prints it.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import json
import logging
import os
import pstats
import statistics
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.kv_precision import KV_8, KV_16
from app.core.settings import GenerationSettings
from app.engine import events as ev
from app.engine.loading.loader import load_model
from app.engine.local.generation import SamplingParams, sample_token
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import pick_probe
from tests.benchmarks.chat_path import compile_breakdown
from tests.benchmarks.speed import build_model, log, sync, versions, words


def turn(runner: TurnRunner, messages: list[Message], settings: GenerationSettings, key: str,
         kv_precision: str = KV_16) -> dict:
    """One turn as the window sends it; tok/s, TTFT, decode path, the largest gap (s) between
    two streamed pieces after the first, and where the host lost time: "stalls" (gaps over 1.5× the
    median gap, their count and their time past the median, ms) and the cyclic GC's collections
    during the turn (count and ms by generation; gc.callbacks), with the 1-minute load average of
    the host at the turn's start (the llama.cpp build of llama_cpp_same_run_h200.sh runs beside it)."""
    stamps, row, collections = [], {}, []
    started: list[float] = []

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            collections.append((info["generation"], time.perf_counter() - started[0]))

    load_1min = os.getloadavg()[0]
    gc.callbacks.append(on_gc)
    try:
        for event in runner.run_turn(messages, SummaryState(), settings, threading.Event(),
                                     conversation_key=key, kv_precision=kv_precision):
            if isinstance(event, ev.TextDelta):
                stamps.append(time.perf_counter())
            elif isinstance(event, ev.TurnCompleted):
                f = event.finished
                row.update(tok_s=f.decode_tokens_per_s, ttft_s=f.ttft_s, path=f.decode_path,
                           prompt=f.prompt_tokens, new=f.new_tokens, text=f.text)
            elif isinstance(event, (ev.TurnRefused, ev.TurnFailed)):
                row["error"] = getattr(getattr(event, "decision", None), "reason", None) or event.reason
    finally:
        gc.callbacks.remove(on_gc)
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    row["max_gap_s"] = max(gaps) if gaps else 0.0
    median = statistics.median(gaps) if gaps else 0.0
    stalls = [g - median for g in gaps if g > 1.5 * median]
    row["gaps"] = {"count": len(gaps), "median_ms": 1e3 * median, "stalls": len(stalls),
                   "stall_ms": 1e3 * sum(stalls), "load_1min": load_1min}
    row["gc"] = {f"gen{n}": {"count": sum(1 for g, _ in collections if g == n),
                             "ms": 1e3 * sum(t for g, t in collections if g == n)} for n in range(3)}
    row["capacity"] = runner.session.capacity_tokens
    text = row.pop("text", "")
    row["text_sha1"] = hashlib.sha1(text.encode()).hexdigest()[:12]  # greedy turns: equal across kernel choices
    messages.append(Message(Role.ASSISTANT, text))
    return row


def step_token(decoder) -> torch.Tensor:
    """The token the timed replays feed: the captured step's own buffer where the decoder has one (as
    a turn's sampler writes it: no copy kernel before each replay), else a tensor of ours (an older
    tree's decoder, tree_ab_h200.sh: each replay then copies it in first, as its turns did)."""
    buffer = getattr(decoder, "token_buffer", None)
    return buffer() if buffer is not None else torch.zeros((1, 1), dtype=torch.long, device="cuda")


def step_ms(runner: TurnRunner, steps: int) -> float | None:
    """The compiled step alone on the open chat's cache: ``steps`` back-to-back replays timed
    with CUDA events (the keys and values they write are cropped off afterwards)."""
    session, decoder = runner.session, runner.decoder
    cache = session.cache
    if cache is None or decoder is None or not decoder.can_run(cache) or not torch.cuda.is_available():
        return None
    spare = session.capacity_tokens - session.cached_tokens - 2
    steps = min(steps, spare)
    if steps < 8:
        return None
    token = step_token(decoder)
    with torch.inference_mode():
        decoder.step(token, cache)  # a first replay (records when the cache is new)
        sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps - 1):
            decoder.step(token, cache)
        end.record()
        sync()
        cache.crop(-steps)  # the fill counter back to the chat's tokens
    return start.elapsed_time(end) / (steps - 1)


def profiled_steps(runner: TurnRunner, call, calls: int):
    """torch.profiler over ``calls`` calls of ``call(decoder, token, cache)`` on the open chat's cache,
    after one call untraced (kernels loaded, a graph recorded); the keys and values they wrote are
    cropped off afterwards. None without a compiled step for the cache, or room in it."""
    from torch.profiler import ProfilerActivity, profile

    session, decoder = runner.session, runner.decoder
    cache = session.cache
    if cache is None or decoder is None or not decoder.can_run(cache) or not torch.cuda.is_available():
        return None
    if session.capacity_tokens - session.cached_tokens - 2 < calls + 1:
        return None
    token = step_token(decoder)
    with torch.inference_mode():
        call(decoder, token, cache)
        sync()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                call(decoder, token, cache)
            sync()
        cache.crop(-(calls + 1))
    return prof


def kernel_table(runner: TurnRunner, calls: int = 3, top: int = 30) -> dict | None:
    """What one compiled step runs on the GPU, kernel by kernel, on the open chat's cache: the
    compiled function called ``calls`` times outside its CUDA graph under torch.profiler (the
    same kernels the graph replays, each traced). Returns the ``top`` kernels by GPU time as
    {"name", "count", "us"} per step, the step's kernel total (µs) and kernel count."""
    prof = profiled_steps(runner, lambda decoder, token, cache: decoder._compiled(token, cache), calls)
    if prof is None:
        return None
    rows = [(e.key, e.count / calls, e.device_time_total / calls) for e in prof.key_averages()
            if e.device_time_total > 0]
    rows.sort(key=lambda r: -r[2])
    return {"kernels_per_step": sum(r[1] for r in rows), "us_per_step": sum(r[2] for r in rows),
            "top": [{"name": name[:120], "count": count, "us": us} for name, count, us in rows[:top]]}


def critical_path(runner: TurnRunner, replays: int = 5, out_dir: Path | None = None) -> dict | None:
    """Where the step's time goes on its critical path, kernel by kernel: ``replays`` replays of the
    compiled step's CUDA graph (``decoder.step``, as a turn runs it) traced by torch.profiler. On one
    stream a kernel adds ``end - end of the kernel before`` to the step, whatever it overlaps with
    programmatic dependent launch (its own duration counts its wait for the kernel before). Returns
    per label (kernel name, the n-th of its name within a layer for the GEMVs and norms) the µs it
    adds a step, its mean duration, its mean start after the kernel before ended (negative: launched
    early) and count a step; with ``out_dir`` the chrome trace goes there too."""
    prof = profiled_steps(runner, lambda decoder, token, cache: decoder.step(token, cache), replays)
    if prof is None:
        return None
    trace = Path(out_dir or "/tmp") / "critical_path_trace.json"
    trace.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(trace))
    kernels = sorted((e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "kernel"),
                     key=lambda e: e["ts"])
    if out_dir is None:
        trace.unlink()
    if len(kernels) < 2:
        return {"error": f"{len(kernels)} kernel events traced (graph nodes not traced?)"}
    rows: dict = {}
    seen: dict = {}
    end_before = kernels[0]["ts"] + kernels[0]["dur"]
    for e in kernels[1:]:
        name = e["name"]
        seen[name] = seen.get(name, 0) + 1
        label = name[:70]
        if "nf4_mma" in name or "triton_red" in name:  # q/k/v vs gate/up, o vs down, the two norms
            label += f" #{(seen[name] - 1) % 2}"
        end = e["ts"] + e["dur"]
        row = rows.setdefault(label, {"adds_us": 0.0, "dur_us": 0.0, "start_after_us": 0.0, "count": 0})
        row["adds_us"] += max(0.0, end - end_before)
        row["dur_us"] += e["dur"]
        row["start_after_us"] += e["ts"] - end_before
        row["count"] += 1
        end_before = max(end_before, end)
    span = (end_before - kernels[0]["ts"]) / replays
    table = {label: {"adds_us": r["adds_us"] / replays, "dur_us": r["dur_us"] / r["count"],
                     "start_after_us": r["start_after_us"] / r["count"], "count": r["count"] / replays}
             for label, r in sorted(rows.items(), key=lambda kv: -kv[1]["adds_us"])}
    return {"replays": replays, "traced_us_per_step": span, "kernels_per_step": len(kernels) / replays,
            "labels": table}


def sampler_ms(vocab: int, params: SamplingParams, calls: int = 50) -> float:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    logits = torch.randn(vocab, device=device)
    sample_token(logits, params, None, None)
    sync()
    t = time.perf_counter()
    for _ in range(calls):
        sample_token(logits, params, None, None)
    sync()
    return (time.perf_counter() - t) / calls * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--model-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "llama8b"))
    ap.add_argument("--profile", action="store_true", help="run the warm-up under cProfile")
    ap.add_argument("--kernels", action="store_true", help="per depth, the step's kernels (torch.profiler)")
    ap.add_argument("--critical-path", action="store_true",
                    help="per depth, what each kernel adds to the replayed step (torch.profiler)")
    ap.add_argument("--depths", default="1024,4096,16384,21000", help="16-bit chats, prompt tokens")
    ap.add_argument("--kv8-depths", default="1024,4096,16384", help="8-bit chats ('' = none)")
    args = ap.parse_args(argv)
    R: dict = {"command": "python3 -m tests.benchmarks.decode_anatomy " + " ".join(argv or sys.argv[1:]),
               "versions": versions(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ("decode_anatomy_cpu_tiny.json" if args.tiny else "decode_anatomy_h200.json")

    def save():
        path.write_text(json.dumps(R, indent=1, default=str))

    folder = Path(args.model_dir + ("-tiny" if args.tiny else ""))
    build_model(folder, args.tiny)
    logging.basicConfig(level=logging.WARNING)
    for name in ("app.engine.loading.loader", "app.engine.local.nf4_hook"):  # the NF4 GEMV's choices and why
        logging.getLogger(name).setLevel(logging.INFO)
    loaded = load_model(folder)
    R["load_report"] = loaded.report.summary()
    R["load_seconds"] = loaded.report.load_seconds  # includes the NF4 GEMV's self-check and timing when on
    R["decode_kernel"] = loaded.report.decode_kernel  # NF4 decode rows: which GEMV (issue 15)
    R["lm_head"] = loaded.report.lm_head  # "int8" (int8_head) or why it stayed 16-bit
    print(f"lm_head: {loaded.report.lm_head}", flush=True)
    print("decode kernel:", R["decode_kernel"], "| load", round(R["load_seconds"], 1), "s", flush=True)
    runner = TurnRunner(loaded, pick_probe())
    profile = cProfile.Profile() if args.profile else None
    t = time.perf_counter()
    if profile:
        profile.enable()
    depths = tuple(int(n) for n in args.depths.split(",") if n) if not args.tiny else (64, 256)
    if depths:
        status = runner.warm_up()
    else:  # 8-bit rows only: compile the 8-bit step alone (the 16-bit one would cost a minute)
        from app.engine.local.compiled_decode import warm_up as compile_step

        runner.calibrate()
        runner.decoder = compile_step(loaded, kv_bits=(8,), decoder=runner.decoder)
        status = runner.decoder.status
    decoder = runner.decoder
    R["warm_up"] = {"seconds": time.perf_counter() - t, "state": status.state, "reason": status.reason,
                    "compile_times": compile_breakdown(),
                    # the step as built: one layer compiled for all (or why not), its norms folded (or why not)
                    "regional_failure": getattr(decoder, "regional_failure", None),
                    "norms_folded": getattr(decoder, "fold_failure", None) or "yes"}
    if profile:
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(40)
        R["warm_up"]["profile_top40"] = text.getvalue()[-12000:]
    log("warm-up", R["warm_up"]["seconds"], status.reason)
    save()
    vocab = loaded.model.config.vocab_size
    settings = GenerationSettings(max_new_tokens=256 if not args.tiny else 16)
    greedy = replace(settings, temperature=0.0)
    R["sampler_ms"] = {"default": sampler_ms(vocab, SamplingParams(temperature=settings.temperature,
                                                                   top_p=settings.top_p, top_k=settings.top_k,
                                                                   min_p=settings.min_p)),
                       "greedy": sampler_ms(vocab, SamplingParams(temperature=0.0))}
    log("sampler", R["sampler_ms"])
    kv8_depths = tuple(int(n) for n in args.kv8_depths.split(",") if n) if not args.tiny else (64,)
    R["kv16"] = []
    for n in depths:
        key = f"d{n}"
        runner.activate(key, settings.kept_chat_cache_mib)
        messages = [Message(Role.USER, words(n - 40, 11 + n, vocab))]
        row = {"depth": n, "first": turn(runner, messages, settings, key)}
        messages.append(Message(Role.USER, words(300, 12 + n, vocab)))
        row["second"] = turn(runner, messages, settings, key)
        messages.append(Message(Role.USER, words(300, 13 + n, vocab)))
        row["greedy"] = turn(runner, messages, greedy, key)
        row["step_ms"] = step_ms(runner, 64)
        if args.kernels:
            row["kernels"] = kernel_table(runner)
        if args.critical_path:
            row["critical_path"] = critical_path(runner, out_dir=out_dir / f"trace_{n}")
        R["kv16"].append(row)
        log(json.dumps(row, default=str))
        save()
    from app.engine.local.compiled_decode import warm_up

    t = time.perf_counter()
    try:
        warm_up(loaded, kv_bits=(8,), decoder=runner.decoder)
    except Exception as exc:
        R["kv8_warm_up_error"] = repr(exc)
    R["kv8_warm_up_s"] = time.perf_counter() - t
    R["kv8_status"] = runner.decoder.status.reason if runner.decoder else None
    log("kv8 warm-up", R["kv8_warm_up_s"], R["kv8_status"])
    R["kv8"] = []
    for n in kv8_depths:
        key = f"k8-{n}"
        runner.activate(key, settings.kept_chat_cache_mib)
        messages = [Message(Role.USER, words(n - 40, 21 + n, vocab))]
        row = {"depth": n, "first": turn(runner, messages, settings, key, KV_8)}
        messages.append(Message(Role.USER, words(300, 22 + n, vocab)))
        row["second"] = turn(runner, messages, settings, key, KV_8)
        row["step_ms"] = step_ms(runner, 64)
        if args.kernels:
            row["kernels"] = kernel_table(runner)
        R["kv8"].append(row)
        log(json.dumps(row, default=str))
        save()
    sixteen = {row["depth"]: row["second"].get("tok_s") for row in R["kv16"]}
    R["kv8_vs_kv16"] = {row["depth"]: row["second"].get("tok_s", 0) / sixteen[row["depth"]]
                        for row in R["kv8"] if sixteen.get(row["depth"])}
    save()
    print(json.dumps({k: v for k, v in R.items() if k != "warm_up"}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
