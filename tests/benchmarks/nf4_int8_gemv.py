"""An experiment for issue 15's planning, not used by the app: the NF4 GEMV with an 8-bit lookup on
the integer tensor cores, timed beside the app's kernel (nf4_mma) on the 8B layer shapes.

Why: the app's NF4 GEMVs are 2.23 ms of the 2.96 ms decode step at 1k (H200, results/
decode_anatomy_h200_fused_rope.json), bound by issuing the lookup's integer instructions: bf16(code[q] *
absmax) as two byte planes, 8 ``prmt`` per 4 weights plus a table per (row, 64-block), ~2.5 integer-pipe
instructions a weight (nf4_mma.py's docstring). Here the codebook is held as int8, T[i] = round(127 *
code[i]) (at most 0.4 % of a block's absmax from NF4's own value, far below the 4-bit step), and x is
quantized to int8 per 64 inputs with its own scale (as llama.cpp's q8_1 does); one byte plane is looked up,
3 ``prmt`` per 4 weights, no table per block, and ``mma.m16n8k32.s32.s8.s8`` adds T[q] * xq exactly; each
64-block's int32 sum is scaled once, absmax * xs / 127, into a float32 row sum. About 1.1 integer-pipe
instructions a weight. The price: the dequantized weights are no longer bf16(code * absmax) bit for bit,
and x is rounded to 8 bits: `main` reports both kernels' relative error against float32 W x.

Layout (lane t: g = t // 4, c = t % 4; a warp owns rows 16t'..16t'+15 as the mma's rows g, g+8): a
64-block is two mmas of K = 32; lane c takes the block's inputs [16c, 16c + 16) of both its rows, 8 code
bytes a row. A word of 8 codes (bytes hold elements 2j | 2j+1, the first in the high nibble) looks up as
lo = {T[e1], T[e0], T[e3], T[e2]} and hi = {T[e5], T[e4], T[e7], T[e6]}: the A registers a0/a1 (slots
4c..4c+3 of rows g/g+8) take a lo, a2/a3 (slots 16+4c..) the hi of the same word. Any permutation of K
applied to both operands leaves the product alone, so x is stored permuted to match: xq[i ^ 1] (pairs
swapped), B's b0 = bytes 16c..16c+3 of the block, b1 = 16c+4..16c+7 (the second mma: +8). Every column
of D is W x; lanes c == 0 add rows g, g+8 into y with atomicAdd (y zeroed first; a split-K without
tickets, fine for timing). `emulate_block` replays one 64-block in numpy from the same rules
(tests/engine/test_nf4_int8_experiment.py).

    python3 -m tests.benchmarks.nf4_int8_gemv --out $OUT      # H200, ~1 min

Writes nf4_int8_gemv_h200.json: per shape the app kernel's µs a launch (its chosen launch shape), the
int8 kernel's best launch shape and µs (with and without x's quantization and y's zeroing), each one's
relative L2 error against float32 W x, and the sum over one Llama-3-8B layer (q/k/v, o, gate/up, down).

Measured on the H200 (2026-12-04 21:04 UTC, results/nf4_int8_gemv_h200.json), µs a launch, int8 kernel
(best launch shape) against the app's: q/k/v 8.35 / 10.77, o 5.72 / 6.69, gate/up (one 28672-row
launch) 29.5 / 41.6, down 17.4 / 18.1; with x's quantization and y's zeroing as the separate launches
they are here, 10.8 / 8.1 / 31.9 / 20.0. A layer: 60.9 µs without them, 70.8 with, against 77.2 (the
app path's own gate/up is the paired launch, ~36 µs, so ~72). Relative L2 error to float32 W x: 8.7e-3
against 1.7e-3, five times bf16's. Reading: the 8-bit lookup speeds up the long gate/up (1.41×) but
little else (down, K = 14,336, 1.04×: the lookup is not what bounds it there); with x's quantization
free (fused into the kernel before) and no zeroing it would take at most ~0.35 ms off the 2.95 ms step,
at an error above bf16's that issue 15's logits criterion does not allow, and with weights no longer
bf16(code · absmax). (llama.cpp's GEMV quantizes x to q8_1 the same way.) A numerics decision, not a
kernel one; not wired into the app. What the numerics do to answers on a real model (SmolLM2-135M, CPU
emulation of this scheme: tests/benchmarks/nf4_int8_quality.py): the next token differs from the app's
about twice as often as two correct bf16 GEMVs differ (5.3-5.7 % of positions against 2.5-3.2 %), and
Korean perplexity moves +0.91 % against +0.14-0.25 %.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from tests.benchmarks.report import write_result

NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]
"""bitsandbytes' NF4 codebook (its ``get_4bit_type("nf4")``)."""

