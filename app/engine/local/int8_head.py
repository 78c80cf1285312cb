"""The lm_head in 8 bits a weight on CUDA (issue 15): `install` swaps a model's 16-bit lm_head for
`Int8LmHead` at load (HEADROOM_LM_HEAD_INT8=0 keeps it), which every pass then uses: prefill's last
position, the compiled decode step, eager decode.

Why: after the NF4 layers the lm_head is the step's largest single read: Llama-3-8B's 128256 x 4096 bf16
weight, 1.05 GB a token, 370 µs of the H100's 3,044 µs step (cuBLAS at ~2.8 TB/s, near its roofline;
tests/benchmarks/results/decode_anatomy_h100_norm_fold_on.json). Read as one signed byte a weight with a
float32 scale a row it is half the bytes. llama.cpp's Q4_K_M keeps its output matrix in 6 bits (Q6_K).

Math: per row v, scale_v = max_i |W_vi| / 127 and q_vi = round(W_vi / scale_v) in [-127, 127] (symmetric,
absmax; the bf16 weight's relative error is at most 1 / 254 of the row's largest weight). The logits are
logit_v = scale_v · Σ_i q_vi · x_i in float32: each product of a byte and a bf16 input is exact in
float32, the sums in a fixed order (bitwise repeatable). `reference` is that in torch.

Kernel (CUDA C through NVRTC, as nf4_mma): x (H bf16) staged in shared memory as float32; a warp takes two
rows at a time, each lane reading 16 bytes of each row per 512-column chunk, every chunk of both rows in
flight at once (ld.global.nc, first out of L1). A byte becomes a float without a conversion instruction:
its biased value b + 128 is placed in the mantissa of 2^23 (``prmt`` with 0x4B000000), less 2^23 + 128.
The codes are stored in the kernel's column order (`column_order`): lane L's word k of chunk c holds
columns 512c + 128k + 4L + (0..3), so the warp's 32 float4 reads of x for a word are 512 contiguous bytes
(no bank conflict). Under programmatic dependent launch (nvrtc.PDL) each warp's first rows are
prefetched into L2 before ``griddepcontrol.wait`` (weights: no earlier kernel writes them).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import cache

import torch

from app.engine.local import nvrtc

log = logging.getLogger(__name__)

ENABLED = os.environ.get("HEADROOM_LM_HEAD_INT8", "1") != "0"
"""`install` swaps the lm_head for `Int8LmHead`; HEADROOM_LM_HEAD_INT8=0 keeps the 16-bit lm_head."""

CHUNK = 512  # columns a warp reads of a row in one 16-byte load a lane
MAX_HIDDEN = 8192  # x as float32 in shared memory: 32 KB a block
KERNEL_ROWS = 64  # hidden rows the kernel takes a launch each; more (a prefill asking every position's
# logits) through `reference`
VOCAB_SLICE = 8192
WARPS = 8
BLOCKS_PER_SM = 2  # __launch_bounds__(256, 2): every block resident at once (grid-stride over row pairs)
QUANTIZE_ROWS = 8192  # rows converted at a time (bounds the float32 copy: 8192 x H x 4 bytes)
SELF_CHECK_TOLERANCE = 1e-4  # relative error of the kernel's logits against `reference` (float32 sums)

SOURCE = r"""
// lm_head in 8 bits a weight (int8_head.py's docstring). No headers.
typedef unsigned int u32;
typedef unsigned short u16;
__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 sel) {
    u32 d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {  // read once: first out of L1
    uint4 v;
    asm volatile("ld.global.nc.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" :: "l"(p)); }
// Byte t of w (signed) as a float: (b + 128) in the mantissa of 2^23, less 2^23 + 128. Exact.
__device__ __forceinline__ float byte_value(u32 biased, u32 t) {
    return __uint_as_float(prmt(biased, 0x4B000000u, 0x7540u | t)) - 8388736.f;
}
__device__ __forceinline__ float dot4(u32 w, float4 x, float acc) {
    const u32 b = w ^ 0x80808080u;
    acc = fmaf(byte_value(b, 0), x.x, acc);
    acc = fmaf(byte_value(b, 1), x.y, acc);
    acc = fmaf(byte_value(b, 2), x.z, acc);
    return fmaf(byte_value(b, 3), x.w, acc);
}
// Lane L's 16 bytes of a chunk: word k holds columns 128k + 4L + (0..3) of it, x's float4 128k/4 + L.
__device__ __forceinline__ float dot16(uint4 v, const float4* xc, float acc) {
    acc = dot4(v.x, xc[0], acc);
    acc = dot4(v.y, xc[32], acc);
    acc = dot4(v.z, xc[64], acc);
    return dot4(v.w, xc[96], acc);
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// y (rows,) float32 = scales * (codes x); codes (rows, h) int8 in column_order, h a multiple of 512.
// Warp w of block b takes row pairs p = b * warps + w, + gridDim.x * warps, ...
extern "C" __global__ void __launch_bounds__(256, 2) int8_head(const uint4* __restrict__ codes,
        const float* __restrict__ scales, const u16* __restrict__ x, float* __restrict__ y, int rows, int h) {
    extern __shared__ float4 xs[];
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const int chunks = h / 512, row_words = h / 16, stride = gridDim.x * warps;
    const int first = blockIdx.x * warps + (threadIdx.x >> 5);
    if (2 * first < rows)
        for (int c = 0; c < chunks; ++c) {
            prefetch_l2(codes + (long long)(2 * first) * row_words + 32 * c + lane);
            prefetch_l2(codes + (long long)min(2 * first + 1, rows - 1) * row_words + 32 * c + lane);
        }
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    for (int i = threadIdx.x; i < h / 4; i += blockDim.x) {
        const uint2 v = ((const uint2*)x)[i];
        xs[i] = make_float4(__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xffff0000u),
                            __uint_as_float(v.y << 16), __uint_as_float(v.y & 0xffff0000u));
    }
    __syncthreads();
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    for (int p = first; 2 * p < rows; p += stride) {
        const int r0 = 2 * p, r1 = min(r0 + 1, rows - 1);
        const uint4* w0 = codes + (long long)r0 * row_words + lane;
        const uint4* w1 = codes + (long long)r1 * row_words + lane;
        float a0 = 0.f, a1 = 0.f;
        for (int c0 = 0; c0 < chunks; c0 += 8) {
            uint4 u[8], v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j)
                if (c0 + j < chunks) { u[j] = ld_stream(w0 + 32 * (c0 + j)); v[j] = ld_stream(w1 + 32 * (c0 + j)); }
#pragma unroll
            for (int j = 0; j < 8; ++j)
                if (c0 + j < chunks) {
                    const float4* xc = xs + 128 * (c0 + j) + lane;
                    a0 = dot16(u[j], xc, a0);
                    a1 = dot16(v[j], xc, a1);
                }
        }
        a0 = warp_sum(a0);
        a1 = warp_sum(a1);
        if (lane == 0) y[r0] = a0 * scales[r0];
        if (lane == 1 && r1 != r0) y[r1] = a1 * scales[r1];
    }
}
"""


@dataclass(frozen=True)
class Int8Head:
    """An lm_head weight (V, H) as the kernel reads it: codes (V, H) int8 in `column_order`, scales (V,)
    float32 (per row, max |W| / 127)."""

    codes: torch.Tensor
    scales: torch.Tensor

    @property
    def nbytes(self) -> int:
        return self.codes.numel() + 4 * self.scales.numel()


def column_order(hidden: int) -> torch.Tensor:
    """(H,) int64: the weight column stored at each position of a row of codes. Position
    512c + 16L + 4k + t (chunk c, lane L, word k, byte t) holds column 512c + 128k + 4L + t."""
    p = torch.arange(hidden)
    c, r = p // CHUNK, p % CHUNK
    lane, k, t = r // 16, (r % 16) // 4, r % 4
    return CHUNK * c + 128 * k + 4 * lane + t


def shape_reason(weight: torch.Tensor) -> str:
    """"" when the kernel takes ``weight`` (V, H), else why not."""
    if weight.dim() != 2 or weight.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        return f"lm_head weight {tuple(weight.shape)} {weight.dtype} is not a 2-D float matrix"
    vocab, hidden = weight.shape
    if hidden % CHUNK or hidden > MAX_HIDDEN:
        return f"hidden size {hidden} is not a multiple of {CHUNK} up to {MAX_HIDDEN}"
    if vocab * hidden >= 2**31:
        return f"{vocab}x{hidden} codes exceed 32-bit offsets"
    return ""


def rows_int8(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(q (V, H) float32 holding integers in [-127, 127], scale (V,) float32) for ``rows`` (V, H): per row
    symmetric absmax, q = round(W / scale), scale = max |W| / 127 (a zero row: scale 0, q 0)."""
    rows = rows.float()
    scale = rows.abs().amax(dim=1) / 127
    q = torch.round(rows / scale.clamp_min(torch.finfo(torch.float32).tiny)[:, None]).clamp_(-127, 127)
    return q, scale


