"""The 8-bit KV attention kernel alone (issue 16): agreement with the torch path and GPU time per
layer, against the app's 16-bit decode attention over the same keys.

Llama-3-8B shapes (8 KV heads × 4 query heads, head_dim 128, bf16), at 4k, 32k and 97.5k keys:

* decode: ``kv8_attention.kv8_decode`` (which rotates the query in and the output back inside
  its kernels) vs ``attention._packed_decode`` (the 16-bit step's attention: the same split-KV
  kernel over 16-bit keys, ``kv16_decode``, and, as "kv16 torch", torch's products with the
  kernel turned off) and vs ``attention._packed_decode_8bit``, what the 8-bit step runs per layer. Each is recorded
  as a CUDA graph of ``REPEAT`` calls and replayed, timed with CUDA events: GPU time, as inside
  the compiled step's graph (an eager Python loop measures the launches instead: ~300 µs).
* prefill: ``kv8_prefill`` for a 4,096- and a 128-token chunk ending at the span (eager, events).

Relative L2 errors against ``kv8_attention.reference`` (decode) and a float32 causal attention of
the chunk's last 64 queries (prefill).

    python3 -m tests.benchmarks.kv8_kernel --out $OUT          # CUDA; writes kv8_kernel_h200.json
    python3 -m tests.benchmarks.kv8_kernel --out $OUT --sweep  # + the decode op over split choices

``--sweep``: kv8_decode's GPU µs for each (SPLIT_WAVES, MIN_SPLIT_TILES) in ``SWEEP``, at each
span, to pick the constants of kv8_attention (measured 2026-12-02: the defaults are within 1 %).

``--prefill-sweep``: kv8_prefill's ms for a 4,096-token chunk ending at each span for each
(PREFILL_ROWS, PREFILL_BLOCK_N, PREFILL_WARPS) in ``PREFILL_SWEEP``, beside torch's flash SDPA over the same span
in bf16 (`attention._flash_span`, the 16-bit prefill): the 8-bit prefill of a 32k prompt took
5.3 s to its first token against 1.7 s at 16-bit (results/decode_anatomy_h200_whole_forward_kernels.json).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import attention, kv8_attention, kv_quant

REPEAT = 20
SWEEP = [(waves, tiles) for waves in (2, 4, 8, 16) for tiles in (1, 2, 4)]
PREFILL_SWEEP = [(rows, block, warps) for rows in (64, 128) for block in (64, 128) for warps in (4, 8)]
KV_HEADS, GROUPS, HEAD_DIM = 8, 4, 128


def graph_us(fn, repeat: int = REPEAT, replays: int = 10) -> float:
    """GPU µs per call of ``fn``: ``repeat`` calls captured in one CUDA graph, replayed."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph.capture_begin(capture_error_mode="thread_local")
        for _ in range(repeat):
            fn()
        graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / (replays * repeat)


def event_ms(fn, calls: int = 5) -> float:
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def relative(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want.float()).norm() / want.float().norm())


def torch_products_us(fn) -> float:
    """graph_us of a 16-bit decode with the split-KV kernel turned off (torch's products)."""
    kept = kv8_attention.KV16_KERNEL
    kv8_attention.KV16_KERNEL = False
    try:
        return graph_us(fn)
    finally:
        kv8_attention.KV16_KERNEL = kept


