"""The 8-bit KV attention kernel alone (issue 16): agreement with the torch path and GPU time per
layer, against the app's 16-bit decode attention over the same keys.

Llama-3-8B shapes (8 KV heads × 4 query heads, head_dim 128, bf16), at 4k, 32k and 97.5k keys:

* decode: ``split_kv_attention.kv8_decode`` (which rotates the query in and the output back inside
  its kernels) vs ``attention._packed_decode`` (the 16-bit step's attention: the same split-KV
  kernel over 16-bit keys, ``kv16_decode``, and, as "kv16 torch", torch's products with the
  kernel turned off) and vs ``attention._packed_decode_8bit``, what the 8-bit step runs per layer. Each is recorded
  as a CUDA graph of ``REPEAT`` calls and replayed, timed with CUDA events: GPU time, as inside
  the compiled step's graph (an eager Python loop measures the launches instead: ~300 µs).
* prefill: ``kv8_prefill`` for a 4,096- and a 128-token chunk ending at the span (eager, events).

Relative L2 errors against ``split_kv_attention.reference`` (decode) and a float32 causal attention of
the chunk's last 64 queries (prefill).

    python3 -m tests.benchmarks.kv8_kernel --out $OUT          # CUDA; writes kv8_kernel_h200.json
    python3 -m tests.benchmarks.kv8_kernel --out $OUT --sweep  # + the decode op over split choices

``--rotate-at attend|merge|both`` (default both): kv8_decode's µs and error with the output rotated
back in the attention's split partials and in the merge (split_kv_attention.ROTATE_AT), as
``kv8_decode_us_attend`` / ``kv8_decode_us_merge``; ``kv8_decode_us`` and the layer's times are
the import's setting (HEADROOM_KV8_ROTATE_AT, default attend).

``append``: µs per layer of ``headroom::kv8_append`` (one token's 8 keys and 8 values quantized
into the cache, as in the compiled step; CUDA graph as above), beside the first kernel (one
program per vector, dense float32 rotation; kept here as `_old_append_kernel`), which took 3.9 µs
a layer in the step (results/decode_anatomy_h200.json), and beside the torch path it replaced
(`kv_quant.quantize` + ``index_copy_``, eager kernels).

    python3 -m tests.benchmarks.kv8_kernel --out $OUT --spans 4096 --rotate-at both  # the quick comparison

``--sweep``: kv8_decode's GPU µs for each (SPLIT_WAVES, MIN_SPLIT_TILES) in ``SWEEP``, at each
span, to pick the constants of split_kv_attention (measured 2026-12-02: the defaults are within 1 %).

``--prefill-sweep``: kv8_prefill's ms for a 4,096-token chunk ending at each span for each
(PREFILL_ROWS, PREFILL_BLOCK_N, PREFILL_WARPS) in ``PREFILL_SWEEP``, beside torch's flash SDPA over the same span
in bf16 (`attention._flash_span`, the 16-bit prefill): the 8-bit prefill of a 32k prompt took
5.3 s to its first token against 1.7 s at 16-bit (results/decode_anatomy_h200_whole_forward_kernels.json).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from pathlib import Path

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import attention, kv8_append, kv_quant, split_kv_attention

try:
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - the benchmark needs CUDA and Triton; the module still imports
    triton = tl = None

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
    kept = split_kv_attention.KV16_KERNEL
    split_kv_attention.KV16_KERNEL = False
    try:
        return graph_us(fn)
    finally:
        split_kv_attention.KV16_KERNEL = kept


@contextlib.contextmanager
def rotate_at(where: str):
    """split_kv_attention.ROTATE_AT set to ``where`` inside the block."""
    kept = split_kv_attention.ROTATE_AT
    split_kv_attention.ROTATE_AT = where
    try:
        yield
    finally:
        split_kv_attention.ROTATE_AT = kept


def measure(span: int, g: torch.Generator, rotate_settings: tuple[str, ...] = ("attend", "merge")) -> dict:
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
           "decode_rel_err": relative(split_kv_attention.kv8_decode(q, key, value, valid, scale),
                                      kv_quant.rotate(split_kv_attention.reference(kv_quant.rotate(q), key, value,
                                                                              valid, scale))),
           "kv8_decode_us": graph_us(lambda: split_kv_attention.kv8_decode(q, key, value, valid, scale)),
           "kv8_layer_attention_us": graph_us(lambda: attention._packed_decode_8bit(
               q_heads, key, value, mask, scale, GROUPS)),
           "kv16_layer_attention_us": graph_us(lambda: attention._packed_decode(
               q_heads, k16, v16, mask, 0.0, scale, GROUPS)),
           "kv16_torch_layer_attention_us": torch_products_us(lambda: attention._packed_decode(
               q_heads, k16, v16, mask, 0.0, scale, GROUPS)),
           "kv8_bytes_read_mb": 2 * key.numel() / 1e6, "kv16_bytes_read_mb": 2 * k16.numel() * 2 / 1e6}
    row["kv8_decode_tb_s"] = row["kv8_bytes_read_mb"] / row["kv8_decode_us"]  # MB/µs = TB/s
    row["rotate_at_default"] = split_kv_attention.ROTATE_AT
    want = kv_quant.rotate(split_kv_attention.reference(kv_quant.rotate(q), key, value, valid, scale))
    for where in rotate_settings:
        with rotate_at(where):
            row[f"decode_rel_err_{where}"] = relative(split_kv_attention.kv8_decode(q, key, value, valid, scale), want)
            row[f"kv8_decode_us_{where}"] = graph_us(lambda: split_kv_attention.kv8_decode(q, key, value, valid, scale))
    for chunk in (4096, 128):
        if chunk <= span:
            row.update(prefill_row(chunk, span, key, value, g))
    row["triton_failure"] = split_kv_attention.triton_failure
    return row


def append_row(g: torch.Generator, span: int = 4096) -> dict:
    """µs per layer of one decode step's cache write (see the module docstring), and whether the
    new kernel writes the old one's bytes (codes within 1, scales within 1e-6)."""
    dev, dt = torch.device("cuda"), torch.bfloat16
    k = torch.randn(1, KV_HEADS, 1, HEAD_DIM, device=dev, generator=g).to(dt) * 3
    v = torch.randn(1, KV_HEADS, 1, HEAD_DIM, device=dev, generator=g).to(dt)
    caches = [torch.zeros(1, KV_HEADS, span, kv_quant.packed_dim(HEAD_DIM), dtype=torch.int8, device=dev)
              for _ in range(4)]
    first = torch.tensor([span // 2], device=dev)
    position = torch.arange(1, device=dev) + first

    def new():
        kv8_append.kv8_append(k, v, caches[0], caches[1], first)

    def torch_path():
        caches[0].index_copy_(2, position, kv_quant.quantize(k))
        caches[1].index_copy_(2, position, kv_quant.quantize(v))

    row = {"kv8_append_us": graph_us(new), "kv8_append_failure": kv8_append.triton_failure,
           "kv8_append_torch_us": graph_us(torch_path)}
    if triton is not None:
        rot = kv8_append.rotation_signs(HEAD_DIM, dev, torch.float32)
        rot = (rot[0] * rot[1]).contiguous()

        def old():
            _old_append_kernel[(KV_HEADS, 2)](
                k, v, caches[2], caches[3], first, rot, KV_HEADS, k.stride(0), k.stride(1), v.stride(0), v.stride(1),
                *caches[2].stride()[:3], *caches[3].stride()[:3], D=HEAD_DIM, num_warps=4)

        row["kv8_append_old_us"] = graph_us(old)
        new()
        old()
        torch.cuda.synchronize()
        at = span // 2
        for got, was in ((caches[0], caches[2]), (caches[1], caches[3])):
            codes, scale = kv_quant.unpack(got[:, :, at])
            old_codes, old_scale = kv_quant.unpack(was[:, :, at])
            row.setdefault("kv8_append_max_code_diff", 0)
            row["kv8_append_max_code_diff"] = max(row["kv8_append_max_code_diff"],
                                                  int((codes.int() - old_codes.int()).abs().max()))
            row["kv8_append_scales_match"] = bool(torch.allclose(scale, old_scale, rtol=1e-6))
    return row


if triton is not None:
    @triton.jit
    def _old_append_kernel(k_ptr, v_ptr, keys_ptr, values_ptr, first_ptr, rot_ptr, heads,
                           stride_kb, stride_kh, stride_vb, stride_vh,
                           stride_cb, stride_ch, stride_cs, stride_db, stride_dh, stride_ds, D: tl.constexpr):
        """kv8_append's first kernel (before 2026-12): program (b·heads + h, key | value), the dense
        float32 rotation ``rot_ptr`` (d, d) loaded and reduced as a broadcast product."""
        bh = tl.program_id(0)
        b = bh // heads
        h = bh % heads
        dims = tl.arange(0, D)
        position = tl.load(first_ptr)
        if tl.program_id(1) == 0:
            x = tl.load(k_ptr + b * stride_kb + h * stride_kh + dims).to(tl.float32)
            row = keys_ptr + b * stride_cb + h * stride_ch + position * ((stride_cs // 4) * 4)
        else:
            x = tl.load(v_ptr + b * stride_vb + h * stride_vh + dims).to(tl.float32)
            row = values_ptr + b * stride_db + h * stride_dh + position * ((stride_ds // 4) * 4)
        rotated = tl.sum(x[:, None] * tl.load(rot_ptr + dims[:, None] * D + dims[None, :]), axis=0)
        scale = tl.maximum(tl.max(tl.abs(rotated), axis=0), 1e-12) / 127.0
        q = rotated / scale
        codes = tl.minimum(tl.maximum(tl.where(q >= 0, tl.floor(q + 0.5), tl.ceil(q - 0.5)), -127.0), 127.0)
        tl.store(row + dims, codes.to(tl.int8))
        tl.store((row + D).to(tl.pointer_type(tl.float32)), scale)


def sweep(span: int, g: torch.Generator, bits: int = 8) -> list[dict]:
    """The split-KV decode's GPU µs at ``span`` keys for each (SPLIT_WAVES, MIN_SPLIT_TILES) of
    SWEEP, over an 8-bit cache (kv8_decode) or a 16-bit one (kv16_decode)."""
    dev, scale = torch.device("cuda"), HEAD_DIM ** -0.5
    key = torch.randn(1, KV_HEADS, span, HEAD_DIM, device=dev, generator=g)
    value = torch.randn(1, KV_HEADS, span, HEAD_DIM, device=dev, generator=g)
    if bits == 8:
        key, value, decode = kv_quant.quantize(key), kv_quant.quantize(value), split_kv_attention.kv8_decode
    else:
        key, value, decode = key.bfloat16(), value.bfloat16(), split_kv_attention.kv16_decode
    q = torch.randn(1, KV_HEADS, GROUPS, HEAD_DIM, device=dev, dtype=torch.bfloat16, generator=g)
    valid = (torch.arange(span, device=dev) < span - 7).view(1, span)
    rows, kept = [], (split_kv_attention.SPLIT_WAVES, split_kv_attention.MIN_SPLIT_TILES)
    try:
        for waves, tiles in SWEEP:
            split_kv_attention.SPLIT_WAVES, split_kv_attention.MIN_SPLIT_TILES = waves, tiles
            us = graph_us(lambda: decode(q, key, value, valid, scale))
            splits = split_kv_attention.splits_for(span, KV_HEADS)
            read_mb = 2 * key.numel() * key.element_size() / 1e6  # keys and values
            rows.append({"waves": waves, "tiles": tiles, "splits": splits, "us": us, "tb_s": read_mb / us})
    finally:
        split_kv_attention.SPLIT_WAVES, split_kv_attention.MIN_SPLIT_TILES = kept
    return rows


def prefill_row(chunk: int, span: int, key: torch.Tensor, value: torch.Tensor, g: torch.Generator) -> dict:
    dev, scale = key.device, HEAD_DIM ** -0.5
    qp = torch.randn(1, KV_HEADS * GROUPS, chunk, HEAD_DIM, device=dev, dtype=torch.bfloat16, generator=g)
    out = split_kv_attention.kv8_prefill(qp, key, value, span, scale)
    k = kv_quant.dequantize(key, torch.float32).repeat_interleave(GROUPS, 1)
    v = kv_quant.dequantize(value, torch.float32).repeat_interleave(GROUPS, 1)
    scores = qp[:, :, -64:].float() @ k.transpose(2, 3) * scale
    position = torch.arange(span - 64, span, device=dev).view(-1, 1)
    scores = scores.masked_fill(torch.arange(span, device=dev).view(1, -1) > position, float("-inf"))
    want = (scores.softmax(-1) @ v).transpose(1, 2)
    return {f"prefill_{chunk}_rel_err": relative(out[:, -64:], want),
            f"prefill_{chunk}_ms": event_ms(lambda: split_kv_attention.kv8_prefill(qp, key, value, span, scale))}


def prefill_sweep(span: int, key: torch.Tensor, value: torch.Tensor, g: torch.Generator, chunk: int = 4096) -> dict:
    """ms of kv8_prefill for each PREFILL_SWEEP choice, and of the 16-bit flash prefill."""
    dev, scale = key.device, HEAD_DIM ** -0.5
    qp = torch.randn(1, KV_HEADS * GROUPS, chunk, HEAD_DIM, device=dev, dtype=torch.bfloat16, generator=g)
    k16 = kv_quant.dequantize(key[:, :, :span], torch.bfloat16).contiguous()
    v16 = kv_quant.dequantize(value[:, :, :span], torch.bfloat16).contiguous()
    out = {"chunk": chunk, "flash_bf16_ms": event_ms(lambda: attention._flash_span(qp, k16, v16, scale, GROUPS)),
           "kv8": []}
    kept = split_kv_attention.PREFILL_ROWS, split_kv_attention.PREFILL_BLOCK_N, split_kv_attention.PREFILL_WARPS
    try:
        for rows, block, warps in PREFILL_SWEEP:
            kernel = split_kv_attention
            kernel.PREFILL_ROWS, kernel.PREFILL_BLOCK_N, kernel.PREFILL_WARPS = rows, block, warps
            try:
                ms = event_ms(lambda: split_kv_attention.kv8_prefill(qp, key, value, span, scale))
            except Exception as exc:  # a choice that does not build (registers, shared memory)
                ms = f"{type(exc).__name__}: {exc}"[:200]
            out["kv8"].append({"rows": rows, "block": block, "warps": warps, "ms": ms})
    finally:
        split_kv_attention.PREFILL_ROWS, split_kv_attention.PREFILL_BLOCK_N, split_kv_attention.PREFILL_WARPS = kept
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--spans", default="4096,32768,97536")
    ap.add_argument("--sweep", action="store_true", help="kv8_decode over SWEEP's split choices")
    ap.add_argument("--prefill-sweep", action="store_true", help="kv8_prefill over PREFILL_SWEEP, beside flash")
    ap.add_argument("--rotate-at", choices=("attend", "merge", "both"), default="both",
                    help="where kv8_decode rotates a split step's output back (split_kv_attention.ROTATE_AT)")
    args = ap.parse_args(argv)
    settings = ("attend", "merge") if args.rotate_at == "both" else (args.rotate_at,)
    dev, dt = torch.device("cuda"), torch.bfloat16
    R = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
         "self_check": split_kv_attention.self_check(dev, dt, HEAD_DIM), "rows": []}
    g = torch.Generator(device=dev).manual_seed(0)
    try:
        R["append"] = append_row(g)
    except Exception as exc:  # keep going: the attention rows are the main table
        R["append"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    print(json.dumps({"append": R["append"]}))
    for span in (int(s) for s in args.spans.split(",")):
        try:
            row = measure(span, g, settings)
        except Exception as exc:  # keep the rows measured so far
            row = {"span": span, "error": f"{type(exc).__name__}: {exc}"[:500]}
        if args.sweep and "error" not in row:
            row["sweep"] = sweep(span, g)
            row["sweep_kv16"] = sweep(span, g, bits=16)
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
        for name in ("sweep", "sweep_kv16"):
            best = min(row[name], key=lambda r: r["us"])
            print(f"span {row['span']}, {'8' if name == 'sweep' else '16'}-bit: best split choice {best}")
    for row in (r for r in R["rows"] if r.get("prefill_sweep")):
        p = row["prefill_sweep"]
        timed = [c for c in p["kv8"] if isinstance(c["ms"], float)]
        best = min(timed, key=lambda c: c["ms"]) if timed else None
        print(f"span {row['span']}: prefill of {p['chunk']} tokens, flash bf16 {p['flash_bf16_ms']:.2f} ms, "
              f"8-bit {[(c['rows'], c['block'], c['warps'], c['ms']) for c in p['kv8']]}, best {best}")
    a = R["append"]
    if "kv8_append_us" in a:
        print(f"kv8_append µs per layer: {a['kv8_append_us']:.2f} (first kernel {a.get('kv8_append_old_us', 0):.2f}, "
              f"torch path {a['kv8_append_torch_us']:.2f}; 3.9 in the H200 step before)")
    heads = "".join(f" {'op µs ' + w:>14}" for w in settings)
    print(f"{'span':>7} {'kv8 op µs':>10}{heads} {'kv8 layer µs':>13} {'kv16 layer µs':>14} {'kv16 torch µs':>14} "
          f"{'kv8 TB/s':>9}")
    for row in (r for r in R["rows"] if "error" not in r):
        each = "".join(f" {row[f'kv8_decode_us_{w}']:>14.1f}" for w in settings)
        print(f"{row['span']:>7} {row['kv8_decode_us']:>10.1f}{each} {row['kv8_layer_attention_us']:>13.1f} "
              f"{row['kv16_layer_attention_us']:>14.1f} {row['kv16_torch_layer_attention_us']:>14.1f} "
              f"{row['kv8_decode_tb_s']:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
