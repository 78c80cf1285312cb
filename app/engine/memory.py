"""Memory foresight: how many bytes a turn will need, computed before it starts.

Pure functions over a transformers config (or any object with the same attributes); no torch,
no Qt. All sizes are bytes (int), all lengths tokens (int). What is modelled, and where from:

* KV cache — keys and values are held per layer as ``[batch, kv_heads, tokens, head_dim]``
  (transformers ``cache_utils.DynamicLayer``), so one token costs
  ``2 × num_key_value_heads × head_dim × element_bytes`` per layer (Kwon et al. 2023, "Efficient
  Memory Management for LLM Serving with PagedAttention", §3). GQA (Ainslie et al. 2023) and MQA
  (Shazeer 2019) shrink ``num_key_value_heads``. Sliding-window layers keep at most the window
  (Mistral 7B paper's rolling buffer; transformers ``DynamicSlidingWindowLayer`` keeps
  ``sliding_window - 1``, ``StaticSlidingWindowLayer`` ``sliding_window``; we count the window,
  one token conservative). Which layer slides follows transformers ``get_layer_types_and_kwargs``.
* Prefill spike — transient activations of the largest chunk plus attention workspace plus
  last-position logits (``logits_to_keep=1``, transformers PR #31292, case C02). The raw model is
  checked against the H200 measurements in ``shared/gpu/README.md`` (see tests) and corrected at
  run time by a :class:`Calibration` fed with measured peaks.
* Admission — a turn is admitted only when its projected growth plus error bar plus safety margin
  fits the free memory reported by the driver (``torch.cuda.mem_get_info``; case C04), and when
  prompt + max_new_tokens fits min(model positions, user context) (case C23).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

MiB = 1 << 20
GiB = 1 << 30
DEFAULT_MAX_POSITIONS = 2048
"""Used when a config names no position limit: small enough that no real model overflows."""

_POSITION_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length",
    "seq_length", "n_ctx", "seq_len", "model_max_length",
)
_FULL = "full_attention"
# transformers cache_utils.DYNAMIC_LAYER_TYPE_MAPPING: layer types and what they cache per token.
_WINDOWED_TYPES = {"sliding_attention", "hybrid_sliding", "reference_sliding_attention"}
_CHUNKED_TYPES = {"chunked_attention"}
_NO_KV_TYPES = {"conv", "linear_attention", "dummy", "moe", "mlp", "mamba"}
_DTYPE_BYTES = {
    "float64": 8, "double": 8, "float32": 4, "float": 4, "fp32": 4, "tf32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "half": 2, "fp16": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1, "int8": 1, "uint8": 1,
}


def format_bytes(n: float) -> str:
    """Human text for a byte count: "512 KiB", "712 MiB", "3.20 GiB" (binary units)."""
    sign, n = ("-" if n < 0 else ""), abs(n)
    if n >= GiB:
        return f"{sign}{n / GiB:.2f} GiB"
    if n >= MiB:
        return f"{sign}{n / MiB:.0f} MiB"
    return f"{sign}{n / 1024:.0f} KiB"


def dtype_nbytes(dtype: Any) -> int:
    """Bytes per element of a torch dtype, a dtype name ("bfloat16", "torch.float16", "fp16") or an int.

    Raises ValueError for an unknown name.
    """
    if isinstance(dtype, int):
        return dtype
    itemsize = getattr(dtype, "itemsize", None)
    if isinstance(itemsize, int):
        return itemsize
    name = str(dtype).removeprefix("torch.").lower()
    if name not in _DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}")
    return _DTYPE_BYTES[name]


def text_config(config: Any) -> Any:
    """The decoder/text part of a config: ``get_text_config(decoder=True)`` for multimodal
    transformers configs, ``config.text_config`` on plain objects, else the config itself."""
    getter = getattr(config, "get_text_config", None)
    if callable(getter):
        try:
            return getter(decoder=True)
        except (TypeError, ValueError):
            pass
    nested = getattr(config, "text_config", None)
    return nested if nested is not None else config


def _attr(config: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def model_max_positions(config: Any, default: int = DEFAULT_MAX_POSITIONS) -> int:
    """Positions (tokens) the model can attend over, from the first of max_position_embeddings,
    n_positions, max_seq_len, max_sequence_length, seq_length, n_ctx, seq_len, model_max_length
    found on the text config, then the outer config; ``default`` (2048) when none is set."""
    for cfg in (text_config(config), config):
        for key in _POSITION_KEYS:
            value = getattr(cfg, key, None)
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 40:
                return value
    return default


# --------------------------------------------------------------------------- KV cache layout


@dataclass(frozen=True)
class LayerKV:
    """What one decoder layer caches per token.

    kv_heads × (key_dim + value_dim) × element_bytes bytes per token, for at most ``window``
    tokens (None: every token). ``kind`` is the transformers layer type.
    """

    kind: str
    kv_heads: int
    key_dim: int
    value_dim: int
    element_bytes: int
    window: int | None = None

    @property
    def bytes_per_token(self) -> int:
        return self.kv_heads * (self.key_dim + self.value_dim) * self.element_bytes

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

    @classmethod
    def from_config(cls, config: Any, cache_dtype_bytes: int) -> KVLayout:
        """Layout from a transformers PretrainedConfig (or any object with its attributes).

        Honours text_config nesting, ``num_key_value_heads`` (GQA/MQA, default
        num_attention_heads; Falcon ``multi_query``/``num_kv_heads``), an explicit ``head_dim``
        (else hidden_size // num_attention_heads), MLA latents (DeepSeek ``kv_lora_rank``),
        ``per_layer_config`` overrides, ``layer_types``, Mistral ``sliding_window`` on every
        layer, Qwen2 ``use_sliding_window``/``max_window_layers`` and Gemma
        ``sliding_window_pattern``. Raises ValueError when layers or heads are missing.
        """
        cfg = text_config(config)
        n_layers = _attr(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
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
        return cls(layers)


def _layer_types(cfg: Any, layer_cfgs: Sequence[Any]) -> list[str]:
    n = len(layer_cfgs)
    explicit = getattr(cfg, "layer_types", None)
    if explicit:
        return list(explicit)[:n] + [_FULL] * max(0, n - len(explicit))
    if getattr(cfg, "use_sliding_window", None) is False:  # Qwen2: window configured but off
        return [_FULL] * n
    if getattr(cfg, "use_sliding_window", None) and getattr(cfg, "sliding_window", None):
        first = _attr(cfg, "max_window_layers", default=0)  # Qwen2: layers >= this one slide
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


def _kv_heads(cfg: Any) -> int:
    heads = _attr(cfg, "num_attention_heads", "n_head", "num_heads")
    if not heads:
        raise ValueError("config names no attention head count (num_attention_heads)")
    explicit = getattr(cfg, "num_key_value_heads", None)
    if explicit:
        return explicit
    if getattr(cfg, "new_decoder_architecture", False):  # Falcon-40B style
        return _attr(cfg, "num_kv_heads", default=heads)
    if getattr(cfg, "multi_query", False):  # Falcon-7B, GPT-BigCode
        return 1
    return _attr(cfg, "num_kv_heads", "n_kv_heads", default=heads)


def head_dim(cfg: Any) -> int:
    """Explicit ``head_dim`` if set, else hidden_size // num_attention_heads."""
    explicit = getattr(cfg, "head_dim", None)
    if explicit:
        return explicit
    hidden = _attr(cfg, "hidden_size", "n_embd", "d_model")
    heads = _attr(cfg, "num_attention_heads", "n_head", "num_heads")
    if not hidden or not heads:
        raise ValueError("config gives neither head_dim nor hidden_size and heads")
    return hidden // heads


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
    return LayerKV(kind, _kv_heads(cfg), dim, dim, element_bytes, window)


def kv_bytes_per_token(config: Any, cache_dtype_bytes: int) -> int:
    """Bytes of KV cache one token adds (all layers) while the context is within every window:
    Σ_layers 2 × num_key_value_heads × head_dim × cache_dtype_bytes.

    Llama-3-8B at bf16: 32 × 2 × 8 × 128 × 2 = 131,072 B (H200 README measured 139 KB/token).
    """
    return KVLayout.from_config(config, cache_dtype_bytes).bytes_per_token


def kv_cache_bytes(layout: KVLayout, tokens: int) -> int:
    """Total KV bytes for a context of ``tokens`` tokens, sliding layers capped at their window."""
    return sum(layer.bytes_per_token * layer.cached_tokens(max(tokens, 0)) for layer in layout.layers)


# --------------------------------------------------------------------------- prefill spike


@dataclass(frozen=True)
class PrefillModel:
    """Shapes that set the transient memory of one prefill forward pass.

    activation_bytes: compute dtype element size (bf16 2, fp32 4). attn_implementation: "sdpa",
    "sdpa+gqa-packed" (app.engine.attention), "eager" or "flash_attention_2". dequant_bytes:
    largest weight a 4-bit layer dequantizes per call (0 when not quantized, see
    :func:`dequant_workspace_bytes`). dynamic_cache: KV grows by
    torch.cat (one layer's old cache is briefly duplicated, sliding layers overhang their window
    during prefill); False for a preallocated StaticCache. attn_kv_dims: dk + dv per head as the
    attention kernel sees them. gqa: fewer KV heads than query heads. kv_expanded_always: MLA,
    whose latent is expanded to every head on each call.
    """

    layout: KVLayout
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    attn_kv_dims: int
    vocab_size: int
    activation_bytes: int
    attn_implementation: str = "sdpa"
    dequant_bytes: int = 0
    dynamic_cache: bool = True
    gqa: bool = False
    kv_expanded_always: bool = False

    @classmethod
    def from_config(
        cls, config: Any, activation_bytes: int, cache_dtype_bytes: int | None = None, *,
        attn_implementation: str = "sdpa", quantized_4bit: bool = False, dynamic_cache: bool = True,
    ) -> PrefillModel:
        """Build from a config. cache_dtype_bytes defaults to activation_bytes."""
        cfg = text_config(config)
        layout = KVLayout.from_config(config, cache_dtype_bytes or activation_bytes)
        hidden = _attr(cfg, "hidden_size", "n_embd", "d_model")
        heads = _attr(cfg, "num_attention_heads", "n_head", "num_heads")
        mla = bool(getattr(cfg, "kv_lora_rank", None) and getattr(cfg, "qk_rope_head_dim", None))
        if mla:
            dims = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim + cfg.v_head_dim
        else:
            dims = 2 * head_dim(cfg)
        return cls(
            layout=layout, hidden_size=hidden,
            intermediate_size=_attr(cfg, "intermediate_size", "n_inner", default=4 * hidden),
            num_attention_heads=heads, attn_kv_dims=dims,
            vocab_size=_attr(cfg, "vocab_size", default=0), activation_bytes=activation_bytes,
            attn_implementation=attn_implementation,
            dequant_bytes=dequant_workspace_bytes(config, activation_bytes) if quantized_4bit else 0,
            dynamic_cache=dynamic_cache, gqa=(not mla and _kv_heads(cfg) != heads),
            kv_expanded_always=mla,
        )


@dataclass(frozen=True)
class PrefillBreakdown:
    """Raw (uncorrected) prefill spike in bytes, by term (see :func:`prefill_breakdown`)."""

    mask: int
    mlp_phase: int
    attention_phase: int
    logits: int
    dequant: int
    window_overhang: int

    @property
    def total(self) -> int:
        return (self.mask + max(self.mlp_phase, self.attention_phase) + self.logits
                + self.dequant + self.window_overhang)


def dequant_workspace_bytes(config: Any, compute_dtype_bytes: int) -> int:
    """Largest decoder weight a bitsandbytes 4-bit layer dequantizes to the compute dtype on each
    prefill call: max(hidden × intermediate, hidden × heads × head_dim) × bytes. lm_head stays
    unquantized. Llama-3-8B bf16: 14336 × 4096 × 2 = 117 MB (H200 README, "up to ~117 MB")."""
    cfg = text_config(config)
    hidden = _attr(cfg, "hidden_size", "n_embd", "d_model")
    inter = _attr(cfg, "intermediate_size", "n_inner", default=4 * hidden)
    heads = _attr(cfg, "num_attention_heads", "n_head", "num_heads")
    return max(hidden * inter, hidden * heads * head_dim(cfg)) * compute_dtype_bytes


def prefill_breakdown(
    model: PrefillModel, prompt_tokens: int, resident_tokens: int = 0,
    chunk_size: int | None = None, logits_positions: int = 1,
) -> PrefillBreakdown:
    """Raw transient bytes of prefilling ``prompt_tokens`` after ``resident_tokens`` cached ones.

    Worst chunk: c = min(n, chunk) tokens attending over L = resident + n positions; per layer
    the span is L, or min(L, window − 1 + c) for a sliding layer. total = mask + max(MLP phase,
    attention phase) + logits + dequant + window overhang, where (b = activation bytes):

    * mask: built once per forward for each window size whenever the chunk has a past, or a
      sliding layer's span reaches its window (transformers masking_utils skips it otherwise):
      c·span bytes (bool, SDPA) or c·span·b (eager).
    * MLP phase: c·b·(4h + 3I) — embeddings kept by the model loop, the layer input, residual and
      normed states, then act(gate), up and their product (Llama ``down(act(gate(x)) * up(x))``).
    * attention phase: c·b·(3h + 3·H·(dk+dv)/2) plus, for the worst layer, the larger of the
      dynamic cache's torch.cat copy of the old K/V and the attention workspace: SDPA turns a
      bool mask into a c·span·b float one and, with a mask, expands GQA heads to
      H·(dk+dv)·span·b (``use_gqa_in_sdpa`` needs mask None, transformers
      integrations/sdpa_attention.py); eager holds that expansion and scores H·c·span·(2b + 4).
    * logits: logits_positions × V × b (lm_head) + V × 4 (the fp32 copy generate() samples from);
      logits_to_keep=1 means logits_positions=1 (case C02).
    * dequant: model.dequant_bytes (4-bit weights dequantized per call).
    * window overhang: a ``DynamicSlidingWindowLayer`` keeps a *view* of the last window − 1
      tokens, so the whole chunk's K/V storage lives until the next update; beyond the window
      that is Σ_sliding bytes_per_token × (span − window) until the first decode step.

    Checked on the H200 (bf16 Llama-3-8B, Mistral-7B, Qwen2.5-7B shapes, 4k–32k tokens, one-shot
    and 256–4,096-token chunks): measured peak / (KV + this) within 0.97–1.04; the NF4 figures
    of shared/gpu/README.md within 0.93–1.03 (dequant is counted in full, so short one-shot
    prompts err high).
    """
    n = max(int(prompt_tokens), 0)
    if n == 0:
        return PrefillBreakdown(0, 0, 0, 0, 0, 0)
    c = min(n, chunk_size) if chunk_size else n
    total_len = max(int(resident_tokens), 0) + n
    b, h = model.activation_bytes, model.hidden_size
    layers = [layer for layer in model.layout.layers if layer.bytes_per_token]
    masks = {layer.window: _mask_bytes(model, layer, c, total_len) for layer in layers}
    attn_act = c * b * (3 * h + 3 * model.num_attention_heads * model.attn_kv_dims // 2)
    workspace = max((_attention_workspace(model, layer, c, total_len) for layer in layers),
                    default=0)
    overhang = 0
    if model.dynamic_cache:
        overhang = sum(layer.bytes_per_token * max(_span(layer, c, total_len) - layer.window, 0)
                       for layer in layers if layer.window is not None)
    return PrefillBreakdown(
        mask=sum(masks.values()),
        mlp_phase=c * b * (4 * h + 3 * model.intermediate_size),
        attention_phase=attn_act + workspace,
        logits=min(logits_positions, c) * model.vocab_size * b + model.vocab_size * 4,
        dequant=model.dequant_bytes,
        window_overhang=overhang,
    )


def _span(layer: LayerKV, c: int, total_len: int) -> int:
    return total_len if layer.window is None else min(total_len, layer.window - 1 + c)


def _masked(layer: LayerKV, c: int, total_len: int) -> bool:
    return total_len > c or (layer.window is not None and total_len >= layer.window)


def _mask_bytes(model: PrefillModel, layer: LayerKV, c: int, total_len: int) -> int:
    if model.attn_implementation.startswith("flash") or not _masked(layer, c, total_len):
        return 0
    per_entry = model.activation_bytes if model.attn_implementation == "eager" else 1
    return c * _span(layer, c, total_len) * per_entry


def _attention_workspace(model: PrefillModel, layer: LayerKV, c: int, total_len: int) -> int:
    span = _span(layer, c, total_len)
    cat_copy = layer.bytes_per_token * (span - c) if model.dynamic_cache else 0
    if model.attn_implementation.startswith("flash"):
        return cat_copy
    b, heads = model.activation_bytes, model.num_attention_heads
    expanded = heads * model.attn_kv_dims * span * b
    masked = _masked(layer, c, total_len)
    if model.attn_implementation == "eager":
        scores = heads * c * span * (2 * b + 4)
        kv = expanded if model.gqa or model.kv_expanded_always else 0
        return max(cat_copy, scores + kv)
    if model.attn_implementation == "sdpa+gqa-packed" and model.gqa and layer.kv_heads:
        # app.engine.attention: g query heads per KV head packed into the sequence dimension,
        # q = min(c, 1024 // g) queries per call, an additive g·q·span mask (rows padded to 16)
        # built from the bool one; K/V never copied. Mirrors attention.packed_mask_bytes.
        groups = heads // layer.kv_heads
        q = max(1, min(c, 1024 // groups))
        packed = groups * q * (-(-span // 16) * 16) * b + q * span if masked else 0
        return max(cat_copy, packed)
    float_mask = c * span * b if masked else 0
    expand = model.kv_expanded_always or (model.gqa and masked)
    return max(cat_copy, float_mask + (expanded if expand else 0))


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class Calibration:
    """Measured correction of the prefill-spike model, and how wrong projections have been.

    ``correction`` multiplies the raw spike; it is an exponential moving average (weight
    ``alpha``) of measured spike / raw spike, the first measurement taken as is, each ratio
    clamped to [0.25, 4] against bad readings. ``relative_error`` is the largest recent
    out-of-sample error |projected − measured| / measured of the turn's growth (KV + spike) over
    the last ``window`` turns, never below ``floor`` (3 %); ``prior_error`` until measured.
    Turns whose growth is below ``min_signal_bytes`` carry too little signal and are ignored.
    Immutable: :meth:`updated` returns a new Calibration.

    The error *bar* (:meth:`error_bar`) is kept in bytes, not as a fraction of the whole turn:
    the KV term is exact to the byte (H200, tests/benchmarks/results/memory_foresight_h200.json)
    and the observed absolute errors were 20–45 MB at every prompt length, so a relative bar
    learnt on a short turn (11 % of 0.3 GB) must not be stretched over a 6 GB one.
    """

    correction: float = 1.0
    samples: int = 0
    recent_errors: tuple[float, ...] = ()
    recent_abs_errors: tuple[int, ...] = ()
    alpha: float = 0.5
    window: int = 8
    floor: float = 0.03
    prior_error: float = 0.15
    min_signal_bytes: int = 16 * MiB

    kv_floor: float = 0.005  # allocator rounding on the exact KV term

    def error_bar(self, kv_bytes: int, spike_bytes: int) -> int:
        """Bytes to add to a projection of ``kv_bytes`` + ``spike_bytes``: ``prior_error`` of the
        growth before any measurement; after, the largest recent absolute error, at least
        ``floor`` of the spike plus ``kv_floor`` of the KV."""
        if not self.recent_abs_errors:
            return round(max(self.prior_error, self.floor) * (kv_bytes + spike_bytes))
        return max(max(self.recent_abs_errors),
                   round(self.floor * spike_bytes + self.kv_floor * kv_bytes))

    @property
    def relative_error(self) -> float:
        if not self.recent_errors:
            return max(self.prior_error, self.floor)
        return max(max(self.recent_errors), self.floor)

    def updated(self, projection: TurnProjection, measured_peak: int) -> Calibration:
        """Fold in one turn: ``projection`` as the turn actually ran (max_new_tokens = tokens
        generated) and ``measured_peak``, the peak allocated bytes during it (CUDA
        ``max_memory_allocated`` after ``reset_peak_memory_stats``; peak RSS on CPU)."""
        measured_growth = measured_peak - projection.now_allocated
        projected_growth = projection.kv_for_turn + projection.prefill_spike
        if max(measured_growth, projected_growth) < self.min_signal_bytes:
            return self
        error = abs(projected_growth - measured_growth) / max(measured_growth, 1)
        errors = (*self.recent_errors, error)[-self.window:]
        abs_errors = (*self.recent_abs_errors, abs(projected_growth - measured_growth))[-self.window:]
        correction = self.correction
        if projection.raw_prefill_spike >= self.min_signal_bytes:
            measured_spike = max(measured_growth - projection.kv_for_turn, 0)
            ratio = min(max(measured_spike / projection.raw_prefill_spike, 0.25), 4.0)
            correction = ratio if self.samples == 0 else (
                (1 - self.alpha) * self.correction + self.alpha * ratio)
        return replace(self, correction=correction, samples=self.samples + 1,
                       recent_errors=errors, recent_abs_errors=abs_errors)


# --------------------------------------------------------------------------- projection


@dataclass(frozen=True)
class ProjectionBasis:
    """Inputs of a projection, kept so a remedy can re-project with fewer tokens."""

    model: PrefillModel
    calibration: Calibration
    now_allocated: int
    resident_tokens: int
    prompt_tokens: int
    max_new_tokens: int
    chunk_size: int | None
    full_context_tokens: int | None
    logits_positions: int


@dataclass(frozen=True)
class TurnProjection:
    """Projected memory of one turn, bytes.

    now_allocated: allocated before the turn (measured). kv_for_turn: KV the turn adds, i.e. the
    cache for resident + prompt + max_new_tokens tokens less what is already resident.
    prefill_spike: corrected transient of the worst prefill chunk. peak = now_allocated +
    kv_for_turn + prefill_spike (conservative: the spike is counted on top of the final KV).
    error_bar_bytes: Calibration.error_bar (bytes; see there). kv_at_full_context: KV held
    if the conversation fills the whole context window.
    """

    now_allocated: int
    kv_for_turn: int
    prefill_spike: int
    peak: int
    error_bar_bytes: int
    kv_at_full_context: int
    raw_prefill_spike: int
    correction: float
    relative_error: float
    basis: ProjectionBasis = field(repr=False, compare=False)

    @property
    def growth(self) -> int:
        """Bytes the turn needs on top of what is allocated now."""
        return self.kv_for_turn + self.prefill_spike


def project_turn_peak(
    model: PrefillModel, calibration: Calibration, *, now_allocated: int, prompt_tokens: int,
    max_new_tokens: int, resident_tokens: int = 0, chunk_size: int | None = None,
    full_context_tokens: int | None = None, logits_positions: int = 1,
) -> TurnProjection:
    """Project the peak of a turn that prefills ``prompt_tokens`` (history not in the cache plus
    the new message) after ``resident_tokens`` already cached (their KV is in now_allocated), then
    decodes up to ``max_new_tokens``. chunk_size: prefill chunk (None = one shot).
    full_context_tokens: context window for kv_at_full_context (default: this turn's length)."""
    basis = ProjectionBasis(model, calibration, now_allocated, resident_tokens, prompt_tokens,
                            max_new_tokens, chunk_size, full_context_tokens, logits_positions)
    layout = model.layout
    end = resident_tokens + prompt_tokens + max_new_tokens
    kv_for_turn = kv_cache_bytes(layout, end) - kv_cache_bytes(layout, resident_tokens)
    raw = prefill_breakdown(model, prompt_tokens, resident_tokens, chunk_size,
                            logits_positions).total
    spike = round(raw * calibration.correction)
    rel = calibration.relative_error
    return TurnProjection(
        now_allocated=now_allocated, kv_for_turn=kv_for_turn, prefill_spike=spike,
        peak=now_allocated + kv_for_turn + spike,
        error_bar_bytes=calibration.error_bar(kv_for_turn, spike),
        kv_at_full_context=kv_cache_bytes(layout, full_context_tokens or end),
        raw_prefill_spike=raw, correction=calibration.correction, relative_error=rel,
        basis=basis,
    )


def reproject(projection: TurnProjection, *, context_tokens: int | None = None,
              max_new_tokens: int | None = None, chunk_size: Any = ...) -> TurnProjection:
    """The same turn with another size. A changed ``context_tokens`` (resident + prompt) drops
    the resident cache (trimmed history changes the prefix) and prefills everything again."""
    b = projection.basis
    now, resident, prompt = b.now_allocated, b.resident_tokens, b.prompt_tokens
    if context_tokens is not None and context_tokens != resident + prompt:
        now -= kv_cache_bytes(b.model.layout, resident)
        resident, prompt = 0, context_tokens
    return project_turn_peak(
        b.model, b.calibration, now_allocated=now, prompt_tokens=prompt,
        max_new_tokens=b.max_new_tokens if max_new_tokens is None else max_new_tokens,
        resident_tokens=resident, chunk_size=b.chunk_size if chunk_size is ... else chunk_size,
        full_context_tokens=b.full_context_tokens, logits_positions=b.logits_positions,
    )


# --------------------------------------------------------------------------- admission


@dataclass(frozen=True)
class AdmissionDecision:
    """Whether a turn may start. cause: "ok", "positions" (C23) or "memory".

    shortfall_bytes: needed − free (0 unless refused for memory). trim_tokens: fewest prompt
    tokens to drop so the turn fits (None: trimming alone cannot help). max_new_tokens_fit:
    largest max_new_tokens that fits with the prompt as is (None: not even 1).
    """

    admitted: bool
    cause: str
    reason: str
    needed_bytes: int = 0
    free_bytes: int = 0
    shortfall_bytes: int = 0
    context_limit: int = 0
    trim_tokens: int | None = None
    max_new_tokens_fit: int | None = None
    remedies: tuple[str, ...] = ()


def context_limit(model_max_positions: int, context_setting: int | None) -> int:
    """min(model positions, user context setting); a setting of None or ≤ 0 means "model's"."""
    if context_setting and context_setting > 0:
        return min(model_max_positions, context_setting)
    return model_max_positions


def admit_turn(
    projection: TurnProjection, free_bytes: int, safety_margin_bytes: int,
    model_max_positions: int, prompt_tokens: int, max_new_tokens: int,
    context_setting: int | None,
) -> AdmissionDecision:
    """Decide before the turn starts. prompt_tokens: every position the input occupies (history
    plus new message as rendered). free_bytes: driver-free memory (``mem_get_info``; reserved but
    unallocated memory is not counted as free, case C04).

    Refuses when prompt + max_new_tokens > min(model positions, context setting) — so a
    position overflow never reaches the model's device-side assert (C23) — or when growth +
    error bar + safety margin > free_bytes, with the tokens to trim and the max_new_tokens that
    would fit.
    """
    limit = context_limit(model_max_positions, context_setting)
    if prompt_tokens + max_new_tokens > limit:
        return _refuse_positions(limit, model_max_positions, context_setting,
                                 prompt_tokens, max_new_tokens)
    needed = _needed(projection, safety_margin_bytes)
    if needed <= free_bytes:
        return AdmissionDecision(
            True, "ok",
            f"fits: needs {format_bytes(needed)} of {format_bytes(free_bytes)} free "
            f"(KV {format_bytes(projection.kv_for_turn)} + prefill "
            f"{format_bytes(projection.prefill_spike)} ± {format_bytes(projection.error_bar_bytes)}"
            f" + margin {format_bytes(safety_margin_bytes)})",
            needed, free_bytes, 0, limit)
    return _refuse_memory(projection, needed, free_bytes, safety_margin_bytes, limit)


def _needed(projection: TurnProjection, margin: int) -> int:
    return projection.growth + projection.error_bar_bytes + margin


def _refuse_positions(limit: int, model_pos: int, setting: int | None, prompt: int,
                      max_new: int) -> AdmissionDecision:
    over = prompt + max_new - limit
    trim = over if over < prompt else None
    fit = limit - prompt if limit - prompt >= 1 else None
    remedies = []
    if trim is not None:
        remedies.append(f"trim at least {trim:,} tokens of history or prompt")
    if fit is not None:
        remedies.append(f"lower max_new_tokens to {fit:,}")
    setting_text = f", context setting {setting:,}" if setting and setting > 0 else ""
    reason = (f"prompt {prompt:,} + max_new_tokens {max_new:,} = {prompt + max_new:,} tokens "
              f"exceeds the context limit of {limit:,} tokens (model positions {model_pos:,}"
              f"{setting_text}); the prompt budget is {max(limit - max_new, 0):,} tokens")
    return AdmissionDecision(False, "positions", reason, context_limit=limit, trim_tokens=trim,
                             max_new_tokens_fit=fit, remedies=tuple(remedies))


def _largest_fitting(lo: int, hi: int, fits: Callable[[int], bool]) -> int | None:
    """Largest x in [lo, hi] with fits(x), fits monotone decreasing in x; None if none."""
    if hi < lo or not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def _refuse_memory(projection: TurnProjection, needed: int, free: int, margin: int,
                   limit: int) -> AdmissionDecision:
    b = projection.basis
    context = b.resident_tokens + b.prompt_tokens

    def fits(p: TurnProjection) -> bool:
        return _needed(p, margin) <= free

    kept = _largest_fitting(1, context - 1, lambda t: fits(reproject(projection, context_tokens=t)))
    trim = None if kept is None else context - kept
    fit_new = _largest_fitting(
        1, b.max_new_tokens - 1, lambda m: fits(reproject(projection, max_new_tokens=m)))
    remedies = []
    if trim is not None:
        remedies.append(f"trim at least {trim:,} tokens of history (or summarize it)")
    if fit_new is not None:
        remedies.append(f"lower max_new_tokens to {fit_new:,}")
    if (b.chunk_size is None or b.chunk_size > 1024) and b.prompt_tokens > 1024 and fits(
            reproject(projection, chunk_size=1024)):
        remedies.append("prefill in 1,024-token chunks")
    remedies.append("close other programs using this device, or load a smaller model")
    shortfall = needed - free
    reason = (f"not enough memory: the turn needs {format_bytes(needed)} (KV "
              f"{format_bytes(projection.kv_for_turn)} + prefill spike "
              f"{format_bytes(projection.prefill_spike)} ± "
              f"{format_bytes(projection.error_bar_bytes)} + margin {format_bytes(margin)}) "
              f"but {format_bytes(free)} is free: short by {format_bytes(shortfall)}")
    return AdmissionDecision(False, "memory", reason, needed, free, shortfall, limit, trim,
                             fit_new, tuple(remedies))
