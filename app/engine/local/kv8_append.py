"""A decode step's keys and values into the 8-bit cache in one launch (issue 16, speed).

Writing one token's key and value into the packed cache is rotate → absmax → scale → round →
store, for each (KV head, key or value). Inside the compiled decode step Inductor made that
six kernels per layer (an absmax reduction, a quantize-and-pack and an ``index_copy`` each for
keys and for values: the rotation is a reduction, the absmax of its result another, and Inductor
fuses no reduction into the next), 192 launches per step on Llama-3-8B that a 16-bit cache does
in 32 (H200, results/decode_anatomy_h200_whole_forward_kernels.json: 8-bit 742 kernels per step,
16-bit 550; the step took 6.15 against 5.50 ms at 4k).

``headroom::kv8_append`` does it in one Triton launch per layer. The step's 2·B·Hkv vectors (keys
first, then values; 16 for Llama-3-8B at batch 1) are the rows of VECTORS-row tiles, one program
per tile: it rotates its rows on the tensor cores, x·H = (x · signs) · 2^(−k/2) with `rotation_signs`
(H's ±1 pattern, exact in bf16 and fp16, so each product is exact and the sums are float32, as the
dense float32 product of `kv_quant.rotate` up to summation order), ROTATE_CHUNK input columns
at a time, takes each row's absmax and writes its int8 codes and float32 scale at the fill
position read from the cache's own counter (no host value, so a CUDA graph replays it). The first
version ran one program per vector, each loading the dense float32 d × d rotation (64 KB at
d = 128) and reducing a d × d broadcast product in registers: 125 µs per step on the H200 over 32
layers, 3.9 µs a layer (tests/benchmarks/results/decode_anatomy_h200.json).
The same numbers as `kv_quant.quantize` up to float32 summation order and ties (rounded half away
from zero here, half to even there). Elsewhere (CPU, fp8 codes, float32 vectors, no Triton, a
prefill chunk) the op runs `kv_quant.quantize` and ``index_copy_``, as the cache did before.
"""

from __future__ import annotations

import logging

import torch

from app.engine.local import kv_quant

log = logging.getLogger(__name__)

try:  # Triton ships with torch on CUDA; absent on CPU-only installs (CI)
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - any import failure means "no Triton"
    triton = tl = None

triton_failure = ""
"""Why the Triton kernel failed once (then the torch path runs), or ""."""
VECTORS = 16
"""Vectors (rows) per program: the 16 rows of one tensor-core tile, all 8 KV heads' key and value
of a Llama-3-8B step at batch 1 in one program."""
ROTATE_CHUNK = 32
"""Input columns per product while rotating: the signs tile is ROTATE_CHUNK × d (8 KB at d = 128
in bf16), not the whole d × d."""
_SIGNS: dict[tuple[int, str, int | None, torch.dtype], tuple[torch.Tensor, float]] = {}


def kernel_applies(vectors: torch.Tensor, packed: torch.Tensor) -> bool:
    """The Triton kernel takes these: CUDA, Triton present and not failed, bf16 or fp16 vectors
    (their products with ±1 are exact on the tensor cores; float32 ones would go through tf32),
    int8 codes, one token (a decode step), a head_dim that is a power of two of 16-256, packed rows
    4-byte aligned."""
    d = vectors.shape[-1]
    return (triton is not None and not triton_failure and vectors.is_cuda and packed.dtype == torch.int8
            and vectors.dtype in (torch.bfloat16, torch.float16)
            and vectors.shape[-2] == 1 and 16 <= d <= 256 and d & (d - 1) == 0 and vectors.stride(-1) == 1
            and packed.stride(-1) == 1 and packed.stride(2) % 4 == 0 and packed.data_ptr() % 4 == 0)


