"""How fast the H200 reads HBM in the NF4 GEMV's access pattern, against a plain streaming read (issue 15).

The NF4 GEMV runs at ~1.5 TB/s of weight bytes (results/nf4_layer_chain_h200.json) whatever its launch
shape, persistence, L2 prefetch or code layout; with its lookups removed it still takes ~80 % of its
time (nf4_mma_variants' diag_nolookup). This probe separates the memory system from the kernel:

- ``torch_sum``: torch's reduction over a 4 GiB float32 tensor (a streaming read);
- ``pattern``: 16 warps an SM, each lane reading 2 rows x 32 bytes per step exactly as nf4_mma's
  lanes do (warp = 16 rows x 128 bytes a step, rows K/2 bytes apart, K = 4096), the codes XORed
  and nothing else, with DEPTH steps of loads in flight per warp (1, 2, 4, 8);
- ``contiguous``: the same loads with each warp's 2 KB a step contiguous (tile-major codes).

Bytes read / time, median of 10, over 1 GiB of codes (nothing served from L2).

    python3 -m tests.benchmarks.read_bandwidth --out $OUT      # H200, ~20 s

Writes read_bandwidth_h200.json to --out.

Measured on the H200, 2026-12-03 (results/read_bandwidth_h200.json): torch's sum 4.32 TB/s, copy
4.13 (read + write); the GEMV's pattern 3.80-4.25 TB/s and contiguous 3.76-4.24 over 2-8 warps a
block and 1-8 steps in flight, with no trend in either (the kernels use 76-128 registers, so more
than 16 warps an SM may run). The layout and the depth of the loads do not limit the NF4 GEMV's
~1.5 TB/s.
"""

import argparse
import json
import os
import time

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import nf4_mma
from tests.benchmarks.nf4_gemv import log

SOURCE = r"""
typedef unsigned int u32;
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
// Grid: row tiles of 16 rows; warps of a block split the steps of a row ([w iters, (w + 1) iters)).
// row_stride, step_stride in uint4 units: 128 (2 KB rows) and 8 (128 B) for bitsandbytes' layout;
// 8 and 128 for tile-major (a warp's 16 x 128 B contiguous).
template <int DEPTH>
__device__ __forceinline__ void walk(const uint4* w, long long tile_stride, int row_stride, int step_stride,
                                     int iters, u32* out) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const uint4* pa = w + blockIdx.x * tile_stride + g * row_stride + 2 * c + (long long)warp * iters * step_stride;
    const uint4* pb = pa + 8 * row_stride;
    u32 acc = 0;
    for (int i = 0; i < iters; i += DEPTH) {
        uint4 v[DEPTH][4];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            const long long o = (long long)(i + d) * step_stride;
            v[d][0] = ld_stream(pa + o); v[d][1] = ld_stream(pa + o + 1);
            v[d][2] = ld_stream(pb + o); v[d][3] = ld_stream(pb + o + 1);
        }
#pragma unroll
        for (int d = 0; d < DEPTH; ++d)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc ^= v[d][j].x ^ v[d][j].y ^ v[d][j].z ^ v[d][j].w;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}
#define ENTRY(D) extern "C" __global__ void __launch_bounds__(256, 2) walk##D(const uint4* w, long long tile_stride, \
    int row_stride, int step_stride, int iters, u32* out) { \
    walk<D>(w, tile_stride, row_stride, step_stride, iters, out); }
ENTRY(1)
ENTRY(2)
ENTRY(4)
ENTRY(8)
"""


def timed_ms(fn, reps=10) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def torch_streaming() -> dict:
    """TB/s of torch's sum over 4 GiB of float32 (read) and of a 4 GiB copy (read + write counted)."""
    big = torch.ones(2**30, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(big)
    return {"torch_sum_tb_s": 4 * 2**30 / timed_ms(big.sum) / 1e9,
            "torch_copy_read_plus_write_tb_s": 2 * 4 * 2**30 / timed_ms(lambda: dst.copy_(big)) / 1e9}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "tests/benchmarks/results"))
    args = ap.parse_args(argv)
    from torch.cuda._utils import _cuda_load_module

    R: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
               "command": "python3 -m tests.benchmarks.read_bandwidth --out $OUT"}
    R.update(torch_streaming())
    log(R)
    major, minor = torch.cuda.get_device_capability()
    cubin, _ = nf4_mma.compile_cubin(f"{major}{minor}", source=SOURCE)
    kern = _cuda_load_module(cubin, [f"walk{d}" for d in (1, 2, 4, 8)])
    k = 4096
    n = 2**31 // (k // 2)  # 1 GiB of codes: 524288 rows of 2 KB
    codes = torch.randint(0, 255, (n * k // 2,), dtype=torch.uint8, device="cuda")
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    steps = k // 256
    R["pattern"], R["contiguous"] = {}, {}
    for warps in (2, 4, 8):
        iters = steps // warps
        for depth in (1, 2, 4, 8):
            if iters % depth:
                continue
            for name, row_stride, step_stride in (("pattern", k // 32, 8), ("contiguous", 8, 128)):
                def go(kn=kern[f"walk{depth}"], warps=warps, iters=iters, rs=row_stride, ss=step_stride):
                    kn(grid=(n // 16, 1, 1), block=(32 * warps, 1, 1),
                       args=[codes, 16 * k // 32, rs, ss, iters, out])  # 16 rows of uint4 a tile
                tb = n * k / 2 / timed_ms(go) / 1e9
                R[name][f"warps{warps}_depth{depth}"] = tb
                log(name, "warps", warps, "depth", depth, f"{tb:.2f} TB/s")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "read_bandwidth_h200.json"), "w") as f:
        json.dump(R, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
