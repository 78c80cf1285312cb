"""KV cache layout: what each decoder layer caches per token, and how many tokens it keeps.

Pure functions over a transformers config (or any object with the same attributes); no torch,
no Qt. All sizes are bytes (int), all lengths tokens (int).

Keys and values are held per layer as ``[batch, kv_heads, tokens, head_dim]`` (transformers
``cache_utils.DynamicLayer``), so one token costs ``2 × num_key_value_heads × head_dim ×
element_bytes`` per layer (Kwon et al. 2023, "Efficient Memory Management for LLM Serving with
PagedAttention", §3). GQA (Ainslie et al. 2023) and MQA (Shazeer 2019) shrink
``num_key_value_heads`` (app.engine.memory.model_config.kv_heads). Sliding-window layers keep at most
the window (Mistral 7B paper's rolling buffer; transformers ``DynamicSlidingWindowLayer`` keeps
``sliding_window - 1``, ``StaticSlidingWindowLayer`` ``sliding_window``; we count the window,
one token conservative). Which layer slides follows transformers ``get_layer_types_and_kwargs``.

8-bit KV (issue 16, app.engine.local.kv_quant): full-attention layers then hold 1 byte per number
plus one float32 scale per key or value vector (``KV8_SCALE_BYTES``): Llama-3-8B 32 × 8 × 2 ×
(128 + 4) = 67,584 B per token against 131,072 in bf16 (0.516×). Sliding-window layers stay in
the compute dtype (app.engine.local.static_cache quantizes only the full-attention layers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.engine.memory.model_config import config_attr, head_dim, kv_heads, text_config

_FULL = "full_attention"
# transformers cache_utils.DYNAMIC_LAYER_TYPE_MAPPING: layer types and what they cache per token.
_WINDOWED_TYPES = {"sliding_attention", "hybrid_sliding", "reference_sliding_attention"}
_CHUNKED_TYPES = {"chunked_attention"}
_NO_KV_TYPES = {"conv", "linear_attention", "dummy", "moe", "mlp", "mamba"}
KV8_SCALE_BYTES = 4
"""float32 scale per key or value vector of an 8-bit layer (mirrors kv_quant.SCALE_BYTES)."""
KV_BITS = (16, 8)
KV8_SPLIT_PARTIAL_ROWS = 2 * 264 * 64
"""Float32 rows of head_dim partial outputs that app.engine.local.split_kv_attention's kernel keeps
at most when it splits a short chunk's keys over programs (about two waves of 132 SMs of 64-row
tiles, each with its maximum and sum): ~17 MB at head_dim 128. Mirrored here for the same reason
as KV8_PREFILL_BLOCK."""
KV8_PREFILL_BLOCK = 4096
"""Keys per block when a prefill chunk attends to the past of an 8-bit layer: one block at a
time is dequantized to the compute dtype (app.engine.local.attention.blockwise_8bit_prefill), so
the transient is Hkv × (dk + dv) × 4,096 × 2 B = 16 MiB for Llama-3-8B in bf16, whatever the
span; app.engine.memory.prefill_spike counts the same block. Shared from here because the
memory arithmetic may not import the engine's torch code."""


@dataclass(frozen=True)
class LayerKV:
    """What one decoder layer caches per token.

    kv_heads × ((key_dim + value_dim) × element_bytes + 2 × scale_bytes) bytes per token, for
    at most ``window`` tokens (None: every token). ``kind`` is the transformers layer type;
    scale_bytes is 0 for a 16-bit layer, KV8_SCALE_BYTES for an 8-bit one.
    """

    kind: str
    kv_heads: int
    key_dim: int
    value_dim: int
    element_bytes: int
    window: int | None = None
    scale_bytes: int = 0

    @property
    def bytes_per_token(self) -> int:
        return self.kv_heads * ((self.key_dim + self.value_dim) * self.element_bytes + 2 * self.scale_bytes)

    @property
    def quantized(self) -> bool:
        """Keys and values held as 8-bit codes with scales (dequantized when attention reads them)."""
        return self.scale_bytes > 0

    def cached_tokens(self, tokens: int) -> int:
        """Tokens this layer holds for a context of ``tokens`` tokens."""
        return tokens if self.window is None else min(tokens, self.window)


