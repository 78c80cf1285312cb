"""NF4 GEMV on the tensor cores, fed from registers (issue 15): CUDA C compiled at run time by NVRTC.

Same contract as nf4_gemv's Triton kernels (bitsandbytes' bytes as stored, weights bit-identical
to `dequantize_4bit`: ``bf16_rn(code[nibble] * absmax)`` with the nested absmax ``code2[q] *
absmax2 + offset`` as a multiply then an add; y = bf16_rn(W x (+ bias)) summed in fp32), but the
looked-up bf16 pairs go straight into ``mma.sync.m16n8k16`` as A fragments. The Triton kernels are
bound by the integer pipe at ~4.4 instructions a weight (lookup 2.25, bf16→fp32 unpack of weight
and x 1.5, selectors 0.6); the tensor core takes the unpack and the FMAs away, which Triton cannot
express (it routes dot operands through shared memory; kernel 5 in nf4_gemv).

Layout. One warp owns 16 output rows (the M of the mma); lane t has g = t // 4, c = t % 4. Any
permutation of k applied to both operands leaves the dot product alone, so within a 256-input
super-tile S lane c owns the whole 64-block c of rows g and g+8 (32 bytes each: two 16-byte
loads a row), and mma tile j (0..15) maps the lane's A slots {2c, 2c+1} to k = 256S + 64c + 4j +
{0, 1} and slots {2c+8, 2c+9} to + {2, 3}: the A registers of tile j are bytes 2j and 2j+1 of the
lane's block. B is x in all 8 columns: b0, b1 = x[k0 .. k0+3], k0 = 256S + 64c + 4j, one 16-byte
load per two tiles, the same for every g; so every column of D is W x and lanes c == 0 hold the
rows (d0: row g, d2: row g+8). The lookup: per (row, 64-block) the 16 weights bf16(code[i] *
absmax) (16 `mul.rn`, 8 `cvt.rn.bf16x2`) as byte planes (4 registers of low bytes, 4 of high);
four codes (16 bits of a word) are looked up by `prmt` over entries 0-7 with the raw codes (a
code >= 8 has the sign-replicate bit set and reads garbage there) and over entries 8-15 with
codes ^ 0x8888, a third `prmt` picks per byte by code bit 3, the same for the high plane, and two
`prmt` interleave low and high bytes into the two bf16x2 fragment registers: 8 `prmt` per 4
weights. Shifts run as IMAD.HI on the FMA pipe (a multiplier from a kernel argument, so ptxas
keeps the multiply). tests/engine/test_nf4_mma.py emulates one warp instruction by instruction
(the fragments assembled by the PTX ISA's layout) against bitsandbytes' weights, bit for bit.

Work split: grid (ceil(N/16) row tiles, split_k), warps a block along K too; each warp walks
K / 256 / (warps * split_k) super-tiles, loading the next while it computes the current one. The
block adds its warps in shared memory in a fixed order; with split_k > 1 the last block of a row
tile (an atomic counter, reset by that block) adds the partials in a fixed order: one launch,
bitwise repeatable, no host sync, CUDA-graph safe. Rows past N are clamped on load, not stored.

Inner loop per super-tile and lane (2 rows x 64 weights = 128), sm_90 SASS of NVRTC 13.0
(`--ptxas-options=-v`: 126 registers nested, 121 plain, 0 spills; cuobjdump -sass). The table is from
before x and code2 moved to shared memory (below): since then 116 registers nested, 128 in the group
kernel, and the loop reads x and code2 with LDS (8 + 2) instead of LDG:

    | class                                   | nested | plain | per weight |
    |-----------------------------------------|--------|-------|------------|
    | PRMT (lookup 256, tables 16)            |    272 |   272 | 2.13       |
    | LOP3 (code ^ 0x8888, pick; 1 other)     |     33 |    33 | 0.26       |
    | SHF, IADD3, LEA, ISETP, VIADD (address) |     17 |    17 | 0.13       |
    | integer pipe in all                     |    322 |   322 | 2.52       |
    | IMAD (64 IMAD.HI shifts, moves, address)|     97 |    92 | 0.76       |
    | FMUL + FADD (tables, nested absmax)     |     36 |    32 | 0.28       |
    | F2FP.BF16.F32.PACK_AB                   |     16 |    16 | 0.125      |
    | HMMA.16816.F32.BF16                     |     16 |    16 | 1 per 8    |
    | LDG (4x16 B weights, 8x16 B x, absmax)  |     18 |    14 |            |
    | all                                     |    511 |   496 | 4.0        |

against ~4.4 integer-pipe instructions a weight for Triton's kernels 2/6: at 64 integer lanes a
clock an SM that bounds the kernel at ~25 weights a clock an SM (~3 TB/s of NF4 bytes on an H200
at 1.75 GHz), where the HBM needs ~33. Not yet measured on a GPU: tests/benchmarks/nf4_gemv.py
--cuda-only times it beside bitsandbytes and Triton's tuned plans.

Measured on the H200 (tests/benchmarks/results/nf4_gemv_h200_cuda.json): 8.8 / 5.5 / 22.0 / 22.2 µs for
q/o, k/v, gate/up, down, 1.0-1.4 TB/s. Streaming the codes through a cp.async ring in shared memory
2, 4 or 8 super-tiles deep instead (2026-12-02, results/nf4_gemv_h200_cuda_ring.json; same
instruction mix in the loop) was slower in every shape and launch shape, the deeper the slower
(gate/up 22.0 µs → 24.8 / 28.2 / 29.1): the loop is bound by issuing its integer instructions (the
`prmt` lookups, ~2.1 a weight), not by memory latency, so it was taken out again.

Where the time goes (H200, 2026-12-03, tests/benchmarks/nf4_mma_variants.py, results/
nf4_mma_variants_h200.json). Instruction rates measured there, per clock per SM: PRMT, LOP3, IADD3
58-59, F2FP 59-61, FMUL 108-111, IMAD.HI 29. Per-warp timestamps of one gate/up launch (14336 x 4096,
4 warps a block, 4 super-tiles a warp): a later super-tile takes ~2,700 cycles a warp at 16 warps an
SM, 22.6 weights a clock an SM, the integer pipe's bound (~23 at 322 ALU instructions per 128
weights); alone on an SM a warp still takes ~2,100 (the loop is a dependency chain, ~4 cycles an
instruction), so throughput needs the 16 warps. The first super-tile takes ~7,000 cycles (its load
exposed, every warp loading at once), and the 896 blocks run as ~2 uneven waves (SMs with 28 warps
end at 20.7 µs, with 24 at 18.2): 21 µs where the loop alone needs ~10. Tried and measured slower or
no better (each a patch of SOURCE in the benchmark, or commit 577f8e3): L2 prefetch of a warp's whole
run, L2::256B loads, two accumulators, 24 or 32 warps an SM (80 / 64 registers), the codebook as
immediates, launch shapes 1-8 warps x split; a stream-K schedule (one wave, equal runs of units
across tiles, partials merged by the last warp): 28.5 µs against 21.5 for gate/up, 8B step 4.64
against 3.78 ms; programmatic dependent launch: no gain on a chain of GEMVs (15.3 against 15.1 µs a
link; since shipped beside Inductor's, where it overlaps a GEMV's start with the small kernel before:
nvrtc.PDL). Removing the lookups entirely (wrong results, a diagnostic) leaves 17.7 µs: the lookup is not
the only cost, and what remains is latency the warps cannot cover.

Later the same day (tests/benchmarks/nf4_layer_chain.py, the 128 GEMV launches of a decode step
timed as one chain; tests/benchmarks/read_bandwidth.py): the exposed first loads and the waves are
not the cause either. A persistent kernel (one round of blocks, each tile's first load under the
previous tile's last step) runs the chain at 83.8 µs a layer against 82.4; tile-major codes (a
warp's step one contiguous 2 KB) at 80.4; codes streamed through shared memory by the bulk-copy
engine up to 15 steps ahead at 101; an L2 prefetch of the next launch at 91.5. The memory system
reads this kernel's exact pattern, without the arithmetic, at 3.8-4.25 TB/s, as fast as a streaming
sum, whatever the depth in flight. So ~1.5 TB/s is what the loop itself sustains with 16 warps an
SM; the per-warp timestamps' ~2,700 cycles a later step hold only while most warps are elsewhere
(waiting on their first load). What would move it: fewer integer instructions a weight (the
lookup's 2 `prmt` a weight), or more warps an SM to hide the chain (needs fewer than 128 registers);
and, as the profile below found, a wait these timings could not see: x's load at every step.

Profiled with Nsight Compute on the H200 (third session of 2026-12-03; results/ncu_nf4_mma_h200.json,
tests/benchmarks/nf4_mma_ncu.py), gate/up: 6.8 cycles a warp between issued instructions, of which
1.7 a long-scoreboard wait, 1.3 fixed-latency waits of the lookup chain, 0.8 the integer pipe busy,
0.7 dispatch; one instruction held 16 % of all stall samples: each step's first mma, waiting on the
step's x (an LDG that missed L1 a third of the time), and the nested absmax chain (code2[q] from
global memory) ~6 %. The block's x range and code2 now go to shared memory once, under the first
codes' loads (`gemv`): bit-identical, 8.0 / 5.2 / 20.1 / 20.3 µs for q/o, k/v, gate/up, down
(results/nf4_gemv_h200_cuda_x_staged.json; before 8.8 / 5.5 / 22.0 / 22.2), and on the app path
2.47 against 2.63 ms of GEMV a token, the step 3.56 against 3.74 ms at 1k
(results/decode_anatomy_h200_x_staged.json). Left: the lookup chain's waits and dispatch stalls,
and 10.5 of 16 warps an SM achieved (gate/up is 0.85 of a wave).

A layer's small steps in the staging (2026-12-03, results/fused_layers_h200.json, the code in
fused_layers_experiment.patch there; not adopted): the RMSNorm before q/k/v and gate/up, silu(gate)
* up before down and the residual adds in o's and down's last write take the decode step from 446
to 327 launches, yet it is slower, 3.688 against 3.529 ms at 1k: each block normalizes (or
activates) all the inputs it stages before its loop can start, so the launch pays the work once per
block (gate/up: 1,792 blocks of 64 threads, each over all 4,096 inputs) on its critical path:
+1.2-2.4 µs for q/k/v's norm, +3.2 for gate/up's, +4.1 for silu·mul in down, +0.3 for a residual
(tests/benchmarks/fused_prologue.py there), against the ~2 µs kernel and ~0.3 µs gap each saves.
With only q/k/v's norm and the residuals inside, 3.528 against 3.523 ms: even.

The lookup in shared memory instead of `prmt` (2026-12-04, tests/benchmarks/nf4_pair_table.py, not
adopted): a table of fp32 code pairs per byte, one copy a lane (conflict-free), scaled by `mul.rn`
and rounded as here, bit-identical, 0.5 integer instructions a weight and 80-96 registers: 0.76-0.87x
the speed of this kernel in every shape, and a bf16 variant that is not exact (1.5 instructions a
weight) no faster. The loop is bound by the latency in each warp's chain, not by its instruction count.

The prologue, seen on the app path's critical path (2026-12-04, decode_anatomy --critical-path: what
each kernel adds to the replayed step): the staging loop loaded 16 bytes of x, stored them, and only
then loaded the next, one L2 round trip per copy (a 1-warp gate/up block made 16 for x and 8 for
code2). With cp.async every copy is issued at once and waited for once: the same bits, gate/up 37.7
→ 35.8 µs, down 19.9 → 18.6, q/k/v 10.8 → 10.2 a layer, the step 3.222 → 3.102 / 3.126 ms at 1k and
3.309 → 3.188 / 3.207 at 4k (two alternating rounds; results/decode_anatomy_h200_x_async.json).
With x no longer a wait, an L2 prefetch of each lane's codes 2, 3 or 4 steps ahead was tried again
and is still slower (step 3.27 / 3.34 / 3.28 against 3.14 ms at 1k; results/
decode_experiments_h200_l2_merge.json): the loop's own chain, not memory latency, sets its pace.

Loads in flight across the PDL wait (2026-12-04, sm_90 SASS and results/
decode_anatomy_h200_loads_in_flight.json): ptxas issued every prologue load after griddepcontrol.wait
(ACQBULK), so a GEMV launched early overlapped only its launch. With the loads pinned above the wait
(`gemv`) and issued, not waited for, the step took 3.071 against 3.110 ms at 1k and 3.149 against 3.188
at 4k (three alternating rounds each); waiting for them before the wait was even with the base.

silu(gate) * up in the gate/up launch (2026-12-04, `launch_pair`, results/decode_anatomy_h200_silu_pair.json):
a tile holds rows 8t..8t+7 of gate in the mma's rows g and the same rows of up in rows g+8, so lane
c == 0 ends with a gate row and its up row, and the epilogue writes silu(gate) * up; the separate
silu·mul kernel is gone (unlike the prologue fusions above, no block repeats work). The 8B step 3.021
against 3.066 ms at 1k and 3.086 against 3.144 at 4k (two alternating rounds each).

Two super-tiles a warp in flight before griddepcontrol.wait, the loop loading step i + 2 after step i
instead of i + 1 before it (2026-12-04, tests/benchmarks/anatomy_patched.py "prefetch2"): 107 registers
against 116 and every GEMV slower on the app path (gate/up 39.9 against 36.0 µs, the step 3.197
against 2.951 ms at 1k): the next step's loads issued ahead of this step's lookups is what the loop's
schedule needs.

Build: NVRTC from torch's CUDA wheels (nvidia-cuda-nvrtc; torch >= 2.8 ships the loader used
here, torch.cuda._utils._cuda_load_module, beside torch.cuda._compile_kernel), no CUDA toolkit,
no headers: compiled to a cubin for the device's sm once per process and device.
"""