def rotation_signs(head_dim: int, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, float]:
    """(signs, scale) with signs · scale == the (d, d) matrix H of `kv_quant.rotate`: signs
    (head_dim, head_dim) of 0 and ±1 in ``dtype`` (exact in bf16, fp16 and float32; block-diagonal,
    Sylvester's Hadamard pattern in each block of the largest power of two dividing head_dim),
    scale = 1 / sqrt(block) as a Python float. Made once per device and dtype, eagerly (the first
    decode step runs before any CUDA-graph capture)."""
    key = (head_dim, device.type, device.index, dtype)
    kept = _SIGNS.get(key)
    if kept is None:
        block = head_dim & -head_dim
        with torch.inference_mode(False):
            pattern = (kv_quant._hadamard(block, device) * block ** 0.5).round()
            signs = torch.block_diag(*[pattern] * (head_dim // block)).to(dtype).contiguous()
        kept = _SIGNS[key] = (signs, block ** -0.5)
    return kept


@torch.library.custom_op("headroom::kv8_append", mutates_args=("keys", "values"))
def kv8_append(key_states: torch.Tensor, value_states: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
               first: torch.Tensor) -> None:
    """Write key_states / value_states (B, Hkv, n, d) quantized into keys / values (B, Hkv, S,
    d + SCALE_BYTES) at positions first[0] … first[0] + n − 1 (first: the cache's fill counter,
    (1,) int64 on the cache's device)."""
    if (kernel_applies(key_states, keys) and kernel_applies(value_states, values)
            and key_states.shape == value_states.shape and key_states.dtype == value_states.dtype
            and _launched(key_states, value_states, keys, values, first)):
        return
    position = torch.arange(key_states.shape[-2], device=keys.device) + first
    fmt = kv_quant.packed_format(keys)
    keys.index_copy_(2, position, kv_quant.quantize(key_states, fmt))
    values.index_copy_(2, position, kv_quant.quantize(value_states, fmt))


def _launched(key_states, value_states, keys, values, first) -> bool:
    """Launch the kernel; False (and never again) when it fails to build or launch, except
    during a CUDA-graph capture, which must fail instead (the kernel itself may be fine)."""
    global triton_failure
    try:
        b, h, _, d = key_states.shape
        signs, rot_scale = rotation_signs(d, keys.device, key_states.dtype)
        _append_kernel[(triton.cdiv(2 * b * h, VECTORS),)](
            key_states, value_states, keys, values, first, signs, rot_scale, b * h, h,
            key_states.stride(0), key_states.stride(1), value_states.stride(0), value_states.stride(1),
            keys.stride(0), keys.stride(1), keys.stride(2), values.stride(0), values.stride(1), values.stride(2),
            D=d, ROWS=VECTORS, CHUNK=min(ROTATE_CHUNK, d), num_warps=4)
        return True
    except Exception as exc:
        if keys.is_cuda and torch.cuda.is_current_stream_capturing():
            raise
        triton_failure = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
        log.warning("8-bit KV append kernel failed; torch path from now on", exc_info=exc)
        return False


if triton is not None:
    @triton.jit
    def _append_kernel(k_ptr, v_ptr, keys_ptr, values_ptr, first_ptr, signs_ptr, rot_scale, vectors, heads,
                       stride_kb, stride_kh, stride_vb, stride_vh,
                       stride_cb, stride_ch, stride_cs, stride_db, stride_dh, stride_ds,
                       D: tl.constexpr, ROWS: tl.constexpr, CHUNK: tl.constexpr):
        """Program t: rows j = t·ROWS … t·ROWS + ROWS − 1 of the step's 2·``vectors`` vectors, row
        j < vectors the key of (batch, KV head) (j // heads, j % heads), row j ≥ vectors the value
        of j − vectors; rows past 2·``vectors`` are masked."""
        j = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        is_key = j < vectors
        is_value = (j >= vectors) & (j < 2 * vectors)
        n = tl.where(is_key, j, j - vectors)
        b = n // heads
        h = n % heads
        k_rows = k_ptr + b * stride_kb + h * stride_kh
        v_rows = v_ptr + b * stride_vb + h * stride_vh
        dims = tl.arange(0, D)
        rotated = tl.zeros([ROWS, D], tl.float32)
        for c in tl.static_range(0, D, CHUNK):  # x · signs, CHUNK input columns at a time
            cols = c + tl.arange(0, CHUNK)
            x = tl.where(is_key[:, None], tl.load(k_rows[:, None] + cols[None, :], mask=is_key[:, None], other=0.0),
                         tl.load(v_rows[:, None] + cols[None, :], mask=is_value[:, None], other=0.0))
            rotated += tl.dot(x, tl.load(signs_ptr + cols[:, None] * D + dims[None, :]))
        rotated = rotated * rot_scale
        scale = tl.maximum(tl.max(tl.abs(rotated), axis=1), 1e-12) / 127.0
        q = rotated / scale[:, None]
        codes = tl.minimum(tl.maximum(tl.where(q >= 0, tl.floor(q + 0.5), tl.ceil(q - 0.5)), -127.0), 127.0)
        position = tl.load(first_ptr)
        # the row strides written as multiples of 4 (an identity for packed rows of d + 4 bytes):
        # Triton then sees 4-byte-aligned rows and stores each scale as one word
        key_row = keys_ptr + b * stride_cb + h * stride_ch + position * ((stride_cs // 4) * 4)
        value_row = values_ptr + b * stride_db + h * stride_dh + position * ((stride_ds // 4) * 4)
        codes = codes.to(tl.int8)
        tl.store(key_row[:, None] + dims[None, :], codes, mask=is_key[:, None])
        tl.store(value_row[:, None] + dims[None, :], codes, mask=is_value[:, None])
        tl.store((key_row + D).to(tl.pointer_type(tl.float32)), scale, mask=is_key)
        tl.store((value_row + D).to(tl.pointer_type(tl.float32)), scale, mask=is_value)
