"""8-bit keys and values with one scale per written vector (issue 16, item 1).

Each key or value vector (one token, one KV head: ``head_dim`` numbers) is stored as
``head_dim`` 8-bit codes followed by its float32 scale, packed into one byte tensor
``(B, Hkv, tokens, head_dim + SCALE_BYTES)``. The scale is absmax / the format's largest code, so
a vector is quantized once, when it is written (prefill chunk or decode step), and history is
never re-quantized — unlike transformers' ``QuantizedCache``, which re-quantizes the whole
residual every 128 tokens and cannot be compiled. Keeping codes and scale in one tensor lets a
static cache layer return it from ``update`` like any key tensor: the attention
(app.engine.local.attention) recognises the byte dtype and dequantizes on read.

Before quantizing, each vector is rotated by a normalized Hadamard matrix H (`rotate`; blocks
of the largest power of two dividing head_dim). Keys of Llama-family models carry a few outlier
channels that set the absmax and leave the other channels a handful of codes; the rotation
spreads them over every channel (QuaRot, Ashkboos et al. 2024; SpinQuant) and, being orthogonal,
changes no dot product: q·k = (qH)·(kH). The attention rotates the query and rotates its output
back (H·H = I), so keys and values stay in the rotated basis and are never rotated back in bulk.
On SmolLM2-135M it lifts teacher-forced next-token agreement with 16-bit from 97.7 % to 99.3 %
at the same bytes (600 English tokens, tests/benchmarks/kv8_quality.py).

Formats ("int8" is the one Headroom runs, see ``KV8_FORMAT``):

* "int8": symmetric, codes −127…127, scale = absmax / 127 (error ≤ scale / 2 per element). Stored
  as torch.int8.
* "fp8": float8 e4m3fn codes, scale = absmax / 448 (3 mantissa bits: relative error ≤ 1/16).
  Stored as torch.uint8 (the fp8 bits), so the attention tells the two apart by dtype.

Bytes per vector: head_dim + 4, e.g. 132 for head_dim 128 against 256 in bf16 (0.516×).
"""

from __future__ import annotations

import math
import sys

import torch

SCALE_BYTES = 4
"""Bytes of the float32 scale stored after each vector's codes."""

KV8_FORMAT = "int8"
"""The 8-bit format the app uses. int8 over fp8 e4m3: on SmolLM2-135M int8 keeps more of the
16-bit answer (tests/benchmarks/results/kv8_quality_cpu.json), and casting int8 needs no fp8
hardware (Triton's e4m3 conversion wants compute capability 8.9; an RTX 3060 has 8.6)."""

FORMATS = ("int8", "fp8")
_MAX_CODE = {"int8": 127.0, "fp8": 448.0}
_STORAGE = {"int8": torch.int8, "fp8": torch.uint8}
_TINY = 1e-12  # an all-zero vector keeps scale ~0 and codes 0


def storage_dtype(fmt: str) -> torch.dtype:
    """The byte dtype a packed tensor of format ``fmt`` has (int8 or uint8). KeyError otherwise."""
    return _STORAGE[fmt]


def is_packed(tensor: torch.Tensor) -> bool:
    """True for a packed 8-bit key/value tensor (int8 or uint8), False for a float one."""
    return tensor.dtype in (torch.int8, torch.uint8)


def packed_format(tensor: torch.Tensor) -> str:
    """"int8" or "fp8" for a packed tensor (by its dtype). ValueError for a float tensor."""
    if tensor.dtype == torch.int8:
        return "int8"
    if tensor.dtype == torch.uint8:
        return "fp8"
    raise ValueError(f"not a packed 8-bit KV tensor: {tensor.dtype}")


_HADAMARD: dict[tuple[int, str, int | None], torch.Tensor] = {}
"""Hadamard matrices made so far, by (order, device type, device index)."""


def _hadamard(block: int, device: torch.device) -> torch.Tensor:
    """Sylvester's Hadamard matrix of order ``block`` (a power of two) / sqrt(block), float32:
    symmetric and orthonormal, so it is its own inverse. Made once per device, eagerly (the
    prefill that precedes any decode step), as a normal tensor even under inference mode (so a
    later forward outside it, autograd recording as in tests, can still use it). torch.compile
    reads the kept tensor as a constant input: tracing the construction instead put a few
    kernels per rotation, four rotations per layer, into every compiled decode step."""
    key = (block, device.type, device.index)
    kept = _HADAMARD.get(key)
    if kept is not None:
        return kept
    if torch.compiler.is_compiling():  # never made eagerly on this device: built in the graph
        return _sylvester(block, device)
    with torch.inference_mode(False):
        _HADAMARD[key] = _sylvester(block, device)
    return _HADAMARD[key]