def quantize(weight: torch.Tensor) -> Int8Head:
    """``weight`` (V, H) → `Int8Head` on its device: per row symmetric absmax, codes in `column_order`.
    A zero row gets scale 0 (its logits 0). Raises ValueError for a shape the kernel does not take."""
    if shape_reason(weight):
        raise ValueError(shape_reason(weight))
    order = column_order(weight.shape[1]).to(weight.device)
    codes = torch.empty(weight.shape, dtype=torch.int8, device=weight.device)
    scales = torch.empty(weight.shape[0], dtype=torch.float32, device=weight.device)
    with torch.no_grad():
        for start in range(0, weight.shape[0], QUANTIZE_ROWS):
            q, scale = rows_int8(weight[start:start + QUANTIZE_ROWS])
            codes[start:start + QUANTIZE_ROWS] = q[:, order].to(torch.int8)
            scales[start:start + QUANTIZE_ROWS] = scale
    return Int8Head(codes, scales)


def _natural(codes: torch.Tensor) -> torch.Tensor:
    """``codes`` (rows, H) with their columns back in the weight's order (undoing `column_order`)."""
    return codes[:, torch.argsort(column_order(codes.shape[1]).to(codes.device))]


def dequantized(head: Int8Head) -> torch.Tensor:
    """(V, H) float32: the weight the codes stand for, columns in their natural order."""
    return _natural(head.codes).float() * head.scales[:, None]


