"""A decode step's attention over the 16-bit static cache on the tensor cores, in one launch (issue 15):
CUDA C compiled at run time by NVRTC (app.engine.local.nvrtc), what ``headroom::kv16_decode`` runs
where it applies (split_kv_attention.kv16_decode; the Triton split-KV kernel and its merge launch
elsewhere).

Why: the Triton kernel took 9.4 µs a layer at 1,600 of 2,048 slots (H200, results/
decode_attention_h200.json), ~6.3 µs of it the attention and the rest the merge launch, for 6.5 MB
of keys and values (0.7 TB/s): a chain of dependent loads (the valid mask, then a tile of keys, then
its values, then the next tile) and a second launch. Here the 8 warps of a block have their 16 keys
and values each in flight at once, and the last block of a head to finish merges the head's splits
(an atomic ticket, as in nf4_mma's split-K): one launch, bitwise repeatable, CUDA-graph
safe (the counters are left at zero).

Measured on the H200 in one run (2026-12-03, results/decode_attention_h200_mma.json, 32 layers of
Llama-3-8B shape in one CUDA graph, µs a layer): 8.58 / 10.89 / 14.14 / 34.91 at 1,600 / 3,000 /
4,600 / 17,000 of 2,048 / 4,096 / 8,192 / 32,768 slots filled, against 9.32 / 12.33 / 16.17 / 36.28
for the Triton kernel and its merge (1.04-1.14×). On the app path (results/
decode_anatomy_h200_kv16_mma.json, the same run) the step took 3.522 / 3.614 ms at 1k / 4k against
3.558 / 3.699: 275.0 / 266.7 tok/s. Where its time goes (tests/benchmarks/decode_attention.py's
MMA_PATCHES, 2,048 slots): the launch alone 0.9 µs, without the merge 7.0 of 9.7 (an earlier
build): each block waits on its marks, then its keys and values, then its ticket, then the other
splits' partials, four dependent trips through the memory system; the bytes themselves (6.5 MB,
~1.6 µs at the HBM's rate) are not what bounds it.

Math: flash attention with the split-KV of Flash-Decoding (Dao et al. 2022, 2023). The g query
heads of one KV head are the rows of ``mma.sync.m16n8k16`` (rows g..15 zero; g ≤ 8), scores
S = Q Kᵀ and O = P V in float32 on bf16 / fp16 operands, an online softmax in base 2 (scores times
scale · log2 e, ``ex2.approx``), P rounded to the cache's dtype for the second product as the Triton
kernel does. Keys not valid, or past the span's last valid key, weigh zero.

Layout (lane t of a warp: row quad g = t // 4, c = t % 4; a warp step is 16 keys). Any permutation
of head_dim applied to both operands of Q Kᵀ leaves the scores alone, so lane c holds the contiguous
quarter [c·D/4, (c+1)·D/4) of its query row g and of keys g and g + 8, and k-step j takes its words
2j, 2j+1 (A slots {2c, 2c+1} ↔ d = c·D/4 + 4j + {0, 1}, slots {2c+8, 2c+9} ↔ + {2, 3}). The scores
land as the C fragment (row g, keys 2c, 2c+1 and 8+2c, 9+2c), which is the A fragment of P V as it
stands (FlashAttention-2's register reuse). For P V the output columns are permuted instead: n-tile
t, column n ↔ d = n·D/8 + t, so lane (g, c) reads the contiguous eighth [g·D/8, (g+1)·D/8) of its
keys 2c, 2c+1, 8+2c, 9+2c and pairs two keys' values per register with ``prmt``, and its output is
the contiguous quarter [c·D/4, (c+1)·D/4) of row g. tests/engine/test_kv16_mma.py replays these
fragments in numpy against a plain softmax(QKᵀ)V.

Work split: grid (B·Hkv, splits), 8 warps a block (about one block an SM), each block a span of
``split_len`` keys. The block first reads its span's valid marks into shared memory (16 bytes a
load) and finds the span's last valid key; the warps take its 16-key steps in turn; the block adds
its warps' partials in shared memory; with one split that is the output, else each block stores its
partial (float32 row, max, sum) and the last block of the head adds them (or, as `MERGE` says, a merge
launch of its own, or split 0 once the other splits' flags are set).

Measured and not adopted (H200, 2026-12-04, results/decode_attention_h200_prefetch.json): each
warp's steps double-buffered (the next step's keys and values loaded before this step's
arithmetic) is slower at every depth, 9.25 / 11.69 / 14.19 / 35.51 against 8.42 / 10.83 / 13.92 /
34.52 µs a layer at 1,600 / 3,000 / 4,600 / 17,000 filled, and on the app path at 16k 909.6
against 853.3 µs of attention a step (the step 3.967 against 3.966 ms). Under programmatic dependent
launch (nvrtc.PDL), the marks and each warp's first step of earlier tokens' keys and values read
before the wait (only the RoPE kernel's own writes, this token's key, value and query, after it): the
same bits, but 216 registers against 158 and a slower step, 3.289 / 3.389 against 3.226 / 3.316 ms at
1k / 4k (H200, 2026-12-04, tests/benchmarks/pdl_logits.py and decode_anatomy in one call). On the app
path (tests/benchmarks/anatomy_patched.py, results/decode_experiments_h200_patched.json): the last
block loading its splits' rows in one trip with their weights, tickets ordered by fence.acq_rel, was
no faster (2.973 against 2.958 ms at 1k); letting o_proj launch only when this kernel ends takes
~0.35 µs a layer off the attention but ~1.8 off o_proj's overlap (2.983 against 2.946 ms).
"""

from __future__ import annotations

import os
from functools import cache

import torch

from app.engine.local import nvrtc