from __future__ import annotations

import ctypes
from functools import cache

import torch

from app.engine.local import norm_fold, nvrtc
from app.engine.local.nf4_gemv import Nf4Tensors
from app.engine.local.nvrtc import CompileError, nvrtc_library  # noqa: F401  (this module's names before nvrtc.py)

ROWS_PER_WARP = 16  # the M of mma.m16n8k16: one warp's output rows
SUPER_TILE = 256  # inputs per warp step: four 64-blocks, one per lane of a row quad
WARPS = (1, 2, 4, 8)  # a block's warps (__launch_bounds__(256, 2) below: at most 128 registers a thread)
KERNELS = {True: "nf4_mma_gemv_nested", False: "nf4_mma_gemv_plain"}
GROUP_KERNELS = {True: "nf4_mma_group_nested", False: "nf4_mma_group_plain"}
PAIR_KERNELS = {True: "nf4_mma_pair_nested", False: "nf4_mma_pair_plain"}
FOLD_KERNELS = {(kind, nested): f"nf4_mma_{kind}_fold_{'nested' if nested else 'plain'}"
                for kind in ("gemv", "group", "pair") for nested in (True, False)}
"""The folded norm's kernels (norm_fold): "gemv" writes h, g and the tiles' sums of squares (FOLD_OUT),
"group" and "pair" scale by the norm (FOLD_IN). Built only when norm_fold.FOLD is set (-DNORM_FOLD)."""
GROUP_MAX = 3  # layers one group launch takes (q, k, v)
BIAS_NONE, BIAS_BF16, BIAS_FP32 = 0, 1, 2
OPAQUE = (1 << 16, -(1 << 31), 0x32103210)  # kernel arguments m16, m1 (2^31 as a C int), pick (see SOURCE)