def measure(span: int, g: torch.Generator) -> dict:
    """One row of the table for ``span`` keys (see the module docstring)."""
    dev, dt = torch.device("cuda"), torch.bfloat16
    scale = HEAD_DIM ** -0.5
    kf = torch.randn(1, KV_HEADS, span, HEAD_DIM, device=dev, generator=g) * 2
    vf = torch.randn(1, KV_HEADS, span, HEAD_DIM, device=dev, generator=g)
    key, value = kv_quant.quantize(kf), kv_quant.quantize(vf)
    k16, v16 = kf.to(dt), vf.to(dt)
    del kf, vf
    q = torch.randn(1, KV_HEADS, GROUPS, HEAD_DIM, device=dev, dtype=dt, generator=g)
    q_heads = q.reshape(1, KV_HEADS * GROUPS, 1, HEAD_DIM)
    mask = (torch.arange(span, device=dev) < span - 7).view(1, 1, 1, span)
    valid = mask[:, 0, 0, :]
    row = {"span": span,
           "decode_rel_err": relative(kv8_attention.kv8_decode(q, key, value, valid, scale),
                                      kv_quant.rotate(kv8_attention.reference(kv_quant.rotate(q), key, value,
                                                                              valid, scale))),
           "kv8_decode_us": graph_us(lambda: kv8_attention.kv8_decode(q, key, value, valid, scale)),
           "kv8_layer_attention_us": graph_us(lambda: attention._packed_decode_8bit(
               q_heads, key, value, mask, scale, GROUPS)),
           "kv16_layer_attention_us": graph_us(lambda: attention._packed_decode(
               q_heads, k16, v16, mask, 0.0, scale, GROUPS)),
           "kv16_torch_layer_attention_us": torch_products_us(lambda: attention._packed_decode(
               q_heads, k16, v16, mask, 0.0, scale, GROUPS)),
           "kv8_bytes_read_mb": 2 * key.numel() / 1e6, "kv16_bytes_read_mb": 2 * k16.numel() * 2 / 1e6}
    row["kv8_decode_tb_s"] = row["kv8_bytes_read_mb"] / row["kv8_decode_us"]  # MB/µs = TB/s
    for chunk in (4096, 128):
        if chunk <= span:
            row.update(prefill_row(chunk, span, key, value, g))
    row["triton_failure"] = kv8_attention.triton_failure
    return row


def sweep(span: int, g: torch.Generator) -> list[dict]:
    """kv8_decode's GPU µs at ``span`` keys for each (waves, tiles) of SWEEP."""
    dev, scale = torch.device("cuda"), HEAD_DIM ** -0.5
    key = kv_quant.quantize(torch.randn(1, KV_HEADS, span, HEAD_DIM, device=dev, generator=g))
    value = kv_quant.quantize(torch.randn(1, KV_HEADS, span, HEAD_DIM, device=dev, generator=g))
    q = torch.randn(1, KV_HEADS, GROUPS, HEAD_DIM, device=dev, dtype=torch.bfloat16, generator=g)
    valid = (torch.arange(span, device=dev) < span - 7).view(1, span)
    rows, kept = [], (kv8_attention.SPLIT_WAVES, kv8_attention.MIN_SPLIT_TILES)
    try:
        for waves, tiles in SWEEP:
            kv8_attention.SPLIT_WAVES, kv8_attention.MIN_SPLIT_TILES = waves, tiles
            us = graph_us(lambda: kv8_attention.kv8_decode(q, key, value, valid, scale))
            rows.append({"waves": waves, "tiles": tiles, "splits": kv8_attention.splits_for(span, KV_HEADS),
                         "us": us, "tb_s": 2 * key.numel() / 1e6 / us})
    finally:
        kv8_attention.SPLIT_WAVES, kv8_attention.MIN_SPLIT_TILES = kept
    return rows


def prefill_row(chunk: int, span: int, key: torch.Tensor, value: torch.Tensor, g: torch.Generator) -> dict:
    dev, scale = key.device, HEAD_DIM ** -0.5
    qp = torch.randn(1, KV_HEADS * GROUPS, chunk, HEAD_DIM, device=dev, dtype=torch.bfloat16, generator=g)
    out = kv8_attention.kv8_prefill(qp, key, value, span, scale)
    k = kv_quant.dequantize(key, torch.float32).repeat_interleave(GROUPS, 1)
    v = kv_quant.dequantize(value, torch.float32).repeat_interleave(GROUPS, 1)
    scores = qp[:, :, -64:].float() @ k.transpose(2, 3) * scale
    position = torch.arange(span - 64, span, device=dev).view(-1, 1)
    scores = scores.masked_fill(torch.arange(span, device=dev).view(1, -1) > position, float("-inf"))
    want = (scores.softmax(-1) @ v).transpose(1, 2)
    return {f"prefill_{chunk}_rel_err": relative(out[:, -64:], want),
            f"prefill_{chunk}_ms": event_ms(lambda: kv8_attention.kv8_prefill(qp, key, value, span, scale))}