WARPS = 8  # warps a block: one 16-key step each in flight
STEP_KEYS = 16  # keys a warp step takes (the mma's K for P V)
SPLIT_ALIGN = 64  # split_len is a multiple of this: the marks' 16-byte loads stay aligned
MIN_SPLIT_KEYS = 128  # fewest keys a split takes (two steps of each warp)
MAX_SPLITS = 64  # splits a head's merge takes at once (its shared-memory weights)
MAX_SPLIT_KEYS = 8192  # a split's marks (a byte a key, shared memory) beside the ~38 KB static stay under the
# 48 KB a launch has without opting in (a GPU of few SMs at 32k slots otherwise gets 3 splits of 10,944)
SPLIT_WAVES = 1  # blocks per SM the splits aim at (one: 162 registers a thread, no spills)
MAX_GROUPS = 8  # query heads per KV head: the mma's rows g < 8
HEAD_DIMS = (64, 128)

ENABLED = os.environ.get("HEADROOM_KV16_MMA", "1") != "0"
"""HEADROOM_KV16_MMA=0 keeps the Triton kernel for 16-bit decode steps (benchmarks compare them)."""

MERGES = ("ticket", "launch", "poll")  # the kernel's ``merge`` argument is the index
MERGE = os.environ.get("HEADROOM_KV16_MERGE", "ticket")
"""How a head's splits are added (HEADROOM_KV16_MERGE, for the H200 A/B against llama.cpp in one call,
tests/benchmarks/llama_cpp_same_run_h200.sh; another value is "ticket"): "ticket", the last block of
the head to finish (an atomic ticket) loads the partials and adds them; "launch", a kernel of its own
right after (``kv16_merge_*``, under PDL: the attention's blocks store their partials and end, no fence
or ticket, and one trip loads every split's row); "poll", split 0 adds them once every other split has
set its flag (one trip where the ticket takes two; the ticket where not every block of the launch runs
at once, `_merge_for`). On the app path at 1k the ticket merge costs ~3.3 µs a layer, ~105 µs a step
(H200, results/decode_experiments_h200_patched.json: 2.843 against 2.960 ms without it). Measured on the
app path on an H200 (2026-12-06, tests/benchmarks/kv16_merge_ab.sh, a chat's second turn at 1k / 4k): ticket
354.9 / 339.3 tok/s, poll 352.6 / 340.4, launch 351.3 / 339.5 — neither is faster, so the ticket stays."""
if MERGE not in MERGES:
    MERGE = "ticket"

