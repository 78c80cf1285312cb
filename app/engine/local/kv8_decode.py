"""Decode attention over the 8-bit KV cache that reads each code once (issue 16, item 1).

The 8-bit cache keeps each key and value vector as ``head_dim`` int8 codes and its float32 scale
(app.engine.local.kv_quant). The first decode path cast the codes to bf16 and multiplied with
``torch.matmul``; Inductor lowers that to an ``aten.bmm`` on a materialized bf16 copy of the
whole cache (checked with ``torch._inductor.utils.run_and_get_code``: a (B, Hkv, S, d) bf16
buffer before ``extern_kernels.bmm``), so every step wrote and re-read 2 bytes per code besides
reading the byte itself — more traffic than a 16-bit cache, and a transient of
2 · Hkv · S · d bytes per layer (200 MB at 97.5k tokens for Llama-3-8B, H200, 2026-12-02: the
8-bit card's peak ran 160 MB over its projection, tests/benchmarks/results/
memory_foresight_h200_kv8.json).

``headroom::kv8_decode`` is one query token per sequence against the packed cache:

* CUDA with Triton and int8 codes: split-KV flash decoding (Dao et al., "Flash-Decoding for
  long-context inference", 2023). Each program takes one (batch, KV head) and a span of keys,
  loads BLOCK_N codes and their scales at a time, forms the g query rows of that KV head (GQA
  packed, padded to 16 rows for ``tl.dot``) against them with an online softmax, and writes its
  partial output, maximum and sum; `_merge_splits` combines the splits by their maxima. Codes are
  cast to bf16 in registers (exact: |code| ≤ 127) and products accumulate in float32. The cache
  is read once, one byte per element plus 4 bytes of scale per vector.
* Anywhere else (CPU, fp8 codes, no Triton): `reference`, the same math in torch over blocks of
  REFERENCE_BLOCK keys, so no more than one block is ever cast.

Both take the query already rotated into the cache's basis and return the output in that basis
(the caller rotates, as before). The op is opaque to torch.compile and captured in the decode
step's CUDA graph (compiled_decode). Shapes: query (B, Hkv, g, d) in the compute dtype;
key/value (B, Hkv, S, d + 4) int8 or uint8; valid (B, S) bool (keys the query may see) or None;
scale: the softmax scale. Returns (B, Hkv, g, d) in the query's dtype.
"""

from __future__ import annotations

import torch

from app.engine.local import kv_quant

try:  # Triton ships with torch on CUDA; absent on CPU-only installs (CI)
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - any import failure means "no Triton"
    triton = tl = None

REFERENCE_BLOCK = 8192
"""Keys per block of the torch path: its transient is 2 · g · REFERENCE_BLOCK · d bytes."""
BLOCK_N = 64
"""Keys per tile of the Triton kernel."""
_ROWS = 16  # tl.dot wants at least 16 rows: the g query rows of a KV head, padded


def reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None,
              scale: float) -> torch.Tensor:
    """The attention of `kv8_decode` in torch, block by block (see the module docstring for the
    shapes). Scores in float32 for every key (g · S floats), the codes cast one block at a time."""
    b, h, g, d = query.shape
    span = key.shape[2]
    scores = torch.empty((b, h, g, span), dtype=torch.float32, device=query.device)
    for start in range(0, span, REFERENCE_BLOCK):
        codes, key_scale = kv_quant.unpack(key[:, :, start:start + REFERENCE_BLOCK])
        part = torch.matmul(query, codes.to(query.dtype).transpose(2, 3)).float()
        scores[..., start:start + codes.shape[2]] = part * (key_scale.transpose(2, 3) * scale)
    if valid is not None:
        scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.zeros((b, h, g, value.shape[-1] - kv_quant.SCALE_BYTES), dtype=torch.float32,
                      device=query.device)
    for start in range(0, span, REFERENCE_BLOCK):
        codes, value_scale = kv_quant.unpack(value[:, :, start:start + REFERENCE_BLOCK])
        weights = probs[..., start:start + codes.shape[2]] * value_scale.transpose(2, 3)
        out += torch.matmul(weights.to(query.dtype), codes.to(query.dtype)).float()
    return out.to(query.dtype)


def triton_applies(query: torch.Tensor, key: torch.Tensor) -> bool:
    """The Triton kernel takes these inputs: CUDA, Triton present, int8 codes, a power-of-two
    head_dim of 16-256, at most 16 query rows per KV head, bf16 or fp16 queries."""
    d = query.shape[-1]
    return (triton is not None and query.is_cuda and key.dtype == torch.int8 and 16 <= d <= 256
            and d & (d - 1) == 0 and query.shape[2] <= _ROWS
            and query.dtype in (torch.bfloat16, torch.float16))


