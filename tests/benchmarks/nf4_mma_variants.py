"""Where the NF4 mma GEMV's time goes (issue 15): instruction rates, variants of the kernel, timelines.

The CUDA mma kernel (app/engine/local/nf4_mma.py) ran gate/up at ~11.5 weights a clock an SM where
its integer-pipe count allows ~23. These stages tell why (the answer, measured on the H200 on
2026-12-03, is in nf4_mma.py's docstring: the loop runs at that bound, the launch loses half its
time to exposed first loads and uneven waves):

1. ``rates``: throughput of the loop's instruction classes on this GPU (PRMT, LOP3, IADD3, IMAD.HI,
   FMUL, F2FP bf16x2), each as 8 independent chains per thread at 64 warps per SM, in thread
   instructions per clock per SM (the SM clock read in the kernel: clock64 against globaltimer).
2. ``variants``: the kernel's SOURCE patched (VARIANTS), compiled (registers, spills) and timed per
   Llama-3-8B shape inside a CUDA graph over rotating weight copies (as tests/benchmarks/nf4_gemv.py):
   candidates that keep the result (two accumulator chains, 8 / 24 / 32 warps an SM, the codebook
   as immediates, L2 prefetch, L2::256B loads; some over every launch shape, SWEEP) and diagnostics
   that break it on purpose to remove one cost (``diag_*``: no weight loads, no lookups, no mma,
   no code2 lookup, PRMT swapped for LOP3 in the pick or the interleave).
3. ``--timeline``: per-warp timestamps (clock64, globaltimer, SM) of one launch per shape and launch
   shape: how long the first super-tile takes (its load exposed) against the later ones, and how
   the warps fall in time on the SMs.

    python3 -m tests.benchmarks.nf4_mma_variants --out $OUT      # H200, ~1 min: rates and variants
    python3 -m tests.benchmarks.nf4_mma_variants --out $OUT --no-rates --timeline --only none

Each writes nf4_mma_variants_h200.json to --out. The committed results/nf4_mma_variants_h200.json
merges the six runs of 2026-12-03 (the fourth and sixth also timed programmatic dependent launch
and a stream-K schedule with the code of commit 577f8e3; both were taken out again). A persistent
kernel is timed over whole groups by tests/benchmarks/nf4_layer_chain.py.
"""

import argparse
import json
import os
import re
import time
import traceback

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_hook as hook
from app.engine.local import nf4_mma
from tests.benchmarks.nf4_gemv import PER_LAYER, SHAPES, graph_time_us, log, make_layer, mma_launches, rel

RATE_SOURCE = r"""
typedef unsigned int u32;
typedef unsigned long long u64;
__device__ __forceinline__ u64 gtimer() { u64 t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
#define CHAINS 8
#define BODY(OP) \
    u32 x[CHAINS]; \
    for (int i = 0; i < CHAINS; ++i) x[i] = seed * (i + 3) + threadIdx.x; \
    u64 c0 = clock64(), t0 = gtimer(); \
    for (int it = 0; it < iters; ++it) { \
        _Pragma("unroll") for (int i = 0; i < CHAINS; ++i) { u32 a = x[i], b = x[(i + 1) % CHAINS]; OP; x[i] = a; } \
    } \
    u64 c1 = clock64(), t1 = gtimer(); \
    u32 acc = 0; for (int i = 0; i < CHAINS; ++i) acc ^= x[i]; \
    if (acc == 0x12345678u) out[0] = acc; \
    if (threadIdx.x == 0 && blockIdx.x == 0) { clocks[0] = c1 - c0; clocks[1] = t1 - t0; }

extern "C" __global__ void r_prmt(u32 seed, u32 s, int iters, u32* out, u64* clocks) {
    BODY(asm("prmt.b32 %0, %1, %2, %3;" : "=r"(a) : "r"(a), "r"(b), "r"(s)))
}
extern "C" __global__ void r_lop3(u32 seed, u32 s, int iters, u32* out, u64* clocks) {
    BODY(a = (a & b) ^ s)
}
extern "C" __global__ void r_iadd3(u32 seed, u32 s, int iters, u32* out, u64* clocks) {
    BODY(a = a + b + s)
}
extern "C" __global__ void r_imadhi(u32 seed, u32 s, int iters, u32* out, u64* clocks) {
    BODY(asm("mad.hi.u32 %0, %1, %2, %3;" : "=r"(a) : "r"(a), "r"(s), "r"(b)))
}
extern "C" __global__ void r_fmul(u32 seed, u32 s, int iters, u32* out, u64* clocks) {
    BODY(asm("mul.rn.f32 %0, %1, %2;" : "=r"(a) : "r"(a), "r"(b)))
}
extern "C" __global__ void r_f2fp(u32 seed, u32 s, int iters, u32* out, u64* clocks) {
    BODY(asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(a) : "r"(a), "r"(b)))
}
"""
RATE_KERNELS = ("r_prmt", "r_lop3", "r_iadd3", "r_imadhi", "r_fmul", "r_f2fp")