SOURCE = r"""
// 16-bit KV decode attention on mma.m16n8k16, one launch with its split merge (kv16_mma.py's docstring).
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define WARPS 8
#define MAX_SPLITS 64
#define NONE (-1.0e30f)
#define MERGE_LAUNCH 1  // the `merge` argument (kv16_mma.MERGES): 0 the ticket, 1 kv16_merge_*, 2 split 0 polls
#define MERGE_POLL 2

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 sel) {
    u32 d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}
__device__ __forceinline__ uint4 ld_nc(const void* p) {
    uint4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ float ld_cg(const float* p) {  // L2: another block's store, not a stale L1 line
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
template <bool BF16> __device__ __forceinline__ u32 pack2(float lo, float hi) {
    u32 d;
    if (BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
template <bool BF16> __device__ __forceinline__ u16 pack1(float v) {
    u16 d;
    if (BF16) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(d) : "f"(v));
    else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(d) : "f"(v));
    return d;
}
// d0, d1 += rows g of A x B (rows g + 8 of A are zero: their results are dropped)
template <bool BF16>
__device__ __forceinline__ void mma(float& d0, float& d1, u32 a0, u32 a2, u32 b0, u32 b1) {
    float z0, z1;
    if (BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%10,%11};"
            : "+f"(d0), "+f"(d1), "=f"(z0), "=f"(z1)
            : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1), "f"(0.f), "f"(0.f));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%10,%11};"
            : "+f"(d0), "+f"(d1), "=f"(z0), "=f"(z1)
            : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1), "f"(0.f), "f"(0.f));
}

// One warp step's operands: keys g, g+8 (lane's quarter of head_dim) and keys 2c, 2c+1, 8+2c, 9+2c
// (lane's eighth).
template <int D> struct Step { uint4 k[2][D / 32]; uint4 v[4][D / 64]; };

template <int D>
__device__ __forceinline__ void load_step(Step<D>& s, const u16* kh, const u16* vh, int sks, int svs, int base,
                                          int end, int g, int c) {
    const int last = end - 1;  // rows past the span's end read its last valid row (weighed zero)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const u16* row = kh + (long long)min(base + g + 8 * i, last) * sks + c * (D / 4);
#pragma unroll
        for (int j = 0; j < D / 32; ++j) s.k[i][j] = ld_nc(row + 8 * j);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int key = base + 2 * c + (i & 1) + 8 * (i >> 1);
        const u16* row = vh + (long long)min(key, last) * svs + g * (D / 8);
#pragma unroll
        for (int j = 0; j < D / 64; ++j) s.v[i][j] = ld_nc(row + 8 * j);
    }
}

__device__ __forceinline__ u32 word(const uint4* q, int i) {
    const uint4 v = q[i >> 2];
    return (i & 3) == 0 ? v.x : (i & 3) == 1 ? v.y : (i & 3) == 2 ? v.z : v.w;
}

// One warp step: scores of row g for keys 2c, 2c+1 (n-tile 0) and 8+2c, 9+2c (n-tile 1), the online
// softmax, and P V into the lane's quarter of the output row.
template <int D, bool BF16>
__device__ __forceinline__ void step(const Step<D>& cur, const uint4* qf, const u8* marks, int base, int start, int end,
                                     int c, float scale, float* o, float& m_run, float& l_run) {
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
        const u32 a0 = word(qf, 2 * j), a2 = word(qf, 2 * j + 1);
        mma<BF16>(s0, s1, a0, a2, word(cur.k[0], 2 * j), word(cur.k[0], 2 * j + 1));
        mma<BF16>(s2, s3, a0, a2, word(cur.k[1], 2 * j), word(cur.k[1], 2 * j + 1));
    }
    float x[4] = {s0, s1, s2, s3};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int key = base + 2 * c + (i & 1) + 8 * (i >> 1);
        x[i] = key < end && marks[key - start] ? x[i] * scale : -__int_as_float(0x7f800000);
    }
    float top = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
    top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));
    top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
    const float m_new = fmaxf(m_run, top), alpha = ex2(m_run - m_new);
    float p[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) p[i] = ex2(x[i] - m_new);
    l_run = l_run * alpha + (p[0] + p[1]) + (p[2] + p[3]);
    m_run = m_new;
#pragma unroll
    for (int i = 0; i < D / 4; ++i) o[i] *= alpha;
    const u32 pa0 = pack2<BF16>(p[0], p[1]), pa2 = pack2<BF16>(p[2], p[3]);
#pragma unroll
    for (int u = 0; u < D / 16; ++u) {  // n-tiles 2u, 2u+1: word u of each key's eighth
        const u32 va = word(cur.v[0], u), vb = word(cur.v[1], u), vc = word(cur.v[2], u), vd = word(cur.v[3], u);
        mma<BF16>(o[2 * u], o[D / 8 + 2 * u], pa0, pa2, prmt(va, vb, 0x5410), prmt(vc, vd, 0x5410));
        mma<BF16>(o[2 * u + 1], o[D / 8 + 2 * u + 1], pa0, pa2, prmt(va, vb, 0x7632), prmt(vc, vd, 0x7632));
    }
}

template <bool BF16> __device__ __forceinline__ float to_f(u16 h) {
    if (BF16) return __uint_as_float((u32)h << 16);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
template <bool BF16> __device__ __forceinline__ float dot2(u32 a, u32 b) {
    return to_f<BF16>((u16)(a & 0xffffu)) * to_f<BF16>((u16)(b & 0xffffu))
           + to_f<BF16>((u16)(a >> 16)) * to_f<BF16>((u16)(b >> 16));
}
// The rotary embedding of the lane's quarter of its query row (transformers' apply_rotary_pos_emb:
// x cos + rotate_half(x) sin, rotate_half(x) = (-x2, x1) of the halves): dim i of the first half pairs
// with i + D/2, the same offset in the quarter of lane c ^ 2. Each product of two 16-bit values is exact
// in float32, so the sum rounds once, then to 16 bits: as Inductor's fused kernel computes it.
template <int D, bool BF16>
__device__ __forceinline__ void rotate_row(uint4* qf, const uint4* cos_q, const uint4* sin_q, int c) {
    const float sign = c < 2 ? -1.f : 1.f;
#pragma unroll
    for (int j = 0; j < D / 32; ++j) {
        const uint4 cw = cos_q[j], sw = sin_q[j];
        u32 x[4] = {qf[j].x, qf[j].y, qf[j].z, qf[j].w};
        const u32 cs[4] = {cw.x, cw.y, cw.z, cw.w}, sn[4] = {sw.x, sw.y, sw.z, sw.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const u32 partner = __shfl_xor_sync(0xffffffffu, x[e], 2);
            const float lo = to_f<BF16>((u16)(x[e] & 0xffffu)) * to_f<BF16>((u16)(cs[e] & 0xffffu))
                             + sign * to_f<BF16>((u16)(partner & 0xffffu)) * to_f<BF16>((u16)(sn[e] & 0xffffu));
            const float hi = to_f<BF16>((u16)(x[e] >> 16)) * to_f<BF16>((u16)(cs[e] >> 16))
                             + sign * to_f<BF16>((u16)(partner >> 16)) * to_f<BF16>((u16)(sn[e] >> 16));
            x[e] = pack2<BF16>(lo, hi);
        }
        qf[j] = make_uint4(x[0], x[1], x[2], x[3]);
    }
}

// ROPE: q is the query before its rotary embedding, and this token's key and value (k_new, v_new; the
// key before its rotary embedding) go into the cache at slot *position (kv16_mma.decode_rope's docstring).
template <int D, bool BF16, bool ROPE>
__device__ void attend(const u16* q, const u16* k, const u16* v, const u8* valid, u16* out, float* part_o,
                       float* part_ml, int* counters, int groups, int span, int split_len, int heads,
                       int skb, int skh, int sks, int svb, int svh, int svs, int svalid, double scale_log2,
                       int has_valid, int merge, const u16* k_new, const u16* v_new, const u16* cos_d,
                       const u16* sin_d, const long long* position) {
    extern __shared__ __align__(16) u8 marks[];
    __shared__ __align__(16) float sm_o[WARPS][8][D];
    __shared__ float sm_m[WARPS + ROPE][8], sm_l[WARPS + ROPE][8];  // + ROPE: this token's key's partial
    __shared__ __align__(16) u16 sm_k[ROPE ? D : 8];  // this token's key after its rotary embedding
    __shared__ float sm_v[ROPE ? D : 1];  // and its value: that partial's output row, the same for every row
    __shared__ float sm_w[MAX_SPLITS * 8];
    __shared__ float sm_wl[MAX_SPLITS * 8], sm_total[8];
    __shared__ int last_valid, is_last;

    const int bh = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
    const int b = bh / heads, h = bh % heads;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, c = lane % 4;
    const int start = split * split_len, stop = min(start + split_len, span);
    const u16* kh = k + (long long)b * skb + (long long)h * skh;
    const u16* vh = v + (long long)b * svb + (long long)h * svh;
    // Programmatic dependent launch (nvrtc.PDL): everything read below may come from the kernel before
    // this one; the next kernel (o_proj's GEMV) may start at once and load its weights meanwhile.
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif

    // In flight together: the query row g (zero past the group; lane's quarter of head_dim) and the
    // span's marks. (Loading each warp's first step with them, as if the whole span were valid, was
    // slower: 9.70 against 8.98 µs a layer at 1,600 of 2,048 slots, the empty tail's bytes read.)
    uint4 qf[D / 32];
    const u16* q_row = q + ((long long)bh * groups + min(g, groups - 1)) * D + c * (D / 4);
#pragma unroll
    for (int j = 0; j < D / 32; ++j) qf[j] = ld_nc(q_row + 8 * j);
    // With ROPE: the block whose span holds this token's slot writes its key and value there and
    // weighs it itself after its steps (sm_k, sm_v), its mark dropped from the steps: the steps read the
    // cache through the non-coherent path, which need not see this launch's own stores. All that is
    // read here is in flight with the query and the marks (one trip): the position, cos and sin, and
    // this token's key and value in every block (0.5 KB from L2); the owner stores them after the
    // marks' loads, which would otherwise wait behind those stores (they might alias).
    int slot = -1;
    uint4 cf[ROPE ? D / 32 : 1], sf[ROPE ? D / 32 : 1];
    float kx = 0.f, ky = 0.f, cx = 0.f, cy = 0.f, sx = 0.f, sy = 0.f;  // dims tid, tid + D/2 of the key
    u16 v_mine = 0;
    if (ROPE) {
        slot = (int)*position;
#pragma unroll
        for (int j = 0; j < D / 32; ++j) {
            cf[j] = ld_nc(cos_d + c * (D / 4) + 8 * j);
            sf[j] = ld_nc(sin_d + c * (D / 4) + 8 * j);
        }
        if (tid < D / 2) {
            const u16* kn = k_new + (long long)bh * D;
            kx = to_f<BF16>(kn[tid]), ky = to_f<BF16>(kn[tid + D / 2]);
            cx = to_f<BF16>(cos_d[tid]), cy = to_f<BF16>(cos_d[tid + D / 2]);
            sx = to_f<BF16>(sin_d[tid]), sy = to_f<BF16>(sin_d[tid + D / 2]);
        } else if (tid < D / 2 + D) {
            v_mine = v_new[(long long)bh * D + tid - D / 2];
        }
    }
    const bool own = ROPE && slot >= start && slot < stop;
    if (tid == 0) last_valid = start - 1;
    __syncthreads();
    int mine = start - 1;
    const int n_marks = stop - start;
    const u8* row_marks = valid + (long long)b * svalid + start;
#pragma unroll 4
    for (int i = 16 * tid; i < n_marks; i += 16 * WARPS * 32) {
        uint4 m;
        if (!has_valid) {
            m = make_uint4(0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u);
        } else if (i + 16 <= n_marks) {
            m = ld_nc(row_marks + i);
        } else {  // the span's last few keys, byte by byte (never past the mask's end)
            u8 tail[16];
#pragma unroll
            for (int j = 0; j < 16; ++j) tail[j] = i + j < n_marks ? row_marks[i + j] : 0;
            m = make_uint4(tail[0] | tail[1] << 8 | tail[2] << 16 | (u32)tail[3] << 24,
                           tail[4] | tail[5] << 8 | tail[6] << 16 | (u32)tail[7] << 24,
                           tail[8] | tail[9] << 8 | tail[10] << 16 | (u32)tail[11] << 24,
                           tail[12] | tail[13] << 8 | tail[14] << 16 | (u32)tail[15] << 24);
        }
        if (own && slot - start - i >= 0 && slot - start - i < 16) {  // this token: weighed after the steps
            const int at = slot - start - i;
            u32* words = (u32*)&m;
            words[at >> 2] &= ~(0xffu << (8 * (at & 3)));
        }
        *(uint4*)(marks + i) = m;
        const u32 w[4] = {m.x, m.y, m.z, m.w};
#pragma unroll
        for (int j = 0; j < 16; ++j)
            if (i + j < n_marks && (w[j >> 2] >> (8 * (j & 3)) & 0xffu)) mine = start + i + j;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mine = max(mine, __shfl_xor_sync(0xffffffffu, mine, o));
    if (ROPE) {
        rotate_row<D, BF16>(qf, cf, sf, c);
        if (own && tid < D / 2) {
            const u16 rx = pack1<BF16>(kx * cx - ky * sx), ry = pack1<BF16>(ky * cy + kx * sy);
            sm_k[tid] = rx;
            sm_k[tid + D / 2] = ry;
            u16* krow = (u16*)kh + (long long)slot * sks;
            krow[tid] = rx;
            krow[tid + D / 2] = ry;
        } else if (own && tid < D / 2 + D) {
            ((u16*)vh)[(long long)slot * svs + tid - D / 2] = v_mine;
            sm_v[tid - D / 2] = to_f<BF16>(v_mine);
        }
    }
    if (lane == 0) atomicMax(&last_valid, mine);
    __syncthreads();
    const int end = last_valid + 1;  // keys [start, end) count
    const int steps = (end - start + 15) / 16;
    if (g >= groups) {
#pragma unroll
        for (int j = 0; j < D / 32; ++j) qf[j] = make_uint4(0u, 0u, 0u, 0u);
    }
    const float scale = (float)scale_log2;
    float o[D / 4];
#pragma unroll
    for (int i = 0; i < D / 4; ++i) o[i] = 0.f;
    float m_run = NONE, l_run = 0.f;
    for (int s = warp; s < steps; s += WARPS) {  // a step at a time: the block's 8 warps keep 8 in flight
        Step<D> cur;
        load_step<D>(cur, kh, vh, sks, svs, start + 16 * s, end, g, c);
        step<D, BF16>(cur, qf, marks, start + 16 * s, start, end, c, scale, o, m_run, l_run);
    }
    l_run += __shfl_xor_sync(0xffffffffu, l_run, 1);
    l_run += __shfl_xor_sync(0xffffffffu, l_run, 2);

    // The block's warps added in shared memory: its partial (row max, sum, output row) per query row.
    if (g < groups) {
        if (c == 0) { sm_m[warp][g] = m_run; sm_l[warp][g] = l_run; }
        float4* dst = (float4*)&sm_o[warp][g][c * (D / 4)];
#pragma unroll
        for (int i = 0; i < D / 16; ++i) dst[i] = make_float4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]);
    }
    if (own && warp == 0) {  // this token's key as one more partial: score s, sum 1, output its value
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < D / 32; ++j) {
            const uint4 kq = *(const uint4*)&sm_k[c * (D / 4) + 8 * j];
            s += dot2<BF16>(qf[j].x, kq.x) + dot2<BF16>(qf[j].y, kq.y) + dot2<BF16>(qf[j].z, kq.z)
                 + dot2<BF16>(qf[j].w, kq.w);
        }
        s += __shfl_xor_sync(0xffffffffu, s, 1);
        s += __shfl_xor_sync(0xffffffffu, s, 2);
        if (g < groups && c == 0) { sm_m[WARPS][g] = s * scale; sm_l[WARPS][g] = 1.f; }
    }
    __syncthreads();
    for (int e = tid; e < groups * D; e += WARPS * 32) {
        const int r = e / D, d = e % D;
        float top = NONE;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) top = fmaxf(top, sm_m[w][r]);
        if (own) top = fmaxf(top, sm_m[WARPS][r]);
        float total = 0.f, acc = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const float f = ex2(sm_m[w][r] - top);
            total += f * sm_l[w][r];
            acc += f * sm_o[w][r][d];
        }
        if (own) {  // this token's partial: sum 1, output its value
            const float f = ex2(sm_m[WARPS][r] - top);
            total += f;
            acc += f * sm_v[d];
        }
        if (splits == 1) {
            out[((long long)bh * groups + r) * D + d] = pack1<BF16>(acc / fmaxf(total, 1.0e-30f));
        } else {
            const long long at = ((long long)bh * splits + split) * groups + r;
            part_o[at * D + d] = acc;
            if (d == 0) { part_ml[2 * at] = top; part_ml[2 * at + 1] = total; }
        }
    }
    if (splits == 1) return;
    if (merge == MERGE_LAUNCH) return;  // kv16_merge_* adds the partials, launched right after this kernel

    // The last block of this head to finish adds the splits (a fixed order: bitwise repeatable). The
    // block's stores are ordered before its ticket by the barrier and one thread's fence (cumulative).
    // MERGE_POLL: split 0 adds them once every other split's flag (a store after the same fence) is
    // set, one trip where the ticket takes two; its blocks spin, so the host asks for it only where every
    // block of the launch runs at once (kv16_mma._merge_for).
    __syncthreads();
    if (merge == MERGE_POLL) {
        int* flags = counters + gridDim.x + (long long)bh * MAX_SPLITS;  // after the tickets
        if (split != 0) {
            if (tid == 0) {
                asm volatile("fence.acq_rel.gpu;" ::: "memory");
                asm volatile("st.relaxed.gpu.global.s32 [%0], 1;" :: "l"(flags + split) : "memory");
            }
            return;
        }
        if (tid > 0 && tid < splits) {
            int seen;
            do asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(seen) : "l"(flags + tid) : "memory");
            while (!seen);
            flags[tid] = 0;  // ready for the next launch
        }
        if (tid == 0) is_last = 1;
    } else if (tid == 0) {
        __threadfence();
        is_last = atomicAdd(counters + bh, 1) == splits - 1;
        if (is_last) __threadfence();
    }
    __syncthreads();
    if (!is_last) return;
    const long long first_part = (long long)bh * splits * groups;  // (split 0, row 0) of this head
    for (int e = tid; e < splits * groups; e += WARPS * 32) {
        sm_w[e] = ld_cg(part_ml + 2 * (first_part + e));
        sm_wl[e] = ld_cg(part_ml + 2 * (first_part + e) + 1);
    }
    __syncthreads();
    if (tid < groups) {
        float top = NONE, total = 0.f;
        for (int sp = 0; sp < splits; ++sp) top = fmaxf(top, sm_w[sp * groups + tid]);
        for (int sp = 0; sp < splits; ++sp) {
            const float f = ex2(sm_w[sp * groups + tid] - top);
            sm_w[sp * groups + tid] = f;
            total += f * sm_wl[sp * groups + tid];
        }
        sm_total[tid] = total;
    }
    __syncthreads();
    for (int e = tid; e < groups * D; e += WARPS * 32) {
        const int r = e / D, d = e % D;
        float acc = 0.f;
#pragma unroll 16
        for (int sp = 0; sp < splits; ++sp)
            acc += sm_w[sp * groups + r] * ld_cg(part_o + (first_part + sp * groups + r) * D + d);
        out[((long long)bh * groups + r) * D + d] = pack1<BF16>(acc / fmaxf(sm_total[r], 1.0e-30f));
    }
    if (tid == 0) counters[bh] = 0;  // ready for the next launch (and CUDA graph replay)
}

#define ARGS const u16* q, const u16* k, const u16* v, const u8* valid, u16* out, float* part_o, float* part_ml, \
    int* counters, int groups, int span, int split_len, int heads, int skb, int skh, int sks, int svb, int svh, \
    int svs, int svalid, double scale_log2, int has_valid, int merge
#define PASS q, k, v, valid, out, part_o, part_ml, counters, groups, span, split_len, heads, skb, skh, sks, svb, svh, \
    svs, svalid, scale_log2, has_valid, merge
#define NO_ROPE nullptr, nullptr, nullptr, nullptr, nullptr
#define ROPE_ARGS ARGS, const u16* k_new, const u16* v_new, const u16* cos_d, const u16* sin_d, \
    const long long* position
#define ROPE_PASS PASS, k_new, v_new, cos_d, sin_d, position
#define KERNEL extern "C" __global__ void __launch_bounds__(256, 1)
KERNEL kv16_decode_bf16_d64(ARGS) { attend<64, true, false>(PASS, NO_ROPE); }
KERNEL kv16_decode_bf16_d128(ARGS) { attend<128, true, false>(PASS, NO_ROPE); }
KERNEL kv16_decode_f16_d64(ARGS) { attend<64, false, false>(PASS, NO_ROPE); }
KERNEL kv16_decode_f16_d128(ARGS) { attend<128, false, false>(PASS, NO_ROPE); }
KERNEL kv16_rope_decode_bf16_d64(ROPE_ARGS) { attend<64, true, true>(ROPE_PASS); }
KERNEL kv16_rope_decode_bf16_d128(ROPE_ARGS) { attend<128, true, true>(ROPE_PASS); }
KERNEL kv16_rope_decode_f16_d64(ROPE_ARGS) { attend<64, false, true>(ROPE_PASS); }
KERNEL kv16_rope_decode_f16_d128(ROPE_ARGS) { attend<128, false, true>(ROPE_PASS); }

// MERGE_LAUNCH: a head's splits added by a launch of their own, one block per (sequence · KV head, query
// row) and one thread per dimension, as the ticket merge adds them (the same order: the same bits). The
// rows of the first ONE_TRIP splits are loaded before the maxima and sums go to shared memory, so one
// trip loads them all (more splits: ONE_TRIP more a trip). Built only where MERGE is "launch" (load_kernels).
#ifdef MERGE_KERNELS
#define ONE_TRIP 32
template <int D, bool BF16>
__device__ void merge_splits(const float* part_o, const float* part_ml, u16* out, int groups, int splits) {
    __shared__ float sm_m[MAX_SPLITS], sm_l[MAX_SPLITS];
    const int bh = blockIdx.x, r = blockIdx.y, d = threadIdx.x;
#if __CUDA_ARCH__ >= 900  // the next kernel (o_proj) may launch and load its weights now, as under the ticket
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const long long first = (long long)bh * splits * groups + r;  // (split 0, row r) of this head
    const float* row = part_o + first * D + d;
    const long long step = (long long)groups * D;  // from a split's row to the next split's
    float o[ONE_TRIP], top = NONE, total = 0.f, acc = 0.f;
    for (int s0 = 0; s0 < splits; s0 += ONE_TRIP) {
#pragma unroll
        for (int s = 0; s < ONE_TRIP; ++s)
            if (s0 + s < splits) o[s] = ld_cg(row + (s0 + s) * step);
        if (s0 == 0) {  // under the rows' loads
            for (int s = d; s < splits; s += D) {
                sm_m[s] = ld_cg(part_ml + 2 * (first + (long long)s * groups));
                sm_l[s] = ld_cg(part_ml + 2 * (first + (long long)s * groups) + 1);
            }
            __syncthreads();
            for (int s = 0; s < splits; ++s) top = fmaxf(top, sm_m[s]);
        }
#pragma unroll
        for (int s = 0; s < ONE_TRIP; ++s) {
            if (s0 + s < splits) {
                const float f = ex2(sm_m[s0 + s] - top);
                total += f * sm_l[s0 + s];
                acc += f * o[s];
            }
        }
    }
    out[((long long)bh * groups + r) * D + d] = pack1<BF16>(acc / fmaxf(total, 1.0e-30f));
}
#define MERGE_KERNEL(name, d, bf16) extern "C" __global__ void __launch_bounds__(128) name( \
    const float* part_o, const float* part_ml, u16* out, int groups, int splits) { \
    merge_splits<d, bf16>(part_o, part_ml, out, groups, splits); }
MERGE_KERNEL(kv16_merge_bf16_d64, 64, true)
MERGE_KERNEL(kv16_merge_bf16_d128, 128, true)
MERGE_KERNEL(kv16_merge_f16_d64, 64, false)
MERGE_KERNEL(kv16_merge_f16_d128, 128, false)
#endif
"""

