"""NF4 GEMV benchmark (issue 15): the fused Triton kernel vs bitsandbytes on the Llama-3-8B
shapes, then the 8B NF4 model's compiled decode with and without it.

On the H200 (one run, stages in priority order, each stage's failure recorded, a time budget):

    python3 -m tests.benchmarks.nf4_gemv --out $OUT --budget-s 400

1. HBM copy bandwidth (the ceiling), then per shape (4096→4096, 4096→1024, 4096→14336,
   14336→4096): correctness of the kernel (vs fp32 W·x on bitsandbytes' dequantized weights,
   vs bitsandbytes' GEMV, bitwise repeatability over 20 launches) and µs per call inside a CUDA
   graph of many calls over rotating weight copies (no L2 reuse), for a sweep of launch plans;
   achieved TB/s counts packed bytes + absmax codes + x + y.
2. The 8B random-init model (tests.benchmarks.speed.build_model) loaded through Headroom's
   loader with the best plans; teacher-forced logits kernel vs bitsandbytes (argmax agreement,
   per-step correlation); compiled decode tok/s (speed.py's decode_speed) with the kernel, a
   profile, then without it (bitsandbytes), then 4k depth with the kernel if time is left.
Prints a table; writes nf4_gemv_h200.json to --out. `--gemv-only` stops after the kernel
stages; `--quick` times only the tuned plans at 1-3 pipeline stages.

The CUDA mma kernel (app/engine/local/nf4_mma.py; in the default run after the Triton stages):

    python3 -m tests.benchmarks.nf4_gemv --out $OUT --cuda-only     # < 150 s, nf4_gemv_h200_cuda.json

NVRTC compile time, registers and spills, the inner loop's SASS mix; per shape one-hot probes
(x = e_j reads column j of W: every probed weight bit for bit vs bitsandbytes' dequantize_4bit,
under the chosen launch and under the widest split-K), rel. error vs fp32 W x and vs
bitsandbytes' GEMV, a bias, bitwise repeatability over 20 launches; µs per call in a CUDA graph
over rotating weight copies for bitsandbytes, Triton's tuned plan and a sweep of the kernel's
launch shapes (warps per block x split_k), TB/s, and ms of GEMV per 8B token for each.

Measured 2026-12-01 (results/nf4_gemv_h200*.json; copy bandwidth 4.25 TB/s): the kernel is
correct (rel. error 1.7e-3 vs fp32 W·x on bitsandbytes' dequantized weights, i.e. the bf16
output rounding; 99.99-100 % of outputs equal the rounded fp32 reference; bitsandbytes' own GEMV
3.6e-3; bitwise repeatable) but slower than bitsandbytes' `gemm_4bit`: 15.5 / 6.8 / 45.6 / 42.3 µs
vs 10.7 / 7.0 / 29.4 / 30.3 µs for 4096², 1024x4096, 14336x4096, 4096x14336 (0.32-0.72 vs
0.31-1.03 TB/s), 5.70 vs 3.98 ms of GEMV per token; the compiled 8B decode with an earlier
version ran 137 tok/s (bitsandbytes 193.9 in speed_h200.json). What stands in the way, read off
the SASS (cuobjdump of Triton's sm_90 cubin): no overlap of a tile's HBM latency with the
previous tile's arithmetic (each program loads, waits, computes; try `stages` 2-3), and about
6.5 instructions per weight, a third of them the codebook gather (64-bit address + LDG from L1
per byte); an in-register lookup (PTX `prmt`) and prefetching are the next steps.

Later the same day (results/nf4_gemv_h200_prmt.json, _mma.json): the register lookup (kernel 2:
per-block bf16 tables as byte planes, 16 `prmt` per 8 weights, no gather) reaches bitsandbytes:
12.1 / 5.7 / 29.5-31.5 / 33.2 µs vs 10.8 / 7.0 / 29.4 / 30.4 (4.22 vs 3.99 ms per token), bit-identical
weights, and every tile shape, split-K, prefetching (kernel 4) and cp.async stages land within a few
µs of each other: the integer pipe is the limit (~4.4 ALU instructions per weight: lookup 2.25,
bf16→fp32 unpack of weight and x 1.5, selectors 0.6; 64 lanes/clk/SM). Putting the products on the
tensor cores (kernel 5, tl.dot with x as row 0 of a 16-row operand) removes the unpack but Triton
moves the looked-up registers to mma operands through shared memory (16-bit stores, barriers):
31-41 % slower. Two rows per thread sharing the x conversion (kernel 6) take 26.7 / 30.0 µs on
the large shapes: 3.78 vs 3.99 ms per token, 5 % ahead of bitsandbytes.
What would close the gap: mma fed straight from registers (the `prmt` output is a
bf16x2 A-fragment register; needs PTX mma in the fragment layout, which Triton's inline asm cannot
express across lanes), or fewer integer operations per weight than an exact bf16 lookup allows.
"""

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_hook as hook
from app.engine.local import nf4_mma
from app.engine.local.nf4_gemv import Plan