@dataclass(frozen=True)
class KVLayout:
    """Per-layer KV cache shape of a model, built with :meth:`from_config`."""

    layers: tuple[LayerKV, ...]

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token adds while the context is shorter than every window."""
        return sum(layer.bytes_per_token for layer in self.layers)

    @property
    def full_bytes_per_token(self) -> int:
        """Bytes one token adds once every sliding window is full (full-attention layers only)."""
        return sum(layer.bytes_per_token for layer in self.layers if layer.window is None)

    @property
    def kv_bits(self) -> int:
        """8 when any layer holds 8-bit keys and values, else 16."""
        return 8 if any(layer.quantized for layer in self.layers) else 16

    @classmethod
    def from_config(cls, config: Any, cache_dtype_bytes: int, kv_bits: int = 16) -> KVLayout:
        """Layout from a transformers PretrainedConfig (or any object with its attributes).

        Honours text_config nesting, ``num_key_value_heads`` (GQA/MQA, default
        num_attention_heads; Falcon ``multi_query``/``num_kv_heads``), an explicit ``head_dim``
        (else hidden_size // num_attention_heads), MLA latents (DeepSeek ``kv_lora_rank``),
        ``per_layer_config`` overrides, ``layer_types``, Mistral ``sliding_window`` on every
        layer, Qwen2 ``use_sliding_window``/``max_window_layers`` and Gemma
        ``sliding_window_pattern``. kv_bits 8: full-attention layers hold 1-byte codes plus
        KV8_SCALE_BYTES per vector (cache_dtype_bytes then applies to sliding layers only).
        Raises ValueError when layers or heads are missing, or kv_bits is not 16 or 8.
        """
        if kv_bits not in KV_BITS:
            raise ValueError(f"KV cache of {kv_bits} bits: 16 or 8")
        cfg = text_config(config)
        n_layers = config_attr(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
        if not n_layers:
            raise ValueError("config names no layer count (num_hidden_layers)")
        per_layer = getattr(cfg, "per_layer_config", None)
        layer_cfgs = list(per_layer) if per_layer is not None else []
        if len(layer_cfgs) != n_layers:
            layer_cfgs = [cfg] * n_layers
        types = _layer_types(cfg, layer_cfgs)
        sharing = getattr(cfg, "kv_sharing_modes", None) or [None] * n_layers
        layers = tuple(
            _layer_kv("dummy" if mode == "reuse" else kind, lc, cache_dtype_bytes)
            for kind, lc, mode in zip(types, layer_cfgs, sharing, strict=False)
        )
        if kv_bits == 8:
            layers = tuple(_quantized(layer) for layer in layers)
        return cls(layers)


def _quantized(layer: LayerKV) -> LayerKV:
    """The layer with 8-bit keys and values, when it is a full-attention layer with a cache."""
    if layer.window is not None or not layer.kv_heads or layer.kind != _FULL:
        return layer
    return replace(layer, element_bytes=1, scale_bytes=KV8_SCALE_BYTES)


def _layer_types(cfg: Any, layer_cfgs: Sequence[Any]) -> list[str]:
    n = len(layer_cfgs)
    explicit = getattr(cfg, "layer_types", None)
    if explicit:
        return list(explicit)[:n] + [_FULL] * max(0, n - len(explicit))
    if getattr(cfg, "use_sliding_window", None) is False:  # Qwen2: window configured but off
        return [_FULL] * n
    if getattr(cfg, "use_sliding_window", None) and getattr(cfg, "sliding_window", None):
        first = config_attr(cfg, "max_window_layers", default=0)  # Qwen2: layers >= this one slide
        return [_FULL if i < first else "sliding_attention" for i in range(n)]
    pattern = getattr(cfg, "sliding_window_pattern", None)  # legacy Gemma3: every pattern-th full
    if isinstance(pattern, int) and pattern > 1 and getattr(cfg, "sliding_window", None):
        return [_FULL if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n)]
    if getattr(cfg, "model_type", "") == "gemma2" and getattr(cfg, "sliding_window", None):
        return ["sliding_attention" if i % 2 == 0 else _FULL for i in range(n)]
    types = []
    for lc in layer_cfgs:  # transformers get_layer_types_and_kwargs inference
        if getattr(lc, "sliding_window", None) is not None:
            types.append("sliding_attention")
        elif getattr(lc, "attention_chunk_size", None) is not None:
            types.append("chunked_attention")
        else:
            types.append(_FULL)
    return types


def _layer_kv(kind: str, cfg: Any, element_bytes: int) -> LayerKV:
    if kind in _NO_KV_TYPES:
        return LayerKV(kind, 0, 0, 0, element_bytes)
    window = None
    if kind in _WINDOWED_TYPES:
        window = getattr(cfg, "sliding_window", None)
    elif kind in _CHUNKED_TYPES:
        window = getattr(cfg, "attention_chunk_size", None)
    if getattr(cfg, "kv_lora_rank", None) and getattr(cfg, "qk_rope_head_dim", None):
        # MLA (DeepSeek-V2/V3): transformers 5.x caches the compressed latent and the shared
        # rotary key, one "head" of kv_lora_rank + qk_rope_head_dim (modeling_deepseek_v3).
        return LayerKV(kind, 1, cfg.kv_lora_rank, cfg.qk_rope_head_dim, element_bytes, window)
    dim = head_dim(cfg)
    return LayerKV(kind, kv_heads(cfg), dim, dim, element_bytes, window)


def kv_bytes_per_token(config: Any, cache_dtype_bytes: int, kv_bits: int = 16) -> int:
    """Bytes of KV cache one token adds (all layers) while the context is within every window:
    Σ_layers 2 × num_key_value_heads × head_dim × cache_dtype_bytes (16-bit), or
    Σ_layers 2 × num_key_value_heads × (head_dim + KV8_SCALE_BYTES) (8-bit).

    Llama-3-8B at bf16: 32 × 2 × 8 × 128 × 2 = 131,072 B (H200 README measured 139 KB/token);
    at 8-bit 32 × 2 × 8 × 132 = 67,584 B.
    """
    return KVLayout.from_config(config, cache_dtype_bytes, kv_bits).bytes_per_token


def kv_cache_bytes(layout: KVLayout, tokens: int) -> int:
    """Total KV bytes for a context of ``tokens`` tokens, sliding layers capped at their window."""
    return sum(layer.bytes_per_token * layer.cached_tokens(max(tokens, 0)) for layer in layout.layers)
