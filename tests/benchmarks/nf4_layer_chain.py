"""The NF4 GEMVs of one decode step as the app launches them, layer after layer (issue 15).

nf4_mma_variants times one shape over rotating copies; the decode step is a chain: per layer of
Llama-3-8B q+k+v (one group launch), o, gate+up (one group launch), down, 32 layers of distinct
weights (3.5 GB, nothing reused from L2), 128 launches in one CUDA graph. Per launch the first
super-tile's load is exposed (~7,000 cycles against ~2,700 for a later one) and the tiles run in
uneven waves (nf4_mma.py's docstring). Remedies timed here, alone and together:

- ``persistent``: CHAIN_SOURCE's kernel takes row tiles b, b + G, ... (G blocks, at most one wave),
  the next tile's first super-tile loaded under the current one's last, over the tiles of a
  whole group;
- ``prefetch``: every launch first asks the L2 for the next launch's weights (codes and absmax
  codes; ``cp.async.bulk.prefetch.L2``, its share per block), so that launch starts on L2 hits
  while this one, bound by its integer pipe at ~1.4 TB/s, leaves HBM bandwidth unused. The
  prefetch is a hint: results are unchanged (``--prefetch``);
- layouts (LAYOUTS, patches of the kernels): ``tile`` tile-major codes (a warp's step one 2 KB
  run), ``inter`` warps interleaved over K, ``ring`` codes streamed through shared memory by the
  bulk-copy engine, several steps ahead of the one computed.

Each launch kind first picks its best launch shape in isolation (the 32 layers as rotating copies,
as the app's install does); the chains are then timed whole, µs per layer (the median of 20
replays). Each launch shape's outputs are compared with the first shipped shape's (relative error:
a different split of K adds in a different order).

    python3 -m tests.benchmarks.nf4_layer_chain --out $OUT [--layouts row,ring] [--prefetch]  # H200, ~1 min

Writes nf4_layer_chain_h200.json to --out.

Measured on the H200, 2026-12-03 (results/nf4_layer_chain_h200.json, three runs; µs a layer, the
chain timed whole, within 1 µs of the sum of its launches timed alone):

| chain (each launch kind at its best shape)          | µs a layer | ms a token |
|-----------------------------------------------------|------------|------------|
| shipped kernels, bitsandbytes' layout               | 82.1-82.5  | 2.63-2.64  |
| persistent (best of 2/4/8 warps, one round or even) | 83.8-83.9  | 2.68       |
| shipped + L2 prefetch of the next launch (all of it)| 91.5-91.7  | 2.93       |
| the same, evict_last                                | 93.8       | 3.00       |
| persistent + prefetch of the next first round       | 88.5       | 2.83       |
| interleaved warps                                   | 81.9       | 2.62       |
| tile-major codes                                    | 80.4       | 2.57       |
| tile-major codes + interleaved warps                | 79.5       | 2.55       |
| ring: codes through shared memory, bulk copies      | 101.1      | 3.24       |

Every layout and variant computes the same bits as the shipped kernel at the same launch shape
(``equal_to_row_layout``), except interleaving, which adds in another order (rel. 1e-4 at most).
The memory system is not what holds the kernel back: read_bandwidth.py reads this very access
pattern (16 rows x 128 B a warp a step, no arithmetic) at 3.8-4.25 TB/s, as fast as torch's
streaming sum (4.3), whether 1 or 8 steps are in flight a warp. Yet removing the exposed first loads
(persistence), the waves (persistent, one round), DRAM page misses (tile-major), or the latency a
warp waits on its next step (the ring keeps up to 15 steps in flight per warp; its LDS and mbarrier
waits cost more than they hide) leaves gate+up at 37.5-50 µs against 39.3, ~1.5 TB/s in every form,
where the loop's integer bound is ~20 µs. Prefetching into L2 costs more than it saves (the
prefetch competes with the running launch's reads). On the app path (decode_anatomy at 1k,
results/decode_anatomy_h200_layouts.json): interleaved warps 3.767 ms a step against 3.766, the ring
4.49. None adopted.
"""

