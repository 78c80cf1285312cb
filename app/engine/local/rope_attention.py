"""A decode step's rotary embedding, KV cache write and attention as one launch (issue 15).

Why: on the H200's critical path (tests/benchmarks/results/decode_anatomy_h200_fused_norm.json) the
8B step ran, between each layer's q/k/v GEMV and its attention, Inductor's combo kernel that rotates
the query and the key and writes the key and value into the cache: 1.5 µs a layer, 37 µs of a
~2,980 µs step. `kv16_mma.decode_rope` does that work inside the attention launch instead: every block
rotates the query it already loads, and the block whose span holds this token's slot rotates the key,
stores key and value and weighs this token itself.

Where (`applies`, decided while the compiled layer step is traced): HEADROOM_FUSED_ROPE on, a decoder
layer whose attention is transformers' Llama pattern (ATTENTIONS: q/k/v projections, the rotary
embedding of the whole head, the cache update, the attention, o_proj; no q/k norms), a 16-bit span
cache layer (`SpanLayer`), Headroom's packed attention, one token of one sequence on CUDA in 16 bits,
a head shape the CUDA kernel takes. Elsewhere the layer's own forward runs, as before.

``headroom::kv16_rope_decode`` runs the kernel where it serves (built and checked on the device once,
outside a CUDA-graph capture: `kernel_ready`), else `torch_path`: the same rotation, an ``index_copy_``
into the cache and ``headroom::kv16_decode``.
"""

from __future__ import annotations

import logging
import os

import torch

from app.engine.local import kv16_mma, split_kv_attention
from app.engine.local.attention import PACKED_SDPA
from app.engine.local.static_cache import SpanLayer

log = logging.getLogger(__name__)

FUSED_ROPE = os.environ.get("HEADROOM_FUSED_ROPE", "1") != "0"
"""The compiled decode step's attention rotates, writes the cache and attends in one launch where it
`applies` (`attention_forward`); HEADROOM_FUSED_ROPE=0 keeps Inductor's RoPE + cache-write kernel before
``headroom::kv16_decode``. H200, Llama-3-8B NF4 on the app path, two alternating rounds beside llama.cpp
in one call (tests/benchmarks/results/decode_anatomy_h200_fused_rope.json, "second_version"): the step
2.947 against 2.971 ms at 1k and 3.022 against 3.046 at 4k (339.5 / 326.4 against 337.9 / 323.1 tok/s);
the attention adds 11.66 µs a layer to the critical path against 10.59 plus the combo kernel's 1.16. The
unfused arm moved 15 µs between calls: the gain is 10-25 µs a step, faster in all 8 pairs of runs.
The first version, its prologue's loads in two or three dependent trips, added 11.94 µs a layer."""

ATTENTIONS = frozenset({"LlamaAttention", "MistralAttention", "Qwen2Attention"})
"""Attention classes whose forward is `attention_forward`'s steps (transformers 5.x)."""
DEVICE_TYPES = ("cuda",)  # where the step takes the op (the CPU tests add "cpu": the op's torch path)
DTYPES = (torch.bfloat16, torch.float16)  # the kernel's (the CPU tests add float32)

failure = ""
"""Why the fused kernel is not used, once known (it could not be built, failed to launch, or disagreed
with `torch_path` in its check); "" while it is used or not yet tried."""
_checked: set = set()  # (device, dtype, head_dim) whose kernel passed its check