def prefill_sweep(span: int, key: torch.Tensor, value: torch.Tensor, g: torch.Generator, chunk: int = 4096) -> dict:
    """ms of kv8_prefill for each PREFILL_SWEEP choice, and of the 16-bit flash prefill."""
    dev, scale = key.device, HEAD_DIM ** -0.5
    qp = torch.randn(1, KV_HEADS * GROUPS, chunk, HEAD_DIM, device=dev, dtype=torch.bfloat16, generator=g)
    k16 = kv_quant.dequantize(key[:, :, :span], torch.bfloat16).contiguous()
    v16 = kv_quant.dequantize(value[:, :, :span], torch.bfloat16).contiguous()
    out = {"chunk": chunk, "flash_bf16_ms": event_ms(lambda: attention._flash_span(qp, k16, v16, scale, GROUPS)),
           "kv8": []}
    kept = kv8_attention.PREFILL_ROWS, kv8_attention.PREFILL_BLOCK_N, kv8_attention.PREFILL_WARPS
    try:
        for rows, block, warps in PREFILL_SWEEP:
            kv8_attention.PREFILL_ROWS, kv8_attention.PREFILL_BLOCK_N, kv8_attention.PREFILL_WARPS = rows, block, warps
            try:
                ms = event_ms(lambda: kv8_attention.kv8_prefill(qp, key, value, span, scale))
            except Exception as exc:  # a choice that does not build (registers, shared memory)
                ms = f"{type(exc).__name__}: {exc}"[:200]
            out["kv8"].append({"rows": rows, "block": block, "warps": warps, "ms": ms})
    finally:
        kv8_attention.PREFILL_ROWS, kv8_attention.PREFILL_BLOCK_N, kv8_attention.PREFILL_WARPS = kept
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--spans", default="4096,32768,97536")
    ap.add_argument("--sweep", action="store_true", help="kv8_decode over SWEEP's split choices")
    ap.add_argument("--prefill-sweep", action="store_true", help="kv8_prefill over PREFILL_SWEEP, beside flash")
    args = ap.parse_args(argv)
    dev, dt = torch.device("cuda"), torch.bfloat16
    R = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
         "self_check": kv8_attention.self_check(dev, dt, HEAD_DIM), "rows": []}
    g = torch.Generator(device=dev).manual_seed(0)
    for span in (int(s) for s in args.spans.split(",")):
        try:
            row = measure(span, g)
        except Exception as exc:  # keep the rows measured so far
            row = {"span": span, "error": f"{type(exc).__name__}: {exc}"[:500]}
        if args.sweep and "error" not in row:
            row["sweep"] = sweep(span, g)
        if args.prefill_sweep and "error" not in row:
            key = kv_quant.quantize(torch.randn(1, KV_HEADS, span, HEAD_DIM, device="cuda", generator=g) * 2)
            value = kv_quant.quantize(torch.randn(1, KV_HEADS, span, HEAD_DIM, device="cuda", generator=g))
            row["prefill_sweep"] = prefill_sweep(span, key, value, g)
            del key, value
        R["rows"].append(row)
        print(json.dumps(row))
        torch.cuda.empty_cache()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "kv8_kernel_h200.json").write_text(json.dumps(R, indent=1))
    for row in (r for r in R["rows"] if r.get("sweep")):
        best = min(row["sweep"], key=lambda r: r["us"])
        print(f"span {row['span']}: best split choice {best}")
    for row in (r for r in R["rows"] if r.get("prefill_sweep")):
        p = row["prefill_sweep"]
        timed = [c for c in p["kv8"] if isinstance(c["ms"], float)]
        best = min(timed, key=lambda c: c["ms"]) if timed else None
        print(f"span {row['span']}: prefill of {p['chunk']} tokens, flash bf16 {p['flash_bf16_ms']:.2f} ms, "
              f"8-bit {[(c['rows'], c['block'], c['warps'], c['ms']) for c in p['kv8']]}, best {best}")
    print(f"{'span':>7} {'kv8 op µs':>10} {'kv8 layer µs':>13} {'kv16 layer µs':>14} {'kv16 torch µs':>14} "
          f"{'kv8 TB/s':>9}")
    for row in (r for r in R["rows"] if "error" not in r):
        print(f"{row['span']:>7} {row['kv8_decode_us']:>10.1f} {row['kv8_layer_attention_us']:>13.1f} "
              f"{row['kv16_layer_attention_us']:>14.1f} {row['kv16_torch_layer_attention_us']:>14.1f} "
              f"{row['kv8_decode_tb_s']:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