import argparse
import json
import os
import re
import time

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_mma
from tests.benchmarks.nf4_gemv import graph_time_us, log, make_layer, rel

CHAIN_SOURCE = r"""
typedef unsigned long long u64;
// L2 prefetch of up to PF_RANGES byte ranges (ptr, bytes; 16-byte aligned, multiples of 16): this block's
// share of each, in pieces of 32 KB spread over warp 0's lanes. policy 1: evict_last, else evict_normal.
#define PF_RANGES 6
__device__ __forceinline__ void prefetch_share(const long long* pf, int ranges, int policy, int block, int blocks) {
    if (threadIdx.x >= 32 || ranges == 0) return;
    u64 pol;
    if (policy == 1) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(pol));
    for (int r = 0; r < ranges; ++r) {
        const char* base = (const char*)pf[2 * r];
        const long long bytes = pf[2 * r + 1];
        const long long share = ((bytes + blocks - 1) / blocks + 15) / 16 * 16;
        const long long start = share * block;
        const long long end = min(bytes, start + share);
        for (long long p = start + 32768LL * threadIdx.x; p < end; p += 32768LL * 32) {
            const u32 len = (u32)min(32768LL, end - p);
            asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;"
                         :: "l"(base + p), "r"(len), "l"(pol) : "memory");
        }
    }
}

// The shipped kernels with the prefetch first (blocks counted over the whole grid).
extern "C" __global__ void __launch_bounds__(256, 2) chain_gemv(ARGS, const long long* pf, int ranges, int policy) {
    prefetch_share(pf, ranges, policy, blockIdx.y * gridDim.x + blockIdx.x, gridDim.x * gridDim.y);
    gemv<true>(PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) chain_group(GROUP_ARGS, const long long* pf, int ranges,
                                                                int policy) {
    prefetch_share(pf, ranges, policy, blockIdx.y * gridDim.x + blockIdx.x, gridDim.x * gridDim.y);
    group<true>(GROUP_PASS);
}

// Persistent over the row tiles of up to three layers of one input (no split-K, no bias): block b
// takes tiles b, b + G, ...; warp w of a block super-tiles [w iters, (w + 1) iters); the next tile's
// first super-tile is loaded under this one's last. Layer i's rows land at y + n0 (+ n1).
struct SegOf { const uint4* w; const void* absmax; const float* absmax2; const float* code2; const float* offset;
               int n, local, first_row; };
#define SEG_ASSIGN(sg, tile) { \
    const int t0_ = (n0 + 15) / 16, t1_ = (n1 + 15) / 16; \
    const int s_ = (tile) < t0_ ? 0 : (tile) < t0_ + t1_ ? 1 : 2; \
    sg.w = s_ == 0 ? w0 : s_ == 1 ? w1 : w2; sg.absmax = s_ == 0 ? absmax0 : s_ == 1 ? absmax1 : absmax2; \
    sg.absmax2 = s_ == 0 ? absmax2_0 : s_ == 1 ? absmax2_1 : absmax2_2; \
    sg.code2 = s_ == 0 ? code2_0 : s_ == 1 ? code2_1 : code2_2; \
    sg.offset = s_ == 0 ? offset0 : s_ == 1 ? offset1 : offset2; \
    sg.n = s_ == 0 ? n0 : s_ == 1 ? n1 : n2; sg.local = (tile) - (s_ == 0 ? 0 : s_ == 1 ? t0_ : t0_ + t1_); \
    sg.first_row = s_ == 0 ? 0 : s_ == 1 ? n0 : n0 + n1; }
extern "C" __global__ void __launch_bounds__(256, 2) chain_persist(GROUP_ARGS, const long long* pf, int ranges,
                                                                  int policy) {
    prefetch_share(pf, ranges, policy, blockIdx.x, gridDim.x);
    __shared__ float red[8][16];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int warps = blockDim.x >> 5, st0 = warp * iters;
    const int tiles = (n0 + 15) / 16 + (n1 + 15) / 16 + (n2 + 15) / 16;
    const Consts kc{m16, m1, pick};
    int tile = blockIdx.x;
    if (tile >= tiles) return;
    float cb[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) cb[i] = __ldg(code + i);
    SegOf sg, sn;
    SEG_ASSIGN(sg, tile)
    Rows r = rows_at(sg.w, sg.absmax, sg.n, sg.local, k, g, c);
    Loads cur = load<true>(r, sg.absmax2, st0), nxt;
    for (;;) {
        const int next = tile + gridDim.x;
        const float off = __ldg(sg.offset);
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        for (int i = 0; i < iters; ++i) {
            if (i + 1 < iters) {
                nxt = load<true>(r, sg.absmax2, st0 + i + 1);
            } else if (next < tiles) {  // the next tile's first super-tile, under this one's last
                SEG_ASSIGN(sn, next)
                r = rows_at(sn.w, sn.absmax, sn.n, sn.local, k, g, c);
                nxt = load<true>(r, sn.absmax2, st0);
            }
            step<true>(d, cur, x + 32 * (st0 + i) + 8 * c, sg.code2, off, cb, kc);
            cur = nxt;
        }
        if (c == 0) { red[warp][g] = d[0]; red[warp][g + 8] = d[2]; }
        __syncthreads();
        if (warp == 0 && lane < 16 && sg.local * 16 + lane < sg.n) {
            float sum = red[0][lane];
            for (int i = 1; i < warps; ++i) sum += red[i][lane];
            y[sg.first_row + sg.local * 16 + lane] = bf16(sum);
        }
        __syncthreads();
        if (next >= tiles) break;
        tile = next;
        sg = sn;
    }
}
"""