# (old, new) replacements on nf4_mma.SOURCE; each old must occur.
_LB = ("__launch_bounds__(256, 2)", "__launch_bounds__(256, 1)")
_ACC2 = [("mma(d, ea[2], eb[2], ea[3], eb[3], xv.z, xv.w);", "mma(d + 4, ea[2], eb[2], ea[3], eb[3], xv.z, xv.w);"),
         ("float d[4] = {0.f, 0.f, 0.f, 0.f};", "float d[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};"),
         ("if (c == 0) { red[warp][g] = d[0]; red[warp][g + 8] = d[2]; }",
          "if (c == 0) { red[warp][g] = d[0] + d[4]; red[warp][g + 8] = d[2] + d[6]; }")]
_PF_FN = ("__device__ __forceinline__ float ld_cg(", "__device__ __forceinline__ void prefetch_l2(const void* p) {\n"
          "    asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(p));\n}\n__device__ __forceinline__ float ld_cg(")
# every super-tile this warp will read, requested into L2 before its first load: lane c takes super-tiles
# c, c + 4, ... of rows g and g + 8 (128 bytes a row, one line), and the rows' absmax codes
_PFALL = [_PF_FN, ("    Loads cur = load<NESTED>(r, absmax2, st0), nxt;",
                   "    for (int j = c; j < iters; j += 4) {\n"
                   "        prefetch_l2(r.wa - 2 * c + 8 * (st0 + j)); prefetch_l2(r.wb - 2 * c + 8 * (st0 + j));\n"
                   "    }\n"
                   "    if (NESTED && c == 0) { prefetch_l2(r.qa + 4 * st0); prefetch_l2(r.qb + 4 * st0); }\n"
                   "    Loads cur = load<NESTED>(r, absmax2, st0), nxt;")]
_L2_256 = [("ld.global.nc.L1::evict_first.v4.u32", "ld.global.nc.L1::evict_first.L2::256B.v4.u32")]
NF4_BITS = ("0xbf800000u, 0xbf3239b1u, 0xbf066b30u, 0xbeca32a0u, 0xbe91a24du, 0xbe3d353fu, 0xbdba7871u, 0x00000000u, "
            "0x3da2faffu, 0x3e24cae3u, 0x3e7c04ddu, 0x3ead033au, 0x3ee1a4b8u, 0x3f1007abu, 0x3f3913b3u, 0x3f800000u")
# bitsandbytes' NF4 codebook as float32 literals: the table multiplies take immediates, 16 registers fewer
_CBIMM = [("    float cb[16];\n#pragma unroll\n    for (int i = 0; i < 16; ++i) cb[i] = __ldg(code + i);",
           "    const u32 cbits[16] = {" + NF4_BITS + "};\n    float cb[16];\n#pragma unroll\n"
           "    for (int i = 0; i < 16; ++i) cb[i] = __uint_as_float(cbits[i]);")]
_LOOKUPS = ("    lookup4(w, wx, pick, t, e[0], e[1]);\n"
            "    lookup4(shr(w, k.m16), shr(wx, k.m16), shr(pick, k.m16), t, e[2], e[3]);")
_NO_LOOKUPS = "    e[0] = w ^ t.l0; e[1] = wx ^ t.h1; e[2] = pick ^ t.l2; e[3] = w + t.h3;"
_MMA_ASM = ('asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
            '{%8,%9}, "\n        "{%0,%1,%2,%3};"')