# (N out, K in); per layer: q and o, k and v, gate and up, down
SHAPES = ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336))
PER_LAYER = {(4096, 4096): 2, (1024, 4096): 2, (14336, 4096): 2, (4096, 14336): 1}


def log(*a):
    print(*a, flush=True)


def rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


def copy_bandwidth() -> float:
    """bytes/s of a 4 GiB device-to-device copy (read + write counted), median of 10."""
    import triton.testing as tt

    a = torch.empty(2**31, dtype=torch.uint8, device="cuda").random_()
    b = torch.empty_like(a)
    ms = tt.do_bench(lambda: b.copy_(a), warmup=50, rep=300, return_mode="median")
    return 2 * 2**31 / (ms * 1e-3)


def make_layer(n, kdim, seed):
    import bitsandbytes.functional as F

    g = torch.Generator(device="cuda").manual_seed(seed)
    w = (torch.randn(n, kdim, generator=g, device="cuda") * 0.02).to(torch.bfloat16)
    packed, qs = F.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
    return SimpleNamespace(weight=SimpleNamespace(data=packed, quant_state=qs), bias=None)


def bnb_gemv(layer, x):
    import bitsandbytes as bnb

    return bnb.matmul_4bit(x, layer.weight.data, quant_state=layer.weight.quant_state)


