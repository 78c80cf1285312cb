"""SDPA for grouped-query attention without expanding the KV heads: "sdpa+gqa-packed".

transformers' ``sdpa`` path (integrations/sdpa_attention.py) can only let torch handle GQA
(``enable_gqa``) when no attention mask is passed, because on CUDA the fused kernels that take a
mask do not take GQA. Chunked prefill always has a mask (the chunk attends to the cache), so it
falls back to ``repeat_kv``: every chunk of every layer materializes the key and value heads
``num_attention_heads / num_key_value_heads`` times over the whole cache — 4× for Llama-3-8B,
about 16 KB per cached token, ~0.8 GiB at 49k tokens (shared/gpu/README.md, read off the H200's
OOM messages). Decode steps avoid it in eager mode only: transformers packs a single query
(``pack_gqa``) except inside ``torch.compile``, where the compiled decode step would copy the
whole static cache g times per layer per token; this module packs decode steps itself.

The packed path does for a whole chunk what ``pack_gqa`` does for one token: the g query heads
that share a KV head are moved into the sequence dimension, ``(B, Hq, c, d) → (B, Hkv, g·c, d)``,
so SDPA sees as many heads as the cache holds and K/V are never copied. The mask is repeated g
times along the queries, built directly as an additive mask in the compute dtype (torch would
otherwise convert a boolean mask to a float copy itself) whose rows are padded to 16 elements so
that the memory-efficient kernel takes it without another padded copy (torch
``aten/src/ATen/native/transformers/attention.cpp``, ``preprocess_mask``). Its transient cost is
g·c·span·dtype bytes per layer call instead of 2·Hq·d·span·dtype for the expanded K/V: 4×
less for Llama-3-8B at c = 256. Everything else (no mask, single query, position bias, softcap,
models without GQA) is handed to transformers' own ``sdpa_attention_forward`` unchanged.

Prefill into a preallocated static cache (issue 12, item 4): the caller passes ``kv_span`` (the
filled span of the cache after this chunk, tokens) through the model's forward kwargs; the chunk
then attends to the first ``kv_span`` keys only instead of the whole capacity, and, when torch's
flash kernel takes it (CUDA, GQA through ``enable_gqa``), with no mask at all: causal for the
first chunk of an empty cache, ``causal_lower_right`` for later chunks (the chunk's queries are
the last ``c`` of ``kv_span`` positions). Where flash does not apply (the CPU, other dtypes) the
packed masked path runs over the span.

8-bit KV (issue 16): a static cache of `static_cache.QuantizedSpanLayer`s hands this function
packed byte tensors (8-bit codes and one float32 scale per vector of the Hadamard-rotated keys and
values, app.engine.local.kv_quant). The query is rotated the same way (dot products unchanged)
and the output rotated back. A decode step folds the scales into the two products — scores =
(q · codesᵀ) × key scale, out = (probs × value scale) · codes — so the cache is read as bytes and
never dequantized as a whole; on CUDA both decode and prefill run app.engine.local.split_kv_attention's
Triton kernel, which reads each code once. Elsewhere (or when that kernel does not apply) a
prefill chunk attends to the past in blocks of ``KV8_PREFILL_BLOCK`` keys
(`blockwise_8bit_prefill`): each block is dequantized alone, attended
without a mask by a kernel that also returns the log-sum-exp, and the pieces are merged by it
(the split-K merge of FlashAttention / FlashDecoding), so the transient is one block, not the
span (at 98k tokens of Llama-3-8B: 16 MiB instead of 401 MB per layer call; counted by
app.engine.memory.prefill_spike). Float tensors (16-bit KV) take exactly the code below as before.

The result is the same attention as ``sdpa`` and ``eager`` (tests/engine/test_attention.py);
it is reported as "sdpa+gqa-packed"; the span path's kernel is torch SDPA's own flash kernel.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from app.engine.local import kv_quant, split_kv_attention
from app.engine.memory import kv_layout

PACKED_SDPA = "sdpa+gqa-packed"
"""The attention implementation name registered with transformers and shown in the LoadReport."""

KV_SPAN_KWARG = "kv_span"
"""Forward kwarg (int, tokens): keys [0, kv_span) of the static cache are filled after this
chunk; the chunk's queries are the last positions of that span."""

_MASK_ALIGN = 16  # elements: torch's memory-efficient kernel pads a bias whose rows are not aligned
MAX_PACKED_ROWS = 1024
"""Packed query rows (g × queries) per SDPA call: a longer chunk is attended in slices of
``query_slice`` queries, so the packed mask never exceeds 1,024 × span entries whatever the
prefill chunk (Llama-3-8B, g = 4: slices of 256 queries, 128 blocks of 64 rows for 132 SMs)."""