def _sylvester(block: int, device: torch.device) -> torch.Tensor:
    h = torch.ones((1, 1), device=device)
    while h.shape[0] < block:
        h = torch.cat((torch.cat((h, h), 1), torch.cat((h, -h), 1)), 0)
    return h / math.sqrt(block)


ROTATE_PIECE_ELEMENTS = 1 << 21
"""Largest piece `rotate` computes in float32 at once outside torch.compile (8 MiB): a whole
16k-token prefill chunk's query is 67M numbers, whose two float32 copies were 537 MB."""


def rotate(x: torch.Tensor) -> torch.Tensor:
    """x (..., d) → x·H in x's dtype (computed in float32), H block-diagonal of normalized
    Hadamard blocks of the largest power of two dividing d (d itself for 64 or 128). Its own
    inverse: rotate(rotate(x)) == x up to rounding. Transient outside torch.compile: the result
    (contiguous) plus two float32 pieces of at most ROTATE_PIECE_ELEMENTS numbers."""
    if torch.compiler.is_compiling():
        # the decode step (a token's few vectors): a product-and-sum Inductor fuses with what
        # reads and writes the vectors, instead of a cuBLAS launch per rotation (four per layer)
        return _rotated(x, product_sum=True)
    if x.numel() <= ROTATE_PIECE_ELEMENTS or x.dim() < 2:
        return _rotated(x)
    lead = max(range(x.dim() - 1), key=lambda dim: x.shape[dim])  # the longest dimension but the last
    step = max(1, ROTATE_PIECE_ELEMENTS * x.shape[lead] // x.numel())
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    for start in range(0, x.shape[lead], step):
        n = min(step, x.shape[lead] - start)
        out.narrow(lead, start, n).copy_(_rotated(x.narrow(lead, start, n)))
    return out


def _rotated(x: torch.Tensor, product_sum: bool = False) -> torch.Tensor:
    d = x.shape[-1]
    block = d & -d
    blocks = x.float().reshape(*x.shape[:-1], d // block, block)
    hadamard = _hadamard(block, x.device)
    if product_sum:
        rotated = (blocks.unsqueeze(-1) * hadamard).sum(dim=-2)
    else:
        rotated = torch.matmul(blocks, hadamard)
    return rotated.reshape(x.shape).to(x.dtype)


def quantize(x: torch.Tensor, fmt: str = KV8_FORMAT) -> torch.Tensor:
    """x (..., d) float → packed (..., d + SCALE_BYTES) in ``storage_dtype(fmt)``: d codes of
    ``rotate(x)``, then the float32 scale's bytes. One scale per vector along the last
    dimension. ValueError for an unknown format."""
    if fmt not in _MAX_CODE:
        raise ValueError(f"unknown KV format {fmt!r} (one of {', '.join(FORMATS)})")
    wide = rotate(x.float())
    scale = wide.abs().amax(dim=-1, keepdim=True).clamp_min(_TINY) / _MAX_CODE[fmt]
    scaled = wide / scale
    if fmt == "int8":
        codes = scaled.round().clamp(-127, 127).to(torch.int8)
    else:
        codes = scaled.to(torch.float8_e4m3fn).view(torch.uint8)
    octets = scale_to_bytes(scale, codes.dtype)
    if torch.compiler.is_compiling():  # the same bytes as the cat, in a kernel Inductor fuses
        d = codes.shape[-1]
        return (torch.nn.functional.pad(codes, (0, SCALE_BYTES))
                + torch.nn.functional.pad(octets, (d, 0)))  # codes then scale, zeros elsewhere
    return torch.cat([codes, octets], dim=-1)


def unpack(packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """packed (..., d + SCALE_BYTES) → (codes (..., d), a view of ``packed``, as float32-castable
    values (fp8 codes viewed as float8_e4m3fn); scale (..., 1) float32)."""
    d = packed.shape[-1] - SCALE_BYTES
    codes = packed[..., :d]
    if packed.dtype == torch.uint8:
        codes = codes.view(torch.float8_e4m3fn)
    return codes, scale_from_bytes(packed[..., d:])


# The scale's bytes are made and read with integer arithmetic, never with a dtype view (a
# float32 ↔ int8 ``view`` of a computed tensor): Inductor in torch 2.11 fails to lower one when
# the scale's (size-1) last dimension is laid out with a stride other than 1 ("self.stride(-1)
# must be 1 to view Float as Char", H200, 2026-12-02), both for a view in the write and for the
# view-inverse of an in-place write through a float32 view of the buffer.

_EAGER_VIEWS = sys.byteorder == "little"
"""Outside torch.compile the bytes are a dtype view of a contiguous copy: the same bits as the
arithmetic (IEEE-754 float32, little-endian), without its dozen launches per call. On the CPU the
arithmetic was a third of the 8-bit cache's decode overhead (SmolLM2-135M, 2-core box: 1.3 s of
8.5 s for 48 tokens under cProfile, `scale_from_bytes` and `scale_to_bytes`)."""


def scale_to_bytes(scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """scale (..., 1) float32, positive and normal (≥ 2**-126) → (..., 4) ``dtype`` (int8 or
    uint8): its IEEE-754 bits, little-endian, from frexp: scale = m·2**e, m in [0.5, 1) →
    biased exponent e + 126, fraction (2m − 1)·2**23 (exact integers)."""
    if _EAGER_VIEWS and not torch.compiler.is_compiling():  # the same bytes, one copy (CPU decode)
        return scale.to(torch.float32).contiguous().view(dtype)
    mantissa, exponent = torch.frexp(scale)
    fraction = ((mantissa * 2 - 1) * 2 ** 23).to(torch.int32)
    bits = (exponent.to(torch.int32) + 126) * 2 ** 23 + fraction
    octets = torch.cat([(bits >> shift) & 255 for shift in (0, 8, 16, 24)], dim=-1)
    if dtype == torch.int8:
        octets = ((octets + 128) & 255) - 128  # two's complement of 128…255
    return octets.to(dtype)


def scale_from_bytes(raw: torch.Tensor) -> torch.Tensor:
    """(..., 4) int8 or uint8 bytes made by `scale_to_bytes` → the scale (..., 1) float32:
    (1 + fraction·2**-23)·2**(exponent − 127) (exact on the CPU; torch.ldexp's power of two on
    CUDA is exact for these integer exponents too, and at worst an ulp off)."""
    if _EAGER_VIEWS and not torch.compiler.is_compiling():  # the same value, one copy (CPU decode)
        return raw.contiguous().view(torch.float32)
    octets = raw.to(torch.int32) & 255
    bits = (octets[..., 0:1] | (octets[..., 1:2] << 8) | (octets[..., 2:3] << 16)
            | (octets[..., 3:4] << 24))
    fraction = (bits & (2 ** 23 - 1)).to(torch.float32)
    return torch.ldexp(1 + fraction * 2.0 ** -23, (bits >> 23) - 127)


def dequantize(packed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """packed (..., d + SCALE_BYTES) → (..., d) in ``dtype``: codes × scale, computed in float32;
    still in the rotated basis (``rotate`` of it gives the original vectors back)."""
    codes, scale = unpack(packed)
    return (codes.float() * scale).to(dtype)


def dequantize_eager(packed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`dequantize` for code that runs eagerly (the blockwise prefill, once per block of the past):
    the scale is read through a float32 view of its four bytes, so the whole thing is two kernels
    (codes × scale, the cast) instead of the twenty-odd small ones of `scale_from_bytes` — the
    launches, not the bytes, are what a block costs. The same values (the bits are the scale's).
    Falls back to `dequantize` where the view does not apply: while torch.compile traces (the
    Inductor failure noted above), a big-endian host, or bytes not 4-aligned in memory."""
    d = packed.shape[-1] - SCALE_BYTES
    if torch.compiler.is_compiling() or sys.byteorder != "little":
        return dequantize(packed, dtype)
    try:
        scale = packed[..., d:].view(torch.float32)  # (..., 1)
    except RuntimeError:  # a storage offset or stride not a multiple of 4 bytes
        return dequantize(packed, dtype)
    codes = packed[..., :d]
    if packed.dtype == torch.uint8:  # float8 does not promote: widen it first
        codes = codes.view(torch.float8_e4m3fn).float()
    return (codes * scale).to(dtype)


def packed_dim(head_dim: int) -> int:
    """Last dimension of a packed tensor for vectors of ``head_dim`` numbers."""
    return head_dim + SCALE_BYTES