SHAPES = {"q/k/v": (6144, 4096), "o": (4096, 4096), "gate/up": (28672, 4096), "down": (4096, 14336)}
LAUNCHES = [(w, s) for w in (2, 4, 8) for s in (1, 2, 4, 8)]  # (warps, split) tried for the int8 kernel
WEIGHT_COPIES = 4  # distinct weights a timed chain rotates over (more than L2 holds)

SOURCE = r"""
// NF4 GEMV with an int8 lookup on mma.m16n8k32.s8 (tests/benchmarks/nf4_int8_gemv.py's docstring).
typedef unsigned int u32;
typedef unsigned char u8;
typedef unsigned short u16;

__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 sel) {
    u32 d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}
__device__ __forceinline__ u32 shr(u32 v, u32 m) {  // v >> s on the FMA pipe (m = 2^(32-s), an argument)
    u32 d;
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(d) : "r"(v), "r"(m));
    return d;
}
__device__ __forceinline__ void imma(int* d, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// Launched under programmatic dependent launch (nvrtc.launch on sm_90): wait for the kernel before (x's
// quantization, the GEMV before in a chain) before reading what it wrote; let the next one start early.
__device__ __forceinline__ void wait_inputs() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void release_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ uint2 ld2(const void* p) {
    uint2 v;
    asm("ld.global.nc.L1::evict_first.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
// 8 codes → lo = int8 T of elements 1, 0, 3, 2; hi = of 5, 4, 7, 6. t0..t3: T[0..15] as bytes. A code >= 8
// reads a sign-replicated byte from t0/t1 and the right one from t2/t3 (w ^ 0x8888...), the pick by bit 3.
__device__ __forceinline__ void lookup8(u32 w, u32 t0, u32 t1, u32 t2, u32 t3, u32 m1, u32 m16, u32& lo, u32& hi) {
    const u32 wx = w ^ 0x88888888u;
    const u32 pick = (shr(w, m1) & 0x44444444u) | 0x32103210u;
    lo = prmt(prmt(t0, t1, w), prmt(t2, t3, wx), pick);
    hi = prmt(prmt(t0, t1, shr(w, m16)), prmt(t2, t3, shr(wx, m16)), shr(pick, m16));
}

// Grid (ceil(n/16), split), block 32*warps. Warp w of block (t, s): rows 16t.., 64-blocks
// [(s*warps + w)*per_warp, +per_warp). absmax nested: code2[q] * absmax2[i >> 8] + offset.
extern "C" __global__ void __launch_bounds__(256) nf4_int8_gemv(
        const u8* __restrict__ w, const u8* __restrict__ qabs, const float* __restrict__ absmax2,
        const float* __restrict__ code2, const float* __restrict__ offset, const u8* __restrict__ xq,
        const float* __restrict__ xs, float* y, int n, int k, int per_warp,
        u32 t0, u32 t1, u32 t2, u32 t3, u32 m1, u32 m16) {
    __shared__ float code2_s[256];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int warps = blockDim.x >> 5;
    for (int i = threadIdx.x; i < 256; i += blockDim.x) code2_s[i] = code2[i];
    const float off = offset[0];
    wait_inputs();
    __syncthreads();
    const int ra = min(blockIdx.x * 16 + g, n - 1), rb = min(blockIdx.x * 16 + g + 8, n - 1);
    const int kb = k / 64, first = (blockIdx.y * warps + warp) * per_warp;
    const u8* wa = w + (long long)ra * (k / 2) + 8 * c;
    const u8* wb = w + (long long)rb * (k / 2) + 8 * c;
    float acc_a = 0.f, acc_b = 0.f;
#pragma unroll 4
    for (int j = 0; j < per_warp; ++j) {
        const int b = first + j;
        const uint2 ca = ld2(wa + 32 * b), cb = ld2(wb + 32 * b);
        const uint4 xv = __ldg((const uint4*)(xq + 64 * b + 16 * c));
        const float xsc = __ldg(xs + b);
        const int ia = ra * kb + b, ib = rb * kb + b;
        const float sa = code2_s[__ldg(qabs + ia)] * __ldg(absmax2 + (ia >> 8)) + off;
        const float sb = code2_s[__ldg(qabs + ib)] * __ldg(absmax2 + (ib >> 8)) + off;
        u32 la0, ha0, la1, ha1, lb0, hb0, lb1, hb1;
        lookup8(ca.x, t0, t1, t2, t3, m1, m16, la0, ha0);
        lookup8(ca.y, t0, t1, t2, t3, m1, m16, la1, ha1);
        lookup8(cb.x, t0, t1, t2, t3, m1, m16, lb0, hb0);
        lookup8(cb.y, t0, t1, t2, t3, m1, m16, lb1, hb1);
        int d[4] = {0, 0, 0, 0};
        imma(d, la0, lb0, ha0, hb0, xv.x, xv.y);
        imma(d, la1, lb1, ha1, hb1, xv.z, xv.w);
        acc_a += (float)d[0] * (sa * xsc);
        acc_b += (float)d[2] * (sb * xsc);
    }
    release_dependents();
    const int row = blockIdx.x * 16 + g;
    if (c == 0 && row < n) atomicAdd(y + row, acc_a);
    if (c == 0 && row + 8 < n) atomicAdd(y + row + 8, acc_b);
}

// x (k) bf16 → xq (k) int8, pairs swapped (xq[i ^ 1] = round(x[i] / s)), xs (k / 64) = s / 127 with
// s = max |x| / 127 over the block (1 where all zero). One warp a 64-block, two inputs a lane.
extern "C" __global__ void quantize_x(const u16* __restrict__ x, u8* xq, float* xs, int k) {
    const int block = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    wait_inputs();
    release_dependents();
    if (block >= k / 64) return;
    const int i = 64 * block + 2 * lane;
    const float a = __uint_as_float((u32)x[i] << 16), b = __uint_as_float((u32)x[i + 1] << 16);
    float top = fmaxf(fabsf(a), fabsf(b));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
    const float s = top > 0.f ? top / 127.f : 1.f;
    xq[i + 1] = (u8)(signed char)__float2int_rn(a / s);
    xq[i] = (u8)(signed char)__float2int_rn(b / s);
    if (lane == 0) xs[block] = s / 127.f;
}
"""