def reference(head: Int8Head, hidden: torch.Tensor) -> torch.Tensor:
    """hidden (..., H) → logits (..., V) float32 = scales · (codes · hidden) in torch (any device), VOCAB_SLICE
    rows of the weight dequantized at a time (bounded memory)."""
    flat = hidden.reshape(-1, hidden.shape[-1]).float()
    out = torch.empty(flat.shape[0], head.codes.shape[0], dtype=torch.float32, device=hidden.device)
    for start in range(0, head.codes.shape[0], VOCAB_SLICE):
        rows = _natural(head.codes[start:start + VOCAB_SLICE]).float()
        out[:, start:start + VOCAB_SLICE] = (flat @ rows.t()) * head.scales[start:start + VOCAB_SLICE]
    return out.view(*hidden.shape[:-1], head.codes.shape[0])


@cache
def _kernel(device_index: int):
    return nvrtc.load(device_index, SOURCE, "int8_head.cu", ["int8_head"])["int8_head"]


@cache
def _grid(device_index: int) -> int:
    return BLOCKS_PER_SM * torch.cuda.get_device_properties(device_index).multi_processor_count


def logits(head: Int8Head, hidden: torch.Tensor) -> torch.Tensor:
    """hidden (..., H) bf16 on CUDA → logits (..., V) float32, one launch a row (decode: one row). Raises
    ValueError for another dtype or size."""
    vocab, size = head.codes.shape
    if hidden.dtype != torch.bfloat16 or hidden.shape[-1] != size:
        raise ValueError(f"hidden must be (..., {size}) bf16, got {tuple(hidden.shape)} {hidden.dtype}")
    flat = hidden.reshape(-1, size).contiguous()
    out = torch.empty(flat.shape[0], vocab, dtype=torch.float32, device=hidden.device)
    device = hidden.get_device()
    kernel, grid = _kernel(device), _grid(device)
    for row in range(flat.shape[0]):
        nvrtc.launch(kernel, (grid, 1, 1), (32 * WARPS, 1, 1),
                     [head.codes, head.scales, flat[row], out[row], vocab, size], 4 * size)
    return out.view(*hidden.shape[:-1], vocab)