KERNEL_NAMES = [f"kv16_decode_{t}_d{d}" for t in ("bf16", "f16") for d in HEAD_DIMS]
ROPE_KERNEL_NAMES = [f"kv16_rope_decode_{t}_d{d}" for t in ("bf16", "f16") for d in HEAD_DIMS]
MERGE_KERNEL_NAMES = [f"kv16_merge_{t}_d{d}" for t in ("bf16", "f16") for d in HEAD_DIMS]
LOG2E = 1.4426950408889634


def load_kernels(device_index: int, source: str | None = None, name: str = "kv16_mma.cu") -> dict:
    """{kernel name: kernel} of ``source`` (SOURCE; a benchmark's variant of it) compiled for and loaded on
    one device: the attention kernels, and the merge kernels where `MERGE` is "launch" (0.7 s more NVRTC
    on a two-core CPU, not paid otherwise). Raises CompileError when it does not build."""
    launch = MERGE == "launch"
    names = KERNEL_NAMES + ROPE_KERNEL_NAMES + (MERGE_KERNEL_NAMES if launch else [])
    return nvrtc.load(device_index, source or SOURCE, name, names, ("-DMERGE_KERNELS",) if launch else ())


def _kernels(device_index: int) -> dict:
    """`load_kernels` of SOURCE, once per process, device and `MERGE`."""
    return _loaded(device_index, MERGE)