def graph_time_us(fn_list, reps=20) -> float:
    """µs per call of a CUDA graph replaying fn_list (one call per weight copy)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fn_list:
            f()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for f in fn_list:
            f()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / len(fn_list))
    times.sort()
    return times[len(times) // 2]


def check_shape(n, kdim, plan) -> dict:
    layer = make_layer(n, kdim, seed=n + kdim)
    t = k.tensors_of(layer)
    out = {}
    for _trial in range(3):  # fresh inputs each time
        x = torch.randn(1, kdim, device="cuda").to(torch.bfloat16)
        y = hook.run(x, t, plan)
        import bitsandbytes.functional as F

        ref = x.float() @ F.dequantize_4bit(layer.weight.data, layer.weight.quant_state).float().T
        theirs = bnb_gemv(layer, x)
        runs = [hook.run(x, t, plan) for _ in range(20)]
        out = {"rel_vs_dequant_fp32": max(out.get("rel_vs_dequant_fp32", 0), rel(y, ref)),
               "rel_vs_bnb_gemv": max(out.get("rel_vs_bnb_gemv", 0), rel(y, theirs)),
               "bnb_rel_vs_dequant_fp32": max(out.get("bnb_rel_vs_dequant_fp32", 0), rel(theirs, ref)),
               "equal_to_rounded_ref": float((y == ref.to(torch.bfloat16)).float().mean()),
               "repeatable": all(torch.equal(r, y) for r in runs) and out.get("repeatable", True),
               "finite": bool(torch.isfinite(y).all())}
    out["dequant_bit_identical_mirror"] = bool(torch.equal(
        k.reference_dequantize(t).view(torch.int16),
        F.dequantize_4bit(layer.weight.data, layer.weight.quant_state).view(torch.int16)))
    return out


def full_sweep(n, kdim, auto) -> set:
    """Launch plans for the register-lookup kernels 2 (one row per thread) and 6 (two rows per
    thread sharing x) over tile shapes, split-K and warps, plus `auto` (the current choice)."""
    plans = {auto}
    for bn, warps in ((16, 4), (32, 4), (32, 8), (64, 4), (64, 8)):
        for bk in (256, 512):
            iters, tiles = kdim // bk, -(-n // bn)
            for split in (1, 2, 4, 8, 16):
                if iters % split == 0 and 132 <= tiles * split <= 12 * 132:
                    plans.add(Plan(bn, bk, split, warps, 0, 6))
                    if bn <= 32 and warps == 4:
                        plans.add(Plan(bn, bk, split, warps, 0, 2))
    return {p for p in plans if kdim % (p.block_k * p.split_k) == 0}


def sweep_shape(n, kdim, bw, quick=False) -> dict:
    copies = max(4, -(-400 * 2**20 // (n * kdim // 2)))  # > 400 MiB of weights: L2 (50 MiB) never holds them
    layers = [make_layer(n, kdim, seed=i) for i in range(copies)]
    ts = [k.tensors_of(lay) for lay in layers]
    x = torch.randn(1, kdim, device="cuda").to(torch.bfloat16)
    import bitsandbytes.functional as F

    ref0 = x.float() @ F.dequantize_4bit(layers[0].weight.data, layers[0].weight.quant_state).float().T
    nbytes = n * kdim // 2 + n * kdim // 64 + 2 * kdim + 2 * n + 4 * (n * kdim // 16384)
    row = {"shape": [n, kdim], "copies": copies, "bytes_per_call": nbytes}
    bnb_us = graph_time_us([lambda lay=lay: bnb_gemv(lay, x) for lay in layers])
    row["bnb_us"], row["bnb_tb_s"] = bnb_us, nbytes / bnb_us / 1e6
    auto = hook.choose_plan(n, kdim)
    if quick:  # the tuned plan with Triton's software pipelining at 1, 2, 3 stages
        plans = {Plan(**{**auto.__dict__, "stages": st}) for st in (1, 2, 3)}
    else:
        plans = full_sweep(n, kdim, auto)
    results = []
    for plan in sorted(plans, key=lambda p: tuple(p.__dict__.values())):
        try:
            us = graph_time_us([lambda t=t, plan=plan: hook.run(x, t, plan) for t in ts])
            err = rel(hook.run(x, ts[0], plan), ref0)
            results.append({"plan": plan.__dict__, "us": us, "tb_s": nbytes / us / 1e6, "rel_err": err})
        except Exception as exc:  # noqa: BLE001
            results.append({"plan": plan.__dict__, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
    ok = [r for r in results if "us" in r and r["rel_err"] < hook.REF_TOLERANCE]
    best = min(ok, key=lambda r: r["us"])
    row.update(plans=results, best=best, auto_us=next((r["us"] for r in ok if r["plan"] == auto.__dict__), None),
               best_fraction_of_copy_bw=best["tb_s"] * 1e12 / bw,
               kernel_us={kn: min((r["us"] for r in ok if r["plan"]["kernel"] == kn), default=None)
                          for kn in (0, 1, 2, 3, 4, 5, 6)},
               stages_us={st: min((r["us"] for r in ok if r["plan"]["stages"] == st), default=None)
                          for st in (1, 2, 3)})
    del layers, ts
    torch.cuda.empty_cache()
    return row


def teacher_forced(loaded, steps=32, prompt=64) -> dict:
    """Logits of the same token sequence decoded one token at a time, kernel vs bitsandbytes."""
    from transformers import DynamicCache

    model = loaded.model
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 120000, (1, prompt + steps), generator=g).cuda()

    def run_path():
        cache = DynamicCache()
        with torch.inference_mode():
            model(input_ids=ids[:, :prompt], past_key_values=cache, use_cache=True)
            return torch.stack([model(input_ids=ids[:, i:i + 1], past_key_values=cache,
                                      use_cache=True).logits[0, -1].float() for i in range(prompt, prompt + steps)])

    ours = run_path()
    saved = {m: m.__dict__["forward"] for m in hook.nf4_layers(model) if "forward" in m.__dict__}
    for m in saved:
        del m.forward
    theirs = run_path()
    for m, f in saved.items():
        m.forward = f
    corr = [float(torch.corrcoef(torch.stack([a, b]))[0, 1]) for a, b in zip(ours, theirs, strict=True)]
    return {"steps": steps, "argmax_agreement": float((ours.argmax(-1) == theirs.argmax(-1)).float().mean()),
            "min_corr": min(corr), "mean_corr": sum(corr) / len(corr),
            "max_abs_diff": float((ours - theirs).abs().max()), "logit_std": float(theirs.std())}


def fresh_decode_speed(loaded, decoder, context: int, new: int, vocab: int) -> dict:
    """speed.py's decode_speed on a fresh KVSession per reply (reusing one session crops a
    StaticCache, which transformers 5.17's StaticLayer cannot do); greedy; the second reply counts."""
    from app.engine.local.kv_session import KVSession, round_capacity
    from tests.benchmarks.speed import random_ids, reply

    prompt = random_ids(context, vocab, seed=context)
    rows = [reply(loaded, prompt, new, KVSession(capacity_tokens=round_capacity(context + new)), decoder)
            for _ in range(2)]
    return {"context": context, "new_tokens": rows[1].new_tokens, "tok_s": rows[1].decode_tokens_per_s,
            "first_run_tok_s": rows[0].decode_tokens_per_s, "path": rows[1].decode_path}