def applies(attention, cache_layer, hidden: torch.Tensor, kwargs: dict) -> bool:
    """`attention_forward` stands in for ``attention``'s forward over ``hidden`` (B, n, H) with the
    decoder layer's ``kwargs``: see the module's docstring. Metadata only (it runs while Dynamo
    traces the layer step)."""
    if not FUSED_ROPE or failure or type(attention).__name__ not in ATTENTIONS or type(cache_layer) is not SpanLayer:
        return False
    if not (split_kv_attention.KV16_KERNEL and kv16_mma.ENABLED and not split_kv_attention.mma_failure):
        return False
    config = getattr(attention, "config", None)
    if getattr(config, "_attn_implementation", None) != PACKED_SDPA or not cache_layer.is_initialized:
        return False
    if not (hidden.device.type in DEVICE_TYPES and hidden.shape[:2] == (1, 1) and hidden.dtype in DTYPES):
        return False
    keys, d = cache_layer.keys, attention.head_dim
    heads = config.num_attention_heads
    if keys.dtype != hidden.dtype or keys.shape[1] != config.num_key_value_heads or heads % keys.shape[1]:
        return False
    if kv16_mma.model_reason(heads // keys.shape[1], d, torch.bfloat16) or keys.shape[-1] != d:
        return False
    embeddings = kwargs.get("position_embeddings")
    if not isinstance(embeddings, tuple) or len(embeddings) != 2 or embeddings[0].shape[-1] != d \
            or embeddings[0].numel() != d:
        return False
    mask = kwargs.get("attention_mask")
    return mask is None or (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.dim() == 4
                            and mask.shape[:3] == (1, 1, 1))


def check(attention, cache_layer) -> None:
    """Build and check the kernel for this layer's device, dtype and head_dim now, in eager code before the
    compiled step is traced, so that `applies` knows of a device it cannot serve (a GPU before Ampere, a
    failed check) before Dynamo puts the op into the graph: inside it the op would run `torch_path`, a
    chain of small kernels slower than Inductor's fused one. A failure is kept in `failure`. Nothing
    when it does not apply, once checked, or while a CUDA graph is captured."""
    if not FUSED_ROPE or failure or type(attention).__name__ not in ATTENTIONS or type(cache_layer) is not SpanLayer \
            or not cache_layer.is_initialized:
        return
    keys = cache_layer.keys
    if keys.device.type == "cuda" and keys.dtype in DTYPES and not kv16_mma.model_reason(1, attention.head_dim,
                                                                                          keys.dtype):
        _variant_ready(keys.device, keys.dtype, attention.head_dim)


def attention_forward(attention, hidden: torch.Tensor, cache_layer, kwargs: dict) -> torch.Tensor:
    """(1, 1, H) the attention block's output (after o_proj) for ``hidden`` (1, 1, H), where `applies`:
    the projections as the model calls them (Headroom's q/k/v group launch takes its rows), then one
    ``headroom::kv16_rope_decode`` that writes this token's key and value into ``cache_layer`` at its fill
    counter (which it does not move: the step's `advance_fill` does)."""
    keys, d = cache_layer.keys, attention.head_dim
    kv_heads = keys.shape[1]
    query = attention.q_proj(hidden)
    key_new = attention.k_proj(hidden)
    value_new = attention.v_proj(hidden)
    cos, sin = kwargs["position_embeddings"]
    mask = kwargs.get("attention_mask")
    valid = None if mask is None else mask[:, 0, 0, :]
    out = torch.ops.headroom.kv16_rope_decode(
        query.view(1, kv_heads, -1, d), key_new.view(1, kv_heads, 1, d), value_new.view(1, kv_heads, 1, d),
        cos.reshape(d), sin.reshape(d), keys, cache_layer.values, cache_layer.cumulative_length, valid,
        float(attention.scaling))
    return attention.o_proj(out.view(1, 1, -1))


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (..., d) rotated: x cos + rotate_half(x) sin (transformers' apply_rotary_pos_emb) with cos, sin
    (d), in float32 and rounded once to x's dtype (each product of two 16-bit values is exact in float32),
    as Inductor's fused kernel and the CUDA kernel compute it."""
    x32, half = x.float(), x.shape[-1] // 2
    turned = torch.cat((-x32[..., half:], x32[..., :half]), dim=-1)
    return (x32 * cos.float() + turned * sin.float()).to(x.dtype)


def torch_path(query, key_new, value_new, cos, sin, key, value, position, valid, scale) -> torch.Tensor:
    """What the kernel computes, in torch: query and key rotated (`rotate`), key and value written at slot
    ``position`` of the cache, then ``headroom::kv16_decode``, this token's slot seen whatever ``valid``
    says of it."""
    slot = position.reshape(1)
    key.index_copy_(2, slot, rotate(key_new, cos, sin))
    value.index_copy_(2, slot, value_new)
    if valid is not None:
        valid = valid.index_fill(1, slot, True)
    return torch.ops.headroom.kv16_decode(rotate(query, cos, sin), key, value, valid, scale)


@torch.library.custom_op("headroom::kv16_rope_decode", mutates_args=("key", "value"))
def kv16_rope_decode(query: torch.Tensor, key_new: torch.Tensor, value_new: torch.Tensor, cos: torch.Tensor,
                     sin: torch.Tensor, key: torch.Tensor, value: torch.Tensor, position: torch.Tensor,
                     valid: torch.Tensor | None, scale: float) -> torch.Tensor:
    """(1, Hkv, g, d) attention output of this token: query (1, Hkv, g, d) and key_new (1, Hkv, 1, d)
    before their rotary embedding, value_new (1, Hkv, 1, d), cos and sin (d) of its position, the 16-bit
    cache key, value (1, Hkv, S, d), written at slot ``position`` (one int64, the fill counter), valid
    (1, S) bool or None. The CUDA kernel (`kv16_mma.decode_rope`) where it serves, else `torch_path`."""
    if kernel_ready(query, key_new, value_new, cos, sin, key, value, position, valid):
        try:
            return kv16_mma.decode_rope(query, key_new, value_new, cos, sin, key, value, position, valid, scale)
        except Exception as exc:  # noqa: BLE001 - a kernel that cannot launch here: torch answers
            if _capturing(query.device):
                raise
            _fail(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
    return torch_path(query, key_new, value_new, cos, sin, key, value, position, valid, scale)


@kv16_rope_decode.register_fake
def _(query, key_new, value_new, cos, sin, key, value, position, valid, scale):
    return torch.empty_like(query, memory_format=torch.contiguous_format)


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _fail(reason: str) -> None:
    global failure
    failure = reason
    log.warning("rotary embedding + cache write + attention (CUDA) not used: %s", reason)


def kernel_ready(query, key_new, value_new, cos, sin, key, value, position, valid) -> bool:
    """The kernel serves these tensors: they suit it (`kv16_mma.shape_reason`, `rope_reason`), the
    16-bit decode kernel serves the device (split_kv_attention.mma_ready), and this one was checked
    against `torch_path` there for this dtype and head_dim (`self_check`, once, outside a CUDA-graph
    capture; a failure is kept in `failure`). Raises nothing."""
    if failure or not query.is_cuda:
        return False
    if kv16_mma.shape_reason(query, key, value, valid) or \
            kv16_mma.rope_reason(query, key_new, value_new, cos, sin, key, position):
        return False
    return _variant_ready(query.device, query.dtype, query.shape[-1])


def _variant_ready(device: torch.device, dtype: torch.dtype, head_dim: int) -> bool:
    """The kernel was checked for this device, dtype and head_dim, or is checked now (never while a CUDA
    graph is captured): the 16-bit decode kernel serves them (split_kv_attention.mma_ready) and `self_check`
    passes. Otherwise why not goes to `failure`. Raises nothing."""
    if (device, dtype, head_dim) in _checked:
        return True
    if _capturing(device):
        return False
    if not split_kv_attention.mma_ready(device, dtype, head_dim):
        _fail(f"the 16-bit decode kernel does not serve here: {split_kv_attention.mma_failure or 'switched off'}")
        return False
    try:
        problem = self_check(device, dtype, head_dim)
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot launch here: the unfused path answers
        problem = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
    if problem:
        _fail(problem)
        return False
    _checked.add((device, dtype, head_dim))
    return True


def self_check(device: torch.device, dtype: torch.dtype, head_dim: int) -> str:
    """"" when the kernel agrees with `torch_path` on ``device``, else how not: 2 KV heads of 4 query heads,
    this token at slot 263 of 300 (in the last of three splits, with holes before it) and at slot 0 of 8
    (one split); the cache rows written bit for bit, the outputs within split_kv_attention's
    SELF_CHECK_TOLERANCE (relative L2)."""
    g = torch.Generator(device=device).manual_seed(head_dim)

    def rand(*shape):
        return torch.randn(*shape, generator=g, device=device).to(dtype)

    for span, slot in ((300, 263), (8, 0)):
        query, key_new, value_new = rand(1, 2, 4, head_dim), rand(1, 2, 1, head_dim), rand(1, 2, 1, head_dim)
        angles = torch.rand(head_dim // 2, generator=g, device=device) * 6.3
        cos, sin = (torch.cat((f(angles), f(angles))).to(dtype) for f in (torch.cos, torch.sin))
        key, value = rand(1, 2, span, head_dim), rand(1, 2, span, head_dim)
        valid = (torch.arange(span, device=device) <= slot).view(1, span)
        valid &= torch.rand(1, span, generator=g, device=device) > 0.2
        position = torch.tensor(slot, dtype=torch.int64, device=device)
        mine = (key.clone(), value.clone())
        got = kv16_mma.decode_rope(query, key_new, value_new, cos, sin, *mine, position, valid, head_dim ** -0.5)
        want = torch_path(query, key_new, value_new, cos, sin, key, value, position, valid, head_dim ** -0.5)
        if not (torch.equal(mine[0], key) and torch.equal(mine[1], value)):
            return f"self-check: the cache written otherwise than the torch path (span {span})"
        error = float((got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-30))
        if error > split_kv_attention.SELF_CHECK_TOLERANCE:
            return f"self-check: relative error {error:.2g} against the torch path (span {span})"
    return ""
