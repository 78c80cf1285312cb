"""Blockwise 8-bit prefill attention against the whole-span dequant it replaces (issue 16): one
attention layer of the Llama-3-8B shape (32 query heads, 8 KV heads, head_dim 128, bf16) over a
packed 8-bit static cache, on CUDA (the CPU with ``--cpu-smoke``, small sizes, logic only).

For each span and chunk: which path runs (torch's flash kernel with the log-sum-exp, else the
whole span), the largest difference between the two outputs relative to the largest output, the
transient of one layer call (CUDA ``max_memory_allocated`` above what was allocated before it)
and its time (median of ``--repeat`` calls, synchronized), for both paths. Prints a table and
writes JSON.

    python -m tests.benchmarks.kv8_blockwise                 # writes results/kv8_blockwise_cuda.json
    python -m tests.benchmarks.kv8_blockwise --cpu-smoke
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from pathlib import Path
from unittest import mock

import torch

from app.engine.local import attention, kv_quant
from app.engine.memory import kv_layout

HQ, HKV, HEAD_DIM = 32, 8, 128
RESULTS = Path(__file__).parent / "results"


def _layer_call(query, key, value, span, module):
    mask = torch.ones((1, 1, query.shape[2], key.shape[2]), dtype=torch.bool, device=query.device)
    mask[..., span:] = False
    mask[..., span - query.shape[2]:span] = torch.ones(query.shape[2], query.shape[2], device=query.device,
                                                       dtype=torch.bool).tril()
    return attention.gqa_packed_sdpa_forward(module, query, key, value, mask, scaling=HEAD_DIM ** -0.5,
                                             **{attention.KV_SPAN_KWARG: span})[0]


def _measure(fn, device, repeat):
    """(output, transient bytes, median seconds) of fn()."""
    cuda = device.type == "cuda"
    out = fn()
    if cuda:
        torch.cuda.synchronize()
        del out
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    out = fn()
    transient = (torch.cuda.max_memory_allocated() - base) if cuda else 0
    times = []
    for _ in range(repeat):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return out, transient, statistics.median(times)


def run(device, spans, chunks, repeat):
    module = torch.nn.Module()
    module.is_causal = True
    rows = []
    for span in spans:
        generator = torch.Generator(device="cpu").manual_seed(span)
        key = kv_quant.quantize(torch.randn(1, HKV, span, HEAD_DIM, generator=generator).to(device) * 2)
        value = kv_quant.quantize(torch.randn(1, HKV, span, HEAD_DIM, generator=generator).to(device))
        for chunk in chunks:
            query = torch.randn(1, HQ, chunk, HEAD_DIM, generator=generator).to(device, torch.bfloat16)
            applies = attention._sdpa_lse_applies(query, key, HQ // HKV)
            call = functools.partial(_layer_call, query, key, value, span, module)
            blockwise, block_bytes, block_s = _measure(call, device, repeat)
            with mock.patch.object(attention, "_sdpa_lse_applies", lambda *_: False):
                whole, whole_bytes, whole_s = _measure(call, device, repeat)
            error = float((blockwise.float() - whole.float()).abs().max() / whole.float().abs().max())
            rows.append(dict(span=span, chunk=chunk, blockwise_applies=applies, rel_error=error,
                             blockwise_transient_bytes=block_bytes, whole_span_transient_bytes=whole_bytes,
                             blockwise_ms=block_s * 1e3, whole_span_ms=whole_s * 1e3,
                             blocks=-(-(span - chunk) // kv_layout.KV8_PREFILL_BLOCK)))
            del call, query, blockwise, whole  # before the next sizes are measured
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-smoke", action="store_true", help="small sizes on the CPU, logic check")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", help="JSON path or folder (default results/kv8_blockwise_<device>.json)")
    args = parser.parse_args()
    if args.cpu_smoke:
        device, spans, chunks = torch.device("cpu"), (1_000, 9_000), (64,)
    else:
        device, spans, chunks = torch.device("cuda"), (16_384, 32_768, 98_304), (128, 1024)
    rows = run(device, spans, chunks, args.repeat)
    print(f"block {kv_layout.KV8_PREFILL_BLOCK} keys; one layer, {HQ}/{HKV} heads × {HEAD_DIM}, bf16, {device}")
    print(f"{'span':>7} {'chunk':>5} {'blocks':>6} {'lse':>4} {'rel err':>8} {'MB block':>9} {'MB whole':>9}"
          f" {'ms block':>9} {'ms whole':>9}")
    for r in rows:
        print(f"{r['span']:>7} {r['chunk']:>5} {r['blocks']:>6} {'yes' if r['blockwise_applies'] else 'no':>4}"
              f" {r['rel_error']:>8.1e} {r['blockwise_transient_bytes'] / 1e6:>9.1f}"
              f" {r['whole_span_transient_bytes'] / 1e6:>9.1f} {r['blockwise_ms']:>9.2f} {r['whole_span_ms']:>9.2f}")
    out = Path(args.out) if args.out else RESULTS
    if out.is_dir():  # a folder ($OUT on the device): the default name inside it
        out = out / f"kv8_blockwise_{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                                   torch=torch.__version__, block=kv_layout.KV8_PREFILL_BLOCK, rows=rows),
                              indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