@cache
def _loaded(device_index: int, merge: str) -> dict:
    return load_kernels(device_index)


def unavailable_reason(device: torch.device) -> str:
    """"" when the kernel can run on ``device``, else why not (one line): switched off, no CUDA, a GPU
    before Ampere (bf16 mma needs sm_80), torch without its NVRTC loader, NVRTC missing, a compile
    error."""
    if not ENABLED:
        return "HEADROOM_KV16_MMA=0"
    return nvrtc.unavailable_reason(device, _kernels, "CUDA attention kernel")


def model_reason(groups: int, head_dim: int, dtype: torch.dtype) -> str:
    """"" when the kernel takes a model of ``groups`` query heads per KV head, this ``head_dim`` and
    compute ``dtype``, else why not: g ≤ 8, d 64 or 128, bf16 or fp16."""
    if head_dim not in HEAD_DIMS:
        return f"head_dim {head_dim} (the kernel takes {HEAD_DIMS})"
    if not 1 <= groups <= MAX_GROUPS:
        return f"{groups} query heads per KV head (the kernel takes 1-{MAX_GROUPS})"
    if dtype not in (torch.bfloat16, torch.float16):
        return f"{str(dtype).removeprefix('torch.')} (the kernel takes bf16 or fp16)"
    return ""


