"""The decode step's residual add and RMSNorm as one hand-written kernel under programmatic dependent
launch, against Inductor's fused kernel, each between the NF4 GEMVs as the step runs them (issue 15;
prepared 2026-12-04, not measured yet).

On the H200's critical path (results/decode_anatomy_h200_step_buffers.json) a layer's two norms add
~2.1 µs each to the 8B step, 133 µs of ~3,010: Inductor's kernel (one block, launched early by PDL)
waits for the GEMV before it ahead of every load, its norm weight's included ("wait_first",
compiled_decode.INDUCTOR_PDL), then reads, reduces and writes. ``NORM_SOURCE`` loads the norm weight
before ``griddepcontrol.wait``, reads residual and delta once (16 bytes a thread), reduces in
registers, a warp shuffle and one shared-memory round, lets the next launch start
(``griddepcontrol.launch_dependents``) and writes hidden = bf16(residual + delta) and normed =
bf16(weight * bf16(hidden * rsqrt(mean(hidden²) + eps))), the Llama RMSNorm's roundings.

Timed: LAYERS links of [norm → the q/k/v group GEMV of its output (nf4_mma.launch_group, 6144 x 4096,
rotating over distinct weights)], the GEMV's first 4096 outputs the next link's delta, in one CUDA
graph, µs a link (median of 20 replays), with the norm as

- ``inductor``: compiled_decode._inductor of `reference_norm` (the app's options: combo kernels, PDL
  with its waits first);
- ``nvrtc``: NORM_SOURCE through nvrtc.launch (PDL where the device has it);
- ``none``: the GEMV alone (the norm's output left as it was), a floor.

    python3 -m tests.benchmarks.add_rms_norm --out $OUT      # H200, ~1 min (Inductor's compile)

Writes add_rms_norm_h200.json to --out: µs a link for each, and the kernel's outputs against
`reference_norm` (hidden bit for bit; normed: largest difference in bf16 steps).
"""

import argparse
import json
import os
import time

import torch

import app  # noqa: F401  (offline, allocator settings before torch)
from app.engine.local import compiled_decode, nf4_mma, nvrtc
from app.engine.local import nf4_gemv as k
from tests.benchmarks.nf4_gemv import graph_time_us, make_layer

HIDDEN, QKV = 4096, (4096, 1024, 1024)
LAYERS, WEIGHT_COPIES = 32, 8
THREADS = 512  # HIDDEN / 8: one 16-byte piece of each input a thread

NORM_SOURCE = r"""
typedef unsigned int u32;
typedef unsigned short u16;
__device__ __forceinline__ float bf(u32 word, int high) {  // one bf16 of a packed pair, as float
    return __uint_as_float(high ? word & 0xffff0000u : word << 16);
}
__device__ __forceinline__ u16 rn(float v) {
    u16 d;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(d) : "f"(v));
    return d;
}
__device__ __forceinline__ float rounded(float v) { return __uint_as_float((u32)rn(v) << 16); }

// One block; thread t owns elements [8t, 8t + 8) of n (n = 8 x threads). residual, delta, weight: n bf16;
// hidden = bf16(residual + delta), normed = bf16(weight * bf16(hidden * rsqrt(mean(hidden^2) + eps))).
extern "C" __global__ void __launch_bounds__(1024) add_rms_norm(
        const uint4* residual, const uint4* delta, const uint4* weight, uint4* hidden, uint4* normed,
        int n, double eps) {
    __shared__ float partial[32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const uint4 w = weight[t];  // constant: read before the wait, under the kernel before
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const uint4 r = residual[t], d = delta[t];
    const u32 rw[4] = {r.x, r.y, r.z, r.w}, dw[4] = {d.x, d.y, d.z, d.w}, ww[4] = {w.x, w.y, w.z, w.w};
    float h[8], ssq = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        h[i] = rounded(bf(rw[i / 2], i & 1) + bf(dw[i / 2], i & 1));
        ssq = fmaf(h[i], h[i], ssq);
    }
#pragma unroll
    for (int s = 16; s; s >>= 1) ssq += __shfl_xor_sync(0xffffffffu, ssq, s);
    if (lane == 0) partial[warp] = ssq;
    __syncthreads();
    float total = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.f;
#pragma unroll
    for (int s = 16; s; s >>= 1) total += __shfl_xor_sync(0xffffffffu, total, s);
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const float inv = rsqrtf(total / (float)n + (float)eps);
    u32 hw[4], nw[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        hw[i] = (u32)rn(h[2 * i]) | ((u32)rn(h[2 * i + 1]) << 16);
        const float a = rounded(bf(ww[i], 0) * rounded(h[2 * i] * inv));
        const float b = rounded(bf(ww[i], 1) * rounded(h[2 * i + 1] * inv));
        nw[i] = (u32)rn(a) | ((u32)rn(b) << 16);
    }
    hidden[t] = make_uint4(hw[0], hw[1], hw[2], hw[3]);
    normed[t] = make_uint4(nw[0], nw[1], nw[2], nw[3]);
}
"""


