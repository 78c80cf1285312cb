"""The NF4 GEMV with its codebook lookup in shared memory instead of `prmt` (issue 15 experiment).

nf4_mma's loop spends ~2.5 integer-pipe instructions a weight, 2.1 of them the `prmt` lookups of a
per-(row, 64-block) table of 16 bf16 weights held in registers, and runs at about half that pipe's
bound: the 16 warps an SM its 116-128 registers allow do not hide the lookup chain (nf4_mma.py's
docstring). Here every byte of codes (two weights) is looked up in a table of fp32 pairs
``{code[b >> 4], code[b & 15]}`` in shared memory, 32 copies (one per lane: 256 bytes a row, so
that ``prmt`` makes the whole address in one instruction and the 16 lanes of a half-warp hit 16
distinct bank pairs whatever their bytes), then scaled: ``bf16x2(mul.rn(code_lo, s), mul.rn(code_hi,
s))``, the very operations of bitsandbytes' dequantization, so the weights stay bit-identical. Per
byte: 1 PRMT + 1 LDS.64 + 2 FMUL + 1 F2FP (the integer pipe 0.5 a weight instead of 2.5; shared
memory 32 weights a clock an SM against the integer pipe's ~25 before), no tables or codebook in
registers. ``TAB32``: 16 copies (32 KB, 128-byte rows, one shift more a byte) so more blocks fit.

Each warp owns one row tile (16 rows) over its split's K range, so a block of 4-8 warps builds the
table and stages x once for all of them. Compared bit for bit with nf4_mma at (1 warp, same split):
the same mma chain per warp, the same order of partial sums.

    python3 -m tests.benchmarks.nf4_pair_table --out $OUT --bounds 2:3,3:4    # H200, ~30 s

Writes nf4_pair_table_h200.json to --out.

Measured on the H200, 2026-12-04 (results/nf4_pair_table_h200.json; µs a launch in a CUDA graph over
rotating weight copies, each kernel at its best launch shape and launch bounds; the exact tables are
bit-identical to nf4_mma at (1 warp, same split) in every shape and launch shape):

| shape (N x K) | nf4_mma (shipped) | fp32 pairs, 64 KB | fp32 pairs, 32 KB | bf16 pairs x bf16(s) (not exact) |
|---------------|-------------------|-------------------|-------------------|----------------------------------|
| 4096 x 4096   | 8.0               | 11.5              | 10.7              | 10.5                             |
| 1024 x 4096   | 5.5               | 7.7               | 6.9               | 7.4                              |
| 14336 x 4096  | 20.0              | 26.6              | 26.0              | 22.9                             |
| 4096 x 14336  | 19.9              | 25.4              | 24.9              | 24.3                             |

Not adopted: slower in every shape, 0.76-0.87x, with 80-96 registers (24 warps an SM) against 116-128,
and even with the lookup at 1.5 instructions a weight (the bf16 variant, whose weights are not
bitsandbytes' bits). Fewer instructions a weight do not make this loop faster: what bounds it is the
latency each warp waits through (here a shared-memory load in every weight's chain), not the issue
rate of the integer pipe.

The two pipes together (``hyb64`` / ``hyb32``, 2026-12-04): rows g by nf4_mma's ``prmt`` lookup from
register tables, rows g+8 by the table in shared memory, so the integer pipe carries ~1.8 instructions
a weight instead of 2.5 and shared memory half the table's loads. Bit-identical to nf4_mma; measured on
the H200 (results/nf4_pair_table_h200_hybrid.json, ``--bounds 2:2,2:3``), µs at each kernel's best
launch shape against the shipped kernel in the same run: 9.51 against 7.69 (4096 x 4096), 6.77 against
5.13 (1024 x 4096), 22.78 against 19.38 (14336 x 4096), 20.77 against 19.38 (4096 x 14336). Better than
the table alone, still slower than the registers alone: not adopted either.
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
from tests.benchmarks.nf4_gemv import PER_LAYER, SHAPES, graph_time_us, log, make_layer, rel

TABLE_SOURCE = r"""
// ---- pair-table lookup (tests/benchmarks/nf4_pair_table.py)
// Word w (8 codes, byte m = elements 2m | 2m+1) -> e[m] = bf16x2 of elements 2m (low half), 2m+1 (high).
// MODE 0: fp32 pairs, 32 copies (64 KB); 1: fp32 pairs, 16 copies (32 KB); 2 (not bit-identical, a
// bound): bf16 pairs {bf16(code[b >> 4]), bf16(code[b & 15])}, 32 copies of 4 bytes in 256-byte rows,
// times bf16(s) in one mul.rn.bf16x2.
__device__ __forceinline__ u32 mul_bf16x2(u32 a, u32 b) {
    u32 d;
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
template <int MODE>
__device__ __forceinline__ void deq8(u32 w, float s, const unsigned char* tab, u32 lane_off, u32 m1, u32* e) {
    const u32 s2 = MODE == 2 ? bf16x2(s, s) : 0u;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        u32 off = prmt(w, lane_off, 0x5504u | (m << 4));  // {lane_off, byte m, 0, 0}: byte*256 + lane_off
        if (MODE == 1) off = shr(off, m1);                // byte*128 + lane_off/2
        if (MODE == 2) {
            e[m] = mul_bf16x2(*(const u32*)(tab + off), s2);
        } else {
            const uint2 p = *(const uint2*)(tab + off);
            e[m] = bf16x2(mul_rn(__uint_as_float(p.y), s), mul_rn(__uint_as_float(p.x), s));
        }
    }
}