def unavailable_reason(device: torch.device) -> str:
    """"" when the kernel can run on ``device``, else why not (one line)."""
    return nvrtc.unavailable_reason(device, _kernel, "int8 lm_head kernel")


@torch.library.custom_op("headroom::int8_head_logits", mutates_args=())
def int8_head_logits(codes: torch.Tensor, scales: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """`logits` as an operator (torch.compile traces it as one node)."""
    return logits(Int8Head(codes, scales), hidden)


@int8_head_logits.register_fake
def _(codes, scales, hidden):
    return hidden.new_empty((*hidden.shape[:-1], codes.shape[0]), dtype=torch.float32)


class Int8LmHead(torch.nn.Module):
    """A bias-free lm_head read from its 8-bit copy (`Int8Head`, kept as buffers): hidden (..., H) bf16 →
    logits (..., V) float32. Up to KERNEL_ROWS rows through the kernel, more through `reference`."""

    def __init__(self, head: Int8Head):
        super().__init__()
        self.register_buffer("codes", head.codes)
        self.register_buffer("scales", head.scales)
        self.out_features, self.in_features = head.codes.shape

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if hidden.dtype == torch.bfloat16 and hidden.numel() // self.in_features <= KERNEL_ROWS:
            return torch.ops.headroom.int8_head_logits(self.codes, self.scales, hidden)
        return reference(Int8Head(self.codes, self.scales), hidden)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 rows, float32 scales"


def head_reason(model) -> str:
    """"" when `install` can swap ``model``'s lm_head, else why not (one line)."""
    lm_head = getattr(model, "lm_head", None)
    weight = getattr(lm_head, "weight", None)
    if type(lm_head) is not torch.nn.Linear or lm_head.bias is not None or weight is None:
        return "the lm_head is not a bias-free Linear"
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if getattr(embeddings, "weight", None) is weight:
        return "the lm_head is tied to the input embeddings (its 16-bit weight stays for them)"
    if not weight.is_cuda or weight.dtype != torch.bfloat16:
        return "the lm_head is not bf16 on CUDA"
    return shape_reason(weight) or unavailable_reason(weight.device)


def install(model) -> str:
    """Swap ``model``'s bf16 lm_head for `Int8LmHead` (the 16-bit weight is dropped: V x H bytes less, 525 MB
    for Llama-3-8B) after the kernel's self-check against `reference`; "" when swapped, else why not (the
    lm_head then stays as it was). HEADROOM_LM_HEAD_INT8=0 keeps it."""
    if not ENABLED:
        return "turned off (HEADROOM_LM_HEAD_INT8=0)"
    reason = head_reason(model)
    if reason:
        return reason
    weight = model.lm_head.weight.detach()
    try:
        head = quantize(weight)
    except torch.cuda.OutOfMemoryError:
        return "no GPU memory for the 8-bit copy while the 16-bit weight is still held"
    generator = torch.Generator(device=weight.device).manual_seed(0)
    hidden = torch.randn(2, weight.shape[1], generator=generator, device=weight.device).to(torch.bfloat16)
    want = reference(head, hidden)
    error = float((logits(head, hidden) - want).norm() / want.norm().clamp_min(1e-30))
    if not error <= SELF_CHECK_TOLERANCE:
        return f"the int8 lm_head kernel's self-check failed (relative error {error:.2e})"
    model.lm_head = Int8LmHead(head)
    log.info("lm_head read in 8 bits a weight (%.0f MB; self-check %.1e)", head.nbytes / 2**20, error)
    return ""