def int8_table(code=NF4) -> list[int]:
    """T[i] = round(127 * code[i]) as four u32 words (entry i in byte i % 4 of word i // 4)."""
    values = [int(round(127 * v)) & 0xFF for v in code]
    return [values[4 * i] | values[4 * i + 1] << 8 | values[4 * i + 2] << 16 | values[4 * i + 3] << 24
            for i in range(4)]


def prmt(a: int, b: int, sel: int) -> int:
    """PTX prmt.b32 (default mode): byte i of the result is byte (nibble i of sel) & 7 of {b, a}, or, with
    the nibble's bit 3 set, that byte's sign bit replicated."""
    pool = (b << 32 | a).to_bytes(8, "little")
    out = 0
    for i in range(4):
        nib = sel >> (4 * i) & 0xF
        byte = pool[nib & 7]
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def lookup8(word: int, table: list[int]) -> tuple[int, int]:
    """The kernel's lookup8 in Python (shifts as shifts): (lo, hi)."""
    t0, t1, t2, t3 = table
    wx = word ^ 0x88888888
    pick = ((word >> 1) & 0x44444444) | 0x32103210
    lo = prmt(prmt(t0, t1, word), prmt(t2, t3, wx), pick)
    hi = prmt(prmt(t0, t1, word >> 16), prmt(t2, t3, wx >> 16), pick >> 16)
    return lo, hi