RING_HELPERS = r"""// Ring (RING_PATCHES): each warp streams its codes through RING_SLOTS / warps slots of shared
// memory, 16 rows x 128 bytes a slot, filled by the bulk-copy engine (cp.async.bulk, 16 lanes a row each, one
// mbarrier a slot): up to depth - 1 super-tiles in flight under the one computed, at no integer-pipe
// cost per byte; the block scales come from SOURCE's scales_at, two steps ahead in registers. Rows
// are ROW_PITCH apart so that one LDS.128 phase (8 lanes) hits 32 distinct banks.
#define RING_SLOTS 16
#define ROW_PITCH 144
#define SLOT_BYTES (16 * ROW_PITCH)
typedef unsigned long long u64r;
__device__ __forceinline__ u32 smem_u32(const void* p) {
    u64r a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (u32)a;
}
__device__ __forceinline__ void mbar_init(u64r* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_expect(u64r* bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_done(u64r* bar, u32 parity) {
    u32 ok;
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok) : "r"(smem_u32(bar)), "r"(parity) : "memory");
    return ok != 0;
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, u32 bytes, u64r* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ uint4 lds128(const void* p) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(smem_u32(p)) : "memory");
    return v;
}
template <bool NESTED, int FOLD = FOLD_NONE>
__device__ __forceinline__ void gemv("""
RING_LOOP = r"""    Loads cur;
    {  // the ring (see RING_SLOTS)
        __shared__ __align__(128) unsigned char ring[RING_SLOTS * SLOT_BYTES];
        __shared__ __align__(8) u64r bars[RING_SLOTS];
        const int depth = RING_SLOTS / warps;
        unsigned char* mine = ring + warp * depth * SLOT_BYTES;
        u64r* bar = bars + warp * depth;
        if (lane < depth) mbar_init(bar + lane);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        __syncwarp();
        const unsigned char* row_src = (const unsigned char*)w + (long long)min(tile * 16 + lane, n - 1) * (k / 2);
        const int ahead = min(depth, iters);
        for (int s = 0; s < ahead; ++s) {
            if (lane == 0) mbar_expect(bar + s, 16 * 128);
            __syncwarp();
            if (lane < 16) bulk_copy(mine + s * SLOT_BYTES + lane * ROW_PITCH, row_src + (st0 + s) * 128, 128, bar + s);
        }
        Scales sc0 = scales_at<NESTED>(r, absmax2, st0), sc1, sc2;
        if (iters > 1) sc1 = scales_at<NESTED>(r, absmax2, st0 + 1);
        for (int i = 0; i < iters; ++i) {
            if (i + 2 < iters) sc2 = scales_at<NESTED>(r, absmax2, st0 + i + 2);
            const int slot = i % depth;
            while (!mbar_done(bar + slot, (i / depth) & 1)) {}
            const unsigned char* base = mine + slot * SLOT_BYTES + g * ROW_PITCH + c * 32;
            cur.a0 = lds128(base); cur.a1 = lds128(base + 16);
            cur.b0 = lds128(base + 8 * ROW_PITCH); cur.b1 = lds128(base + 8 * ROW_PITCH + 16);
            cur.qa = sc0.qa; cur.qb = sc0.qb; cur.sa = sc0.sa; cur.sb = sc0.sb;
            step<NESTED>(d, cur, x + 32 * (st0 + i) + 8 * c, code2, off, cb, kc);
            __syncwarp();  // every lane's reads of this slot are done: refill it
            if (i + depth < iters) {
                if (lane == 0) mbar_expect(bar + slot, 16 * 128);
                __syncwarp();
                if (lane < 16) bulk_copy(mine + slot * SLOT_BYTES + lane * ROW_PITCH, row_src + (st0 + i + depth) * 128,
                                         128, bar + slot);
            }
            sc0 = sc1; sc1 = sc2;
        }
    }
"""