template <bool NESTED, int MODE>
__device__ __forceinline__ void step_tab(float* d, const Loads& v, const uint4* __restrict__ xs,
                                         const float* __restrict__ code2, float offset, const unsigned char* tab,
                                         u32 lane_off, u32 m1, const float* cb, const Consts& kc) {
    constexpr int TAB = MODE == 3 ? 0 : MODE == 4 ? 1 : MODE;  // the table's layout for rows g+8
    float sa = v.sa, sb = v.sb;
    if (NESTED) {
        sa = add_rn(mul_rn(code2[v.qa], sa), offset);
        sb = add_rn(mul_rn(code2[v.qb], sb), offset);
    }
    Tables ta;
    if (MODE >= 3) ta = tables(cb, sa);  // hybrid: rows g by prmt (integer pipe), rows g+8 by the table
    const u32 wa[8] = {v.a0.x, v.a0.y, v.a0.z, v.a0.w, v.a1.x, v.a1.y, v.a1.z, v.a1.w};
    const u32 wb[8] = {v.b0.x, v.b0.y, v.b0.z, v.b0.w, v.b1.x, v.b1.y, v.b1.z, v.b1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        u32 ea[4], eb[4];
        if (MODE >= 3) lookup8(wa[i], ta, kc, ea);
        else deq8<TAB>(wa[i], sa, tab, lane_off, m1, ea);
        deq8<TAB>(wb[i], sb, tab, lane_off, m1, eb);
        uint4 xv = xs[i];
        mma(d, ea[0], eb[0], ea[1], eb[1], xv.x, xv.y);
        mma(d, ea[2], eb[2], ea[3], eb[3], xv.z, xv.w);
    }
}