VARIANTS: dict[str, tuple[list, bool]] = {  # name: (patches, keeps the result)
    "base": ([], True),
    "pfall": (_PFALL, True),
    "l2_256": (_L2_256, True),
    "pfall_nolookup": (_PFALL + [(_LOOKUPS, _NO_LOOKUPS)], False),
    "lb3": ([("__launch_bounds__(256, 2)", "__launch_bounds__(256, 3)")], True),
    "cbimm": (_CBIMM, True),
    "cbimm_lb3": (_CBIMM + [("__launch_bounds__(256, 2)", "__launch_bounds__(256, 3)")], True),
    "lb4": ([("__launch_bounds__(256, 2)", "__launch_bounds__(256, 4)")], True),
    "acc2": (_ACC2, True),
    "lb1": ([_LB], True),
    "acc2_lb1": (_ACC2 + [_LB], True),
    "diag_noload": ([("v.a0 = ld_stream(pa); v.a1 = ld_stream(pa + 1);\n"
                      "    v.b0 = ld_stream(pb); v.b1 = ld_stream(pb + 1);",
                      "u32 z = (u32)st * 2654435761u + (u32)(size_t)pa;\n"
                      "    v.a0.x = z; v.a0.y = z ^ 0x5a5a5a5au; v.a0.z = z + 77u; v.a0.w = z * 3u;\n"
                      "    v.a1.x = z ^ 0x1234567u; v.a1.y = z + 0x9e37u; v.a1.z = z * 5u; v.a1.w = ~z;\n"
                      "    v.b0.x = z * 7u; v.b0.y = z ^ 0x33u; v.b0.z = z + 0x4242u; v.b0.w = z * 9u;\n"
                      "    v.b1.x = z ^ 0xf0f0u; v.b1.y = z + 5u; v.b1.z = z * 11u; v.b1.w = z ^ 0xabcdefu;")], False),
    "diag_nolookup": ([(_LOOKUPS, _NO_LOOKUPS)], False),
    "diag_nomma": ([(_MMA_ASM + '\n        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])\n'
                     '        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));',
                     "d[0] += __uint_as_float((a0 ^ a1 ^ a2) & 0x3f00ffffu);\n"
                     "    d[2] += __uint_as_float((a3 ^ b0 ^ b1) & 0x3f00ffffu);")],
                   False),
    "diag_nocode2": ([("sa = add_rn(mul_rn(code2[v.qa], sa), offset);\n"
                       "        sb = add_rn(mul_rn(code2[v.qb], sb), offset_b);",
                       "sa = add_rn(__uint_as_float(v.qa | 0x3f800000u), sa);\n"
                       "        sb = add_rn(__uint_as_float(v.qb | 0x3f800000u), sb);")],
                     False),
    "diag_pick_lop": ([("u32 lo = prmt(prmt(t.l0, t.l1, sel), prmt(t.l2, t.l3, selx), pick);\n"
                        "    u32 hi = prmt(prmt(t.h0, t.h1, sel), prmt(t.h2, t.h3, selx), pick);",
                        "u32 la = prmt(t.l0, t.l1, sel), lb = prmt(t.l2, t.l3, selx);\n"
                        "    u32 ha = prmt(t.h0, t.h1, sel), hb = prmt(t.h2, t.h3, selx);\n"
                        "    u32 lo = (la & ~pick) | (lb & pick), hi = (ha & ~pick) | (hb & pick);")], False),
    "diag_ilv_lop": ([("e01 = prmt(lo, hi, 0x4051);\n    e23 = prmt(lo, hi, 0x6273);",
                       "e01 = (lo & 0x00ff00ffu) | (hi & 0xff00ff00u);\n"
                       "    e23 = (lo & 0xff00ff00u) | (hi & 0x00ff00ffu);")],
                     False),
}


def patched(patches: list) -> str:
    src = nf4_mma.SOURCE
    for old, new in patches:
        if old not in src:
            raise ValueError(f"patch target not in SOURCE: {old[:60]!r}")
        src = src.replace(old, new)
    return src


def load(source: str, names: list[str]) -> tuple[dict, str]:
    from torch.cuda._utils import _cuda_load_module

    major, minor = torch.cuda.get_device_capability()
    cubin, text = nf4_mma.compile_cubin(f"{major}{minor}", options=("--ptxas-options=-v",), source=source)
    return _cuda_load_module(cubin, names), text