# Tile-major codes (TILE_MAJOR_PATCHES): the 16 rows x 128 bytes a warp reads per super-tile stored
# as one contiguous 2 KB run (tile t, super-tile s at (t * K/256 + s) * 2 KB) instead of 16 runs of
# 128 bytes 2 KB (or 7 KB) apart: the same bytes permuted (tile_major), n a multiple of 16.
TILE_MAJOR_PATCHES = [
    ("r.wa = w + (long long)ra * (k / 32) + 2 * c; r.wb = w + (long long)rb * (k / 32) + 2 * c;",
     "r.wa = w + (long long)tile * (k / 256) * 128 + g * 8 + 2 * c; r.wb = r.wa + 64;"),
    ("const uint4* pa = r.wa + 8 * st;", "const uint4* pa = r.wa + 128 * st;"),
    ("const uint4* pb = r.wb + 8 * st;", "const uint4* pb = r.wb + 128 * st;"),
]


# Interleaved warps (INTERLEAVE_PATCHES): warp w of a block takes super-tiles w, w + warps, ... of its
# split instead of [w iters, (w + 1) iters): at any time the block reads warps x 128 adjacent bytes of
# each of its 16 rows, not 128 bytes in each of `warps` places.
INTERLEAVE_PATCHES = [
    ("const int st0 = (blockIdx.y * warps + warp) * iters;", "const int st0 = blockIdx.y * warps * iters + warp;"),
    ("nxt = load<NESTED>(r, absmax2, st0 + i + 1);", "nxt = load<NESTED>(r, absmax2, st0 + (i + 1) * warps);"),
    ("step<NESTED>(d, cur, x_s + 32 * (warp * iters + i) + 8 * c,",
     "step<NESTED>(d, cur, x_s + 32 * (i * warps + warp) + 8 * c,"),
    ("const int warps = blockDim.x >> 5, st0 = warp * iters;", "const int warps = blockDim.x >> 5, st0 = warp;"),
    ("nxt = load<true>(r, sg.absmax2, st0 + i + 1);", "nxt = load<true>(r, sg.absmax2, st0 + (i + 1) * warps);"),
    ("step<true>(d, cur, x + 32 * (st0 + i) + 8 * c,", "step<true>(d, cur, x + 32 * (st0 + i * warps) + 8 * c,"),
]
_GEMV_HEAD = "template <bool NESTED, int FOLD = FOLD_NONE>\n__device__ __forceinline__ void gemv("
_LOOP_END = "        cur = nxt;\n    }\n"
_GEMV_LOOP = nf4_mma.SOURCE[nf4_mma.SOURCE.index("    Loads cur = load<NESTED>(r, absmax2, st0), nxt;"):
                            nf4_mma.SOURCE.index(_LOOP_END) + len(_LOOP_END)]  # gemv's loop, inputs staged
