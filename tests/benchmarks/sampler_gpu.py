"""What one sampled token costs the GPU (issue 15, item 2: the next cost after the GEMV).

decode_anatomy measured the app's default sampler (temperature 0.7, top-p 0.95) at 0.375 ms a call
against greedy's 0.028, and the sampled chat decodes at 238 tok/s against greedy's 253 at 4k
(0.25 ms a token). In the decode loop the host enqueues the sampler while the GPU still runs the
step (generation._OneStepAhead), so what the token waits for is the sampler's *GPU* time. This
measures it with the host kept ahead (the GPU first sleeps, so every kernel is queued before the
first runs), per variant, on a Llama-3 vocabulary (128,256) of float32 logits:

- ``app``: `samplers.sample`, what the app runs (on CUDA `nucleus_kernel`'s sort-free draw where
  NVRTC builds it);
- ``sorted``: `samplers.draw_from_nucleus` (one sort, binary searches, one uniform), the app's CUDA
  draw until 2026-12-04;
- ``steps``: transformers' own steps (`process`, softmax, multinomial), the app's draw until
  2026-12-03 and still the CPU's;
- ``*_graph``: the same captured in one CUDA graph (launch gaps gone, same kernels);
- ``kernels``: each sampler's kernels and their GPU µs (torch.profiler);

Logits: ``flat`` (randn, as a random-init model gives: a nucleus of ~10^5 tokens) and ``peaked``
(randn × 8, a trained model's few-token nucleus).

Run 1 (results/sampler_gpu_h200_run1.json, before the nucleus draw) also timed torch.topk alone
at 100-114 µs for K = 256-4,096: a top-K prefilter costs more than the whole sort-based draw.

    python3 -m tests.benchmarks.sampler_gpu --out $OUT    # prints a table, writes sampler_gpu_h200.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from app.engine.local import samplers
from app.engine.local.generation import SamplingParams
from tests.benchmarks.speed import versions

VOCAB = 128_256
CALLS = 100


def gpu_us(fn, calls: int = CALLS) -> float:
    """GPU µs a call of ``fn`` with the host ahead: a sleep kernel holds the stream while every call
    is queued, and events time the calls alone."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(50_000_000)  # ~25 ms at 1.98 GHz: longer than queuing the calls takes
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def host_us(fn, calls: int = CALLS) -> float:
    """Host µs a call enqueues (no sync inside)."""
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - t
    torch.cuda.synchronize()
    return elapsed * 1e6 / calls


def graphed(fn):
    """``fn`` captured in one CUDA graph (default generator: capture-safe); returns its replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def kernels(fn) -> list[dict]:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
    rows = [{"name": e.key[:90], "count": e.count / 10, "us": e.device_time_total / 10}
            for e in prof.key_averages() if e.device_time_total > 0]
    return sorted(rows, key=lambda r: -r["us"])


def transformers_steps(logits: torch.Tensor, params: SamplingParams, seen: torch.Tensor) -> torch.Tensor:
    """`samplers.sample`'s CPU branch on any device: `process`, softmax, multinomial."""
    processed = samplers.process(logits, params, seen).reshape(-1)
    if params.temperature <= 0:
        return torch.argmax(processed).view(1)
    return torch.multinomial(torch.softmax(processed, -1), 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    args = ap.parse_args(argv)
    R: dict = {"command": "python3 -m tests.benchmarks.sampler_gpu", "versions": versions(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "vocab": VOCAB, "rows": []}
    default = SamplingParams(temperature=0.7, top_p=0.95)
    greedy = SamplingParams(temperature=0.0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dist, scale in (("flat", 1.0), ("peaked", 8.0)):
        logits = torch.randn(VOCAB, device="cuda", generator=gen) * scale
        seen = torch.zeros(VOCAB, dtype=torch.bool, device="cuda")
        for name, params in (("default", default), ("greedy", greedy)):
            def app(params=params, logits=logits, seen=seen):
                return samplers.sample(logits, params, None, seen)

            def steps(params=params, logits=logits, seen=seen):
                return transformers_steps(logits, params, seen)

            def sorted_draw(params=params, logits=logits):
                if params.temperature <= 0:
                    return torch.argmax(logits).view(1)
                return samplers.draw_from_nucleus(logits, params, None)
            row = {"logits": dist, "settings": name}
            for label, fn in (("app", app), ("sorted", sorted_draw), ("steps", steps)):
                row |= {f"{label}_gpu_us": gpu_us(fn), f"{label}_host_us": host_us(fn),
                        f"{label}_graph_gpu_us": gpu_us(graphed(fn))}
                if name == "default":
                    row[f"{label}_kernels"] = kernels(fn)
            R["rows"].append(row)
            print(json.dumps({k: v for k, v in row.items() if "kernels" not in k}), flush=True)
    print("\n| logits | settings | draw | GPU µs | in one graph | host µs |\n|---|---|---|---|---|---|")
    for r in R["rows"]:
        for label in ("app", "sorted", "steps"):
            print(f"| {r['logits']} | {r['settings']} | {label} | {r[f'{label}_gpu_us']:.1f} | "
                  f"{r[f'{label}_graph_gpu_us']:.1f} | {r[f'{label}_host_us']:.1f} |")
    for r in R["rows"]:
        for label in ("app", "sorted", "steps"):
            if f"{label}_kernels" in r:
                print(f"\n{label} kernels, {r['logits']} logits, default settings:")
                for k in r[f"{label}_kernels"][:12]:
                    print(f"  {k['us']:7.1f} µs  x{k['count']:.0f}  {k['name']}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sampler_gpu_h200.json").write_text(json.dumps(R, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