def query_slice(groups: int, chunk_tokens: int) -> int:
    """Queries per packed SDPA call: min(chunk, MAX_PACKED_ROWS // groups), at least 1."""
    return max(1, min(chunk_tokens, MAX_PACKED_ROWS // max(groups, 1)))


def packed_mask_bytes(groups: int, chunk_tokens: int, span_tokens: int, dtype_bytes: int) -> int:
    """Bytes of the additive mask one packed attention call allocates for a chunk of
    ``chunk_tokens`` queries over ``span_tokens`` keys: groups × q × span (rounded up to 16) ×
    dtype bytes plus the q × span boolean inversion it is built from, q = query_slice(groups,
    chunk). Llama-3-8B, 128-token chunk, 49,152 keys, bf16: 4 × 128 × 49,152 × 2 + 128 × 49,152
    = 54 MiB (the repeat_kv expansion it replaces: 2 × 32 × 128 × 49,152 × 2 = 768 MiB)."""
    q = query_slice(groups, chunk_tokens)
    padded = -(-span_tokens // _MASK_ALIGN) * _MASK_ALIGN
    return groups * q * padded * dtype_bytes + q * span_tokens


def _packed_additive_mask(mask: torch.Tensor, groups: int, dtype: torch.dtype) -> torch.Tensor:
    """(B, 1, c, S) bool or additive mask → (B, 1, groups·c, S) additive mask in ``dtype``, row
    j·c + i equal to row i; rows padded to a multiple of 16 elements in memory (a view is returned)."""
    b, _, c, s = mask.shape
    padded = -(-s // _MASK_ALIGN) * _MASK_ALIGN
    packed = torch.zeros((b, 1, groups, c, padded), dtype=dtype, device=mask.device)[..., :s]
    if mask.dtype == torch.bool:
        packed.masked_fill_(mask.logical_not().unsqueeze(2), float("-inf"))
    else:
        packed.copy_(mask.unsqueeze(2).to(dtype))
    return packed.view(b, 1, groups * c, s)


def gqa_packed_sdpa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Attention with the transformers AttentionInterface signature.

    query (B, Hq, c, d), key/value (B, Hkv, S, d), attention_mask (B, 1, c, S) bool or additive,
    or None. Returns (B, c, Hq, d) and None (no attention weights). With Hq = g·Hkv, g > 1: a
    decode step (c = 1) runs SDPA over (B, Hkv, g, d) packed queries, also inside
    ``torch.compile``; a masked chunk (c > 1) runs over (B, Hkv, g·q, d) packed queries,
    q = query_slice(g, c) per call. K/V are never expanded. Anything else calls transformers'
    ``sdpa_attention_forward``.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    b, hq, c, d = query.shape
    hkv = key.shape[1]
    groups = hq // hkv if hkv else 1
    span = kwargs.pop(KV_SPAN_KWARG, None)
    if kv_quant.is_packed(key):  # 8-bit KV: dequantized on read, in the rotated basis
        if c == 1 and _can_pack_decode(query, key, value, attention_mask, groups, kwargs):
            return _packed_decode_8bit(query, key, value, attention_mask, scaling, groups), None
        if span is not None and c > 1 and _can_slice_span(module, key, span, c, kwargs):
            if _sdpa_lse_applies(query, key, groups):
                return blockwise_8bit_prefill(query, key, value, span, scaling, _sdpa_with_lse), None
            # no kernel with a log-sum-exp here (CUDA float32, say): the whole span, dequantized
            key, value = key[:, :, :span], value[:, :, :span]
            kwargs[KV_SPAN_KWARG] = span
        out, _ = gqa_packed_sdpa_forward(
            module, kv_quant.rotate(query), kv_quant.dequantize(key, query.dtype),
            kv_quant.dequantize(value, query.dtype), attention_mask, dropout, scaling, is_causal, **kwargs)
        return kv_quant.rotate(out), None
    if span is not None and c > 1 and _can_slice_span(module, key, span, c, kwargs):
        key, value = key[:, :, :span], value[:, :, :span]
        if attention_mask is not None and attention_mask.dim() == 4:
            attention_mask = attention_mask[..., :span]
        flash = _flash_span(query, key, value, scaling, groups)
        if flash is not None:
            return flash, None
    if c == 1 and _can_pack_decode(query, key, value, attention_mask, groups, kwargs):
        return _packed_decode(query, key, value, attention_mask, dropout, scaling, groups), None
    if (attention_mask is None or c == 1 or groups <= 1 or hq != groups * hkv
            or attention_mask.dim() != 4 or attention_mask.shape[1] != 1
            or kwargs.get("position_bias") is not None or kwargs.get("softcap") is not None
            or key.shape[-1] != value.shape[-1]):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    step = query_slice(groups, c)
    pieces = []
    for start in range(0, c, step):
        q = query[:, :, start:start + step]
        n = q.shape[2]
        mask = _packed_additive_mask(attention_mask[:, :, start:start + step], groups, query.dtype)
        out = torch.nn.functional.scaled_dot_product_attention(
            q.reshape(b, hkv, groups * n, d), key, value, attn_mask=mask, dropout_p=dropout,
            scale=scaling)
        del mask
        pieces.append(out.view(b, hq, n, value.shape[-1]))
    out = pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=2)
    return out.transpose(1, 2).contiguous(), None


AttendWithLSE = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool, float],
                         tuple[torch.Tensor, torch.Tensor]]
"""(query (B, Hq, n, d), key (B, Hkv, m, d), value (B, Hkv, m, dv), causal, scale) →
(out (B, Hq, n, dv), lse (B, Hq, n) float32: the natural log of Σ exp(scale · q·k) per query).
Hkv divides Hq (GQA heads shared as in `repeat_kv`); causal is only asked for with n == m."""


def blockwise_8bit_prefill(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, span: int,
                           scaling: float | None, attend: AttendWithLSE) -> torch.Tensor:
    """A prefill chunk over packed 8-bit keys and values, never dequantizing more than one block.
    Where split_kv_attention's kernel applies (CUDA, int8) the chunk goes to it whole instead (one
    launch, nothing dequantized); ``attend`` runs only for the blocks here.

    query (B, Hq, c, d) in the compute dtype, the chunk at positions [span − c, span); key/value
    packed (B, Hkv, S ≥ span, d + SCALE_BYTES). The chunk's own c keys are attended causally
    (square), the past [0, span − c) in blocks of ``kv_layout.KV8_PREFILL_BLOCK`` keys without
    a mask (every past key is visible to every query of the chunk). Pieces are merged by their
    log-sum-exp in float32: with L = logaddexp(L₁, L₂), out = out₁·e^(L₁−L) + out₂·e^(L₂−L).
    Transient: one block's K/V in the compute dtype (Hkv·(dk+dv)·block·b), the chunk's own K/V
    (Hkv·(dk+dv)·c·b), the float32 sum (c·Hq·dv·4) and one piece (c·Hq·dv·b) — what
    app.engine.memory.prefill_spike counts. Returns (B, c, Hq, dv) in the original basis."""
    d = query.shape[-1]
    scale = scaling if scaling is not None else d ** -0.5
    c, dtype = query.shape[2], query.dtype
    past = span - c
    q = kv_quant.rotate(query)
    fused = split_kv_attention.kv8_prefill(q, key, value, span, scale)  # CUDA: one kernel, codes read once
    if fused is not None:
        del q  # before the rotation back: the kernel path's transient is 3 · c·Hq·dv·b at most
        return kv_quant.rotate(fused)
    out, lse = attend(q, kv_quant.dequantize_eager(key[:, :, past:span], dtype),
                      kv_quant.dequantize_eager(value[:, :, past:span], dtype), True, scale)
    total = out.float()
    del out
    block = kv_layout.KV8_PREFILL_BLOCK
    for start in range(0, past, block):
        end = min(start + block, past)
        piece, piece_lse = attend(q, kv_quant.dequantize_eager(key[:, :, start:end], dtype),
                                  kv_quant.dequantize_eager(value[:, :, start:end], dtype), False, scale)
        merged = torch.logaddexp(lse, piece_lse)
        total.mul_(torch.exp(lse - merged).unsqueeze(-1))
        total.addcmul_(piece, torch.exp(piece_lse - merged).unsqueeze(-1))
        lse = merged
        del piece
    out = total.to(dtype).transpose(1, 2).contiguous()
    del total  # before the rotation's float32 copies
    return kv_quant.rotate(out)


def _sdpa_lse_applies(query: torch.Tensor, key: torch.Tensor, groups: int) -> bool:
    """torch has a flash kernel returning the log-sum-exp for these inputs (GQA included): on the
    CPU always, on CUDA when its flash kernel takes the dtype and head size."""
    if query.shape[1] != groups * key.shape[1]:
        return False
    if query.device.type == "cpu":
        return True
    if query.device.type != "cuda":
        return False
    from torch.backends.cuda import SDPAParams, can_use_flash_attention

    d = query.shape[-1]
    if d % 8:  # SDPA pads such heads before its flash kernel; the raw kernel here is not padded
        return False
    # keys as a past block will be: dequantized, unmasked, not causal (torch refuses is_causal for
    # c queries over other than c keys; the own-chunk call is square, which it takes)
    probe = query.new_empty((query.shape[0], key.shape[1], 1, d))
    try:
        return can_use_flash_attention(SDPAParams(query, probe, probe, None, 0.0, False, groups > 1), False)
    except (RuntimeError, TypeError):
        return False


def _sdpa_with_lse(query, key, value, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """`AttendWithLSE` on torch's flash kernels (``aten._scaled_dot_product_flash_attention`` on
    CUDA, its ``_for_cpu`` twin on the CPU); both take GQA keys as they are."""
    if query.device.type == "cpu":
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(query, key, value, 0.0, causal,
                                                                          scale=scale)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention(query, key, value, 0.0, causal, False,
                                                                  scale=scale)[:2]
    return out, lse[..., :query.shape[2]]  # (B, Hq, n); the slice is a no-op view unless padded


def _can_slice_span(module, key, span, c: int, kwargs) -> bool:
    """The chunk attends causally to the first ``span`` keys and nothing else: no sliding window,
    no bias or softcap, and ``c <= span <= cache length``."""
    return (isinstance(span, int) and c <= span <= key.shape[2]
            and getattr(module, "sliding_window", None) is None and kwargs.get("sliding_window") is None
            and kwargs.get("position_bias") is None and kwargs.get("softcap") is None
            and getattr(module, "is_causal", True))


def _flash_span(query, key, value, scaling, groups: int) -> torch.Tensor | None:
    """Causal attention of the c queries at the end of a span of S keys, on torch SDPA's flash
    kernel without a mask (upper-left causal when c == S, ``causal_lower_right`` otherwise).
    query (B, Hq, c, d), key/value (B, Hkv, S, d). Returns (B, c, Hq, d), or None when the flash
    kernel does not take these inputs (CPU, dtype, head size)."""
    if query.device.type != "cuda":
        return None
    from torch.backends.cuda import SDPAParams, can_use_flash_attention
    from torch.nn.attention.bias import causal_lower_right

    c, span = query.shape[2], key.shape[2]
    try:
        # as torch's own CausalBias dispatch checks it: is_causal only for the square case
        params = SDPAParams(query, key, value, None, 0.0, c == span, groups > 1)
        if not can_use_flash_attention(params, False):
            return None
        sdpa = torch.nn.functional.scaled_dot_product_attention
        if c == span:
            out = sdpa(query, key, value, is_causal=True, scale=scaling, enable_gqa=groups > 1)
        else:
            out = sdpa(query, key, value, attn_mask=causal_lower_right(c, span), scale=scaling,
                       enable_gqa=groups > 1)
    except (RuntimeError, TypeError):  # a torch without flash GQA here: the packed path runs
        return None
    return out.transpose(1, 2).contiguous()


def _can_pack_decode(query, key, value, attention_mask, groups: int, kwargs) -> bool:
    """One query, GQA, a mask shared by all heads (or none), no bias or softcap."""
    return (groups > 1 and query.shape[1] == groups * key.shape[1]
            and (attention_mask is None or (attention_mask.dim() == 4 and attention_mask.shape[1] == 1))
            and kwargs.get("position_bias") is None and kwargs.get("softcap") is None
            and key.shape[-1] == value.shape[-1])


def _packed_decode(query, key, value, attention_mask, dropout: float, scaling, groups: int) -> torch.Tensor:
    """Decode step, query (B, Hq, 1, d): the g query heads of a KV head become g query rows,
    (B, Hkv, g, d), against the unexpanded cache; mask (B, 1, 1, S) broadcasts over them.
    Returns (B, 1, Hq, d).

    Why not SDPA here: transformers packs a single query itself (``pack_gqa``) only outside
    ``torch.compile``; inside the compiled step it calls ``repeat_kv`` and copies the whole
    static cache g times per layer per token (H200, Llama-3-8B NF4, 2,048 slots: 0.74 ms of a
    5.8 ms step). Packed g-row queries do reach SDPA, but its fused kernels tile 64 query rows
    and do not split the keys, so 8 heads keep 8 of 132 SMs busy (1.44 ms per step,
    tests/benchmarks/results/speed_h200.json). Attention over one query is two batched
    matrix-vector products, memory-bound on reading K and V once: written out, as transformers'
    ``eager_attention_forward`` does (scores in the compute dtype, softmax in float32), it runs
    as cuBLAS batched GEMMs that spread over the cache length, fused by inductor when compiled.
    On CUDA with Triton a boolean or absent mask goes instead to ``headroom::kv16_decode``: a CUDA
    split-KV kernel that merges in its own launch (app.engine.local.kv16_mma), else the 8-bit
    cache's Triton kernel reading 16-bit keys, one launch and a merge instead of three
    (app.engine.local.split_kv_attention). ``dropout`` is ignored (inference only).
    """
    b, hq, _, d = query.shape
    scale = scaling if scaling is not None else d ** -0.5
    packed = query.reshape(b, key.shape[1], groups, d)
    boolean = attention_mask is None or attention_mask.dtype == torch.bool
    if boolean and split_kv_attention.kv16_applies(packed, key, value):
        valid = None if attention_mask is None else attention_mask[:, 0, 0, :]
        out = split_kv_attention.kv16_decode(packed, key, value, valid, float(scale))  # the split-KV kernel
        return out.reshape(b, hq, 1, out.shape[-1]).transpose(1, 2).contiguous()
    scores = torch.matmul(packed, key.transpose(2, 3)) * scale
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(attention_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attention_mask
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(value.dtype)
    out = torch.matmul(probs, value)  # (B, Hkv, g, dv)
    return out.reshape(b, hq, 1, value.shape[-1]).transpose(1, 2).contiguous()


def _packed_decode_8bit(query, key, value, attention_mask, scaling, groups: int) -> torch.Tensor:
    """`_packed_decode` over packed 8-bit keys and values (B, Hkv, S, d + SCALE_BYTES): the g query
    rows of each KV head go to ``headroom::kv8_decode`` (app.engine.local.split_kv_attention: each code
    read once, never cast as a whole cache; it rotates the query into the cache's basis and the
    output back itself, inside its kernels); a mask that is not boolean (an additive bias) takes
    the torch products below, each vector's scale folded into the scores (keys) or the
    probabilities (values). Returns (B, 1, Hq, dv)."""
    b, hq, _, d = query.shape
    scale = scaling if scaling is not None else d ** -0.5
    if attention_mask is None or attention_mask.dtype == torch.bool:
        valid = None if attention_mask is None else attention_mask[:, 0, 0, :]
        out = split_kv_attention.kv8_decode(query.reshape(b, key.shape[1], groups, d), key, value, valid, float(scale))
        return out.reshape(b, hq, 1, out.shape[-1]).transpose(1, 2).contiguous()
    q = kv_quant.rotate(query).reshape(b, key.shape[1], groups, d)
    key_codes, key_scale = kv_quant.unpack(key)
    value_codes, value_scale = kv_quant.unpack(value)
    scores = torch.matmul(q, key_codes.to(q.dtype).transpose(2, 3)).float()
    scores = scores * (key_scale.transpose(2, 3) * scale) + attention_mask  # (B, Hkv, g, S) float32
    probs = torch.softmax(scores, dim=-1) * value_scale.transpose(2, 3)
    out = torch.matmul(probs.to(query.dtype), value_codes.to(query.dtype))  # (B, Hkv, g, dv)
    return kv_quant.rotate(out.reshape(b, hq, 1, out.shape[-1]).transpose(1, 2).contiguous())


def register_packed_sdpa() -> str:
    """Register "sdpa+gqa-packed" with transformers' AttentionInterface (the attention function)
    and AttentionMaskInterface (masks are built as for "sdpa": without that registration
    transformers builds *no* mask for an unknown name, and chunked prefill would see the future).
    Idempotent. Returns the name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(PACKED_SDPA, gqa_packed_sdpa_forward)
    AttentionMaskInterface.register(PACKED_SDPA, sdpa_mask)
    return PACKED_SDPA


def uses_gqa(config) -> bool:
    """True when the (text) config has fewer KV heads than query heads."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    heads = getattr(text, "num_attention_heads", None)
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    return bool(heads and kv_heads and kv_heads < heads)


def enable_packed_sdpa(model) -> str:
    """Switch a loaded model from "sdpa" to "sdpa+gqa-packed" when it uses GQA; leave any other
    attention (eager, FlashAttention, a model without GQA or one that cannot switch) as it is.
    Returns the attention implementation now active, read back from the model's config."""
    active = getattr(model.config, "_attn_implementation", None)
    if active != "sdpa" or not uses_gqa(model.config):
        return active or "unknown"
    register_packed_sdpa()
    try:
        model.set_attn_implementation(PACKED_SDPA)
    except (ValueError, KeyError, ImportError):
        return active
    return getattr(model.config, "_attn_implementation", None) or "unknown"