SOURCE = r"""
// NF4 GEMV, y = W x, one warp per 16 rows on mma.m16n8k16 (nf4_mma.py's docstring has the layout).
// No headers: NVRTC's built-ins and inline PTX only.
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

struct Tables { u32 l0, l1, l2, l3, h0, h1, h2, h3; };  // entry i's low byte in byte i%4 of l[i/4]
struct Loads { uint4 a0, a1, b0, b1; u32 qa, qb; float sa, sb; };  // rows g, g+8: 32 code bytes each

__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 sel) {
    u32 d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}
__device__ __forceinline__ float mul_rn(float a, float b) {  // never contracted into an FMA
    float d;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
    return d;
}
__device__ __forceinline__ float add_rn(float a, float b) {
    float d;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
    return d;
}
__device__ __forceinline__ u32 bf16x2(float hi, float lo) {  // {bf16(lo) low half, bf16(hi) high half}
    u32 d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
__device__ __forceinline__ u16 bf16(float v) {
    u16 d;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(d) : "f"(v));
    return d;
}
// Programmatic dependent launch (nvrtc.PDL): a block may start while the kernel before it finishes and
// waits for that kernel's results (x) here, its first weights, scales and codebook already in flight
// (see gemv: ptxas alone issues them after the wait). It lets the next kernel start once its loop is
// done. Launched without PDL, or before sm_90, both are no-ops.
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
// 16 bytes global → shared without a register (cp.async, sm_80+): a thread issues all of its copies
// back to back and waits once, instead of one load's round trip per copy.
__device__ __forceinline__ void copy_async(void* shared, const void* global) {
    u32 s;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(s) : "l"(shared));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(global) : "memory");
}
__device__ __forceinline__ void copies_done() { asm volatile("cp.async.wait_all;" ::: "memory"); }
__device__ __forceinline__ float ld_cg(const float* p) {  // L2, not a stale L1 line
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {  // read once: first out of L1, x stays
    uint4 v;
    asm("ld.global.nc.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ void mma(float* d, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The 16 weights of one 64-block, bf16(code[i] * s), as byte planes.
__device__ __forceinline__ Tables tables(const float* cb, float s) {
    u32 r[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) r[i] = bf16x2(mul_rn(cb[2 * i + 1], s), mul_rn(cb[2 * i], s));
    Tables t;
    t.l0 = prmt(r[0], r[1], 0x6420); t.h0 = prmt(r[0], r[1], 0x7531);
    t.l1 = prmt(r[2], r[3], 0x6420); t.h1 = prmt(r[2], r[3], 0x7531);
    t.l2 = prmt(r[4], r[5], 0x6420); t.h2 = prmt(r[4], r[5], 0x7531);
    t.l3 = prmt(r[6], r[7], 0x6420); t.h3 = prmt(r[6], r[7], 0x7531);
    return t;
}

// Four codes (the nibbles of sel's low 16 bits: bytes B0, B1 hold elements 0 | 1, 2 | 3, the first
// of each pair in the high nibble) → two bf16x2: e01 = {w0 low, w1 high}, e23 = {w2, w3}.
// sel indexes entries 0-7 (a code >= 8 reads a sign-replicated byte there, replaced by the pick),
// selx = sel ^ 0x8888 entries 8-15; pick: per byte n, n | (code bit 3 → bit 2).
__device__ __forceinline__ void lookup4(u32 sel, u32 selx, u32 pick, const Tables& t, u32& e01, u32& e23) {
    u32 lo = prmt(prmt(t.l0, t.l1, sel), prmt(t.l2, t.l3, selx), pick);
    u32 hi = prmt(prmt(t.h0, t.h1, sel), prmt(t.h2, t.h3, selx), pick);
    e01 = prmt(lo, hi, 0x4051);
    e23 = prmt(lo, hi, 0x6273);
}

// v >> s on the FMA pipe (IMAD.HI), the integer pipe being the limit: m = 2^(32-s) comes from a kernel
// argument, so ptxas cannot turn the multiply back into a shift.
__device__ __forceinline__ u32 shr(u32 v, u32 m) {
    u32 d;
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(d) : "r"(v), "r"(m));
    return d;
}

// Constants from kernel arguments (see shr): 2^16, 2^31, and the pick base 0x32103210 in a register
// (one LOP3 then does and + or).
struct Consts { u32 m16, m1, pick; };

// One word of 8 codes (elements 0..7 of the word) → e[0..3] = bf16x2 of elements 01, 23, 45, 67.
__device__ __forceinline__ void lookup8(u32 w, const Tables& t, const Consts& k, u32* e) {
    u32 wx = w ^ 0x88888888u;
    u32 pick = (shr(w, k.m1) & 0x44444444u) | k.pick;
    lookup4(w, wx, pick, t, e[0], e[1]);
    lookup4(shr(w, k.m16), shr(wx, k.m16), shr(pick, k.m16), t, e[2], e[3]);
}

// Row pointers of one lane: rows g and g+8 of its tile, from its 64-block c on (clamped to row n-1).
struct Rows {
    const uint4* wa; const uint4* wb; const u8* qa; const u8* qb; const float* fa; const float* fb; int ba, bb;
};

__device__ __forceinline__ Rows rows_at(const uint4* w, const void* absmax, int n, int tile, int k, int g, int c) {
    const int ra = min(tile * 16 + g, n - 1), rb = min(tile * 16 + g + 8, n - 1);
    Rows r;
    r.ba = ra * (k / 64) + c; r.bb = rb * (k / 64) + c;
    r.wa = w + (long long)ra * (k / 32) + 2 * c; r.wb = w + (long long)rb * (k / 32) + 2 * c;
    r.qa = (const u8*)absmax + r.ba; r.qb = (const u8*)absmax + r.bb;
    r.fa = (const float*)absmax + r.ba; r.fb = (const float*)absmax + r.bb;
    return r;
}

// The block scales of super-tile st for rows g and g+8: nested, the absmax codes and their absmax2;
// plain, the fp32 absmax (codes 0).
struct Scales { u32 qa, qb; float sa, sb; };
template <bool NESTED>
__device__ __forceinline__ Scales scales_at(const Rows& r, const float* __restrict__ absmax2, int st) {
    Scales v;
    if (NESTED) {
        v.qa = __ldg(r.qa + 4 * st); v.qb = __ldg(r.qb + 4 * st);
        v.sa = __ldg(absmax2 + ((r.ba + 4 * st) >> 8)); v.sb = __ldg(absmax2 + ((r.bb + 4 * st) >> 8));
    } else {
        v.sa = __ldg(r.fa + 4 * st); v.sb = __ldg(r.fb + 4 * st);
        v.qa = v.qb = 0;
    }
    return v;
}

template <bool NESTED>
__device__ __forceinline__ Loads load(const Rows& r, const float* __restrict__ absmax2, int st) {
    Loads v;
    const uint4* pa = r.wa + 8 * st;  // 128 bytes (four 64-blocks) a super-tile
    const uint4* pb = r.wb + 8 * st;
    v.a0 = ld_stream(pa); v.a1 = ld_stream(pa + 1);
    v.b0 = ld_stream(pb); v.b1 = ld_stream(pb + 1);
    const Scales s = scales_at<NESTED>(r, absmax2, st);
    v.qa = s.qa; v.qb = s.qb; v.sa = s.sa; v.sb = s.sb;
    return v;
}

// All of a prologue's loaded words XORed: a value that depends on every load (see gemv).
__device__ __forceinline__ u32 loaded(const Loads& v, float off, const float* cb) {
    u32 h = v.a0.x ^ v.a0.y ^ v.a0.z ^ v.a0.w ^ v.a1.x ^ v.a1.y ^ v.a1.z ^ v.a1.w;
    h ^= v.b0.x ^ v.b0.y ^ v.b0.z ^ v.b0.w ^ v.b1.x ^ v.b1.y ^ v.b1.z ^ v.b1.w;
    h ^= v.qa ^ v.qb ^ __float_as_uint(v.sa) ^ __float_as_uint(v.sb) ^ __float_as_uint(off);
#pragma unroll
    for (int i = 0; i < 16; ++i) h ^= __float_as_uint(cb[i]);
    return h;
}

template <bool NESTED>
__device__ __forceinline__ void step(float* d, const Loads& v, const uint4* __restrict__ xs,
                                     const float* __restrict__ code2, float offset, const float* cb,
                                     const Consts& k, float offset_b) {  // offset_b: rows g+8 (Pair)
    float sa = v.sa, sb = v.sb;
    if (NESTED) {  // absmax = code2[q] * absmax2 + offset: multiply, then add (two roundings)
        sa = add_rn(mul_rn(code2[v.qa], sa), offset);
        sb = add_rn(mul_rn(code2[v.qb], sb), offset_b);
    }
    Tables ta = tables(cb, sa), tb = tables(cb, sb);
    const u32 wa[8] = {v.a0.x, v.a0.y, v.a0.z, v.a0.w, v.a1.x, v.a1.y, v.a1.z, v.a1.w};
    const u32 wb[8] = {v.b0.x, v.b0.y, v.b0.z, v.b0.w, v.b1.x, v.b1.y, v.b1.z, v.b1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {  // word i: mma tiles 2i and 2i+1
        u32 ea[4], eb[4];
        lookup8(wa[i], ta, k, ea);
        lookup8(wb[i], tb, k, eb);
        uint4 xv = xs[i];  // x[8i .. 8i+7] of this lane's 64-block
        mma(d, ea[0], eb[0], ea[1], eb[1], xv.x, xv.y);
        mma(d, ea[2], eb[2], ea[3], eb[3], xv.z, xv.w);
    }
}

template <bool NESTED>
__device__ __forceinline__ void step(float* d, const Loads& v, const uint4* __restrict__ xs,
                                     const float* __restrict__ code2, float offset, const float* cb,
                                     const Consts& k) {
    step<NESTED>(d, v, xs, code2, offset, cb, k, offset);
}

// A paired launch's second layer (up of gate/up): its tile rows g+8 are up's rows 8t+g, beside gate's in
// rows g, and the output is silu(gate) * up (gemv). w null: not paired.
struct Pair { const uint4* w; const void* absmax; const float* offset; const void* bias; };

// Rows g and g+8 of a paired tile t: row 8t+g of the first layer and of the second (clamped to n-1).
// The second layer's nested absmax follows the first's in absmax2 (one array of both, see launch_pair).
__device__ __forceinline__ Rows rows_pair(const uint4* w, const void* absmax, const Pair& up, int n, int tile,
                                          int k, int g, int c) {
    const int row = min(tile * 8 + g, n - 1);
    Rows r;
    r.ba = row * (k / 64) + c;
    r.bb = r.ba + n * (k / 64);
    r.wa = w + (long long)row * (k / 32) + 2 * c; r.wb = up.w + (long long)row * (k / 32) + 2 * c;
    r.qa = (const u8*)absmax + r.ba; r.qb = (const u8*)up.absmax + r.ba;
    r.fa = (const float*)absmax + r.ba; r.fb = (const float*)up.absmax + r.ba;
    return r;
}

__device__ __forceinline__ float bf16_value(float v) { return __uint_as_float((u32)bf16(v) << 16); }

// y[row] = bf16(v); paired, lanes 0-7 hold gate's rows and lanes 8-15 up's: y = silu(gate) * up, each
// step rounded to bf16 where the model's eager ops round (silu(x) = x / (1 + e^-x) in fp32, as torch's
// kernel; its expf may differ in the last fp32 bit, so now and then one bf16 step). Every lane calls it.
__device__ __forceinline__ void store(u16* y, float v, int row, bool mine, bool paired, int lane) {
    if (!paired) {
        if (mine) y[row] = bf16(v);
        return;
    }
    const float up = __shfl_down_sync(0xffffffffu, v, 8);
    if (mine && lane < 8) {
        const float gate = bf16_value(v);
        y[row] = bf16(bf16_value(gate / (1.f + expf(-gate))) * bf16_value(up));
    }
}

// The RMSNorm between two GEMVs folded into them (norm_fold.py): FOLD_OUT (o_proj, down) writes h =
// bf16(residual + bf16(W x)) in y's place, g = bf16(weight * h) and its row tile's sum of h^2 (ssq_out[tile]);
// FOLD_IN (q/k/v, gate/up; x = g) multiplies its sums by r = 1 / sqrt(mean(h^2) + eps) from the count row
// tiles' sums of the launch before (staged in shared memory beside x) before bias and rounding. Sums in fixed
// orders (lane 0's butterfly; norm_fold.py mirrors them), so a launch is bitwise repeatable.
#define FOLD_NONE 0
#define FOLD_IN 1
#define FOLD_OUT 2
struct Fold { const float* ssq; int count; float eps; const u16* residual; const u16* weight; u16* g; float* ssq_out; };

__device__ __forceinline__ float norm_scale(const float* ssq_s, int count, int k, float eps, int lane) {
    float s = 0.f;
    for (int base = 0; base < count; base += 256) {  // lane: sums lane, lane + 32, ... in order (0 past count)
        float v[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = base + lane + 32 * i < count ? ssq_s[base + lane + 32 * i] : 0.f;
#pragma unroll
        for (int i = 0; i < 8; ++i) s = add_rn(s, v[i]);  // the loads issued together, the adds in order
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) s = add_rn(s, __shfl_xor_sync(0xffffffffu, s, o));
    s = __shfl_sync(0xffffffffu, s, 0);  // lane 0's order in every lane
    return 1.f / sqrtf(add_rn(s / (float)k, eps));  // IEEE division and square root (no fast math)
}

// The row's output: y = bf16(sum + b) (FOLD_IN: bf16(r * sum + b), r from norm_scale), or FOLD_OUT's h, g and
// tile sum. Every lane of the warp calls it.
template <int FOLD>
__device__ __forceinline__ void finish(u16* y, float sum, float b, int row, bool mine, bool paired, int lane,
                                       int tile, const Fold& f, float r, u32 res, u32 wt) {
    if (FOLD == FOLD_IN) sum = mul_rn(r, sum);
    if (FOLD != FOLD_OUT) {
        store(y, sum + b, row, mine, paired, lane);
        return;
    }
    const float h = mine ? bf16_value(__uint_as_float(res << 16) + bf16_value(sum + b)) : 0.f;
    if (mine) {
        y[row] = bf16(h);
        f.g[row] = bf16(mul_rn(__uint_as_float(wt << 16), h));
    }
    float sq = mul_rn(h, h);  // lanes 0-15: the tile's rows (0 past n); 16-31 add among themselves
#pragma unroll
    for (int o = 8; o; o >>= 1) sq = add_rn(sq, __shfl_xor_sync(0xffffffffu, sq, o));
    if (lane == 0) f.ssq_out[tile] = sq;
}

// Grid (ceil(n/16), split); block 32*warps threads. Warp w of block (t, s) adds rows 16t..16t+15
// over super-tiles [(s*warps + w)*iters, +iters) of 256 inputs; the block sums its warps in order;
// with split > 1 the last block of row tile t (its counter) sums the split partials in order
// (partial s of row r at part[s * part_stride + r]). The block's inputs (warps*iters*512 bytes of
// dynamic shared memory) and the nested absmax codebook are staged in shared memory first, under
// the first codes' loads: read from there, a step's first mma no longer waits on a global load of x
// (ncu on the H200: that wait was the largest single stall, 16 % of the samples).
template <bool NESTED, int FOLD = FOLD_NONE>
__device__ __forceinline__ void gemv(const uint4* __restrict__ x, const uint4* __restrict__ w,
                                     const void* __restrict__ absmax, const float* __restrict__ absmax2,
                                     const float* __restrict__ code2, const float* __restrict__ offset,
                                     const float* __restrict__ code, const void* __restrict__ bias,
                                     float* part, int part_stride, int* counter, u16* y, int n, int tile,
                                     int k, int iters, int bias_kind, Consts kc, Pair up, Fold fold = Fold{}) {
    __shared__ float red[8][16];
    __shared__ __align__(16) float code2_s[256];
    extern __shared__ uint4 x_s[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int warps = blockDim.x >> 5;
    const bool paired = up.w != nullptr;
    const Rows r = paired ? rows_pair(w, absmax, up, n, tile, k, g, c) : rows_at(w, absmax, n, tile, k, g, c);
    float cb[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) cb[i] = __ldg(code + i);
    const float off = NESTED ? __ldg(offset) : 0.f;
    const float off_b = NESTED && paired ? __ldg(up.offset) : off;
    const int st0 = (blockIdx.y * warps + warp) * iters;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    float* ssq_s = (float*)(x_s + 32 * warps * iters);  // FOLD_IN: the row tiles' sums of squares, after x
    u32 res = 0, wt = 0;  // FOLD_OUT: the writing lane's residual and norm weight (bf16 bits), read under the loop
    Loads cur = load<NESTED>(r, absmax2, st0), nxt;
    // Under PDL these loads should be in flight while the kernel before finishes, but ptxas sinks them
    // below griddepcontrol.wait. A barrier that reads every loaded value, behind a branch never taken (n
    // is never negative), keeps them above it, issued and not waited for. Taken always (loads completed
    // before the wait) it was no faster: a late block then pays its loads' trip and x's one after the other.
    if (n < 0) __syncthreads_or(loaded(cur, off, cb) == 0x9e3779b9u);
    wait_inputs();  // x, and the buffers of the launch before, from here on
    const uint4* xb = x + 32 * blockIdx.y * warps * iters;  // the block's first super-tile of inputs
    for (int j = threadIdx.x; j < 32 * warps * iters; j += blockDim.x) copy_async(x_s + j, xb + j);
    if (NESTED)
        for (int j = threadIdx.x; j < 64; j += blockDim.x) copy_async(code2_s + 4 * j, code2 + 4 * j);
    if (FOLD == FOLD_IN)
        for (int j = threadIdx.x; j < fold.count / 4; j += blockDim.x) copy_async(ssq_s + 4 * j, fold.ssq + 4 * j);
    if (FOLD == FOLD_OUT && warp == 0 && lane < 16) {
        const int at = min(tile * 16 + lane, n - 1);
        res = fold.residual[at];
        wt = __ldg(fold.weight + at);
    }
    copies_done();
    __syncthreads();
    for (int i = 0; i < iters; ++i) {
        if (i + 1 < iters) nxt = load<NESTED>(r, absmax2, st0 + i + 1);
        step<NESTED>(d, cur, x_s + 32 * (warp * iters + i) + 8 * c, code2_s, off, cb, kc, off_b);
        cur = nxt;
    }
    release_dependents();
    float norm = 1.f;  // FOLD_IN: the norm's scale r, while the block's other warps finish their loops (split:
    if (FOLD == FOLD_IN && warp == 0 && gridDim.y == 1)  // the last block alone, below)
        norm = norm_scale(ssq_s, fold.count, k, fold.eps, lane);
    if (c == 0) { red[warp][g] = d[0]; red[warp][g + 8] = d[2]; }  // every column of D is W x
    __syncthreads();
    if (warp != 0) return;
    const int slot = tile * 16 + lane;  // the lane's tile row: its partial's place
    const int row = paired ? tile * 8 + (lane & 7) : slot;  // its output row (paired: gate 0-7, up 8-15)
    const bool mine = lane < 16 && row < n;
    float sum = 0.f;
    if (lane < 16) {
        sum = red[0][lane];
        for (int i = 1; i < warps; ++i) sum += red[i][lane];
    }
    float b = 0.f;
    const void* row_bias = paired && lane >= 8 ? up.bias : bias;
    if (mine && bias_kind == 1) b = __uint_as_float((u32)((const u16*)row_bias)[row] << 16);
    if (mine && bias_kind == 2) b = ((const float*)row_bias)[row];
    if (gridDim.y == 1) {
        finish<FOLD>(y, sum, b, row, mine, paired, lane, tile, fold, norm, res, wt);
        return;
    }
    if (mine) part[(long long)blockIdx.y * part_stride + slot] = sum;
    __threadfence();
    __syncwarp();
    int last = 0;
    if (lane == 0) last = atomicAdd(counter, 1) == (int)gridDim.y - 1;
    last = __shfl_sync(0xffffffffu, last, 0);
    if (!last) return;
    if (FOLD == FOLD_IN) norm = norm_scale(ssq_s, fold.count, k, fold.eps, lane);
    __threadfence();
    float total = 0.f;
    if (mine)
        for (int s = 0; s < (int)gridDim.y; ++s) total += ld_cg(part + (long long)s * part_stride + slot);
    finish<FOLD>(y, total, b, row, mine, paired, lane, tile, fold, norm, res, wt);
    if (lane == 0) *counter = 0;  // ready for the next call (and CUDA graph replay)
}

#define ARGS const uint4* x, const uint4* w, const void* absmax, const float* absmax2, const float* code2, \
    const float* offset, const float* code, const void* bias, float* part, int* counters, u16* y, int n, \
    int k, int iters, int bias_kind, u32 m16, u32 m1, u32 pick
#define PASS x, w, absmax, absmax2, code2, offset, code, bias, part, n, counters + blockIdx.x, y, n, blockIdx.x, k, \
    iters, bias_kind, Consts{m16, m1, pick}, Pair{}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_gemv_nested(ARGS) { gemv<true>(PASS); }
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_gemv_plain(ARGS) { gemv<false>(PASS); }

// Up to three layers of one input (q, k, v; gate, up) in one launch: their row tiles one after the
// other on grid x, y and the split partials as one vector of n0 + n1 + n2 rows, one counter per tile.
#define SEGMENT(i) const uint4* w##i, const void* absmax##i, const float* absmax2_##i, const float* code2_##i, \
    const float* offset##i, const void* bias##i, int n##i
#define GROUP_ARGS const uint4* x, SEGMENT(0), SEGMENT(1), SEGMENT(2), const float* code, float* part, int* counters, \
    u16* y, int k, int iters, int bias_kind, u32 m16, u32 m1, u32 pick
#define PICK(name) (s == 0 ? name##0 : s == 1 ? name##1 : name##2)
template <bool NESTED, int FOLD = FOLD_NONE>
__device__ __forceinline__ void group(GROUP_ARGS, Fold fold = Fold{}) {
    const int t0 = (n0 + 15) / 16, t1 = (n1 + 15) / 16, tile = blockIdx.x;
    const int s = tile < t0 ? 0 : tile < t0 + t1 ? 1 : 2;  // the same in the whole block
    const int first_tile = s == 0 ? 0 : s == 1 ? t0 : t0 + t1, first_row = s == 0 ? 0 : s == 1 ? n0 : n0 + n1;
    gemv<NESTED, FOLD>(x, PICK(w), PICK(absmax), PICK(absmax2_), PICK(code2_), PICK(offset), code, PICK(bias),
                       part + first_row, n0 + n1 + n2, counters + tile, y + first_row, PICK(n), tile - first_tile, k,
                       iters, bias_kind, Consts{m16, m1, pick}, Pair{}, fold);
}
#define GROUP_PASS x, w0, absmax0, absmax2_0, code2_0, offset0, bias0, n0, w1, absmax1, absmax2_1, code2_1, offset1, \
    bias1, n1, w2, absmax2, absmax2_2, code2_2, offset2, bias2, n2, code, part, counters, y, k, iters, bias_kind, m16, \
    m1, pick
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_group_nested(GROUP_ARGS) { group<true>(GROUP_PASS); }
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_group_plain(GROUP_ARGS) { group<false>(GROUP_PASS); }

// silu(W0 x) * (W1 x) (gate, up: the same n and K) in one launch: tile t of ceil(n/8) holds row 8t+g of W0
// in its rows g and of W1 in rows g+8; absmax2 is W0's nested absmax then W1's (the code2 is both's).
#define PAIR_ARGS const uint4* x, const uint4* w0, const void* absmax0, const float* offset0, const void* bias0, \
    const uint4* w1, const void* absmax1, const float* offset1, const void* bias1, const float* absmax2, \
    const float* code2, const float* code, float* part, int* counters, u16* y, int n, int k, int iters, int bias_kind, \
    u32 m16, u32 m1, u32 pick
#define PAIR_PASS x, w0, absmax0, absmax2, code2, offset0, code, bias0, part, 16 * (int)gridDim.x, \
    counters + blockIdx.x, y, n, blockIdx.x, k, iters, bias_kind, Consts{m16, m1, pick}, \
    Pair{w1, absmax1, offset1, bias1}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_pair_nested(PAIR_ARGS) { gemv<true>(PAIR_PASS); }
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_pair_plain(PAIR_ARGS) { gemv<false>(PAIR_PASS); }

#ifdef NORM_FOLD
// The folded norm's kernels (FOLD_OUT: the single GEMV; FOLD_IN: the group and the pair), built only when
// HEADROOM_NORM_FOLD selects them (norm_fold.FOLD).
#define FOLD_ARGS const float* ssq, int ssq_count, double eps, const u16* residual, const u16* norm_weight, u16* g, \
    float* ssq_out
#define FOLD_PASS Fold{ssq, ssq_count, (float)eps, residual, norm_weight, g, ssq_out}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_gemv_fold_nested(ARGS, FOLD_ARGS) {
    gemv<true, FOLD_OUT>(PASS, FOLD_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_gemv_fold_plain(ARGS, FOLD_ARGS) {
    gemv<false, FOLD_OUT>(PASS, FOLD_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_group_fold_nested(GROUP_ARGS, FOLD_ARGS) {
    group<true, FOLD_IN>(GROUP_PASS, FOLD_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_group_fold_plain(GROUP_ARGS, FOLD_ARGS) {
    group<false, FOLD_IN>(GROUP_PASS, FOLD_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_pair_fold_nested(PAIR_ARGS, FOLD_ARGS) {
    gemv<true, FOLD_IN>(PAIR_PASS, FOLD_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) nf4_mma_pair_fold_plain(PAIR_ARGS, FOLD_ARGS) {
    gemv<false, FOLD_IN>(PAIR_PASS, FOLD_PASS);
}
#endif
"""


