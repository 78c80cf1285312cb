"""A decode step's keys and values into the 8-bit cache in one launch (issue 16, speed).

Writing one token's key and value into the packed cache is rotate → absmax → scale → round →
store, for each (KV head, key or value). Inside the compiled decode step Inductor made that
six kernels per layer (an absmax reduction, a quantize-and-pack and an ``index_copy`` each for
keys and for values: the rotation is a reduction, the absmax of its result another, and Inductor
fuses no reduction into the next), 192 launches per step on Llama-3-8B that a 16-bit cache does
in 32 (H200, results/decode_anatomy_h200_whole_forward_kernels.json: 8-bit 742 kernels per step,
16-bit 550; the step took 6.15 against 5.50 ms at 4k).

``headroom::kv8_append`` does it in one Triton launch per layer: program (vector, key|value)
loads the vector, rotates it by the dense block-diagonal Hadamard matrix of `kv_quant.rotate`
(a d × d product in registers), takes its absmax, writes the int8 codes and the float32 scale at
the fill position read from the cache's own counter (no host value, so a CUDA graph replays it).
The same numbers as `kv_quant.quantize` up to float32 summation order and ties (rounded half away
from zero here, half to even there). Elsewhere (CPU, fp8 codes, no Triton, a prefill chunk) the
op runs `kv_quant.quantize` and ``index_copy_``, as the cache did before.
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
_ROTATIONS: dict[tuple[int, str, int | None], torch.Tensor] = {}
"""Dense (d, d) float32 rotations by (head_dim, device type, device index), made eagerly."""


def kernel_applies(vectors: torch.Tensor, packed: torch.Tensor) -> bool:
    """The Triton kernel takes these: CUDA, Triton present and not failed, int8 codes, one token
    (a decode step), a head_dim that is a power of two of 16-256, packed rows 4-byte aligned."""
    d = vectors.shape[-1]
    return (triton is not None and not triton_failure and vectors.is_cuda and packed.dtype == torch.int8
            and vectors.shape[-2] == 1 and 16 <= d <= 256 and d & (d - 1) == 0 and vectors.stride(-1) == 1
            and packed.stride(-1) == 1 and packed.stride(2) % 4 == 0 and packed.data_ptr() % 4 == 0)


def rotation(head_dim: int, device: torch.device) -> torch.Tensor:
    """The (head_dim, head_dim) float32 matrix R with ``x @ R == kv_quant.rotate(x)``: the
    normalized Hadamard blocks of `kv_quant.rotate` on the diagonal. Made once per device,
    eagerly (the first call comes from a real step, before any CUDA-graph capture)."""
    key = (head_dim, device.type, device.index)
    kept = _ROTATIONS.get(key)
    if kept is None:
        block = head_dim & -head_dim
        with torch.inference_mode(False):
            kept = torch.block_diag(*[kv_quant._hadamard(block, device)] * (head_dim // block)).contiguous()
        _ROTATIONS[key] = kept
    return kept


@torch.library.custom_op("headroom::kv8_append", mutates_args=("keys", "values"))
def kv8_append(key_states: torch.Tensor, value_states: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
               first: torch.Tensor) -> None:
    """Write key_states / value_states (B, Hkv, n, d) quantized into keys / values (B, Hkv, S,
    d + SCALE_BYTES) at positions first[0] … first[0] + n − 1 (first: the cache's fill counter,
    (1,) int64 on the cache's device)."""
    if kernel_applies(key_states, keys) and kernel_applies(value_states, values) and _launched(
            key_states, value_states, keys, values, first):
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
        _append_kernel[(b * h, 2)](
            key_states, value_states, keys, values, first, rotation(d, keys.device), h,
            key_states.stride(0), key_states.stride(1), value_states.stride(0), value_states.stride(1),
            keys.stride(0), keys.stride(1), keys.stride(2), values.stride(0), values.stride(1), values.stride(2),
            D=d, num_warps=4)
        return True
    except Exception as exc:
        if keys.is_cuda and torch.cuda.is_current_stream_capturing():
            raise
        triton_failure = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
        log.warning("8-bit KV append kernel failed; torch path from now on", exc_info=exc)
        return False


if triton is not None:
    @triton.jit
    def _append_kernel(k_ptr, v_ptr, keys_ptr, values_ptr, first_ptr, rot_ptr, heads,
                       stride_kb, stride_kh, stride_vb, stride_vh,
                       stride_cb, stride_ch, stride_cs, stride_db, stride_dh, stride_ds, D: tl.constexpr):
        """Program (b·heads + h, 0 for the key | 1 for the value): one token's vector."""
        bh = tl.program_id(0)
        b = bh // heads
        h = bh % heads
        dims = tl.arange(0, D)
        position = tl.load(first_ptr)
        if tl.program_id(1) == 0:
            x = tl.load(k_ptr + b * stride_kb + h * stride_kh + dims).to(tl.float32)
            row = keys_ptr + b * stride_cb + h * stride_ch + position * ((stride_cs // 4) * 4)
        else:
            x = tl.load(v_ptr + b * stride_vb + h * stride_vh + dims).to(tl.float32)
            row = values_ptr + b * stride_db + h * stride_dh + position * ((stride_ds // 4) * 4)
        rotated = tl.sum(x[:, None] * tl.load(rot_ptr + dims[:, None] * D + dims[None, :]), axis=0)
        scale = tl.maximum(tl.max(tl.abs(rotated), axis=0), 1e-12) / 127.0
        q = rotated / scale
        codes = tl.minimum(tl.maximum(tl.where(q >= 0, tl.floor(q + 0.5), tl.ceil(q - 0.5)), -127.0), 127.0)
        tl.store(row + dims, codes.to(tl.int8))
        tl.store((row + D).to(tl.pointer_type(tl.float32)), scale)
