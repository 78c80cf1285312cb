"""FlashAttention-2 over Headroom's preallocated KV cache: "fa2+static" (issue 19, item 3).

transformers' ``flash_attention_2`` cannot be used as it is with a preallocated `StaticCache`:
the attention function receives the keys and values of the whole capacity, filled or not, and
without a 2D attention mask FA2 runs causal over all of it — the unfilled slots included (seen
on transformers 5.24: the mask is None and K/V have the capacity's length). With a 2D mask it
unpads instead, gathering a copy of the filled K/V for every layer call.

Here both phases call FA2's kv-cache entry point, ``flash_attn_with_kvcache(q, k_cache,
v_cache, cache_seqlens=…, causal=True)``, on views of the cache (``(B, Hkv, S, d)`` transposed to
FA2's ``(B, S, Hkv, d)``: only the last dimension must be contiguous, nothing is copied):

* chunked prefill — the chunk's queries are the last ``c`` of ``cache_seqlens`` positions (causal
  is aligned bottom-right), keys beyond the filled length are never read; no mask is built at
  all (SDPA's path builds a bool c × span mask per forward) and GQA heads are shared inside the
  kernel (no ``repeat_kv``);
* decode — one query over the filled length, with FA2's split-KV kernel spreading the keys over
  the SMs and the query heads of one KV head packed as rows (``seqlenq_ngroups_swapped``). It
  runs inside the compiled CUDA-graph step through the custom op ``headroom::fa2_with_kvcache``
  (flash-attn registers only ``flash_attn_func`` / varlen as custom ops; a plain call would
  break the graph). It is the default: in the compiled step on the H200 (Llama-3-8B NF4,
  tests/benchmarks/results/attention_backends_h200.json) it decoded 192.2 / 185.2 / 172.7 tok/s at
  1k / 4k / 16k context against 190.6 / 184.1 / 152.3 for Headroom's packed GQA decode, which
  ``HEADROOM_FA2_DECODE=packed`` keeps (eager, before the compile is ready, FA2 is slower: 16.5
  against 18.5 tok/s).

The filled length comes from ``position_ids`` (batch 1, no padding: position p is cache slot p,
as Headroom's `KVSession` fills it), a device tensor: no host sync, one graph for every length.
Padded batches (a 2D attention mask) are not supported: Headroom never pads. Models with
sliding-window layers keep SDPA (app.engine.loading.placement decides before loading).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from app.engine.local import kv_quant

FA2_STATIC = "fa2+static"
"""The attention implementation registered with transformers. Its name holds no "flash": any
name that does is taken by transformers for its own FA2 path (``is_flash_attention_requested``)."""

FA2_LABEL = "flash_attention_2"
DECODE_OPT_IN = "HEADROOM_FA2_DECODE"
"""Environment: "fa2" (default) or "packed": which kernel the decode step runs."""
DECODE_ATTR = "headroom_fa2_decode"  # set on each attention module: "fa2" or "packed"


@dataclass(frozen=True)
class AttentionPhases:
    """Which kernel runs each phase and why (shown in the LoadReport).

    prefill / decode: short kernel names; reasons: one line each."""

    prefill: str
    decode: str
    prefill_reason: str
    decode_reason: str

    def lines(self) -> tuple[str, str]:
        return (f"prefill: {self.prefill} ({self.prefill_reason})",
                f"decode: {self.decode} ({self.decode_reason})")


FA2_PREFILL_KERNEL = "FlashAttention-2 flash_attn_with_kvcache"
FA2_PREFILL_REASON = "chunks attend over the filled cache in place: no mask, no copy of K/V, GQA inside the kernel"


def choose_phases(decode_setting: str | None) -> AttentionPhases:
    """Per-phase kernels with FA2 active (pure). decode_setting: the HEADROOM_FA2_DECODE value
    (None / "" / "fa2" = FA2's split-KV decode, the faster one compiled; "packed" = Headroom's
    packed GQA decode). Raises ValueError for any other value."""
    setting = (decode_setting or "fa2").strip().lower()
    if setting == "packed":
        return AttentionPhases(FA2_PREFILL_KERNEL, "packed GQA matmul (Headroom)", FA2_PREFILL_REASON,
                               "two batched matmuls over the filled length, fused in the compiled step "
                               f"({DECODE_OPT_IN}=packed)")
    if setting != "fa2":
        raise ValueError(f"{DECODE_OPT_IN} must be 'fa2' or 'packed', not {decode_setting!r}")
    return AttentionPhases(FA2_PREFILL_KERNEL, "FlashAttention-2 split-KV (flash_attn_with_kvcache)",
                           FA2_PREFILL_REASON, "reads only the filled length, splits the keys over every SM, "
                           "one custom op inside the compiled CUDA-graph step; measured faster than the "
                           "packed decode, most at long context (172.7 vs 152.3 tok/s at 16k, H200)")


def sdpa_phases(active: str, decode: tuple[str, str] | None = None) -> AttentionPhases:
    """The phases when FA2 is not active: Headroom's packed SDPA, or whatever ``active`` is. decode:
    (kernel, why) of the decode step's attention where known (split_kv_attention.decode_kernel on
    CUDA); else the packed matmuls."""
    from app.engine.local.attention import PACKED_SDPA

    if active == PACKED_SDPA:
        kernel, why = decode or ("packed GQA matmul (Headroom)", "one query: two batched matmuls, fused when compiled")
        return AttentionPhases("torch SDPA flash kernel over the filled span (packed masked SDPA where it "
                               "does not apply)", kernel, "FlashAttention-2 not active", why)
    return AttentionPhases(active, active, "transformers' own", "transformers' own")


def _register_kvcache_op() -> None:
    """Define ``headroom::fa2_with_kvcache`` once per process: flash_attn_with_kvcache as a torch
    custom op (fake: a tensor of the query's shape), so torch.compile keeps it inside one graph.
    Called when the attention is switched on, never while tracing: the traced function reaches
    the op through ``torch.ops``."""
    if hasattr(torch.ops.headroom, "fa2_with_kvcache"):
        return

    @torch.library.custom_op("headroom::fa2_with_kvcache", mutates_args=())
    def fa2_with_kvcache(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                         cache_seqlens: torch.Tensor, softmax_scale: float) -> torch.Tensor:
        from flash_attn import flash_attn_with_kvcache

        out = flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=cache_seqlens,
                                      softmax_scale=softmax_scale, causal=True)
        return out.contiguous()

    @fa2_with_kvcache.register_fake
    def _(q, k_cache, v_cache, cache_seqlens, softmax_scale):
        return q.new_empty(q.shape)


def filled_lengths(position_ids: torch.Tensor) -> torch.Tensor:
    """(B, c) positions of the chunk → (B,) int32 tokens filled after it (last position + 1)."""
    return (position_ids[:, -1] + 1).to(torch.int32)


def fa2_static_forward(
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

    query (B, Hq, c, d); key/value (B, Hkv, S, d): the cache (S = its capacity for a static
    cache, the filled length for a dynamic one); ``position_ids`` (B, c) in kwargs. Returns
    (B, c, Hq, d) and None. Raises ValueError for what this path does not do (a padding mask,
    sliding windows, softcap, dropout, no position ids).
    """
    from app.engine.local.attention import KV_SPAN_KWARG

    span = kwargs.pop(KV_SPAN_KWARG, None)  # the filled length is read from the positions instead
    position_ids = kwargs.get("position_ids")
    if attention_mask is not None or position_ids is None or dropout or kwargs.get("softcap") \
            or getattr(module, "sliding_window", None) or kwargs.get("sliding_window"):
        raise ValueError(f"{FA2_STATIC} takes one unpadded sequence with position ids, full causal "
                         "attention, no softcap or dropout")
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    seqlens = filled_lengths(position_ids)
    packed_kv = kv_quant.is_packed(key)  # 8-bit KV (issue 16): FA2 reads 16-bit keys only
    if query.shape[2] == 1 and (packed_kv or getattr(module, DECODE_ATTR, "fa2") == "packed"):
        return _packed_decode_filled(query, key, value, seqlens, scale), None
    if packed_kv:
        return _fa2_blockwise_8bit(query, key, value, seqlens, scale, span), None
    out = torch.ops.headroom.fa2_with_kvcache(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2),
                                              seqlens, scale)
    return out, None


