"""The sampled token's draw in four small launches, no sort (issue 15, item 2: the next cost after the
step): CUDA C compiled at run time by NVRTC (app.engine.local.nvrtc), what `samplers.sample` runs on
CUDA where it builds; `samplers.draw_from_nucleus` (one sort of the whole vocabulary) elsewhere.

Why: after the GEMV, attention and lm_head, the sampler was the largest cost outside the step: the
app's default draw (temperature 0.7, top-p 0.95) took ~109 µs of GPU time a token on the H200 for a
Llama-3 vocabulary of 128,256 (results/sampler_gpu_h200.json, CUDA graph, 13 kernels, the radix sort
41 µs of it) in a 3.4 ms step, and ~0.4 ms of host time to enqueue.

Same filters and order as `samplers.process` (transformers' warpers): repetition penalty, then
temperature, top-k, top-p over what top-k kept, min-p; one uniform u through the kept tokens'
cumulative weight. Every filter keeps the tokens at or above a score, so it is a threshold on the
token's *depth* below the top score instead of a position in a sorted order:

    depth p = floor((top − s) · 2^22 / (40 T))  (float32: ``(top - s) * scale``), kept iff p ≤ P

and P is found by two rounds of 2,048-bin histograms (p's high and low 11 bits) over the vocabulary,
by count for top-k and by weight for top-p, not by sorting. Tokens deeper than 40 T (weight below
e^-40 of the top token's) are never kept; for top-p they are all in the dropped tail anyway (their
whole mass, < V·e^-40 of the top token's, is far below any cut). Weights are fixed point,
round_toward_zero(2^((s − top)·log2(e)/T) · 2^40) (``ex2.approx``; the top token weighs 2^40), summed in
64-bit integers: every sum is exact and order-free, so a seeded draw is bitwise repeatable.

What differs from the sorted draw: tokens within one depth step of the boundary (40 T / 2^22 of score,
6.7e-6 at T = 0.7; ties in bfloat16 logits are exact ties) are kept or dropped together, as ties are
(`TopKLogitsWarper` keeps ties with the k-th; a sort would split them arbitrarily), and the kept mass
is summed in integers instead of float32 (the cut can move by float32's rounding of a 128k-term sum).
The kept tokens are walked in a fixed order other than by score, which gives the same distribution.

Launches (grid: one 1,024-thread block per 8,192 tokens, at most 64; each launch's last block, by an
atomic ticket, finishes its step): ``nucleus_top`` (top score and its first index), ``nucleus_level1``
(weights and counts by p >> 11; its last block finds the bins that hold the top-k and top-p boundaries),
``nucleus_level2`` once for top-k and once for top-p (the boundary bin by p & 2047), ``nucleus_draw``
(kept weight by block, then the token). A zeroed workspace each call (one memset) keeps calls on
different streams apart and needs no reset. Greedy decoding takes ``nucleus_greedy`` alone (the
top launch writing its index as the token).

Measured on the H200 (results/sampler_gpu_h200.json, one CUDA graph, 128,256 scores): 37.9 / 34.7 µs
of GPU time a sampled token for flat / peaked logits against the sort's 109.2 / 107.9, and 7.5 µs
a greedy token against torch.argmax's 27.1; on the app path, 297.3 against 287.9 tok/s at 1k
(results/decode_anatomy_h200_sampler_kernel.json). tests/engine/test_nucleus_kernel.py checks the
depth rule against transformers' warpers on the CPU and the kernels against it on a GPU.
"""

from __future__ import annotations

import math
import os
import struct
from functools import cache

import torch

from app.engine.local import nvrtc

THREADS = 1024
PER_THREAD = 8
CHUNK = THREADS * PER_THREAD  # tokens a block takes
MAX_BLOCKS = 64  # vocabularies up to 524,288 tokens
BINS = 2048
LIVE = BINS * BINS  # depths 0 .. LIVE - 1; a token deeper is never kept
LIVE_WIDTH = 40.0  # the depth range in units of T: weights down to e^-40 of the top token's
WORKSPACE_BYTES = 72 * 1024
KERNEL_NAMES = ["nucleus_top", "nucleus_level1", "nucleus_level2", "nucleus_draw", "nucleus_greedy"]