def compile_cubin(arch: str, library: ctypes.CDLL | None = None,
                  options: tuple[str, ...] = (), source: str = "") -> tuple[bytes, str]:
    """(cubin for sm_<arch>, NVRTC's log) of SOURCE (or ``source``: a benchmark's variant), built with
    ``--fmad=false`` (the table products stay ``mul.rn``). See `nvrtc.compile_cubin`."""
    return nvrtc.compile_cubin(arch, source or SOURCE, "nf4_mma.cu", ("--fmad=false", *options), library)


def _kernels(device_index: int) -> dict:
    """{nested: kernel, ("group", nested): group kernel, ("pair", nested): paired kernel}, and with
    norm_fold.FOLD the FOLD_KERNELS under ("fold", kind, nested), compiled for and loaded on one device
    (once per process and switch)."""
    return _loaded(device_index, norm_fold.FOLD)


@cache
def _loaded(device_index: int, fold: bool) -> dict:
    names = [*KERNELS.values(), *GROUP_KERNELS.values(), *PAIR_KERNELS.values()]
    options = ("--fmad=false", *(("-DNORM_FOLD",) if fold else ()))
    loaded = nvrtc.load(device_index, SOURCE, "nf4_mma.cu", names + (list(FOLD_KERNELS.values()) if fold else []),
                        options)
    return {nested: loaded[name] for nested, name in KERNELS.items()} | {
        ("group", nested): loaded[name] for nested, name in GROUP_KERNELS.items()} | {
        ("pair", nested): loaded[name] for nested, name in PAIR_KERNELS.items()} | {
        ("fold", *key): loaded[name] for key, name in FOLD_KERNELS.items() if fold}