def _fa2_blockwise_8bit(query, key, value, seqlens: torch.Tensor, scale: float,
                        span: int | None) -> torch.Tensor:
    """A prefill chunk over an 8-bit cache: Headroom's blockwise attention
    (app.engine.local.attention.blockwise_8bit_prefill: one block of the past dequantized at a
    time, merged by log-sum-exp) with FA2 as the kernel. ``span``: the filled length after the
    chunk, else read from ``seqlens`` (one host sync per layer and chunk; prefill is not
    compiled); unpadded rows all fill the same span. Returns (B, c, Hq, dv)."""
    from app.engine.local.attention import blockwise_8bit_prefill

    if span is None:
        span = int(seqlens.max())
    return blockwise_8bit_prefill(query, key, value, span, scale, _fa2_with_lse)


def _fa2_with_lse(query, key, value, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """attention.AttendWithLSE on FlashAttention-2: ``flash_attn_with_kvcache`` over the given
    keys (all of them), GQA inside the kernel, ``return_softmax_lse``. query (B, Hq, n, d),
    key/value (B, Hkv, m, d) → (out (B, Hq, n, dv), lse (B, Hq, n) float32). Called directly, not
    through the custom op: prefill runs eagerly."""
    from flash_attn import flash_attn_with_kvcache

    lengths = torch.full((query.shape[0],), key.shape[2], dtype=torch.int32, device=query.device)
    out, lse = flash_attn_with_kvcache(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2),
                                       cache_seqlens=lengths, softmax_scale=scale, causal=causal,
                                       return_softmax_lse=True)
    return out.transpose(1, 2), lse