ENABLED = os.environ.get("HEADROOM_SAMPLER_KERNEL", "1") != "0"
"""HEADROOM_SAMPLER_KERNEL=0 keeps the sort-based draw on CUDA (benchmarks compare them)."""

SOURCE = r"""
// The nucleus draw without a sort (nucleus_kernel.py's docstring). No headers: NVRTC built-ins only.
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;

#define THREADS 1024
#define PER_THREAD 8
#define CHUNK (THREADS * PER_THREAD)
#define MAX_BLOCKS 64
#define BINS 2048
#define BIN_BITS 11
#define LIVE (BINS * BINS)
#define FIXED 1099511627776.0f  // 2^40: the top token's weight

struct Workspace {  // zeroed by the caller before nucleus_top; the scalars first (`bounds` reads them)
    float top;
    int arg;
    int pk, pp;         // top-k's and top-p's deepest kept depth (LIVE - 1: no limit)
    int bin_k, bin_p;   // the level-1 bin level 2 looks into for top-k / top-p, -1 none
    u32 tickets[8];
    u64 total;          // weight of all tokens above LIVE depth
    u64 rank_k;         // top-k: the rank still needed inside bin_k
    u64 rest_p;         // top-p: the weight still kept inside bin_p (from its top)
    u64 block_mass[MAX_BLOCKS];
    float block_top[MAX_BLOCKS];
    int block_arg[MAX_BLOCKS];
    u64 mass1[BINS];  // weight by depth >> 11 (level 1)
    u64 mass2[BINS];  // weight by depth & 2047 within one level-1 bin (level 2)
    u32 count1[BINS];
    u32 count2[BINS];
};
static_assert(sizeof(Workspace) <= 72 * 1024, "WORKSPACE_BYTES");

#define ARGS const float* __restrict__ scores, int vocab, u8* seen, int has_seen, double penalty, \
    double log2e_over_t, double depth_scale, int top_k, double top_p, int p_min, const float* uniform, \
    long long* out, void* wsv

#define PASS scores, vocab, seen, has_seen, penalty, log2e_over_t, depth_scale, top_k, top_p, p_min, uniform, out, wsv

__device__ __forceinline__ float score_at(const float* __restrict__ scores, const u8* seen, int has_seen,
                                          float penalty, int i) {
    float s = scores[i];
    // RepetitionPenaltyLogitsProcessor as samplers.apply_repetition_penalty runs on CUDA, where
    // PyTorch divides by a scalar as a multiply by its float reciprocal
    if (has_seen && seen[i]) s = s < 0.f ? s * penalty : s * (1.0f / penalty);
    return s;
}
__device__ __forceinline__ int depth_of(float s, float top, float scale) {
    const float d = (top - s) * scale;
    return d < (float)LIVE ? (int)d : LIVE;  // NaN and -inf: LIVE (never kept)
}
__device__ __forceinline__ u64 weight_of(float s, float top, float k2) {
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"((s - top) * k2));
    return (u64)(e * FIXED);
}
__device__ __forceinline__ u64 ld_cg(const u64* p) {
    u64 v;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ u32 ld_cg32(const u32* p) {
    u32 v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

// Exclusive prefix sum of one value a thread over the block (1,024 threads, all calling); *total: the sum.
__device__ u64 block_scan(u64 v, u64* total) {
    __shared__ u64 warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u64 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        u64 w = warp_sums[lane];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const u64 y = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += y;
        }
        warp_sums[lane] = w;
    }
    __syncthreads();
    const u64 before = warp ? warp_sums[warp - 1] : 0ull;
    *total = warp_sums[31];
    __syncthreads();
    return before + x - v;
}

// True in the one block that arrives last at ticket i (after every block's writes are visible).
__device__ bool last_block(Workspace* ws, int i) {
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&ws->tickets[i], 1u) == gridDim.x - 1;
    __syncthreads();
    if (last) __threadfence();
    return last;
}

// Level-1 prefix sums of weight (from the top) at this thread's bins 2t, 2t+1: before[j] = weight of
// the bins above bin 2t+j. Returns the total.
__device__ u64 level1_prefix(Workspace* ws, u64* before, u64* mass) {
    const int b = 2 * threadIdx.x;
    mass[0] = ld_cg(&ws->mass1[b]);
    mass[1] = ld_cg(&ws->mass1[b + 1]);
    u64 total;
    before[0] = block_scan(mass[0] + mass[1], &total);
    before[1] = before[0] + mass[0];
    return total;
}

// Top-p over what top-k kept: cut = base + (1 - top_p) (total - base), base = the weight top-k
// dropped; a token stays while the weight above it is below total - cut (TopPLogitsWarper: it goes
// when the ascending cumulative weight up to it is <= cut). Sets bin_p and rest_p (one thread does).
__device__ void plan_top_p(Workspace* ws, double top_p, u64 total, u64 base, const u64* before, const u64* mass) {
    if (top_p >= 1.0) return;
    const u64 cut = base + (u64)((1.0 - top_p) * (double)(total - base));
    const u64 keep = total - cut;
    for (int j = 0; j < 2; ++j)
        if (before[j] < keep && keep <= before[j] + mass[j]) {
            ws->bin_p = 2 * threadIdx.x + j;
            ws->rest_p = keep - before[j];
        }
}

// The top score and its first index; greedy: that index is the token (and marked seen).
template <bool GREEDY>
__device__ void top_score(ARGS) {
    Workspace* ws = (Workspace*)wsv;
    __shared__ float tops[32];
    __shared__ int args[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float penalty_f = (float)penalty;
    float best = __int_as_float(0xff800000);  // -inf
    int arg = 0x7fffffff;
    for (int r = 0; r < PER_THREAD; ++r) {
        const int i = blockIdx.x * CHUNK + r * THREADS + threadIdx.x;
        if (i < vocab) {
            const float s = score_at(scores, seen, has_seen, penalty_f, i);
            if (s > best) { best = s; arg = i; }
        }
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) {
        const float s = __shfl_xor_sync(0xffffffffu, best, o);
        const int a = __shfl_xor_sync(0xffffffffu, arg, o);
        if (s > best || (s == best && a < arg)) { best = s; arg = a; }
    }
    if (lane == 0) { tops[warp] = best; args[warp] = arg; }
    __syncthreads();
    if (warp == 0) {
        best = tops[lane]; arg = args[lane];
#pragma unroll
        for (int o = 16; o; o >>= 1) {
            const float s = __shfl_xor_sync(0xffffffffu, best, o);
            const int a = __shfl_xor_sync(0xffffffffu, arg, o);
            if (s > best || (s == best && a < arg)) { best = s; arg = a; }
        }
        if (lane == 0) { ws->block_top[blockIdx.x] = best; ws->block_arg[blockIdx.x] = arg; }
    }
    if (!last_block(ws, 0) || warp != 0) return;
    best = __int_as_float(0xff800000); arg = 0x7fffffff;
    for (int j = lane; j < (int)gridDim.x; j += 32) {
        const float s = __ldcg(&ws->block_top[j]);
        const int a = __ldcg(&ws->block_arg[j]);
        if (s > best || (s == best && a < arg)) { best = s; arg = a; }
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) {
        const float s = __shfl_xor_sync(0xffffffffu, best, o);
        const int a = __shfl_xor_sync(0xffffffffu, arg, o);
        if (s > best || (s == best && a < arg)) { best = s; arg = a; }
    }
    if (lane == 0) {
        arg = arg == 0x7fffffff ? 0 : arg;  // NaN or no scores: token 0
        ws->top = best; ws->arg = arg;
        if (GREEDY) {
            out[0] = arg;
            if (has_seen) seen[arg] = 1;
        }
    }
}
extern "C" __global__ void __launch_bounds__(THREADS) nucleus_top(ARGS) { top_score<false>(PASS); }
extern "C" __global__ void __launch_bounds__(THREADS) nucleus_greedy(ARGS) { top_score<true>(PASS); }

// This block's chunk of the vocabulary as a histogram of weight (and, counting, of tokens) by depth,
// added into mass_out / count_out: level 1 (bin < 0) by depth >> 11 over all live tokens, level 2 by
// depth & 2047 over the tokens of level-1 bin ``bin``.
__device__ void histogram(ARGS, int bin, bool counting, u64* mass_out, u32* count_out) {
    Workspace* ws = (Workspace*)wsv;
    __shared__ u64 mass[BINS];
    __shared__ u32 count[BINS];
    for (int j = threadIdx.x; j < BINS; j += THREADS) { mass[j] = 0; count[j] = 0; }
    __syncthreads();
    const float top = __ldcg(&ws->top), scale = (float)depth_scale, k2 = (float)log2e_over_t;
    const float penalty_f = (float)penalty;
    for (int r = 0; r < PER_THREAD; ++r) {
        const int i = blockIdx.x * CHUNK + r * THREADS + threadIdx.x;
        if (i >= vocab) break;
        const float s = score_at(scores, seen, has_seen, penalty_f, i);
        const int p = depth_of(s, top, scale);
        if (p < LIVE && (bin < 0 || (p >> BIN_BITS) == bin)) {
            const int j = bin < 0 ? p >> BIN_BITS : p & (BINS - 1);
            atomicAdd(&mass[j], weight_of(s, top, k2));
            if (counting) atomicAdd(&count[j], 1u);
        }
    }
    __syncthreads();
    for (int j = threadIdx.x; j < BINS; j += THREADS) {
        if (mass[j]) atomicAdd(&mass_out[j], mass[j]);
        if (count[j]) atomicAdd(&count_out[j], count[j]);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) nucleus_level1(ARGS) {
    Workspace* ws = (Workspace*)wsv;
    histogram(PASS, -1, top_k > 0, ws->mass1, ws->count1);
    if (!last_block(ws, 1)) return;
    u64 before[2], bin_mass[2];
    const u64 total = level1_prefix(ws, before, bin_mass);
    if (threadIdx.x == 0) {
        ws->total = total; ws->pk = LIVE - 1; ws->pp = LIVE - 1; ws->bin_k = -1; ws->bin_p = -1;
    }
    __syncthreads();
    bool by_rank = false;
    if (top_k > 0) {  // the bin holding the k-th token from the top, if that many are live
        const int b = 2 * threadIdx.x;
        const u64 c0 = ld_cg32(&ws->count1[b]), c1 = ld_cg32(&ws->count1[b + 1]);
        u64 live;
        const u64 above = block_scan(c0 + c1, &live);
        by_rank = live >= (u64)top_k;
        const u64 k = (u64)top_k;
        if (above < k && k <= above + c0) { ws->bin_k = b; ws->rank_k = k - above; }
        else if (above + c0 < k && k <= above + c0 + c1) { ws->bin_k = b + 1; ws->rank_k = k - above - c0; }
    }
    if (!by_rank) plan_top_p(ws, top_p, total, 0, before, bin_mass);  // else after level 2 of top-k
}

// mode 0: top-k's boundary bin by count (then plans top-p); mode 1: top-p's boundary bin by weight.
extern "C" __global__ void __launch_bounds__(THREADS) nucleus_level2(ARGS, int mode) {
    Workspace* ws = (Workspace*)wsv;
    const int bin = mode == 0 ? __ldcg(&ws->bin_k) : __ldcg(&ws->bin_p);
    if (bin < 0) return;  // the same in every block: no boundary to refine
    histogram(PASS, bin, mode == 0, ws->mass2, ws->count2);
    if (!last_block(ws, 2 + mode)) return;
    const int b = 2 * threadIdx.x;
    const u64 m0 = ld_cg(&ws->mass2[b]), m1 = ld_cg(&ws->mass2[b + 1]);
    u64 in_bin;
    const u64 mass_above = block_scan(m0 + m1, &in_bin);
    if (mode == 1) {
        const u64 keep = __ldcg(&ws->rest_p);
        if (mass_above < keep && keep <= mass_above + m0) ws->pp = bin * BINS + b;
        else if (mass_above + m0 < keep && keep <= mass_above + m0 + m1) ws->pp = bin * BINS + b + 1;
        return;
    }
    const u64 c0 = ld_cg32(&ws->count2[b]), c1 = ld_cg32(&ws->count2[b + 1]);
    ws->mass2[b] = ws->mass2[b + 1] = 0;  // level 2 of top-p, the next launch, adds into them again
    ws->count2[b] = ws->count2[b + 1] = 0;
    u64 counted;
    const u64 count_above = block_scan(c0 + c1, &counted);
    const u64 rank = __ldcg(&ws->rank_k);
    __shared__ u64 kept_in_bin;  // weight of bin's tokens top-k keeps
    if (count_above < rank && rank <= count_above + c0) { ws->pk = bin * BINS + b; kept_in_bin = mass_above + m0; }
    else if (count_above + c0 < rank && rank <= count_above + c0 + c1) {
        ws->pk = bin * BINS + b + 1; kept_in_bin = mass_above + m0 + m1;
    }
    __threadfence_block();
    u64 before[2], bin_mass[2];
    const u64 total = level1_prefix(ws, before, bin_mass);  // also syncs: kept_in_bin is set
    __shared__ u64 mass_above_bin;
    if (2 * threadIdx.x == bin) mass_above_bin = before[0];
    if (2 * threadIdx.x + 1 == bin) mass_above_bin = before[1];
    __syncthreads();
    plan_top_p(ws, top_p, total, total - mass_above_bin - kept_in_bin, before, bin_mass);
}

extern "C" __global__ void __launch_bounds__(THREADS) nucleus_draw(ARGS) {
    Workspace* ws = (Workspace*)wsv;
    const float top = __ldcg(&ws->top), scale = (float)depth_scale, k2 = (float)log2e_over_t;
    const float penalty_f = (float)penalty;
    const int kept = min(min(__ldcg(&ws->pk), __ldcg(&ws->pp)), p_min);
    u64 mine = 0;
    for (int r = 0; r < PER_THREAD; ++r) {
        const int i = blockIdx.x * CHUNK + r * THREADS + threadIdx.x;
        if (i >= vocab) break;
        const float s = score_at(scores, seen, has_seen, penalty_f, i);
        if (depth_of(s, top, scale) <= kept) mine += weight_of(s, top, k2);
    }
    u64 block_total;
    block_scan(mine, &block_total);
    if (threadIdx.x == 0) ws->block_mass[blockIdx.x] = block_total;
    if (!last_block(ws, 4)) return;
    // The token: blocks in order, then threads, then each thread's tokens in order.
    __shared__ int winner;
    __shared__ u64 rest;
    const u64 here = threadIdx.x < gridDim.x ? ld_cg(&ws->block_mass[threadIdx.x]) : 0ull;
    u64 total;
    const u64 above = block_scan(here, &total);
    const double u = (double)__ldcg(uniform);
    u64 target = (u64)(u * (double)total);
    if (target >= total) target = total ? total - 1 : 0ull;
    if (threadIdx.x == 0) winner = -1;
    __syncthreads();
    if (here && above <= target && target < above + here) { winner = threadIdx.x; rest = target - above; }
    __syncthreads();
    if (winner < 0) {  // nothing kept has weight (NaN or infinite scores): the top token
        if (threadIdx.x == 0) {
            out[0] = __ldcg(&ws->arg);
            if (has_seen) seen[out[0]] = 1;
        }
        return;
    }
    const int block = winner;
    const u64 target_in_block = rest;
    mine = 0;
    for (int r = 0; r < PER_THREAD; ++r) {
        const int i = block * CHUNK + r * THREADS + threadIdx.x;
        if (i >= vocab) break;
        const float s = score_at(scores, seen, has_seen, penalty_f, i);
        if (depth_of(s, top, scale) <= kept) mine += weight_of(s, top, k2);
    }
    const u64 before = block_scan(mine, &total);
    if (!(mine && before <= target_in_block && target_in_block < before + mine)) return;
    u64 left = target_in_block - before;
    for (int r = 0; r < PER_THREAD; ++r) {
        const int i = block * CHUNK + r * THREADS + threadIdx.x;
        if (i >= vocab) break;
        const float s = score_at(scores, seen, has_seen, penalty_f, i);
        const u64 w = depth_of(s, top, scale) <= kept ? weight_of(s, top, k2) : 0ull;
        if (left < w) {
            out[0] = i;
            if (has_seen) seen[i] = 1;
            return;
        }
        left -= w;
    }
}
"""