def _s8(word: int) -> list[int]:
    return [v - 256 if v >= 128 else v for v in word.to_bytes(4, "little")]


def emulate_block(codes: np.ndarray, xq_perm: np.ndarray, table: list[int]) -> np.ndarray:
    """int32 W x of one 64-block for 16 rows as the warp's two mmas compute it: codes (16, 32) uint8 (the
    block's bytes of each row), xq_perm (64,) int8 (pairs swapped); the fragments assembled by the PTX
    ISA's m16n8k32 layout (A: a0 row g slots 4c.., a1 row g+8, a2 row g slots 16+4c.., a3 row g+8;
    B: b0 slots 4c.., b1 slots 16+4c..) from each lane's registers. Returns (16,) int32."""
    out = np.zeros(16, dtype=np.int64)
    for mma in range(2):
        a = np.zeros((16, 32), dtype=np.int64)
        b = np.zeros(32, dtype=np.int64)
        for lane in range(32):
            g, c = lane // 4, lane % 4
            regs = {}
            for r, row in (("a", g), ("b", g + 8)):
                word = int.from_bytes(bytes(codes[row, 8 * c + 4 * mma: 8 * c + 4 * mma + 4]), "little")
                regs[r] = lookup8(word, table)
            a[g, 4 * c: 4 * c + 4] = _s8(regs["a"][0])
            a[g + 8, 4 * c: 4 * c + 4] = _s8(regs["b"][0])
            a[g, 16 + 4 * c: 16 + 4 * c + 4] = _s8(regs["a"][1])
            a[g + 8, 16 + 4 * c: 16 + 4 * c + 4] = _s8(regs["b"][1])
            if g == 0:  # B's column g is x in every column: column 0's lanes
                xv = xq_perm[16 * c + 8 * mma: 16 * c + 8 * mma + 8].astype(np.int64)
                b[4 * c: 4 * c + 4] = xv[:4]
                b[16 + 4 * c: 16 + 4 * c + 4] = xv[4:]
        out += a @ b
    return out.astype(np.int32)


def _kernels(device_index: int) -> dict:
    from app.engine.local import nvrtc

    return nvrtc.load(device_index, SOURCE, "nf4_int8_gemv.cu", ["nf4_int8_gemv", "quantize_x"])