RING_PATCHES = [(_GEMV_HEAD, RING_HELPERS), (_GEMV_LOOP, RING_LOOP)]
LAYOUTS = {"row": [], "ring": RING_PATCHES, "tile": TILE_MAJOR_PATCHES, "inter": INTERLEAVE_PATCHES,
           "tile_inter": TILE_MAJOR_PATCHES + INTERLEAVE_PATCHES}  # name: patches (tile*: tile-major codes)


def tile_major(packed: torch.Tensor, n: int, kd: int) -> torch.Tensor:
    """bitsandbytes' row-major codes (n * kd / 2,) uint8 → tile-major (see TILE_MAJOR_PATCHES)."""
    return packed.view(n // 16, 16, kd // 256, 128).permute(0, 2, 1, 3).contiguous().view(-1)


K_IN = {"qkv": 4096, "o": 4096, "gateup": 4096, "down": 14336}
KINDS = {"qkv": (4096, 1024, 1024), "o": (4096,), "gateup": (14336, 14336), "down": (4096,)}  # rows per layer
LAYERS = 32


def chain_source(patches=()) -> str:
    source = nf4_mma.SOURCE + CHAIN_SOURCE
    for old, new in patches:
        assert old in source, old
        source = source.replace(old, new)
    return source


def compile_chain(patches=()):
    from torch.cuda._utils import _cuda_load_module

    major, minor = torch.cuda.get_device_capability()
    cubin, text = nf4_mma.compile_cubin(f"{major}{minor}", options=("--ptxas-options=-v",),
                                        source=chain_source(patches))
    names = ["chain_gemv", "chain_group", "chain_persist"]
    regs = dict(zip(re.findall(r"Compiling entry function '(\w+)'", text), re.findall(r"Used (\d+) registers", text),
                    strict=False))
    spills = re.findall(r"(\d+) bytes spill stores", text)
    return _cuda_load_module(cubin, names), {"registers": regs, "spill_stores": spills}


class Chain:
    """32 layers of distinct random NF4 weights, buffers for every launch, and launchers."""

    def __init__(self, kernels: dict):
        self.kernels = kernels  # layout: loaded module
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.t = [{kind: [k.tensors_of(make_layer(n, K_IN[kind], seed=1000 * li + 10 * ki + j))
                          for j, n in enumerate(ns)] for ki, (kind, ns) in enumerate(KINDS.items())}
                  for li in range(LAYERS)]
        self.x = {kd: torch.randn(kd, device="cuda").to(torch.bfloat16) for kd in (4096, 14336)}
        self.y = [{kind: torch.empty(sum(ns), dtype=torch.bfloat16, device="cuda") for kind, ns in KINDS.items()}
                  for _ in range(LAYERS)]
        self.counters = [{kind: torch.zeros(sum(-(-n // 16) for n in ns), dtype=torch.int32, device="cuda")
                          for kind, ns in KINDS.items()} for _ in range(LAYERS)]
        self.part = torch.empty(64 * 28672, dtype=torch.float32, device="cuda")
        self.no_pf = torch.zeros(2 * 6, dtype=torch.int64, device="cuda")
        self.code = self.t[0]["o"][0].code
        self.packed_tm = [{kind: [tile_major(t.packed, t.n, t.k) for t in ts] for kind, ts in lay.items()}
                          for lay in self.t]
        assert all(t.nested for lay in self.t for ts in lay.values() for t in ts)

    def segments(self, li: int, kind: str, tm: bool = False) -> list:
        ts = self.t[li][kind]
        segs = []
        for i in range(3):
            t = ts[i] if i < len(ts) else ts[0]
            packed = self.packed_tm[li][kind][i if i < len(ts) else 0] if tm else t.packed
            segs += [packed, t.absmax, t.absmax2, t.code2, t.offset, self.y[li][kind], t.n if i < len(ts) else 0]
        return segs

    def prefetch_ranges(self, li: int, kind: str, rows: int | None, tm: bool = False) -> torch.Tensor:
        """(12,) int64 device: (ptr, bytes) of the codes and absmax codes of layer li's `kind`, its first
        ``rows`` stacked rows (None: all), for a launch before it."""
        out, left = [], rows if rows is not None else 1 << 40
        for i, t in enumerate(self.t[li][kind]):
            r = min(t.n, left)
            left -= r
            if r <= 0:
                break
            for ten, per_row in ((self.packed_tm[li][kind][i] if tm else t.packed, t.k // 2), (t.absmax, t.k // 64)):
                nbytes = r * per_row // 16 * 16
                if ten.data_ptr() % 16 == 0 and nbytes:
                    out += [ten.data_ptr(), nbytes]
        out += [0] * (12 - len(out))
        return torch.tensor(out[:12], dtype=torch.int64, device="cuda")

    def launch(self, li: int, kind: str, plan: tuple, pf: torch.Tensor | None = None, policy: int = 0,
               layout: str = "row"):
        """plan: ("shipped", warps, split) or ("persist", warps, blocks); layout: a key of LAYOUTS."""
        kern = self.kernels[layout]
        tm = layout.startswith("tile")
        ranges = 0 if pf is None else 6  # empty ranges (bytes 0) issue nothing
        pf = self.no_pf if pf is None else pf
        kd, ns = K_IN[kind], KINDS[kind]
        steps = kd // nf4_mma.SUPER_TILE
        mode, warps, third = plan
        x, y = self.x[kd], self.y[li][kind]
        if mode == "persist":
            kern["chain_persist"](grid=(third, 1, 1), block=(32 * warps, 1, 1),
                                  args=[x, *self.segments(li, kind, tm), self.code, self.part, self.counters[li][kind],
                                        y, kd, steps // warps, 0, *nf4_mma.OPAQUE, pf, ranges, policy])
        elif len(ns) > 1:
            tiles = sum(-(-n // 16) for n in ns)
            kern["chain_group"](grid=(tiles, third, 1), block=(32 * warps, 1, 1),
                                args=[x, *self.segments(li, kind, tm), self.code, self.part, self.counters[li][kind],
                                      y, kd, steps // (warps * third), 0, *nf4_mma.OPAQUE, pf, ranges, policy],
                                shared_mem=2 * kd // third)  # the block's inputs (SOURCE's gemv stages them)
        else:
            t = self.t[li][kind][0]
            packed = self.packed_tm[li][kind][0] if tm else t.packed
            kern["chain_gemv"](grid=(-(-t.n // 16), third, 1), block=(32 * warps, 1, 1),
                               args=[x, packed, t.absmax, t.absmax2, t.code2, t.offset, t.code, y, self.part,
                                     self.counters[li][kind], y, t.n, kd, steps // (warps * third), 0,
                                     *nf4_mma.OPAQUE, pf, ranges, policy], shared_mem=2 * kd // third)

    def candidates(self, kind: str) -> list[tuple]:
        ns, kd = KINDS[kind], K_IN[kind]
        n_total, tiles, steps = sum(ns), sum(-(-n // 16) for n in ns), kd // nf4_mma.SUPER_TILE
        shipped = [("shipped", w, s) for w, s in nf4_mma.launch_shapes(n_total, kd)
                   if w >= 2 and 4 * self.sms <= tiles * w * s <= 64 * self.sms]
        persist = []
        for w in (2, 4, 8):
            if steps % w:
                continue
            resident = self.sms * 16 // w
            rounds = -(-tiles // resident)
            persist += sorted({("persist", w, min(tiles, resident)), ("persist", w, -(-tiles // rounds))})
        return shipped + persist


def isolated_us(chain: Chain, kind: str, plan: tuple, layout: str) -> float:
    return graph_time_us([lambda li=li: chain.launch(li, kind, plan, layout=layout) for li in range(LAYERS)])


def chain_us(chain: Chain, plans: dict, pf_rows: str = "", policy: int = 0, layout: str = "row") -> float:
    """µs per layer of the 32-layer chain (q+k+v, o, gate+up, down each layer) under plans; pf_rows
    "": no prefetch, "all": each launch prefetches the next launch's weights, "round": the rows
    the next launch's first round covers (persistent plans; all rows otherwise)."""
    order = [(li, kind) for li in range(LAYERS) for kind in KINDS]
    pfs = []
    for i in range(len(order)):
        if not pf_rows:
            pfs.append(None)
            continue
        li, kind = order[(i + 1) % len(order)]
        mode, warps, third = plans[kind]
        rows = 16 * third if (pf_rows == "round" and mode == "persist") else None
        pfs.append(chain.prefetch_ranges(li, kind, rows, layout.startswith("tile")))
    calls = [lambda li=li, kind=kind, pf=pf: chain.launch(li, kind, plans[kind], pf, policy, layout)
             for (li, kind), pf in zip(order, pfs, strict=True)]
    return graph_time_us(calls) * len(KINDS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="keys of LAYOUTS, comma-separated")
    ap.add_argument("--prefetch", action="store_true", help="also the chains with an L2 prefetch of the next launch")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    R: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
               "command": "python3 -m tests.benchmarks.nf4_layer_chain --out $OUT " + " ".join(argv or [])}
    out_path = os.path.join(args.out, "nf4_layer_chain_h200.json")

    def save():
        os.makedirs(args.out, exist_ok=True)
        with open(out_path, "w") as f:
            json.dump(R, f, indent=1)

    layouts = [lay for lay in args.layouts.split(",") if lay]
    kernels, R["compile"] = {}, {}
    for layout in layouts:
        kernels[layout], R["compile"][layout] = compile_chain(LAYOUTS[layout])
    log("compile", R["compile"])
    chain = Chain(kernels)
    log(f"weights ready {time.perf_counter() - t0:.0f} s")
    R["kinds"], R["plans"], R["chains_us_per_layer"] = {}, {}, {}
    for layout in layouts:
        best: dict = {"shipped": {}, "persist": {}}
        for kind in KINDS:
            rows = {}
            ref = None
            for plan in chain.candidates(kind):
                chain.launch(0, kind, plan)  # bitsandbytes' layout: the reference bits of this plan
                torch.cuda.synchronize()
                y_row = chain.y[0][kind].clone()
                chain.launch(0, kind, plan, layout=layout)
                torch.cuda.synchronize()
                y = chain.y[0][kind].clone()
                ref = y if ref is None else ref
                us = isolated_us(chain, kind, plan, layout)
                rows[" ".join(map(str, plan))] = {"us": us, "rel_vs_first_plan": rel(y, ref),
                                                  "rel_vs_row_layout": rel(y, y_row),
                                                  "equal_to_row_layout": bool(torch.equal(y, y_row))}
                if us < best[plan[0]].get(kind, (None, 1e9))[1]:
                    best[plan[0]][kind] = (plan, us)
            R["kinds"][f"{layout}/{kind}"] = rows
            log(layout, kind, {p: round(r["us"], 2) for p, r in rows.items()},
                "max rel", max(r["rel_vs_first_plan"] for r in rows.values()),
                "bits equal to row" if all(r["equal_to_row_layout"] for r in rows.values()) else "bits differ from row",
                "max rel vs row", max(r["rel_vs_row_layout"] for r in rows.values()))
            save()
        ship = {kind: best["shipped"][kind][0] for kind in KINDS}
        pers = {kind: best["persist"][kind][0] for kind in KINDS}
        mixed = {kind: min(best["shipped"][kind], best["persist"][kind], key=lambda b: b[1])[0] for kind in KINDS}
        R["plans"][layout] = {"shipped": ship, "persist": pers, "mixed": mixed}
        chains = [("shipped", ship, "", 0), ("persist", pers, "", 0), ("mixed", mixed, "", 0)]
        if args.prefetch:
            chains += [("mixed+pf_all", mixed, "all", 0), ("persist+pf_round", pers, "round", 0)]
        for name, plans, pf, pol in chains:
            key = f"{layout}/{name}"
            try:
                us = chain_us(chain, plans, pf, pol, layout)
            except Exception as exc:  # noqa: BLE001 - one chain failing must not lose the others
                R["chains_us_per_layer"][key] = f"{type(exc).__name__}: {str(exc)[:300]}"
                log(key, "failed", exc)
                continue
            R["chains_us_per_layer"][key] = us
            log(f"{key:28s} {us:8.2f} µs a layer  {32 * us / 1e3:.3f} ms a token")
            save()
    R["seconds"] = time.perf_counter() - t0
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