// Grid (ceil(tiles / warps), split); warp w of block (b, s) owns row tile b*warps + w over super-tiles
// [s*iters, (s+1)*iters). Dynamic shared memory: the table (64 or 32 KB), then the split's x.
template <bool NESTED, int MODE>
__device__ __forceinline__ void gemv_tab(const uint4* __restrict__ x, const uint4* __restrict__ w,
                                         const void* __restrict__ absmax, const float* __restrict__ absmax2,
                                         const float* __restrict__ code2, const float* __restrict__ offset,
                                         const float* __restrict__ code, float* part, int* counters, u16* y,
                                         int n, int k, int iters, u32 m1, u32 m16, u32 pick) {
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ float code2_s[256];
    constexpr int TAB = MODE == 3 ? 0 : MODE == 4 ? 1 : MODE;
    const int table_bytes = TAB == 1 ? 32768 : 65536;
    unsigned char* tab = smem;
    uint4* x_s = (uint4*)(smem + table_bytes);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int warps = blockDim.x >> 5, tiles = (n + 15) / 16;
    const int tile = blockIdx.x * warps + warp;
    const bool active = tile < tiles;
    const Rows r = rows_at(w, absmax, n, active ? tile : tiles - 1, k, g, c);
    const float off = NESTED ? __ldg(offset) : 0.f;
    const int st0 = blockIdx.y * iters;
    float cb[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) cb[i] = MODE >= 3 ? __ldg(code + i) : 0.f;
    const Consts kc = {m16, m1, pick};
    Loads cur = load<NESTED>(r, absmax2, st0), nxt;
    {   // the table under the first loads: row b (stride 256 or 128 bytes), copy j at 8j
        const int copies = TAB == 1 ? 16 : 32, entries = 256 * copies;
        for (int i = threadIdx.x; i < entries; i += blockDim.x) {
            const int b = i / copies;
            const float hi = __ldg(code + (b >> 4)), lo = __ldg(code + (b & 15));
            if (TAB == 2) ((u32*)tab)[64 * b + i % copies] = bf16x2(lo, hi);  // row b, lane j at 4j
            else ((uint2*)tab)[i] = make_uint2(__float_as_uint(hi), __float_as_uint(lo));
        }
    }
    const uint4* xb = x + 32 * st0;
    for (int j = threadIdx.x; j < 32 * iters; j += blockDim.x) x_s[j] = __ldg(xb + j);
    if (NESTED)
        for (int j = threadIdx.x; j < 256; j += blockDim.x) code2_s[j] = __ldg(code2 + j);
    __syncthreads();
    if (!active) return;
    const u32 lane_off = TAB == 1 ? (u32)(lane & 15) << 4 : TAB == 2 ? (u32)lane << 2 : (u32)lane << 3;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int i = 0; i < iters; ++i) {
        if (i + 1 < iters) nxt = load<NESTED>(r, absmax2, st0 + i + 1);
        step_tab<NESTED, MODE>(d, cur, x_s + 32 * i + 8 * c, code2_s, off, tab, lane_off, m1, cb, kc);
        cur = nxt;
    }
    const int row_a = tile * 16 + g, row_b = row_a + 8;
    if (gridDim.y == 1) {
        if (c == 0 && row_a < n) y[row_a] = bf16(d[0]);
        if (c == 0 && row_b < n) y[row_b] = bf16(d[2]);
        return;
    }
    if (c == 0 && row_a < n) part[(long long)blockIdx.y * n + row_a] = d[0];
    if (c == 0 && row_b < n) part[(long long)blockIdx.y * n + row_b] = d[2];
    __threadfence();
    __syncwarp();
    int last = 0;
    if (lane == 0) last = atomicAdd(counters + tile, 1) == (int)gridDim.y - 1;
    last = __shfl_sync(0xffffffffu, last, 0);
    if (!last) return;
    __threadfence();
    const int row = tile * 16 + lane;
    if (lane < 16 && row < n) {
        float total = 0.f;
        for (int s = 0; s < (int)gridDim.y; ++s) total += ld_cg(part + (long long)s * n + row);
        y[row] = bf16(total);
    }
    if (lane == 0) counters[tile] = 0;
}

#define TAB_ARGS const uint4* x, const uint4* w, const void* absmax, const float* absmax2, const float* code2, \
    const float* offset, const float* code, float* part, int* counters, u16* y, int n, int k, int iters, u32 m1, \
    u32 m16, u32 pick