def _packed_decode_filled(query, key, value, seqlens: torch.Tensor, scale: float) -> torch.Tensor:
    """Headroom's packed GQA decode (app.engine.local.attention) over keys [0, seqlens): the
    8-bit one for a packed 8-bit cache."""
    from app.engine.local.attention import _packed_decode, _packed_decode_8bit

    groups = query.shape[1] // key.shape[1]
    valid = torch.arange(key.shape[2], device=key.device).view(1, 1, 1, -1) < seqlens.view(-1, 1, 1, 1)
    if kv_quant.is_packed(key):
        return _packed_decode_8bit(query, key, value, valid, scale, groups)
    return _packed_decode(query, key, value, valid, 0.0, scale, groups)


def register_fa2_static() -> str:
    """Register "fa2+static" with transformers' AttentionInterface (idempotent). No mask
    function is registered: transformers then builds no mask for it (none is needed)."""
    from transformers import AttentionInterface

    _register_kvcache_op()
    AttentionInterface.register(FA2_STATIC, fa2_static_forward)
    return FA2_STATIC


def enable_fa2_static(model, decode_setting: str | None = None) -> AttentionPhases | None:
    """Switch a model loaded with "flash_attention_2" to "fa2+static"; ``decode_setting``
    defaults to $HEADROOM_FA2_DECODE. Returns the phases, or None when the model is not on FA2
    (nothing changed). Raises ValueError for a bad decode setting (before anything is switched)."""
    if getattr(model.config, "_attn_implementation", None) != FA2_LABEL:
        return None
    phases = choose_phases(os.environ.get(DECODE_OPT_IN) if decode_setting is None else decode_setting)
    switch_to_fa2_static(model, phases)
    return phases


def switch_to_fa2_static(model, phases: AttentionPhases) -> None:
    """Set the model's attention to "fa2+static" and each attention module's decode kernel
    (the attribute DECODE_ATTR: "fa2" or "packed") as ``phases`` says."""
    register_fa2_static()
    model.set_attn_implementation(FA2_STATIC)
    decode = "packed" if phases.decode.startswith("packed") else "fa2"
    for module in model.modules():
        if hasattr(module, "is_causal") and hasattr(module, "layer_idx"):
            setattr(module, DECODE_ATTR, decode)


def attention_label(active: str, fa2_version: str | None) -> str:
    """How the LoadReport names the active attention: "flash_attention_2 (flash-attn X)" for
    Headroom's FA2 path, the implementation name otherwise."""
    if active in (FA2_STATIC, FA2_LABEL):
        return f"{FA2_LABEL} (flash-attn {fa2_version or '?'})"
    return active
