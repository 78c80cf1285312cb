"""A decoder layer's residual add and RMSNorm as one CUDA launch under programmatic dependent launch
(issue 15), on by default in the compiled decode step (`serves`).

Why: on the H200's critical path (tests/benchmarks/results/decode_anatomy_h200_step_buffers.json) a
layer's two norms, Inductor's fused kernels, add ~2.1 µs each to the 8B decode step, 133 µs of ~3,010.
Inductor's kernel waits for the GEMV before it ahead of every load, the norm weight's included
(compiled_decode.INDUCTOR_PDL "wait_first"). Here the weight is read before ``griddepcontrol.wait``,
residual and delta once (16 bytes a thread), the sum of squares reduced in registers, one warp
shuffle and one shared-memory round, and the next launch (the NF4 GEMV, whose weights need nothing of
this) is let go (``griddepcontrol.launch_dependents``) before the writes.
tests/benchmarks/add_rms_norm.py times the two between q/k/v GEMVs as the step runs them.

Math (transformers' LlamaRMSNorm, also Mistral's, Qwen2's and Qwen3's; Zhang & Sennrich 2019):
hidden = residual + delta (rounded to the compute dtype), normed = weight * bf16(hidden * rsqrt(
mean(hidden²) + eps)) with the mean and the scaling in float32. `reference` is that in torch, bit for
bit the module's own forward of ``residual + delta``; the kernel may differ from it where its sum of
squares adds in another order or its rsqrt rounds otherwise: a float32 step of the scale can flip
bf16(hidden * scale) by one step, which the weight's product can make two steps of the output.
"""

from __future__ import annotations

import logging
import os
from functools import cache

import torch

from app.engine.local import nvrtc

log = logging.getLogger(__name__)

FUSED_NORM = os.environ.get("HEADROOM_FUSED_NORM", "1") != "0"
"""The compiled decode step's layers run their residual add and RMSNorm as ``headroom::add_rms_norm``
(compiled_decode._add_norm) where the kernel `serves` them; HEADROOM_FUSED_NORM=0 keeps Inductor's fused
kernel. H200, Llama-3-8B NF4 on the app path, two alternating rounds beside llama.cpp in one call
(tests/benchmarks/results/decode_anatomy_h200_fused_norm.json): the step 2.977 against 3.017 ms at 1k
and 3.048 against 3.091 at 4k, 337.4 / 324.7 against 333.0 / 319.7 tok/s; the 65 norms of a step add
114.7 µs to its critical path (2.24 µs each) against ~132 µs before."""

RMS_NORMS = frozenset({"LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm"})
"""Norm classes whose forward is `reference`'s (weight times the normalized input, no offset)."""
MAX_THREADS = 1024  # a block: one row of hidden_size / 8 threads
SELF_CHECK_STEPS = 2  # bf16 steps the kernel's normed output may differ from `reference`'s (below)

SOURCE = r"""
// Residual add and RMSNorm, one row a block (add_rms_norm.py's docstring). No headers.
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

// Block b, thread t: elements [8t, 8t + 8) of row b (n = 8 x blockDim.x). residual, delta: rows of n bf16;
// weight: n bf16. hidden = bf16(residual + delta); normed = bf16(weight * bf16(hidden * rsqrt(mean(hidden^2) + eps))).
extern "C" __global__ void __launch_bounds__(1024) add_rms_norm(
        const uint4* residual, const uint4* delta, const uint4* weight, uint4* hidden, uint4* normed,
        int n, double eps) {
    __shared__ float partial[32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const long long at = (long long)blockIdx.x * (n / 8) + t;
    const uint4 w = weight[t];  // constant: read before the wait, under the kernel before
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const uint4 r = residual[at], d = delta[at];
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
    hidden[at] = make_uint4(hw[0], hw[1], hw[2], hw[3]);
    normed[at] = make_uint4(nw[0], nw[1], nw[2], nw[3]);
}
"""


def takes(norm) -> bool:
    """``norm`` is an RMSNorm whose forward is `reference`'s (a class of RMS_NORMS with a 1-D weight
    and ``variance_epsilon``)."""
    weight = getattr(norm, "weight", None)
    return (type(norm).__name__ in RMS_NORMS and isinstance(weight, torch.Tensor) and weight.dim() == 1
            and isinstance(getattr(norm, "variance_epsilon", None), float))


def serves(norm) -> bool:
    """The compiled step routes ``norm`` through ``headroom::add_rms_norm``: FUSED_NORM is on, it `takes`
    the norm, the kernel has not failed here and takes the weight (bf16 on CUDA, a hidden size of
    `shape_reason`). Elsewhere (fp16 GPUs, the CPU) Inductor's fused kernel is faster than the op's
    torch path, `reference`, a chain of small kernels."""
    if not (FUSED_NORM and takes(norm)) or failure:
        return False
    weight, n = norm.weight, norm.weight.numel()
    return weight.is_cuda and weight.dtype == torch.bfloat16 and n % 256 == 0 and n // 8 <= MAX_THREADS


def check(norm) -> None:
    """Build and check the kernel on ``norm``'s device now, in eager code before the compiled step is
    traced, so that `serves` knows of a failure before Dynamo puts the op into the graph (inside it the
    op would answer with `reference`, the slow path). Nothing when it does not apply, once checked, or
    while a CUDA graph is captured (`kernel_ready`)."""
    if FUSED_NORM and takes(norm) and norm.weight.is_cuda:
        weight = norm.weight.detach()
        kernel_ready(weight, weight, weight)