def rates() -> dict:
    """Thread instructions per clock per SM of each class (8 chains a thread, 64 warps an SM)."""
    kernels, _ = load(RATE_SOURCE, list(RATE_KERNELS))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    clocks = torch.zeros(2, dtype=torch.int64, device="cuda")
    iters, threads, blocks = 4096, 256, sms * 8
    row = {}
    for name in RATE_KERNELS:
        fn = kernels[name]

        def go(fn=fn):
            fn(grid=(blocks, 1, 1), block=(threads, 1, 1), args=[12345, 0x3210, iters, out, clocks])
        go()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(5):
            go()
        b.record()
        b.synchronize()
        seconds = a.elapsed_time(b) / 1e3 / 5
        cyc, ns = (int(v) for v in clocks.tolist())
        ghz = cyc / ns if ns else float("nan")
        ops = blocks * threads * iters * 8
        row[name[2:]] = {"per_clk_per_sm": ops / seconds / sms / (ghz * 1e9), "ghz": ghz, "ms": seconds * 1e3}
    return row


# timestamps per warp (split_k 1 only: the partials buffer holds them): clock64 at start, after the
# first super-tile (its load exposed), after the loop; globaltimer at start and end; the SM
_TIMELINE = [
    ("__device__ __forceinline__ float ld_cg(", "__device__ __forceinline__ unsigned long long gtime() {\n"
     "    unsigned long long t; asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t)); return t;\n}\n"
     "__device__ __forceinline__ float ld_cg("),
    ("    const int st0 = (blockIdx.y * warps + warp) * iters;",
     "    const long long c0 = clock64(); const unsigned long long g0 = gtime(); long long c1 = 0;\n"
     "    const int st0 = (blockIdx.y * warps + warp) * iters;"),
    ("        cur = nxt;", "        cur = nxt;\n        if (i == 0) { c1 = clock64(); }"),
    ("    if (c == 0) { red[warp][g] = d[0]; red[warp][g + 8] = d[2]; }",
     "    if (lane == 0) {\n"
     "        unsigned smid; asm volatile(\"mov.u32 %0, %smid;\" : \"=r\"(smid));\n"
     "        long long* rec = (long long*)part + 8 * (blockIdx.x * warps + warp);\n"
     "        rec[0] = c0; rec[1] = c1; rec[2] = clock64(); rec[3] = (long long)g0; rec[4] = (long long)gtime();\n"
     "        rec[5] = smid; rec[6] = (long long)d[0];\n"
     "    }\n"
     "    if (c == 0) { red[warp][g] = d[0]; red[warp][g + 8] = d[2]; }"),
]