def shape_reason(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None) -> str:
    """"" when the kernel takes these (query (B, Hkv, g, d), key and value (B, Hkv, S, d) 16-bit,
    valid (B, S) bool or None), else why not: `model_reason`, one dtype, rows 16-byte aligned,
    strides within 32 bits."""
    b, h, g, d = query.shape
    model = model_reason(g, d, query.dtype)
    if model:
        return model
    if key.dtype != query.dtype or value.dtype != query.dtype:
        return "query, key and value must share bf16 or fp16"
    if key.shape[2] > MAX_SPLITS * MAX_SPLIT_KEYS:
        return f"{key.shape[2]} slots (the kernel takes at most {MAX_SPLITS * MAX_SPLIT_KEYS})"
    for name, t in (("key", key), ("value", value)):
        if t.shape[:2] != (b, h) or t.shape[-1] != d or t.stride(-1) != 1 or t.data_ptr() % 16:
            return f"{name} must be (B, Hkv, S, d) with contiguous 16-byte-aligned rows"
        if any(s % 8 or s >= 2**31 for s in t.stride()[:3]):  # int strides (offsets are 64-bit)
            return f"{name} strides must be multiples of 8 elements within 32 bits"
    if valid is not None and (valid.dtype != torch.bool or valid.shape != (b, key.shape[2]) or valid.stride(-1) != 1
                              or valid.data_ptr() % 16 or (b > 1 and valid.stride(0) % 16)):
        return "valid must be (B, S) bool, rows contiguous and 16-byte aligned"
    return ""