def launch_int8(kernels, t, xq, xs, y, warps: int, split: int) -> None:
    """y (zeroed) += W x over the int8 lookup; t: nf4_gemv.Nf4Tensors (nested)."""
    from app.engine.local import nvrtc

    blocks = t.k // 64
    per_warp = blocks // (warps * split)
    nvrtc.launch(kernels["nf4_int8_gemv"], (-(-t.n // 16), split, 1), (32 * warps, 1, 1),
                 [t.packed, t.absmax, t.absmax2, t.code2, t.offset, xq, xs, y, t.n, t.k, per_warp,
                  *int8_table(), 1 << 31, 1 << 16])


def quantize(kernels, x, xq, xs) -> None:
    from app.engine.local import nvrtc

    k = x.numel()
    nvrtc.launch(kernels["quantize_x"], (-(-(k // 64) // 8), 1, 1), (256, 1, 1), [x, xq, xs, k])


def time_shape(kernels, n: int, k: int) -> dict:
    """One layer shape (N, K): both kernels' µs a launch over WEIGHT_COPIES distinct weights in one CUDA
    graph, the int8 kernel's launch shapes (LAUNCHES), and each one's relative L2 error against float32
    W x (bitsandbytes' dequantized weights)."""
    import bitsandbytes.functional as F

    from app.engine.local import nf4_mma
    from app.engine.local.nf4_gemv import tensors_of
    from tests.benchmarks.nf4_gemv import graph_time_us, make_layer

    layers = [make_layer(n, k, seed=7 * i + n) for i in range(WEIGHT_COPIES)]
    ts = [tensors_of(layer) for layer in layers]
    x = (torch.randn(k, device="cuda") * 0.5).to(torch.bfloat16)
    want = F.dequantize_4bit(layers[0].weight.data, layers[0].weight.quant_state).float() @ x.float()
    xq = torch.empty(k, dtype=torch.uint8, device="cuda")
    xs = torch.empty(k // 64, dtype=torch.float32, device="cuda")
    y = torch.zeros(n, dtype=torch.float32, device="cuda")
    quantize(kernels, x, xq, xs)
    launch_int8(kernels, ts[0], xq, xs, y, 4, 1)
    err_int8 = float((y - want).norm() / want.norm())
    err_app = float((nf4_mma.launch(x, ts[0]).float() - want).norm() / want.norm())
    app_us = graph_time_us([lambda t=t: nf4_mma.launch(x, t) for t in ts] * 4)
    shapes = {}
    for warps, split in LAUNCHES:
        if (k // 64) % (warps * split) == 0:
            shapes[f"{warps}x{split}"] = graph_time_us(
                [lambda t=t, w=warps, s=split: launch_int8(kernels, t, xq, xs, y, w, s) for t in ts] * 4)
    best = min(shapes, key=shapes.get)
    w, s = (int(v) for v in best.split("x"))
    full_us = graph_time_us([lambda t=t: (quantize(kernels, x, xq, xs), y.zero_(),
                                          launch_int8(kernels, t, xq, xs, y, w, s)) for t in ts] * 4)
    return {"n": n, "k": k, "app_us": app_us, "app_launch": nf4_mma.choose_launch(n, k),
            "int8_us": shapes[best], "int8_launch": best, "int8_with_quantize_and_zero_us": full_us,
            "int8_launches_us": shapes, "rel_err_app": err_app, "rel_err_int8": err_int8,
            "speedup": app_us / shapes[best], "speedup_with_quantize": app_us / full_us}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    kernels = _kernels(torch.cuda.current_device())
    rows = {}
    for name, (n, k) in SHAPES.items():
        r = rows[name] = time_shape(kernels, n, k)
        print(f"{name:8s} app {r['app_us']:7.2f} µs  int8 {r['int8_us']:7.2f} µs ({r['int8_launch']})  "
              f"+quantize/zero {r['int8_with_quantize_and_zero_us']:7.2f}  "
              f"err app {r['rel_err_app']:.1e} int8 {r['rel_err_int8']:.1e}", flush=True)
    keys = ("app_us", "int8_us", "int8_with_quantize_and_zero_us")
    layer = {key: sum(r[key] for r in rows.values()) for key in keys}
    print(f"a layer: app {layer['app_us']:.1f} µs, int8 {layer['int8_us']:.1f} "
          f"({layer['int8_with_quantize_and_zero_us']:.1f} with x's quantization and y's zeroing); x 32 layers "
          f"{32 * layer['app_us'] / 1e3:.2f} against {32 * layer['int8_with_quantize_and_zero_us'] / 1e3:.2f} ms")
    write_result(args.out, "nf4_int8_gemv_h200.json", "python3 -m tests.benchmarks.nf4_int8_gemv --out $OUT",
                 shapes=rows, layer=layer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