def profile_fresh(loaded, decoder, context: int, vocab: int) -> list[dict]:
    """Top 12 ops by device time over 24 compiled decode steps (speed.py's profile_decode on
    fresh sessions)."""
    from torch.profiler import ProfilerActivity, profile

    from app.engine.local.kv_session import KVSession, round_capacity
    from tests.benchmarks.speed import random_ids, reply

    prompt = random_ids(context, vocab, seed=7)
    reply(loaded, prompt, 8, KVSession(capacity_tokens=round_capacity(context + 64)), decoder)
    session = KVSession(capacity_tokens=round_capacity(context + 64))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        reply(loaded, prompt, 24, session, decoder)
    rows = sorted(prof.key_averages(), key=lambda e: e.device_time_total, reverse=True)[:12]
    return [{"op": e.key[:80], "calls": e.count, "device_ms": e.device_time_total / 1e3,
             "cpu_ms": e.cpu_time_total / 1e3} for e in rows]


# ----------------------------------------------------------------------------- the CUDA mma kernel
def cuda_compile() -> dict:
    """NVRTC compile of nf4_mma.SOURCE for this GPU (seconds, ptxas registers and spills), the
    first use (compile + module load, cached afterwards), and the inner loop's SASS mix when
    Triton's bundled cuobjdump is there."""
    import re
    import subprocess
    import tempfile

    major, minor = torch.cuda.get_device_capability()
    t = time.perf_counter()
    cubin, text = nf4_mma.compile_cubin(f"{major}{minor}", options=("--ptxas-options=-v",))
    row = {"arch": f"sm_{major}{minor}", "nvrtc_compile_s": time.perf_counter() - t, "cubin_bytes": len(cubin),
           "ptxas": [line.strip() for line in text.splitlines() if "registers" in line or "spill" in line]}
    t = time.perf_counter()
    row["unavailable_reason"] = nf4_mma.unavailable_reason(torch.device("cuda"))
    row["first_use_s"] = time.perf_counter() - t
    row["registers"] = [int(r) for r in re.findall(r"Used (\d+) registers", text)]
    row["spill_bytes"] = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads",
                                                                  text)]
    try:
        import triton

        tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "k.cubin").write_bytes(cubin)
            sass = subprocess.run([str(tool), "-sass", str(Path(tmp) / "k.cubin")], capture_output=True, text=True,
                                  check=True, timeout=60).stdout
        from tests.engine.test_nf4_mma import loop_mix

        row["loop_mix_per_super_tile"] = {name: dict(loop_mix(sass, name)) for name in nf4_mma.KERNELS.values()}
    except Exception as exc:  # noqa: BLE001 - the mix is a nicety; the compile above is the point
        row["loop_mix_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return row


def mma_launches(n: int, kdim: int) -> list[Plan]:
    """The auto plan plus the launch shapes (warps 2-8, split_k) giving 2-64 warps per SM."""
    auto = hook.mma_plan(n, kdim)
    tiles = -(-n // 16)
    plans = {auto} | {Plan(16, 256, s, w, 0, hook.MMA_KERNEL) for w, s in nf4_mma.launch_shapes(n, kdim)
                      if w >= 2 and 2 * 132 <= tiles * w * s <= 64 * 132}
    return sorted(plans, key=lambda p: (p.num_warps * p.split_k, p.num_warps))


def cuda_check_shape(n: int, kdim: int) -> dict:
    """The CUDA kernel on one shape: one-hot probes x = e_j read columns of W out exactly (every
    weight bit for bit vs bitsandbytes' dequantize_4bit), under the auto plan and the largest
    split_k; rel. error on random x vs fp32 W x and vs bitsandbytes' GEMV; a bf16 bias; bitwise
    repeatability over 20 launches."""
    import bitsandbytes.functional as F

    layer = make_layer(n, kdim, seed=n + kdim + 1)
    t = k.tensors_of(layer)
    w = F.dequantize_4bit(layer.weight.data, layer.weight.quant_state)  # (N, K) bf16
    auto = hook.mma_plan(n, kdim)
    widest = max(nf4_mma.launch_shapes(n, kdim), key=lambda ws: (ws[1], ws[0]))
    split = Plan(16, 256, widest[1], widest[0], 0, hook.MMA_KERNEL)
    g = torch.Generator().manual_seed(n)
    cols = sorted({0, 1, 2, 3, 4, 7, 8, 63, 64, 65, 255, 256, 257, kdim // 2, kdim - 1}
                  | set(torch.randint(0, kdim, (9,), generator=g).tolist()))
    out: dict = {"auto_plan": auto.__dict__, "split_plan": split.__dict__, "probe_columns": len(cols)}
    for name, plan in (("auto", auto), ("split", split)):
        bad, examples = 0, []
        for j in cols:
            x = torch.zeros(1, kdim, dtype=torch.bfloat16, device="cuda")
            x[0, j] = 1
            got, want = hook.run(x, t, plan)[0].view(torch.int16), w[:, j].view(torch.int16)
            rows = (got != want).nonzero().flatten()
            bad += rows.numel()
            examples += [(int(r), j, hex(int(got[r]) & 0xFFFF), hex(int(want[r]) & 0xFFFF)) for r in rows[:4]]
        out[f"probe_mismatched_weights_{name}"] = bad
        out[f"probe_mismatch_examples_{name}"] = examples[:12]  # (row, column, got, bitsandbytes)
    out["dequant_bit_identical"] = out["probe_mismatched_weights_auto"] == 0 == out["probe_mismatched_weights_split"]
    for trial in range(3):
        x = torch.randn(1, kdim, device="cuda").to(torch.bfloat16)
        ref = x.float() @ w.float().T
        for name, plan in (("auto", auto), ("split", split)):
            y = hook.run(x, t, plan)
            runs = [hook.run(x, t, plan) for _ in range(20)]
            key = f"rel_vs_dequant_fp32_{name}"
            out[key] = max(out.get(key, 0.0), rel(y, ref))
            out[f"repeatable_{name}"] = out.get(f"repeatable_{name}", True) and all(torch.equal(r, y) for r in runs)
            out[f"finite_{name}"] = out.get(f"finite_{name}", True) and bool(torch.isfinite(y).all())
        theirs = bnb_gemv(layer, x)
        out["rel_vs_bnb_gemv"] = max(out.get("rel_vs_bnb_gemv", 0.0), rel(hook.run(x, t, auto), theirs))
        out["bnb_rel_vs_dequant_fp32"] = max(out.get("bnb_rel_vs_dequant_fp32", 0.0), rel(theirs, ref))
        if trial == 0:
            out["equal_to_rounded_ref"] = float((hook.run(x, t, auto) == ref.to(torch.bfloat16)).float().mean())
            bias = torch.randn(n, device="cuda").to(torch.bfloat16)
            out["rel_with_bias"] = rel(hook.run(x, t, auto, bias), ref + bias.float())
    out["counters_reset"] = int(t.counters.abs().sum()) == 0
    return out


def cuda_time_shape(n: int, kdim: int, bw: float) -> dict:
    """µs per call in a CUDA graph over rotating weight copies (as sweep_shape): bitsandbytes, the
    Triton TUNED plan, and the CUDA kernel's launch shapes (mma_launches)."""
    copies = max(4, -(-400 * 2**20 // (n * kdim // 2)))
    layers = [make_layer(n, kdim, seed=i) for i in range(copies)]
    ts = [k.tensors_of(lay) for lay in layers]
    x = torch.randn(1, kdim, device="cuda").to(torch.bfloat16)
    nbytes = n * kdim // 2 + n * kdim // 64 + 2 * kdim + 2 * n + 4 * (n * kdim // 16384)
    row: dict = {"shape": [n, kdim], "copies": copies, "bytes_per_call": nbytes, "errors": {}}

    pairs = list(zip(layers, ts, strict=True))

    def timed(name, fn):
        try:
            us = graph_time_us([lambda lay=lay, t=t: fn(lay, t) for lay, t in pairs])
            row[name] = {"us": us, "tb_s": nbytes / us / 1e6, "fraction_of_copy_bw": nbytes / us / 1e6 * 1e12 / bw}
        except Exception as exc:  # noqa: BLE001 - one launch shape failing must not lose the others
            row["errors"][name] = f"{type(exc).__name__}: {str(exc)[:300]}"

    timed("bnb", lambda lay, t: bnb_gemv(lay, x))
    triton_plan = hook.choose_plan(n, kdim)
    row["triton_plan"] = triton_plan.__dict__
    timed("triton", lambda lay, t: hook.run(x, t, triton_plan))
    row["mma"] = []
    for plan in mma_launches(n, kdim):
        name = f"mma_w{plan.num_warps}_s{plan.split_k}"
        timed(name, lambda lay, t, plan=plan: hook.run(x, t, plan))
        if name in row:
            row["mma"].append({"warps": plan.num_warps, "split_k": plan.split_k, **row.pop(name),
                               "auto": plan == hook.mma_plan(n, kdim)})
    if row["mma"]:
        row["mma_best"] = min(row["mma"], key=lambda r: r["us"])
        row["mma_auto"] = next((r for r in row["mma"] if r["auto"]), None)
    del layers, ts, pairs[:]
    torch.cuda.empty_cache()
    return row


def cuda_install() -> dict:
    """nf4_hook.install on the seven bitsandbytes Linear4bit of one Llama-3-8B layer (q, k, v, o,
    gate, up, down; real modules, quantized by Params4bit): which kernel each shape keeps and why,
    install's own timings (one layer a shape: weights partly in L2), and the decode row of every
    swapped layer against bitsandbytes' forward."""
    import bitsandbytes as bnb

    dims = ((4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336))
    layers = []
    for i, (n, kdim) in enumerate(dims):
        g = torch.Generator().manual_seed(i)
        lin = bnb.nn.Linear4bit(kdim, n, bias=False, compute_dtype=torch.bfloat16, quant_type="nf4",
                                compress_statistics=True)
        w = (torch.randn(n, kdim, generator=g) * 0.02).to(torch.bfloat16)
        lin.weight = bnb.nn.Params4bit(w, requires_grad=False, quant_type="nf4", compress_statistics=True,
                                       blocksize=64)
        layers.append(lin.cuda())
    model = torch.nn.ModuleList(layers)
    t = time.perf_counter()
    status = hook.install(model)
    row = {"install_s": time.perf_counter() - t, "status": status.__dict__, "label": status.label()}
    errs = []
    with torch.inference_mode():
        for lin in layers:
            x = torch.randn(1, 1, lin.in_features, device="cuda").to(torch.bfloat16)
            errs.append(rel(lin(x), type(lin).forward(lin, x)))
    row["rel_vs_bnb_forward"] = errs
    row["swapped"] = [getattr(lin, "_headroom_nf4_gemv", None).__dict__ if "forward" in lin.__dict__ else None
                      for lin in layers]
    hook.uninstall(model)
    return row


def cuda_stages(R: dict, stage, bw: float) -> None:
    """The CUDA mma kernel: compile, correctness and timing per Llama-3-8B shape, ms per token,
    then nf4_hook.install's choice on real Linear4bit modules."""
    stage("cuda_compile", cuda_compile)
    stage("cuda_correctness", lambda: {f"{n}x{kd}": cuda_check_shape(n, kd) for n, kd in SHAPES})
    stage("cuda_gemv", lambda: [cuda_time_shape(n, kd, bw) for n, kd in SHAPES])
    stage("cuda_install", cuda_install)
    rows = {tuple(r["shape"]): r for r in R.get("cuda_gemv", [])}

    def per_token(pick):
        try:
            return 32 * sum(PER_LAYER[s] * pick(rows[s]) for s in SHAPES) / 1e3
        except (KeyError, TypeError):
            return None
    R["cuda_per_token_gemv_ms"] = {"bnb": per_token(lambda r: r["bnb"]["us"]),
                                   "triton_tuned": per_token(lambda r: r["triton"]["us"]),
                                   "mma_auto": per_token(lambda r: r["mma_auto"]["us"]),
                                   "mma_best": per_token(lambda r: r["mma_best"]["us"]),
                                   "mma_best_plans": {f"{n}x{kd}": (r["mma_best"]["warps"], r["mma_best"]["split_k"])
                                                      for (n, kd), r in rows.items() if "mma_best" in r}}


def print_cuda_table(R: dict) -> None:
    comp = R.get("cuda_compile", {})
    log(f"\nCUDA mma: {comp.get('arch')} NVRTC {comp.get('nvrtc_compile_s', float('nan')):.2f}s, registers "
        f"{comp.get('registers')}, spills {comp.get('spill_bytes')}, reason {comp.get('unavailable_reason')!r}")
    log("| N x K | bnb us | Triton us | mma auto us (w, s) | mma best us (w, s) | best TB/s | % copy "
        "| dequant bits | rel vs fp32 | rel vs bnb | repeatable |")
    log("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in R.get("cuda_gemv", []):
        n, kd = row["shape"]
        c = R.get("cuda_correctness", {}).get(f"{n}x{kd}", {})
        auto, best = row.get("mma_auto") or {}, row.get("mma_best") or {}

        def us(r):
            return f"{r['us']:.1f}" if r and "us" in r else "-"
        log(f"| {n}x{kd} | {us(row.get('bnb'))} | {us(row.get('triton'))} "
            f"| {us(auto)} ({auto.get('warps')}, {auto.get('split_k')}) | {us(best)} ({best.get('warps')}, "
            f"{best.get('split_k')}) | {best.get('tb_s', float('nan')):.2f} "
            f"| {100 * best.get('fraction_of_copy_bw', float('nan')):.0f}% | {c.get('dequant_bit_identical')} "
            f"| {c.get('rel_vs_dequant_fp32_auto', float('nan')):.1e} | {c.get('rel_vs_bnb_gemv', float('nan')):.1e} "
            f"| {c.get('repeatable_auto')}/{c.get('repeatable_split')} |")
    log(f"GEMV per token (32 layers x 7 linears), ms: {R.get('cuda_per_token_gemv_ms')}")
    inst = R.get("cuda_install", {})
    log(f"install on one 8B layer: {inst.get('label')}; kernels {inst.get('status', {}).get('kernels')}; "
        f"mma_reason {inst.get('status', {}).get('mma_reason')!r}; rel vs bnb forward {inst.get('rel_vs_bnb_forward')}")
    if R.get("errors"):
        log("errors in stages:", list(R["errors"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--budget-s", type=float, default=400)
    ap.add_argument("--gemv-only", action="store_true", help="kernel sweep + correctness, no 8B model")
    ap.add_argument("--quick", action="store_true", help="only the tuned plans, at 1-3 pipeline stages")
    ap.add_argument("--cuda-only", action="store_true",
                    help="only the CUDA mma kernel (nf4_mma) beside bitsandbytes and Triton's tuned plans")
    ap.add_argument("--copy-bw", type=float, default=0, help="HBM copy B/s measured before (skips measuring)")
    ap.add_argument("--model-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "llama8b"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    left = lambda: args.budget_s - (time.perf_counter() - t0)  # noqa: E731
    from tests.benchmarks.speed import build_model, versions

    R: dict = {"command": "python3 -m tests.benchmarks.nf4_gemv " + " ".join(argv or sys.argv[1:]),
               "versions": versions(), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "errors": {}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def save():
        R["elapsed_s"] = time.perf_counter() - t0
        name = "nf4_gemv_h200_cuda.json" if args.cuda_only else "nf4_gemv_h200.json"
        (out / name).write_text(json.dumps(R, indent=1, default=str))

    def stage(name, fn):
        try:
            R[name] = fn()
        except Exception as exc:  # noqa: BLE001 - record and go on to the next stage
            R["errors"][name] = traceback.format_exc()[-3000:]
            log(f"stage {name} failed: {type(exc).__name__}: {exc}")
        log(f"[{time.perf_counter() - t0:.0f}s] {name} done")
        save()

    if args.copy_bw:
        R["copy_bandwidth_B_s"] = args.copy_bw
    else:
        stage("copy_bandwidth_B_s", copy_bandwidth)
    bw = R.get("copy_bandwidth_B_s", 4.3e12)
    if args.cuda_only:
        cuda_stages(R, stage, bw)
        R["total_s"] = time.perf_counter() - t0
        save()
        print_cuda_table(R)
        return 0
    stage("gemv", lambda: [sweep_shape(n, kd, bw, args.quick) for n, kd in SHAPES])
    for row in R.get("gemv", []):
        hook.TUNED[tuple(row["shape"])] = Plan(**row["best"]["plan"])
    R["tuned"] = {f"{n}x{kd}": p.__dict__ for (n, kd), p in hook.TUNED.items()}
    stage("correctness", lambda: {f"{n}x{kd}": check_shape(n, kd, hook.choose_plan(n, kd)) for n, kd in SHAPES})
    gemv = {tuple(r["shape"]): r for r in R.get("gemv", [])}
    if len(gemv) == 4:
        R["per_token_gemv_ms"] = {
            "kernel": 32 * sum(PER_LAYER[s] * gemv[s]["best"]["us"] for s in SHAPES) / 1e3,
            "bnb": 32 * sum(PER_LAYER[s] * gemv[s]["bnb_us"] for s in SHAPES) / 1e3}
    save()
    cuda_stages(R, stage, bw)

    if args.gemv_only:
        print_table(R)
        print_cuda_table(R)
        return 0
    from app.engine.loading.loader import load_model
    from app.engine.local.compiled_decode import warm_up

    loaded = None

    def load():
        nonlocal loaded
        t = time.perf_counter()
        build_model(Path(args.model_dir), tiny=False)
        built = time.perf_counter() - t
        loaded = load_model(Path(args.model_dir))
        row = {"build_s": built, "load_s": time.perf_counter() - t - built,
               "decode_kernel": loaded.report.decode_kernel, "fallbacks": loaded.report.fallbacks}
        if not any("forward" in m.__dict__ for m in hook.nf4_layers(loaded.model)):  # the loader kept bnb
            row["forced_install"] = hook.install(loaded.model, require_faster=False).__dict__
        row["swapped_layers"] = sum("forward" in m.__dict__ for m in hook.nf4_layers(loaded.model))
        return row

    stage("load", load)
    if loaded is None:
        print_table(R)
        return 1
    vocab = loaded.model.config.vocab_size
    stage("teacher_forced", lambda: teacher_forced(loaded))

    def compiled(caps, ctxs, label, profile=False):
        torch._dynamo.reset()
        t = time.perf_counter()
        dec = warm_up(loaded, caps)
        row = {"warm_up_s": time.perf_counter() - t, "status": dec.status.__dict__, "label": label,
               "decode": [fresh_decode_speed(loaded, dec, c, 256, vocab) for c in ctxs]}
        if profile:
            row["profile"] = profile_fresh(loaded, dec, 1024, vocab)
        return row

    if left() > 90:
        stage("decode_kernel_1k", lambda: compiled((2048,), (1024,), "fused NF4 GEMV", profile=True))
    saved = {m: m.__dict__["forward"] for m in hook.nf4_layers(loaded.model) if "forward" in m.__dict__}
    if left() > 60:
        for m in saved:
            del m.forward
        stage("decode_bnb_1k", lambda: compiled((2048,), (1024,), "bitsandbytes"))
        for m, f in saved.items():
            m.forward = f
    if left() > 80:
        stage("decode_kernel_4k", lambda: compiled((4096,), (3840,), "fused NF4 GEMV"))
    R["total_s"] = time.perf_counter() - t0
    save()
    print_table(R)
    return 0


def print_table(R: dict) -> None:
    bw = R.get("copy_bandwidth_B_s", 0)
    log(f"\ncopy bandwidth {bw / 1e12:.2f} TB/s")
    log("| N x K | bnb us | bnb TB/s | kernel us (best plan) | TB/s | % copy | kernel 0-5 us "
        "| rel err vs dequant | vs bnb | repeatable |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for row in R.get("gemv", []):
        n, kd = row["shape"]
        c = R.get("correctness", {}).get(f"{n}x{kd}", {})
        lk = "/".join(f"{v:.1f}" if v else "-" for v in row["kernel_us"].values())
        log(f"| {n}x{kd} | {row['bnb_us']:.1f} | {row['bnb_tb_s']:.2f} | {row['best']['us']:.1f} {row['best']['plan']} "
            f"| {row['best']['tb_s']:.2f} | {100 * row['best_fraction_of_copy_bw']:.0f}% | {lk} "
            f"| {c.get('rel_vs_dequant_fp32', float('nan')):.1e} | {c.get('rel_vs_bnb_gemv', float('nan')):.1e} "
            f"| {c.get('repeatable')} |")
    for row in R.get("gemv", []):
        log(f"{row['shape']} best us by pipeline stages 1/2/3: {row['stages_us']}")
    if "per_token_gemv_ms" in R:
        log(f"GEMV per token (32 layers x 7 linears): {R['per_token_gemv_ms']}")
    log(f"teacher-forced: {R.get('teacher_forced')}")
    for key in ("decode_kernel_1k", "decode_bnb_1k", "decode_kernel_4k"):
        row = R.get(key)
        if row:
            for d in row["decode"]:
                log(f"| {key} @{d['context']} | {d['tok_s']:.1f} tok/s | {d['path']} "
                    f"| warm-up {row['warm_up_s']:.0f}s |")
    if R.get("errors"):
        log("errors in stages:", list(R["errors"]))


if __name__ == "__main__":
    sys.exit(main())
