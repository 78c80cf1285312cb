"""Prefill spike: the transient memory of one prefill forward pass, on top of the KV cache.

Pure functions over a transformers config (or any object with the same attributes); no torch,
no Qt. All sizes are bytes (int), all lengths tokens (int). The spike is the transient
activations of the largest chunk plus attention workspace plus last-position logits
(``logits_to_keep=1``, transformers PR #31292, the long-paste logits spike, transformers #30860). The raw model is
checked against the
H200 measurements in ``shared/gpu/README.md`` (see tests) and corrected at run time by an
app.engine.memory.calibration ``Calibration`` fed with measured peaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.engine.memory import kv_layout
from app.engine.memory.kv_layout import KVLayout, LayerKV
from app.engine.memory.model_config import config_attr, head_dim, kv_heads, text_config

PREFILL_DEQUANT_SLICE_BYTES = 32 * 2**20
"""Largest slice of a 4-bit weight dequantized at once by Headroom's sliced NF4 prefill
(app.engine.local.nf4_prefill): a 14336 × 4096 bf16 weight goes in 4 slices of 3,584 rows."""
ABSMAX_BLOCK = 64  # weights per fp32 block scale (bitsandbytes' blocksize, the loader's)


@dataclass(frozen=True)
class PrefillModel:
    """Shapes that set the transient memory of one prefill forward pass.

    activation_bytes: compute dtype element size (bf16 2, fp32 4). attn_implementation: "sdpa",
    "sdpa+gqa-packed" (app.engine.local.attention), "eager", or any name starting with "flash"
    (FlashAttention-2: the LoadReport's "flash_attention_2 (flash-attn X)", Headroom's "fa2+static"
    path, app.engine.local.fa2_attention: no mask is built, nothing is materialized over the
    cache). dequant_bytes:
    largest weight a 4-bit layer dequantizes per call (0 when not quantized, see
    :func:`dequant_workspace_bytes`; one slice when the prefill is sliced). dynamic_cache: KV grows by
    torch.cat (one layer's old cache is briefly duplicated, sliding layers overhang their window
    during prefill); False for a preallocated StaticCache. attn_kv_dims: dk + dv per head as the
    attention kernel sees them. gqa: fewer KV heads than query heads. kv_expanded_always: MLA,
    whose latent is expanded to every head on each call. nf4_sliced: dequant_bytes is one slice
    (app.engine.local.nf4_prefill runs), not a whole weight; a turn planned with this model runs so.
    kv8_kernel: an 8-bit layer's prefill chunk is attended by app.engine.local.split_kv_attention's
    Triton kernel (CUDA), not the blockwise torch path (see `prefill_breakdown`).
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
    nf4_sliced: bool = False
    kv8_kernel: bool = False

    @classmethod
    def from_config(
        cls, config: Any, activation_bytes: int, cache_dtype_bytes: int | None = None, *,
        attn_implementation: str = "sdpa", quantized_4bit: bool = False, dynamic_cache: bool = True,
        kv_bits: int = 16, nf4_prefill_sliced: bool = False, kv8_kernel: bool = False,
    ) -> PrefillModel:
        """Build from a config. cache_dtype_bytes defaults to activation_bytes. kv_bits 8: the
        full-attention layers hold 8-bit keys and values (kv_layout), in a static cache.
        nf4_prefill_sliced: the 4-bit layers' prefill runs in slices (app.engine.local.nf4_prefill,
        the LoadReport says so), so one slice is dequantized at a time, not a whole weight."""
        cfg = text_config(config)
        layout = KVLayout.from_config(config, cache_dtype_bytes or activation_bytes, kv_bits)
        dynamic_cache = dynamic_cache and kv_bits == 16
        hidden = config_attr(cfg, "hidden_size", "n_embd", "d_model")
        heads = config_attr(cfg, "num_attention_heads", "n_head", "num_heads")
        mla = bool(getattr(cfg, "kv_lora_rank", None) and getattr(cfg, "qk_rope_head_dim", None))
        if mla:
            dims = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim + cfg.v_head_dim
        else:
            dims = 2 * head_dim(cfg)
        return cls(
            layout=layout, hidden_size=hidden,
            intermediate_size=config_attr(cfg, "intermediate_size", "n_inner", default=4 * hidden),
            num_attention_heads=heads, attn_kv_dims=dims,
            vocab_size=config_attr(cfg, "vocab_size", default=0), activation_bytes=activation_bytes,
            attn_implementation=attn_implementation,
            dequant_bytes=(dequant_workspace_bytes(config, activation_bytes, sliced=nf4_prefill_sliced)
                           if quantized_4bit else 0),
            dynamic_cache=dynamic_cache, gqa=(not mla and kv_heads(cfg) != heads),
            kv_expanded_always=mla, nf4_sliced=quantized_4bit and nf4_prefill_sliced,
            kv8_kernel=kv8_kernel and kv_bits == 8,
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


def dequant_workspace_bytes(config: Any, compute_dtype_bytes: int, sliced: bool = False) -> int:
    """Bytes a 4-bit layer dequantizes per prefill call, for its largest decoder weight of
    E = max(hidden × intermediate, hidden × heads × head_dim) elements (lm_head stays unquantized).

    bitsandbytes: the whole weight in the compute dtype, E × bytes; Llama-3-8B bf16
    14336 × 4096 × 2 = 117 MB (H200 README, "up to ~117 MB"). sliced (app.engine.local.nf4_prefill):
    one slice, min(E × bytes, PREFILL_DEQUANT_SLICE_BYTES), plus the weight's fp32 absmax
    (E / 64 × 4, double quantization undone once per call; counted for every 4-bit model, the
    loader always double-quantizes): Llama-3-8B 32 MiB + 3.67 MB = 37.2 MB."""
    cfg = text_config(config)
    hidden = config_attr(cfg, "hidden_size", "n_embd", "d_model")
    inter = config_attr(cfg, "intermediate_size", "n_inner", default=4 * hidden)
    heads = config_attr(cfg, "num_attention_heads", "n_head", "num_heads")
    elements = max(hidden * inter, hidden * heads * head_dim(cfg))
    whole = elements * compute_dtype_bytes
    if not sliced:
        return whole
    return min(whole, PREFILL_DEQUANT_SLICE_BYTES) + elements // ABSMAX_BLOCK * 4


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
      An 8-bit layer's workspace is instead that of the blockwise attention
      (app.engine.local.attention.blockwise_8bit_prefill): one block of the past and the chunk's
      own keys dequantized to the compute dtype, Hkv·(dk+dv)·(min(span − c, B) + c)·b with
      B = kv_layout.KV8_PREFILL_BLOCK; the merge's float32 sum, one piece and two log-sum-exps,
      c·H·dv·(4 + b) + 2·c·H·4; and the chunk's float32 copies while it is quantized,
      2·Hkv·(dk+dv)·c·4. No mask is expanded or copied there, and the cache is static.
      Where app.engine.local.split_kv_attention's Triton kernel attends the chunk (CUDA,
      ``model.kv8_kernel``) the workspace is instead the larger of two phases that follow each
      other: the cache write's float32 copies of the chunk's keys and values while they are
      quantized (2·Hkv·(dk+dv)·c·4, as above), and the attention's rotated query, packed rows
      (freed before the next copy), output and permuted output, 3·c·H·dv·b, plus the float32
      partials when a short chunk (c·H ≤ kv_layout.KV8_SPLIT_PARTIAL_ROWS / 2) splits its keys,
      KV8_SPLIT_PARTIAL_ROWS·dv·4. The blockwise terms summed both phases, and the rotation's
      two whole float32 copies and a query kept alive made the kernel path 7·c·H·dv·b: the 8-bit
      peak ran 149 / 137 MB over the projection at 16k / 32k prompts (H200, Llama-3-8B NF4,
      tests/benchmarks/results/memory_foresight_h200_kv8_run1.json, 2026-12-02); kv_quant.rotate
      now works in pieces and the copies are freed in order. Measured again (results/
      memory_foresight_h200_kv8.json, later that day): the raw spike is 0.95 / 0.97 of the measured
      one for 16k / 32k one-shot prefills, but 0.52 / 0.81 at 1k / 4k, so the one correction learnt
      on the short turns (0.73) put the 16k projection 453 MB (5.1 %) under. Most of the short
      turns' excess was the benchmark's: it ran the NF4 prefill sliced (37 MB) under projections
      of whole weights (117 MB); it now runs what was admitted, as TurnRunner does (not re-run).
    * logits: logits_positions × V × b (lm_head) + V × 4 (the fp32 copy generate() samples from);
      logits_to_keep=1 means logits_positions=1 (the long-paste logits spike, transformers #30860).
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
    if layer.quantized and model.kv8_kernel:
        return _kv8_kernel_workspace(model, layer, c)
    if layer.quantized:
        return _blockwise_8bit_workspace(model, layer, c, total_len)
    return _float_workspace(model, layer, c, total_len)


def _kv8_kernel_workspace(model: PrefillModel, layer: LayerKV, c: int) -> int:
    """An 8-bit layer whose chunk the Triton kernel attends: the cache write's float32 copies,
    then the attention's three query-sized tensors and a short chunk's split partials."""
    b, heads = model.activation_bytes, model.num_attention_heads
    quantize = 2 * layer.kv_heads * (layer.key_dim + layer.value_dim) * c * 4
    partials = (kv_layout.KV8_SPLIT_PARTIAL_ROWS * layer.value_dim * 4
                if 2 * c * heads <= kv_layout.KV8_SPLIT_PARTIAL_ROWS else 0)
    return max(quantize, 3 * c * heads * layer.value_dim * b + partials)


def _blockwise_8bit_workspace(model: PrefillModel, layer: LayerKV, c: int, total_len: int) -> int:
    """An 8-bit layer: one past block plus the chunk's own keys dequantized, the float32 merge
    (sum, one piece, log-sum-exps), and the chunk's float32 copies while it is quantized."""
    b, heads = model.activation_bytes, model.num_attention_heads
    dims = layer.kv_heads * (layer.key_dim + layer.value_dim)
    block = min(_span(layer, c, total_len) - c, kv_layout.KV8_PREFILL_BLOCK)
    dequantized = dims * (block + c) * b
    merge = c * heads * layer.value_dim * (4 + b) + 2 * c * heads * 4
    return dequantized + merge + 2 * dims * c * 4


def _float_workspace(model: PrefillModel, layer: LayerKV, c: int, total_len: int) -> int:
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
        # app.engine.local.attention: g query heads per KV head packed into the sequence dimension,
        # q = min(c, 1024 // g) queries per call, an additive g·q·span mask (rows padded to 16)
        # built from the bool one; K/V never copied. Mirrors attention.packed_mask_bytes.
        groups = heads // layer.kv_heads
        q = max(1, min(c, 1024 // groups))
        packed = groups * q * (-(-span // 16) * 16) * b + q * span if masked else 0
        return max(cat_copy, packed)
    float_mask = c * span * b if masked else 0
    expand = model.kv_expanded_always or (model.gqa and masked)
    return max(cat_copy, float_mask + (expanded if expand else 0))