def reference(residual: torch.Tensor, delta: torch.Tensor, weight: torch.Tensor, eps: float
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """(hidden, normed), both residual's shape and dtype: hidden = residual + delta, normed = the
    RMSNorm of hidden over its last dimension (transformers' LlamaRMSNorm.forward, bit for bit)."""
    hidden = residual + delta
    h = hidden.float()
    normed = weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(hidden.dtype)
    return hidden, normed


@torch.library.custom_op("headroom::add_rms_norm", mutates_args=())
def add_rms_norm(residual: torch.Tensor, delta: torch.Tensor, weight: torch.Tensor, eps: float
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """`reference`'s (hidden, normed) for residual, delta (..., n) and weight (n,): the CUDA kernel where
    it applies and is checked on this device (`kernel_ready`), else `reference`."""
    if kernel_ready(residual, delta, weight):
        hidden, normed = torch.empty_like(residual), torch.empty_like(residual)
        _launch(residual, delta, weight, eps, hidden, normed)
        return hidden, normed
    return reference(residual, delta, weight, eps)


@add_rms_norm.register_fake
def _(residual, delta, weight, eps):
    hidden = torch.empty_like(residual, dtype=torch.promote_types(residual.dtype, delta.dtype))
    return hidden, torch.empty_like(hidden, dtype=torch.promote_types(weight.dtype, hidden.dtype))


failure = ""
"""Why the kernel is not used, once known (it could not be built, or disagreed with `reference` in its
check); "" while it is used or not yet tried."""
_checked: set = set()  # (device, hidden size) whose kernel passed its check


def shape_reason(residual: torch.Tensor, delta: torch.Tensor, weight: torch.Tensor) -> str:
    """"" when the kernel takes these tensors, else why not."""
    n = weight.numel()
    if not (residual.is_cuda and residual.dtype == delta.dtype == weight.dtype == torch.bfloat16):
        return "not bf16 on CUDA"
    if not residual.device == delta.device == weight.device:
        return "tensors on different devices"
    if residual.dim() == 0 or residual.numel() == 0 or residual.shape != delta.shape or residual.shape[-1] != n \
            or weight.dim() != 1:
        return "shapes"
    if n % 256 or n // 8 > MAX_THREADS:  # whole warps of 8 elements a thread: the shuffles take all lanes
        return f"hidden size {n} (a multiple of 256, at most {8 * MAX_THREADS})"
    if not all(t.is_contiguous() and t.data_ptr() % 16 == 0 for t in (residual, delta, weight)):
        return "not contiguous and 16-byte aligned"
    return ""


def kernel_ready(residual: torch.Tensor, delta: torch.Tensor, weight: torch.Tensor) -> bool:
    """The kernel serves these tensors: they suit it (`shape_reason`), and it was built on their device
    and checked against `reference` there (`self_check`, once, outside a CUDA-graph capture; a failure
    is kept in `failure` and the kernel is not tried again). Raises nothing."""
    global failure
    if failure or shape_reason(residual, delta, weight):
        return False
    device = residual.device
    if (device, weight.numel()) in _checked:
        return True
    if torch.cuda.is_current_stream_capturing():
        return False  # checked outside a capture first; `reference` serves this one
    try:
        reason = nvrtc.unavailable_reason(device, _kernel, "add + RMSNorm kernel")
        steps = -1 if reason else self_check(device, weight.numel())
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot launch here: torch answers
        reason = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
        steps = -1
    if reason or steps > SELF_CHECK_STEPS:
        failure = reason or f"self-check: {steps} bf16 steps from the torch path"
        log.warning("add + RMSNorm (CUDA) not used: %s", failure)
        return False
    _checked.add((device, weight.numel()))
    return True


def self_check(device: torch.device, n: int) -> int:
    """Largest difference of the kernel's normed output from `reference`'s, in bf16 steps, over two
    rows of ``n`` random values on ``device``; 1000 when its hidden output differs at all."""
    g = torch.Generator().manual_seed(0)
    residual, delta = ((torch.randn(2, n, generator=g) * 3).to(device, torch.bfloat16) for _ in range(2))
    weight = (1 + torch.randn(n, generator=g) / 4).to(device, torch.bfloat16)
    hidden, normed = torch.empty_like(residual), torch.empty_like(residual)
    _launch(residual, delta, weight, 1e-5, hidden, normed)
    want_hidden, want_normed = reference(residual, delta, weight, 1e-5)
    if not torch.equal(hidden, want_hidden):
        return 1000
    return int((normed.view(torch.int16).int() - want_normed.view(torch.int16).int()).abs().max())


@cache
def _kernel(device_index: int):
    return nvrtc.load(device_index, SOURCE, "add_rms_norm.cu", ["add_rms_norm"])["add_rms_norm"]


def _launch(residual, delta, weight, eps: float, hidden, normed) -> None:
    n = weight.numel()
    with torch.cuda.device(residual.device):  # its stream and its PDL, not the current device's
        nvrtc.launch(_kernel(residual.get_device()), (residual.numel() // n, 1, 1), (n // 8, 1, 1),
                     [residual, delta, weight, hidden, normed, n, float(eps)])