def _x_bytes(kernel, inputs: int, extra: int = 0) -> int:
    """Dynamic shared memory of a launch whose blocks take ``inputs`` of x each (bf16: 2 bytes an
    input) and ``extra`` bytes after them (a FOLD_IN launch's sums of squares); above 48 KB the kernel is
    first allowed that much."""
    size = 2 * inputs + extra
    if size > 48 * 1024 and getattr(kernel, "_max_shared_mem_bytes", 0) < size:
        kernel.set_shared_memory_config(size)
    return size


def unavailable_reason(device: torch.device) -> str:
    """"" when the kernel can run on ``device``, else why not (one line): no CUDA, a GPU before
    Ampere (bf16 mma needs sm_80), torch without its NVRTC loader, NVRTC missing, a compile error."""
    return nvrtc.unavailable_reason(device, _kernels, "CUDA mma kernel")


def shape_reason(n: int, k: int) -> str:
    """"" when (n, k) suits the kernel, else why not: K must be a multiple of 256 (a warp step)."""
    if k % SUPER_TILE:
        return f"in_features {k} is not a multiple of {SUPER_TILE}"
    if n * k // 64 >= 2**31:  # block indices are 32-bit in the kernel
        return f"{n}x{k} has more than 2^31 absmax blocks"
    return ""