#define TAB_PASS x, w, absmax, absmax2, code2, offset, code, part, counters, y, n, k, iters, m1, m16, pick
extern "C" __global__ void __launch_bounds__(256, LB64) tab64_nested(TAB_ARGS) { gemv_tab<true, 0>(TAB_PASS); }
extern "C" __global__ void __launch_bounds__(256, LB32) tab32_nested(TAB_ARGS) { gemv_tab<true, 1>(TAB_PASS); }
extern "C" __global__ void __launch_bounds__(256, LB64) tabbf_nested(TAB_ARGS) { gemv_tab<true, 2>(TAB_PASS); }
extern "C" __global__ void __launch_bounds__(256, LB64) hyb64_nested(TAB_ARGS) { gemv_tab<true, 3>(TAB_PASS); }
extern "C" __global__ void __launch_bounds__(256, LB32) hyb32_nested(TAB_ARGS) { gemv_tab<true, 4>(TAB_PASS); }
"""
KERNELS = ("tab64_nested", "tab32_nested", "tabbf_nested", "hyb64_nested", "hyb32_nested")
TABLE_BYTES = {"tab64_nested": 65536, "tab32_nested": 32768, "tabbf_nested": 65536, "hyb64_nested": 65536,
               "hyb32_nested": 32768}


def source(lb64: int, lb32: int) -> str:
    return nf4_mma.SOURCE + TABLE_SOURCE.replace("LB64", str(lb64)).replace("LB32", str(lb32))


def load(src: str) -> tuple[dict, str]:
    from torch.cuda._utils import _cuda_load_module

    major, minor = torch.cuda.get_device_capability()
    cubin, text = nf4_mma.compile_cubin(f"{major}{minor}", options=("--ptxas-options=-v",), source=src)
    return _cuda_load_module(cubin, list(KERNELS) + [nf4_mma.KERNELS[True]]), text


def shapes_for(n: int, kd: int) -> list[tuple[int, int]]:
    """(warps per block, split) worth timing: 4 or 8 warps, split dividing K/256, 64 blocks to 6 an SM."""
    steps, tiles = kd // 256, -(-n // 16)
    out = []
    for warps in (4, 8):
        for split in range(1, steps + 1):
            blocks = -(-tiles // warps) * split
            if steps % split == 0 and 64 <= blocks <= 6 * 132:
                out.append((warps, split))
    return out


def run_table(kern, name, t, x, y, part, warps, split):
    steps = t.k // 256
    iters = steps // split
    smem = TABLE_BYTES[name] + iters * 512
    if getattr(kern, "_max_shared_mem_bytes", 0) < smem:
        kern.set_shared_memory_config(smem)
    tiles = -(-t.n // 16)
    kern(grid=(-(-tiles // warps), split, 1), block=(32 * warps, 1, 1),
         args=[x, t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code, part, t.counters, y, t.n, t.k, iters,
               nf4_mma.OPAQUE[1], nf4_mma.OPAQUE[0], nf4_mma.OPAQUE[2]], shared_mem=smem)


def ptxas_info(text: str) -> dict:
    """{kernel: {registers, spill_stores}} from NVRTC's --ptxas-options=-v log."""
    out = {}
    for part in re.split(r"Compiling entry function", text)[1:]:
        name, regs, spills = part.split("'")[1], re.search(r"Used (\d+) registers", part), \
            re.search(r"(\d+) bytes spill stores", part)
        out[name] = {"registers": int(regs.group(1)) if regs else None,
                     "spill_stores": int(spills.group(1)) if spills else None}
    return out