def splits_for(span: int, programs: int, sms: int = 132) -> int:
    """Key spans per (batch, KV head): enough programs to fill about two waves of ``sms``
    streaming multiprocessors, each span at least 4 tiles."""
    most = max(1, -(-span // (4 * BLOCK_N)))
    return max(1, min(most, -(-2 * sms // max(programs, 1))))


if triton is not None:
    @triton.jit
    def _split_kernel(q_ptr, k_ptr, v_ptr, valid_ptr, acc_ptr, max_ptr, sum_ptr,
                      span, split_len, heads, scale,
                      stride_qb, stride_qh, stride_qg,
                      stride_kb, stride_kh, stride_ks,
                      stride_vb, stride_vh, stride_vs, stride_valid,
                      splits, G: tl.constexpr, ROWS: tl.constexpr, D: tl.constexpr,
                      BLOCK: tl.constexpr, HAS_VALID: tl.constexpr):
        bh = tl.program_id(0)
        split = tl.program_id(1)
        b = bh // heads
        h = bh % heads
        rows = tl.arange(0, ROWS)
        dims = tl.arange(0, D)
        q = tl.load(q_ptr + b * stride_qb + h * stride_qh + rows[:, None] * stride_qg + dims[None, :],
                    mask=rows[:, None] < G, other=0.0)
        m_i = tl.full([ROWS], -1.0e30, tl.float32)
        l_i = tl.zeros([ROWS], tl.float32)
        acc = tl.zeros([ROWS, D], tl.float32)
        start = split * split_len
        end = tl.minimum(start + split_len, span)
        k_base = k_ptr + b * stride_kb + h * stride_kh
        v_base = v_ptr + b * stride_vb + h * stride_vh
        for n0 in tl.range(0, split_len, BLOCK):  # split_len: a multiple of BLOCK
            keys = start + n0 + tl.arange(0, BLOCK)
            inside = keys < end
            codes = tl.load(k_base + keys[:, None] * stride_ks + dims[None, :], mask=inside[:, None], other=0)
            k_scale = _scale(k_base + keys * stride_ks + D, inside)
            s = tl.dot(q, tl.trans(codes.to(q.dtype)))  # (ROWS, BLOCK) float32
            s = s * (k_scale * scale)[None, :]
            seen = inside
            if HAS_VALID:
                seen = seen & (tl.load(valid_ptr + b * stride_valid + keys, mask=inside, other=0) != 0)
            s = tl.where(seen[None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            v_codes = tl.load(v_base + keys[:, None] * stride_vs + dims[None, :], mask=inside[:, None], other=0)
            v_scale = _scale(v_base + keys * stride_vs + D, inside)
            acc = acc * alpha[:, None] + tl.dot((p * v_scale[None, :]).to(q.dtype), v_codes.to(q.dtype))
            m_i = m_new
        out = (bh * splits + split) * ROWS
        tl.store(acc_ptr + (out + rows[:, None]) * D + dims[None, :], acc)
        tl.store(max_ptr + out + rows, m_i)
        tl.store(sum_ptr + out + rows, l_i)

    @triton.jit
    def _scale(ptr, inside):
        """The float32 scale whose 4 little-endian bytes start at ``ptr`` (one per key)."""
        b0 = tl.load(ptr, mask=inside, other=0).to(tl.int32) & 255
        b1 = tl.load(ptr + 1, mask=inside, other=0).to(tl.int32) & 255
        b2 = tl.load(ptr + 2, mask=inside, other=0).to(tl.int32) & 255
        b3 = tl.load(ptr + 3, mask=inside, other=0).to(tl.int32) & 255
        return (b0 | (b1 << 8) | (b2 << 16) | (b3 << 24)).to(tl.float32, bitcast=True)


def _merge_splits(acc: torch.Tensor, maxima: torch.Tensor, sums: torch.Tensor) -> torch.Tensor:
    """acc (P, splits, rows, d), maxima and sums (P, splits, rows) float32 → (P, rows, d): each
    split's partial output weighted by exp(its max − the overall max), over the weighted sums."""
    top = maxima.amax(dim=1, keepdim=True)
    weight = torch.exp(maxima - top)
    total = (sums * weight).sum(dim=1)
    return (acc * weight[..., None]).sum(dim=1) / total.clamp_min(1e-30)[..., None]


def _triton(query, key, value, valid, scale: float) -> torch.Tensor:
    b, h, g, d = query.shape
    span = key.shape[2]
    splits = splits_for(span, b * h)
    split_len = -(-span // splits)
    split_len = -(-split_len // BLOCK_N) * BLOCK_N
    acc = torch.empty((b * h, splits, _ROWS, d), dtype=torch.float32, device=query.device)
    maxima = torch.empty((b * h, splits, _ROWS), dtype=torch.float32, device=query.device)
    sums = torch.empty_like(maxima)
    has_valid = valid is not None
    valid = valid.to(torch.uint8) if has_valid else maxima  # any pointer when unused
    _split_kernel[(b * h, splits)](
        query, key, value, valid, acc, maxima, sums, span, split_len, h, float(scale),
        query.stride(0), query.stride(1), query.stride(2),
        key.stride(0), key.stride(1), key.stride(2),
        value.stride(0), value.stride(1), value.stride(2), valid.stride(0) if has_valid else 0, splits,
        G=g, ROWS=_ROWS, D=d, BLOCK=BLOCK_N, HAS_VALID=has_valid, num_warps=4)
    out = _merge_splits(acc, maxima, sums)[:, :g]
    return out.view(b, h, g, d).to(query.dtype)


@torch.library.custom_op("headroom::kv8_decode", mutates_args=())
def kv8_decode(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, valid: torch.Tensor | None,
               scale: float) -> torch.Tensor:
    """(B, Hkv, g, d) attention output of one query token per sequence over the packed 8-bit
    cache (module docstring): the Triton kernel where `triton_applies`, else `reference`."""
    query = query.contiguous()
    if triton_applies(query, key) and key.stride(-1) == 1 and value.stride(-1) == 1:
        return _triton(query, key, value, valid, scale)
    return reference(query, key, value, valid, scale)


@kv8_decode.register_fake
def _(query, key, value, valid, scale):
    return torch.empty_like(query, memory_format=torch.contiguous_format)