def launch_shapes(n: int, k: int) -> list[tuple[int, int]]:
    """Every (warps per block, split_k) the kernel accepts for (n, k): warps in 1, 2, 4, 8 and
    split_k dividing the K/256 super-tiles so that each warp walks the same number of them."""
    steps = k // SUPER_TILE
    return [(w, s) for w in WARPS for s in range(1, steps + 1) if steps % (w * s) == 0]


def choose_launch(n: int, k: int, sms: int = 132, warps_per_sm: int = 16) -> tuple[int, int]:
    """(warps, split_k) for W (n, k). K is cut into p parts (p dividing the K/256 super-tiles,
    p = warps x split_k); the p with the least waves x (super-tiles a warp + 1) wins, a wave being
    ``warps_per_sm`` warps on every SM (126 registers a thread allow 16) and the + 1 the first
    load that no computation hides. Warps within the block first (their sum is a shared-memory
    add, no partials in memory). Llama-3-8B: (8, 1), (8, 2), (2, 1), (8, 1) for q/o, k/v, gate/up,
    down."""
    tiles, steps, wave = -(-n // ROWS_PER_WARP), k // SUPER_TILE, warps_per_sm * sms
    parts = min((p for p in range(1, steps + 1) if steps % p == 0),
                key=lambda p: (-(-tiles * p // wave)) * (steps // p + 1))
    warps = max(w for w in WARPS if parts % w == 0)
    return warps, parts // warps


def _launch_shape(rows: int, k: int, warps: int, split_k: int) -> tuple[int, int, int]:
    """(warps, split_k, super-tiles a warp) for ``rows`` stacked rows of K inputs; warps/split_k 0:
    choose_launch. Raises ValueError when warps x split_k does not divide K's 256-input steps."""
    if not (warps and split_k):
        warps, split_k = choose_launch(rows, k)
    steps = k // SUPER_TILE
    if warps not in WARPS or steps % (warps * split_k):
        raise ValueError(f"warps={warps} x split_k={split_k} does not divide the {steps} steps of K={k}")
    return warps, split_k, steps // (warps * split_k)


def _input(x: torch.Tensor) -> torch.Tensor:
    """x as the kernels read it: one bf16 row, contiguous and 16-byte aligned (read as uint4). Raises
    ValueError for another dtype."""
    x = x.reshape(-1)
    if x.dtype != torch.bfloat16:
        raise ValueError(f"x must be bfloat16, got {x.dtype}")
    if not x.is_contiguous() or x.data_ptr() % 16:
        x = x.clone(memory_format=torch.contiguous_format)
    return x


def _biases(biases: list[torch.Tensor | None]) -> tuple[int, list]:
    """(bias kind, the biases as the kernel reads them) for layers with a bias each or none (then [])."""
    if biases[0] is None:
        return BIAS_NONE, []
    kind = BIAS_BF16 if all(b.dtype == torch.bfloat16 for b in biases) else BIAS_FP32
    return kind, [b.contiguous() if kind == BIAS_BF16 else b.float().contiguous() for b in biases]


def _device(x: torch.Tensor) -> int:
    return x.device.index if x.device.index is not None else torch.cuda.current_device()


def launch(x: torch.Tensor, t: Nf4Tensors, bias: torch.Tensor | None = None, warps: int = 0,
           split_k: int = 0, fold_out: tuple[torch.Tensor, torch.Tensor] | None = None):
    """y (N,) bf16 = W x (+ bias) for x (K,) bf16 on the tensor cores; warps/split_k 0: choose_launch.
    fold_out (residual, weight), each (N,) bf16: the folded norm's writer (norm_fold, built with
    norm_fold.FOLD) returns (h, g, ssq) instead: h = bf16(residual + y), g = bf16(weight · h), ssq
    (ceil(N / 16),) float32 each row tile's sum of h². Raises ValueError for a shape the kernel does not
    take (shape_reason, or warps*split_k not dividing K/256), CompileError when it cannot be built here."""
    if shape_reason(t.n, t.k):
        raise ValueError(shape_reason(t.n, t.k))
    warps, split_k, iters = _launch_shape(t.n, t.k, warps, split_k)
    x = _input(x)
    if t.packed.data_ptr() % 16 or (t.nested and t.code2.data_ptr() % 16):  # copied as 16-byte pieces
        raise ValueError("packed weight or nested codebook is not 16-byte aligned")
    kind, biases = _biases([bias])
    y = torch.empty(t.n, dtype=torch.bfloat16, device=x.device)
    part = torch.empty(split_k * t.n if split_k > 1 else 1, dtype=torch.float32, device=x.device)
    tiles = -(-t.n // ROWS_PER_WARP)
    args = [x, t.packed, t.absmax, t.absmax2, t.code2, t.offset, t.code, biases[0] if biases else y,
            part, t.counters, y, t.n, t.k, iters, kind, *OPAQUE]
    if fold_out is None:
        kernel = _kernels(_device(x))[t.nested]
        nvrtc.launch(kernel, (tiles, split_k, 1), (32 * warps, 1, 1), args, _x_bytes(kernel, t.k // split_k))
        return y
    residual, weight = (_row(v, t.n, name) for v, name in zip(fold_out, ("residual", "weight"), strict=True))
    g = torch.empty_like(y)
    ssq = torch.empty(tiles, dtype=torch.float32, device=x.device)
    kernel = _kernels(_device(x))[("fold", "gemv", t.nested)]
    nvrtc.launch(kernel, (tiles, split_k, 1), (32 * warps, 1, 1), args + [ssq, 0, 0.0, residual, weight, g, ssq],
                 _x_bytes(kernel, t.k // split_k))
    return y, g, ssq


def _row(v: torch.Tensor, n: int, name: str) -> torch.Tensor:
    """v as one contiguous bf16 row of n. Raises ValueError for another size or dtype."""
    if v.numel() != n or v.dtype != torch.bfloat16:
        raise ValueError(f"{name} must be {n} bf16 values, got {v.numel()} {v.dtype}")
    return v.reshape(-1).contiguous()


def _fold_in(fold_in: tuple[torch.Tensor, float] | None, k: int) -> tuple[list, int]:
    """(the FOLD_ARGS of a launch reading the folded norm, the bytes its sums take in shared memory) for
    fold_in (ssq (K / 16,) float32, eps). The sums are staged 16 bytes at a time: K, a multiple of 256
    (shape_reason), makes them a multiple of 16. Raises ValueError when ssq is not one contiguous, 16-byte
    aligned float32 sum per 16 of the K inputs."""
    ssq, eps = fold_in
    if ssq.dtype != torch.float32 or ssq.numel() * 16 != k or not ssq.is_contiguous() or ssq.data_ptr() % 16:
        raise ValueError(f"ssq must be {k // 16} contiguous float32 sums (16-byte aligned)")
    return [ssq, ssq.numel(), float(eps), ssq, ssq, ssq, ssq], 4 * ssq.numel()  # the writer's pointers unused


def launch_group(x: torch.Tensor, tensors: list[Nf4Tensors], biases: list[torch.Tensor | None],
                 counters: torch.Tensor, warps: int = 0, split_k: int = 0,
                 fold_in: tuple[torch.Tensor, float] | None = None) -> torch.Tensor:
    """y (N0 + N1 [+ N2],) bf16: the layers W0, W1 (, W2) of one input x (K,) bf16 in one launch,
    their outputs one after the other (q, k, v: y[:N0] = W0 x, ...). The layers share K and nesting,
    biases all None or all given; counters: int32 zeros, one per row tile of all of them (kept zero
    by the kernel). warps/split_k 0: choose_launch for the stacked N. fold_in (ssq, eps): x is the folded
    norm's g and every row is bf16(r · W x + b) (`_fold_in`, norm_fold). Raises ValueError for layers the
    launch does not take, CompileError when the kernel cannot be built here."""
    if not 2 <= len(tensors) <= GROUP_MAX:
        raise ValueError(f"a group launch takes 2 to {GROUP_MAX} layers, got {len(tensors)}")
    k, nested = tensors[0].k, tensors[0].nested
    if any(t.k != k or t.nested != nested or shape_reason(t.n, t.k) or t.packed.data_ptr() % 16
           or (nested and t.code2.data_ptr() % 16) for t in tensors):
        raise ValueError("grouped layers need the same K (a multiple of 256), the same nesting, 16-byte aligned codes")
    if len({b is None for b in biases}) > 1 or len(biases) != len(tensors):
        raise ValueError("grouped layers need a bias each or none")
    n_total = sum(t.n for t in tensors)
    tiles = sum(-(-t.n // ROWS_PER_WARP) for t in tensors)
    if counters.numel() < tiles or counters.dtype != torch.int32:
        raise ValueError(f"counters: {tiles} int32 needed")
    warps, split_k, iters = _launch_shape(n_total, k, warps, split_k)
    x = _input(x)
    kind, biases = _biases(biases)
    y = torch.empty(n_total, dtype=torch.bfloat16, device=x.device)
    part = torch.empty(split_k * n_total if split_k > 1 else 1, dtype=torch.float32, device=x.device)
    segments = []
    for i in range(GROUP_MAX):  # a missing third layer: the first one's tensors with no rows
        t = tensors[i] if i < len(tensors) else tensors[0]
        b = biases[i] if i < len(biases) else y
        segments += [t.packed, t.absmax, t.absmax2, t.code2, t.offset, b, t.n if i < len(tensors) else 0]
    args = [x, *segments, tensors[0].code, part, counters, y, k, iters, kind, *OPAQUE]
    if fold_in is None:
        kernel = _kernels(_device(x))[("group", nested)]
        nvrtc.launch(kernel, (tiles, split_k, 1), (32 * warps, 1, 1), args, _x_bytes(kernel, k // split_k))
        return y
    fold_args, extra = _fold_in(fold_in, k)
    kernel = _kernels(_device(x))[("fold", "group", nested)]
    nvrtc.launch(kernel, (tiles, split_k, 1), (32 * warps, 1, 1), args + fold_args,
                 _x_bytes(kernel, k // split_k, extra))
    return y


def pair_reason(gate: Nf4Tensors, up: Nf4Tensors) -> str:
    """"" when `launch_pair` takes these two layers, else why not: the same shape (suiting the kernel) and
    nesting, gate's nested absmax a whole number of 256-blocks (up's follows it). From shapes only (no
    device sync, so also inside a CUDA graph capture); that both share one nested codebook (code2, read
    for both) the caller checks once (nf4_hook.gate_up_pairs)."""
    if (gate.n, gate.k, gate.nested) != (up.n, up.k, up.nested):
        return "gate and up differ in shape or nesting"
    if shape_reason(2 * gate.n, gate.k):
        return shape_reason(2 * gate.n, gate.k)
    if gate.nested and ((gate.n * gate.k // 64) % 256 or gate.absmax2.numel() != gate.n * gate.k // 64 // 256):
        return "gate's and up's nested absmax cannot be read as one array"
    return ""


def pair_absmax2(gate: Nf4Tensors, up: Nf4Tensors) -> torch.Tensor:
    """The absmax2 a paired launch reads: gate's nested absmax then up's (plain layers: gate's, unread)."""
    return torch.cat([gate.absmax2, up.absmax2]) if gate.nested else gate.absmax2


def launch_pair(x: torch.Tensor, gate: Nf4Tensors, up: Nf4Tensors, biases: list[torch.Tensor | None],
                absmax2: torch.Tensor, counters: torch.Tensor, warps: int = 0, split_k: int = 0,
                fold_in: tuple[torch.Tensor, float] | None = None) -> torch.Tensor:
    """y (N,) bf16 = silu(G x) * (U x) for x (K,) bf16 in one launch, G x and U x each rounded to bf16 as
    a group launch of the same shape computes them (bit for bit), then silu and the product rounded where
    the model's eager ops round them (within one bf16 step: see store in SOURCE).
    A tile holds 8 rows of each layer, side by side in the mma's rows g and g+8. absmax2: `pair_absmax2`;
    biases: [gate's, up's] or [None, None]; counters: int32 zeros, one per 8 rows. warps/split_k 0:
    choose_launch for 2N rows. fold_in (ssq, eps): x is the folded norm's g, gate and up rows scaled by its
    r before their rounding (`launch_group`). Raises ValueError for layers it does not take (`pair_reason`),
    CompileError when the kernel cannot be built here."""
    if pair_reason(gate, up):
        raise ValueError(pair_reason(gate, up))
    if len(biases) != 2 or (biases[0] is None) != (biases[1] is None):
        raise ValueError("gate and up need a bias each or none")
    if gate.packed.data_ptr() % 16 or up.packed.data_ptr() % 16 or (gate.nested and gate.code2.data_ptr() % 16):
        raise ValueError("packed weights and nested codebook must be 16-byte aligned")
    tiles = -(-gate.n // 8)
    if counters.numel() < tiles or counters.dtype != torch.int32:
        raise ValueError(f"counters: {tiles} int32 needed")
    warps, split_k, iters = _launch_shape(2 * gate.n, gate.k, warps, split_k)
    x = _input(x)
    y = torch.empty(gate.n, dtype=torch.bfloat16, device=x.device)
    kind, biases = _biases(biases)
    biases = biases or [y, y]  # not read
    part = torch.empty(split_k * 16 * tiles if split_k > 1 else 1, dtype=torch.float32, device=x.device)
    args = [x, gate.packed, gate.absmax, gate.offset, biases[0], up.packed, up.absmax, up.offset, biases[1],
            absmax2, gate.code2, gate.code, part, counters, y, gate.n, gate.k, iters, kind, *OPAQUE]
    if fold_in is None:
        kernel = _kernels(_device(x))[("pair", gate.nested)]
        nvrtc.launch(kernel, (tiles, split_k, 1), (32 * warps, 1, 1), args, _x_bytes(kernel, gate.k // split_k))
        return y
    fold_args, extra = _fold_in(fold_in, gate.k)
    kernel = _kernels(_device(x))[("fold", "pair", gate.nested)]
    nvrtc.launch(kernel, (tiles, split_k, 1), (32 * warps, 1, 1), args + fold_args,
                 _x_bytes(kernel, gate.k // split_k, extra))
    return y