def run_shipped(kern, t, x, y, part, warps, split):
    """nf4_mma's nested kernel at (warps, split), as nf4_mma.launch calls it (no bias)."""
    steps = t.k // 256
    kern(grid=(-(-t.n // 16), split, 1), block=(32 * warps, 1, 1),
         args=[x, t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code, y, part, t.counters, y,
               t.n, t.k, steps // (warps * split), 0, *nf4_mma.OPAQUE], shared_mem=2 * t.k // split)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--bounds", default="2:3,3:4,3:5", help="launch-bounds pairs lb64:lb32 to compile")
    args = ap.parse_args(argv)
    R: dict = {"command": "python3 -m tests.benchmarks.nf4_pair_table --out $OUT",
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": torch.cuda.get_device_name(0),
               "torch": torch.__version__, "shapes": {}}
    layers = {s: [make_layer(*s, seed=i) for i in range(max(4, -(-400 * 2**20 // (s[0] * s[1] // 2))))]
              for s in SHAPES}
    ts = {s: [k.tensors_of(lay) for lay in layers[s]] for s in SHAPES}
    xs = {s: torch.randn(s[1], device="cuda").to(torch.bfloat16) for s in SHAPES}
    shipped = nf4_mma._kernels(0)[True]
    for s in SHAPES:
        n, kd = s
        key = f"{n}x{kd}"
        row: dict = {}
        R["shapes"][key] = row
        plan = hook.mma_plan(n, kd)
        bufs = [(torch.empty(n, dtype=torch.bfloat16, device="cuda"),
                 torch.empty(max(1, 64 * n), dtype=torch.float32, device="cuda")) for _ in ts[s]]
        x = xs[s]
        row["shipped"] = {"warps": plan.num_warps, "split": plan.split_k, "us": graph_time_us(
            [lambda t=t, b=b, x=x, p=plan: run_shipped(shipped, t, x, *b, p.num_warps, p.split_k)
             for t, b in zip(ts[s], bufs, strict=True)])}
        log(key, "shipped", row["shipped"])
        want = k.reference_gemv(xs[s], ts[s][0])
        for pair in args.bounds.split(","):
            lb64, lb32 = (int(v) for v in pair.split(":"))
            try:
                loaded, text = load(source(lb64, lb32))
            except Exception as exc:  # noqa: BLE001
                row[f"lb{pair}"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
                continue
            R.setdefault("compile", {})[f"lb{pair}"] = ptxas_info(text)
            for name in KERNELS:
                kern = loaded[name]
                for warps, split in shapes_for(n, kd):
                    label = f"{name}/lb{pair}/w{warps}/s{split}"
                    try:
                        # bit for bit against the shipped kernel at (1 warp, this split)
                        y_ref = torch.empty(n, dtype=torch.bfloat16, device="cuda")
                        run_shipped(shipped, ts[s][0], x, y_ref, bufs[0][1], 1, split)
                        y0 = torch.empty(n, dtype=torch.bfloat16, device="cuda")
                        run_table(kern, name, ts[s][0], x, y0, bufs[0][1], warps, split)
                        torch.cuda.synchronize()
                        us = graph_time_us([lambda t=t, b=b, kern=kern, name=name, x=x, w=warps, sp=split:
                                            run_table(kern, name, t, x, b[0], b[1], w, sp)
                                            for t, b in zip(ts[s], bufs, strict=True)])
                        row[label] = {"us": us, "bitwise_vs_shipped": bool(torch.equal(y0, y_ref)),
                                      "rel_vs_reference": rel(y0, want)}
                    except Exception as exc:  # noqa: BLE001
                        row[label] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
                        traceback.print_exc()
                    log(key, label, row[label])
        best = min((v["us"], lab) for lab, v in row.items() if lab != "shipped" and "us" in v)
        row["best"] = {"label": best[1], "us": best[0], "vs_shipped": row["shipped"]["us"] / best[0]}
        log(key, "best", row["best"])
        with open(os.path.join(args.out, "nf4_pair_table_h200.json"), "w") as f:
            json.dump(R, f, indent=1)
    shipped_ms = 32 * sum(PER_LAYER[s] * R["shapes"][f"{s[0]}x{s[1]}"]["shipped"]["us"] for s in SHAPES) / 1e3
    best_ms = 32 * sum(PER_LAYER[s] * R["shapes"][f"{s[0]}x{s[1]}"]["best"]["us"] for s in SHAPES) / 1e3
    R["gemv_ms_per_token"] = {"shipped": shipped_ms, "pair_table_best": best_ms}
    log(f"GEMV ms a token (single launches): shipped {shipped_ms:.3f}, pair table best {best_ms:.3f}")
    with open(os.path.join(args.out, "nf4_pair_table_h200.json"), "w") as f:
        json.dump(R, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