def launch_split(span: int, programs: int, sms: int, waves: int = SPLIT_WAVES) -> tuple[int, int]:
    """(splits, split_len) for ``programs`` = B·Hkv heads over ``span`` slots: about SPLIT_WAVES blocks
    per SM, each at least MIN_SPLIT_KEYS keys and at most MAX_SPLIT_KEYS (split_len a multiple of
    SPLIT_ALIGN), at most MAX_SPLITS a head. Llama-3-8B on the H200 (8 heads, 132 SMs): 16 × 128 at
    2,048 slots, 16 × 256 at 4,096, 17 × 1,984 at 32,768; on a GPU of 24 SMs 4 × 8,192 at 32,768."""
    splits = max(1, min(MAX_SPLITS, -(-span // MIN_SPLIT_KEYS), -(-waves * sms // max(programs, 1))))
    splits = min(MAX_SPLITS, max(splits, -(-span // MAX_SPLIT_KEYS)))
    per_split = -(-span // splits)
    split_len = -(-per_split // SPLIT_ALIGN) * SPLIT_ALIGN
    return -(-span // split_len), split_len


_counters: dict = {}


def _counters_for(device: torch.device, heads: int) -> torch.Tensor:
    """int32 tickets, one per (batch, KV head), then MAX_SPLITS flags per (batch, KV head) for "poll"
    (`MERGE`), zero between launches (each launch's last block of a head, or its split 0, resets its
    own). Allocated once per device, outside any CUDA graph capture (the first use is the load's
    self-check)."""
    have = _counters.get(device)
    if have is None or have.numel() < heads * (1 + MAX_SPLITS):
        have = _counters[device] = torch.zeros(max(heads, 256) * (1 + MAX_SPLITS), dtype=torch.int32, device=device)
    return have


def _merge_for(blocks: int, sms: int) -> int:
    """The kernel's ``merge`` argument (an index of MERGES) for `MERGE` and a launch of ``blocks`` =
    B·Hkv·splits on ``sms`` SMs: "poll" only where every block runs at once (a block an SM), so no split
    waits for an SM behind a spinning split 0 (B·Hkv of them spin), else the ticket (which never waits):
    Llama-3-8B on the H200 polls at 2,048 and 6,144 slots (8 × 16 blocks), not at 18,432 (8 × 17)."""
    if MERGE == "poll" and blocks > sms:
        return MERGES.index("ticket")
    return MERGES.index(MERGE)


def decode(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None,
           scale: float, kernels: dict | None = None, waves: int = SPLIT_WAVES, cluster: int = 0) -> torch.Tensor:
    """(B, Hkv, g, d) attention of one query token per sequence (query (B, Hkv, g, d): the g query heads
    of each KV head) over the 16-bit cache key, value (B, Hkv, S, d), where ``valid`` (B, S) bool marks
    the keys to see (None: all). Output in the query's dtype. Memory: the output, plus float32 partials
    of (B·Hkv, splits, g, d + 2) when the span is split. Raises ValueError for inputs the kernel does
    not take (shape_reason), CompileError when it cannot be built here. kernels, waves: a benchmark's
    variant of the source (`nvrtc.load`) and of `launch_split`; cluster: that many splits a head, launched
    as one thread-block cluster (for a variant that merges them in distributed shared memory,
    tests/benchmarks/decode_attention.py's CLUSTER_PATCHES; measured slower than the ticket merge, not
    used by the app)."""
    return _launch(query, key, value, valid, scale, None, kernels, waves, cluster)


def rope_reason(query: torch.Tensor, key_new: torch.Tensor, value_new: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor, key: torch.Tensor, position: torch.Tensor) -> str:
    """"" when `decode_rope` takes these beside `shape_reason`'s (query (1, Hkv, g, d) and the cache), else
    why not: one sequence; key_new, value_new (1, Hkv, 1, d) and cos, sin (d values) contiguous in the
    query's dtype, 16-byte aligned; position a one-element int64 on the query's device."""
    d = query.shape[-1]
    if query.shape[0] != 1:
        return "one sequence only (the fill counter is the cache's)"
    for name, t in (("key_new", key_new), ("value_new", value_new)):
        if t.shape != (1, key.shape[1], 1, d) or not t.is_contiguous():
            return f"{name} must be (1, Hkv, 1, d), contiguous"
    for name, t in (("cos", cos), ("sin", sin)):
        if t.numel() != d or not t.is_contiguous():
            return f"{name} must hold d contiguous values"
    if any(t.dtype != query.dtype or t.data_ptr() % 16 for t in (key_new, value_new, cos, sin)):
        return "key_new, value_new, cos and sin in the query's dtype, 16-byte aligned"
    if position.numel() != 1 or position.dtype != torch.int64 or position.device != query.device:
        return "position must be one int64 on the query's device"
    return ""


def decode_rope(query: torch.Tensor, key_new: torch.Tensor, value_new: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor, key: torch.Tensor, value: torch.Tensor, position: torch.Tensor,
                valid: torch.Tensor | None, scale: float, kernels: dict | None = None) -> torch.Tensor:
    """`decode` of this token's query before its rotary embedding, writing its key and value to the cache
    on the way: query (1, Hkv, g, d) and key_new (1, Hkv, 1, d) as the projections give them, value_new
    (1, Hkv, 1, d), cos and sin (d) of this token's position (the model's rotary embedding), the cache
    key, value (1, Hkv, S, d), position (one int64 on the device: the cache's fill counter, this token's
    slot). In the launch: the query rotated in each block (transformers' apply_rotary_pos_emb, float32
    then rounded once, as Inductor computes it), the rotated key and the value stored at slot
    ``position`` of key and value by the block whose span holds it, which also weighs this token itself
    (the steps read the cache by the non-coherent path, which need not see the launch's own stores).
    This token is always seen (a causal step sees itself), whatever ``valid`` says of its slot.
    A position outside the cache writes and sees nothing. Raises ValueError for inputs it does not take
    (`shape_reason`, `rope_reason`), CompileError when it cannot be built here."""
    reason = rope_reason(query, key_new, value_new, cos, sin, key, position)
    if reason:
        raise ValueError(reason)
    return _launch(query, key, value, valid, scale, (key_new, value_new, cos, sin, position), kernels)


def _launch(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None, scale: float,
            rope: tuple | None, kernels: dict | None = None, waves: int = SPLIT_WAVES, cluster: int = 0
            ) -> torch.Tensor:
    reason = shape_reason(query, key, value, valid)
    if reason:
        raise ValueError(reason)
    query = query.contiguous()
    if query.data_ptr() % 16:
        query = query.clone()
    b, h, g, d = query.shape
    span = key.shape[2]
    device = query.device
    index = device.index if device.index is not None else torch.cuda.current_device()
    sms = torch.cuda.get_device_properties(index).multi_processor_count
    splits, split_len = launch_split(span, b * h, sms, waves)
    if cluster:  # exactly `cluster` splits (the last ones may hold no keys)
        per_split = -(-span // cluster)
        splits, split_len = cluster, -(-per_split // SPLIT_ALIGN) * SPLIT_ALIGN
    out = torch.empty_like(query)
    part_o = torch.empty((b * h, splits, g, d) if splits > 1 else (1,), dtype=torch.float32, device=device)
    part_ml = torch.empty((b * h, splits, g, 2) if splits > 1 else (1,), dtype=torch.float32, device=device)
    counters = _counters_for(device, b * h)
    merge = _merge_for(b * h * splits, sms)
    kind = "kv16_rope_decode" if rope else "kv16_decode"
    dtype = "bf16" if query.dtype == torch.bfloat16 else "f16"
    kernels = kernels or _kernels(index)
    marks = valid.view(torch.uint8) if valid is not None else out
    nvrtc.launch(kernels[f"{kind}_{dtype}_d{d}"], (b * h, splits, 1), (32 * WARPS, 1, 1),
                 [query, key, value, marks, out, part_o, part_ml, counters, g, span, split_len, h,
                  key.stride(0), key.stride(1), key.stride(2), value.stride(0), value.stride(1), value.stride(2),
                  valid.stride(0) if valid is not None else 0, float(scale) * LOG2E, int(valid is not None), merge,
                  *(rope or ())],
                 split_len, (1, cluster, 1) if cluster else None)
    if splits > 1 and MERGES[merge] == "launch":
        nvrtc.launch(kernels[f"kv16_merge_{dtype}_d{d}"], (b * h, g, 1), (d, 1, 1), [part_o, part_ml, out, g, splits])
    return out