def timeline(shape=(14336, 4096), warps=4) -> dict:
    """One launch of the base kernel with per-warp timestamps (see _TIMELINE): how a warp's life splits
    into the first super-tile (exposed load) and the rest, and how the warps of the launch fall in time."""
    n, kd = shape
    loaded, _ = load(patched(_TIMELINE), [nf4_mma.KERNELS[True]])
    kern = loaded[nf4_mma.KERNELS[True]]
    layers = [make_layer(n, kd, seed=i) for i in range(8)]
    ts = [k.tensors_of(lay) for lay in layers]
    x = torch.randn(kd, device="cuda").to(torch.bfloat16)
    steps = kd // nf4_mma.SUPER_TILE
    iters = steps // warps
    tiles = -(-n // 16)
    rec = torch.zeros(tiles * warps * 8, dtype=torch.int64, device="cuda")
    y = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    out = {"shape": [n, kd], "warps": warps, "iters": iters, "runs": []}
    for t in ts[1:] + ts[:1]:  # the last one measured, weights not in L2 (the others evicted it)
        kern(grid=(tiles, 1, 1), block=(32 * warps, 1, 1),
             args=[x, t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code, y, rec, t.counters, y, n, kd, iters, 0,
                   *nf4_mma.OPAQUE], shared_mem=2 * kd)  # the block's inputs (SOURCE's gemv stages them)
    torch.cuda.synchronize()
    r = rec.view(-1, 8).cpu().double()
    first, rest, g0, g1 = r[:, 1] - r[:, 0], r[:, 2] - r[:, 1], r[:, 3], r[:, 4]
    start = g0.min()
    out["kernel_span_us"] = float((g1.max() - start) / 1e3)
    out["warp_life_us_median"] = float(((g1 - g0) / 1e3).median())
    out["first_tile_cycles_median"] = float(first.median())
    out["later_tile_cycles_median"] = float((rest / max(iters - 1, 1)).median())
    out["start_us_quantiles"] = [float(((g0 - start) / 1e3).quantile(q)) for q in (0, .25, .5, .75, 1)]
    out["end_us_quantiles"] = [float(((g1 - start) / 1e3).quantile(q)) for q in (0, .25, .5, .75, 1)]
    # warps resident per SM over time, in 0.5 µs bins
    span = out["kernel_span_us"]
    bins = [i * 0.5 for i in range(int(span / 0.5) + 2)]
    resident = []
    for b in bins:
        t = start + b * 1e3
        resident.append(float(((g0 <= t) & (g1 > t)).sum()) / 132)
    out["warps_per_sm_every_0.5us"] = [round(v, 1) for v in resident]
    per_tile = rest / max(iters - 1, 1)
    out["later_tile_cycles_quantiles"] = [float(per_tile.quantile(q)) for q in (0.1, 0.5, 0.9)]
    out["first_tile_cycles_quantiles"] = [float(first.quantile(q)) for q in (0.1, 0.5, 0.9)]
    sm = r[:, 5].long()
    counts = torch.bincount(sm, minlength=132).double()
    ends = torch.zeros(132, dtype=torch.float64).scatter_reduce(0, sm, (g1 - start) / 1e3, "amax")
    out["sm_warps_vs_end_us"] = sorted({(int(c), round(float(ends[sm_i]), 1)) for sm_i, c in enumerate(counts.tolist())
                                        if c > 0})[:40]
    return out


SWEEP = ("pfall", "lb3", "cbimm_lb3")  # variants timed over every launch shape too


def time_launch(kern, tensors, x, n: int, kd: int, warps: int, split: int) -> tuple[float, torch.Tensor]:
    """(µs per call in a CUDA graph over the rotating copies, the first copy's y)."""
    steps = kd // nf4_mma.SUPER_TILE

    def call(t, y, part):
        kern(grid=(-(-n // 16), split, 1), block=(32 * warps, 1, 1),
             args=[x, t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code, y, part, t.counters, y,
                   n, kd, steps // (warps * split), 0, *nf4_mma.OPAQUE], shared_mem=2 * kd // split)
    bufs = [(torch.empty(n, dtype=torch.bfloat16, device="cuda"),
             torch.empty(max(1, split * n), dtype=torch.float32, device="cuda")) for _ in tensors]
    call(tensors[0], *bufs[0])
    torch.cuda.synchronize()
    y0 = bufs[0][0].clone()
    return graph_time_us([lambda t=t, b=b: call(t, *b) for t, b in zip(tensors, bufs, strict=True)]), y0


def variants(shapes, only=()) -> dict:
    """Per variant: registers, rel. error vs the base kernel, µs per shape, ms of GEMV per 8B token."""
    res: dict = {}
    layers = {s: [make_layer(*s, seed=i) for i in range(max(4, -(-400 * 2**20 // (s[0] * s[1] // 2))))]
              for s in shapes}
    ts = {s: [k.tensors_of(lay) for lay in layers[s]] for s in shapes}
    xs = {s: torch.randn(s[1], device="cuda").to(torch.bfloat16) for s in shapes}
    base_y = {}
    for name, (patches, keeps) in VARIANTS.items():
        if only and name not in only and name != "base":
            continue
        row: dict = {"keeps_result": keeps}
        res[name] = row
        try:
            loaded, text = load(patched(patches), [nf4_mma.KERNELS[True]])
            row["registers"] = [int(r) for r in re.findall(r"Used (\d+) registers", text)]
            row["spills"] = re.findall(r"(\d+) bytes spill stores", text)
            kern = loaded[nf4_mma.KERNELS[True]]
            for s in shapes:
                n, kd = s
                plan = hook.mma_plan(n, kd)
                key = f"{n}x{kd}"
                launches = [(plan.num_warps, plan.split_k)]
                if name in SWEEP:
                    launches += [(p.num_warps, p.split_k) for p in mma_launches(n, kd)
                                 if (p.num_warps, p.split_k) != launches[0]]
                for i, (warps, split) in enumerate(launches):
                    us, y0 = time_launch(kern, ts[s], xs[s], n, kd, warps, split)
                    if i == 0:
                        if name == "base":
                            base_y[s] = y0
                        row[f"rel_vs_base_{key}"] = rel(y0, base_y[s]) if s in base_y else None
                        row[f"us_{key}"] = us
                    else:
                        row.setdefault(f"sweep_{key}", []).append({"warps": warps, "split_k": split, "us": us})
                if name in SWEEP:
                    best = min([{"warps": launches[0][0], "split_k": launches[0][1], "us": row[f"us_{key}"]}]
                               + row.get(f"sweep_{key}", []), key=lambda r: r["us"])
                    row[f"best_{key}"] = best
            if name in SWEEP:
                row["best_gemv_ms_per_token"] = 32 * sum(PER_LAYER[s] * row[f"best_{s[0]}x{s[1]}"]["us"]
                                                         for s in shapes) / 1e3
            row["gemv_ms_per_token"] = 32 * sum(PER_LAYER[s] * row[f"us_{s[0]}x{s[1]}"] for s in shapes) / 1e3 \
                if set(shapes) == set(SHAPES) else None
        except Exception as exc:  # noqa: BLE001 - one variant failing must not lose the others
            row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
            traceback.print_exc()
        log(name, json.dumps({a: b for a, b in row.items() if a != "keeps_result"}))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--only", default="", help="comma-separated variants (base is always timed)")
    ap.add_argument("--no-rates", action="store_true")
    ap.add_argument("--timeline", action="store_true", help="per-warp timestamps of one launch a shape first")
    args = ap.parse_args(argv)
    only = tuple(filter(None, args.only.split(",")))
    R: dict = {"command": "python3 -m tests.benchmarks.nf4_mma_variants --out $OUT",
               "date": time.strftime("%Y-%m-%d %H:%M"), "device": torch.cuda.get_device_name(0),
               "torch": torch.__version__}
    stages = ([] if args.no_rates else [("rates", rates)]) + [("variants", lambda: variants(SHAPES, only))]
    if args.timeline:
        stages = [("timeline_gate", timeline), ("timeline_gate_w2", lambda: timeline((14336, 4096), 2)),
                  ("timeline_gate_w1", lambda: timeline((14336, 4096), 1)),
                  ("timeline_down", lambda: timeline((4096, 14336), 8)),
                  ("timeline_down_w2", lambda: timeline((4096, 14336), 2))] + stages
    for name, fn in stages:
        t = time.perf_counter()
        try:
            R[name] = fn()
        except Exception as exc:  # noqa: BLE001
            R[name] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
            traceback.print_exc()
        log(f"{name}: {time.perf_counter() - t:.1f}s")
        with open(os.path.join(args.out, "nf4_mma_variants_h200.json"), "w") as f:
            json.dump(R, f, indent=1)
    log("\n| class | per clk per SM | GHz |")
    for name, r in (R.get("rates") or {}).items():
        if isinstance(r, dict):
            log(f"| {name} | {r['per_clk_per_sm']:.1f} | {r['ghz']:.2f} |")
    for name, r in (R.get("variants") or {}).items():
        if isinstance(r, dict) and "best_gemv_ms_per_token" in r:
            log(f"{name} best launches: " + ", ".join(f"{n}x{kd} {r[f'best_{n}x{kd}']}" for n, kd in SHAPES)
                + f" -> {r['best_gemv_ms_per_token']:.3f} ms/token")
    log("\n| variant | keeps | regs | " + " | ".join(f"{n}x{kd} us" for n, kd in SHAPES) + " | ms/token |")
    for name, r in (R.get("variants") or {}).items():
        if isinstance(r, dict) and "error" not in r:
            log(f"| {name} | {r['keeps_result']} | {r.get('registers')} | "
                + " | ".join(f"{r.get(f'us_{n}x{kd}', float('nan')):.1f}" for n, kd in SHAPES)
                + f" | {r.get('gemv_ms_per_token') or float('nan'):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