@cache
def _kernels(device_index: int) -> dict:
    """{kernel name: kernel} compiled for and loaded on one device (once per process)."""
    return nvrtc.load(device_index, SOURCE, "nucleus_kernel.cu", KERNEL_NAMES)


@cache
def _reason(device_index: int) -> str:
    return nvrtc.unavailable_reason(torch.device("cuda", device_index), _kernels, "CUDA sampler kernel")


def unavailable_reason(device: torch.device) -> str:
    """"" when the kernels can run on ``device``, else why not (one line): switched off
    (HEADROOM_SAMPLER_KERNEL=0), no CUDA, a GPU before Ampere, torch without its NVRTC loader, NVRTC
    missing, a compile error. Cached per device."""
    if not ENABLED:
        return "HEADROOM_SAMPLER_KERNEL=0"
    if device.type != "cuda":
        return "no CUDA device"
    return _reason(device.index if device.index is not None else torch.cuda.current_device())


def takes(scores: torch.Tensor) -> bool:
    """Whether the kernels take these scores: float32 on a CUDA device they build for, at most
    MAX_BLOCKS × CHUNK tokens."""
    return (scores.dtype == torch.float32 and scores.numel() <= MAX_BLOCKS * CHUNK
            and not unavailable_reason(scores.device))


def min_p_depth(min_p: float) -> int:
    """The deepest depth min-p keeps: weight ≥ min_p × the top token's ⇔ top − s ≤ −T·ln(min_p), in
    depth units (2^22 / (40 T) a unit of score); LIVE − 1 when min-p is off or keeps every live token."""
    if min_p <= 0:
        return LIVE - 1
    return max(0, min(LIVE - 1, math.floor(-math.log(min_p) * LIVE / LIVE_WIDTH)))