def reference_norm(residual: torch.Tensor, delta: torch.Tensor, weight: torch.Tensor, eps: float):
    """(hidden, normed): the decoder layer's residual add and Llama's RMSNorm, in torch."""
    hidden = residual + delta
    h = hidden.float()
    normed = weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(hidden.dtype)
    return hidden, normed


def nvrtc_norm(kernel, residual, delta, weight, eps, hidden, normed) -> None:
    nvrtc.launch(kernel, (1, 1, 1), (residual.numel() // 8, 1, 1),
                 [residual, delta, weight, hidden, normed, residual.numel(), float(eps)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    eps = 1e-5
    kernel = nvrtc.load(torch.cuda.current_device(), NORM_SOURCE, "add_rms_norm.cu", ["add_rms_norm"])["add_rms_norm"]
    weight = (1 + 0.1 * torch.randn(HIDDEN, device="cuda")).to(torch.bfloat16)
    residual = torch.randn(HIDDEN, device="cuda").to(torch.bfloat16)
    delta = torch.randn(HIDDEN, device="cuda").to(torch.bfloat16)
    want_hidden, want_normed = reference_norm(residual, delta, weight, eps)
    hidden, normed = torch.empty_like(residual), torch.empty_like(residual)
    nvrtc_norm(kernel, residual, delta, weight, eps, hidden, normed)
    steps = (normed.view(torch.int16).int() - want_normed.view(torch.int16).int()).abs().max().item()
    check = {"hidden_bitwise": bool(torch.equal(hidden, want_hidden)), "normed_max_bf16_steps": int(steps)}
    print("check", check)

    groups = [[k.tensors_of(make_layer(n, HIDDEN, seed=100 * c + i)) for i, n in enumerate(QKV)]
              for c in range(WEIGHT_COPIES)]
    counters = torch.zeros(sum(-(-n // nf4_mma.ROWS_PER_WARP) for n in QKV), dtype=torch.int32, device="cuda")
    inductor = compiled_decode._inductor(reference_norm)
    state = {"residual": residual.clone(), "delta": delta.clone()}
    out = {"hidden": torch.empty_like(residual), "normed": torch.empty_like(residual)}

    def link(layer: int, how: str) -> None:
        if how == "inductor":
            out["hidden"], out["normed"] = inductor(state["residual"], state["delta"], weight, eps)
        elif how == "nvrtc":
            nvrtc_norm(kernel, state["residual"], state["delta"], weight, eps, out["hidden"], out["normed"])
        y = nf4_mma.launch_group(out["normed"], groups[layer % WEIGHT_COPIES], [], counters)
        if how != "none":
            state["residual"], state["delta"] = out["hidden"], y[:HIDDEN]

    for how in ("inductor", "nvrtc", "none"):  # Inductor compiles (and autotunes) outside the capture
        link(0, how)
    torch.cuda.synchronize()
    rows = {how: graph_time_us([lambda i=i, how=how: link(i, how) for i in range(LAYERS)])
            for how in ("inductor", "nvrtc", "none")}
    print(f"{'norm':<10} {'µs a link':>10} {'norm adds':>10}")
    for how, us in rows.items():
        print(f"{how:<10} {us:10.2f} {us - rows['none']:10.2f}")
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
              "torch": torch.__version__, "command": "python3 -m tests.benchmarks.add_rms_norm --out $OUT",
              "pdl": nvrtc.PDL, "layers": LAYERS, "check": check, "us_per_link": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "add_rms_norm_h200.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