def run(scores: torch.Tensor, settings, uniform: torch.Tensor, seen: torch.Tensor | None = None,
        penalty: float = 1.0, out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(token (1,) long, workspace) for scores (V,) float32 on CUDA, settings.temperature > 0, and
    uniform a (1,) float32 u ∈ [0, 1) on the same device. seen: the turn's (vocab,) bool mask, read
    for the repetition ``penalty`` and the drawn token marked in it (in place). out: a contiguous (1,)
    long tensor on the device to write the token into (None: a new one). The workspace (int64)
    holds the kernels' thresholds (`bounds` reads them); nothing here syncs with the host."""
    flat, vocab, blocks, kernels = _prepared(scores)
    device = flat.device
    workspace = torch.zeros(WORKSPACE_BYTES // 8, dtype=torch.int64, device=device)
    out = _token_out(out, device)
    temperature = settings.temperature
    has_seen = seen is not None and penalty != 1.0
    mask = seen.view(torch.uint8) if seen is not None else out  # any pointer when there is none
    top_k = settings.top_k if 0 < settings.top_k < vocab else 0
    args = [flat, vocab, mask, int(has_seen), float(penalty), 1.0 / (temperature * math.log(2.0)),
            LIVE / (LIVE_WIDTH * temperature), top_k, float(settings.top_p), min_p_depth(settings.min_p),
            uniform, out, workspace]
    grid, block = (blocks, 1, 1), (THREADS, 1, 1)
    kernels["nucleus_top"](grid=grid, block=block, args=args)
    kernels["nucleus_level1"](grid=grid, block=block, args=args)
    if top_k:
        kernels["nucleus_level2"](grid=grid, block=block, args=[*args, 0])
    if settings.top_p < 1.0:
        kernels["nucleus_level2"](grid=grid, block=block, args=[*args, 1])
    kernels["nucleus_draw"](grid=grid, block=block, args=args)
    if seen is not None and not has_seen:  # the kernel marks it only when it reads it
        seen.index_fill_(0, out, True)
    return out, workspace


def greedy(scores: torch.Tensor, seen: torch.Tensor | None = None, penalty: float = 1.0,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """The greedy token, (1,) long on the scores' device: the first index of the highest score
    after the repetition ``penalty`` (`samplers.process` then argmax), in one launch of 1,024-thread
    blocks; seen (the turn's mask) gets it marked. torch.argmax over one row of 128,256 took 26.5 µs
    of GPU time on the H200 (results/sampler_gpu_h200.json). A NaN score is never the top (argmax
    would pick it); all NaN or no finite maximum gives token 0. out: as `run`'s. Raises ValueError as
    `run` does."""
    flat, vocab, blocks, kernels = _prepared(scores)
    workspace = torch.zeros(WORKSPACE_BYTES // 8, dtype=torch.int64, device=flat.device)
    out = _token_out(out, flat.device)
    has_seen = seen is not None and penalty != 1.0
    mask = seen.view(torch.uint8) if seen is not None else out
    unused = workspace  # the sampling arguments (temperature, filters, uniform) are not read
    kernels["nucleus_greedy"](grid=(blocks, 1, 1), block=(THREADS, 1, 1),
                              args=[flat, vocab, mask, int(has_seen), float(penalty), 1.0, 1.0, 0, 1.0, 0,
                                    unused, out, workspace])
    if seen is not None and not has_seen:
        seen.index_fill_(0, out, True)
    return out


def _token_out(out: torch.Tensor | None, device: torch.device) -> torch.Tensor:
    """Where a kernel writes its token: ``out`` when it is one contiguous int64 on ``device``, else a new
    (1,) long tensor (ValueError for an ``out`` of another shape, dtype or device)."""
    if out is None:
        return torch.empty(1, dtype=torch.long, device=device)
    if out.numel() != 1 or out.dtype != torch.long or out.device != device or not out.is_contiguous():
        raise ValueError(f"out must be one contiguous int64 on {device}, got {out.dtype} {tuple(out.shape)} "
                         f"on {out.device}")
    return out


def _prepared(scores: torch.Tensor):
    """(flat float32 scores, vocab, blocks, kernels) for a launch; ValueError for scores it does not take."""
    flat = scores.reshape(-1)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    vocab = flat.numel()
    blocks = -(-vocab // CHUNK)
    if blocks > MAX_BLOCKS or flat.dtype != torch.float32:
        raise ValueError(f"the sampler kernel takes float32 scores of up to {MAX_BLOCKS * CHUNK} tokens, "
                         f"got {flat.dtype} {vocab}")
    device = flat.device
    return flat, vocab, blocks, _kernels(device.index if device.index is not None else torch.cuda.current_device())


def bounds(workspace: torch.Tensor) -> tuple[float, int, int]:
    """(top score, top-k's deepest kept depth, top-p's) from a `run`'s workspace (syncs; for tests
    and benchmarks)."""
    top, _arg, pk, pp = struct.unpack_from("<fiii", workspace[:2].cpu().numpy().tobytes())
    return top, pk, pp


def depths(scores: torch.Tensor, top: float, temperature: float) -> torch.Tensor:
    """Each token's depth below ``top`` as the kernels compute it (float32 ``(top - s) * scale``,
    floored; LIVE for deeper, -inf or NaN): (V,) int64 on the scores' device. For tests."""
    scale = torch.tensor(LIVE / (LIVE_WIDTH * temperature), dtype=torch.float32, device=scores.device)
    d = (torch.tensor(top, dtype=torch.float32, device=scores.device) - scores.reshape(-1).float()) * scale
    live = d < LIVE
    return torch.where(live, d.nan_to_num(0.0).floor().long(), torch.full_like(d, LIVE, dtype=torch.long))
