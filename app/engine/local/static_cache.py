"""A preallocated KV cache whose capacity the compiled decode step does not depend on, and that
grows between turns by copying what it holds (issue 12, items 1 and 2).

transformers' `StaticCache` reports its capacity to the attention mask as the Python int
``max_cache_len`` (``StaticLayer.get_mask_sizes``), so a compiled step guards on it and every
capacity is its own compile (≈50 s each for the Llama-3-8B shape in NF4 on an H200, issue 12).
`SpanLayer` reads the mask size off its key tensor instead and marks the capacity dimension of its
tensors dynamic, so `torch.compile` traces one graph with a symbolic capacity that serves every
cache size; each new cache only captures its own CUDA graph on its first step
(`compiled_decode.CapturedStep`, milliseconds, no recompile).

`grow_static_cache` replaces each layer's tensors by larger ones holding the same first
``filled`` tokens, one layer at a time, so the transient is the new cache plus one old layer
(`growth_transient_bytes`), never old plus new in full; nothing is re-prefilled.

8-bit KV (issue 16): `QuantizedSpanLayer` keeps each key and value vector as 8-bit codes plus its
own scale (app.engine.local.kv_quant), quantized once as it is written; ``update`` returns the
packed byte tensors and the attention dequantizes them on read. Growing, parking and restoring
copy the packed tensors like any others.
"""

from __future__ import annotations

import torch
from transformers import StaticCache
from transformers.cache_utils import StaticLayer

from app.engine.local import kv_quant
from app.engine.local.kv8_append import kv8_append


class SpanLayer(StaticLayer):
    """A `StaticLayer` whose capacity is a dynamic dimension for `torch.compile`.

    keys / values: (batch, kv_heads, capacity, head_dim) in the compute dtype, allocated on the
    first update (lazy, like its parent). get_mask_sizes returns (capacity, 0) read from the
    tensor's shape, so the compiled step holds no int guard on the capacity."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        counter_on_device(self, key_states.device)  # StaticLayer's own .to() of it blocks
        super().lazy_initialization(key_states, value_states)
        mark_capacity_dynamic(self)

    def get_mask_sizes(self, *args, **kwargs) -> tuple[int, int]:
        if self.is_initialized:
            return self.keys.shape[-2], 0
        return self.max_cache_len, 0

    def crop(self, tokens_to_remove: int) -> None:
        """Forget the last ``-tokens_to_remove`` tokens (a negative count, as transformers'
        ``Cache.crop`` passes it): only the fill counter moves, the next update overwrites them.
        transformers 5.17's StaticLayer has no ``crop`` (5.24's does the same as this).
        Raises RuntimeError for a positive count."""
        if tokens_to_remove > 0:
            raise RuntimeError("a static layer is cropped by a negative count of tokens to remove")
        if self.is_initialized:
            self.cumulative_length.sub_(-tokens_to_remove)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """`write` key_states / value_states (batch, kv_heads, n, head_dim) at the fill position,
        then move the fill counter past them; returns the whole keys and values (capacity long)."""
        keys, values = self.write(key_states, value_states)
        self.cumulative_length.add_(key_states.shape[-2])
        return keys, values

    def write(self, key_states: torch.Tensor, value_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """StaticLayer.update without moving the fill counter: the n new keys and values go to
        slots [filled, filled + n). The compiled decode step writes every layer this way and moves
        all the layers' counters with one launch after the last layer (`advance_fill`), instead of
        an increment kernel in each layer."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        slots = torch.arange(key_states.shape[-2], device=self.device) + self.cumulative_length
        self.keys.index_copy_(2, slots, key_states)
        self.values.index_copy_(2, slots, value_states)
        return self.keys, self.values


class QuantizedSpanLayer(SpanLayer):
    """A SpanLayer holding 8-bit keys and values: keys (batch, kv_heads, capacity, head_dim +
    kv_quant.SCALE_BYTES) in ``kv_quant.storage_dtype(kv_format)``, values alike; each written
    vector is quantized once with its own scale (never re-quantized). ``update`` returns the
    packed tensors; only Headroom's attention ("sdpa+gqa-packed") reads them."""

    kv_format = kv_quant.KV8_FORMAT

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        # StaticLayer.lazy_initialization with packed byte tensors instead of compute-dtype ones
        self.device = key_states.device
        self.batch_size, self.num_heads = key_states.shape[:2]
        self.k_head_dim, self.v_head_dim = key_states.shape[-1], value_states.shape[-1]
        dtype = kv_quant.storage_dtype(self.kv_format)
        shape = (self.batch_size, self.num_heads, self.max_cache_len)
        self.keys = torch.zeros((*shape, kv_quant.packed_dim(self.k_head_dim)), dtype=dtype, device=self.device)
        self.values = torch.zeros((*shape, kv_quant.packed_dim(self.v_head_dim)), dtype=dtype, device=self.device)
        counter_on_device(self, self.device)
        if not torch.compiler.is_compiling():
            for tensor in (self.keys, self.values, self.cumulative_length):
                torch._dynamo.mark_static_address(tensor)
        self.is_initialized = True
        mark_capacity_dynamic(self)

    def write(self, key_states: torch.Tensor, value_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantize key_states / value_states (batch, kv_heads, n, head_dim) and write them at
        the fill position (the counter does not move: `SpanLayer.update` moves it); returns the
        whole packed keys and values (capacity long)."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        kv8_append(key_states, value_states, self.keys, self.values, self.cumulative_length)
        return self.keys, self.values


class Fp8SpanLayer(QuantizedSpanLayer):
    """A QuantizedSpanLayer in float8 e4m3 (kept for the quality comparison, see kv_quant)."""

    kv_format = "fp8"


_LAYER_FOR_FORMAT = {"int8": QuantizedSpanLayer, "fp8": Fp8SpanLayer}


def counter_on_device(layer: StaticLayer, device: torch.device) -> None:
    """Give ``layer`` its fill counter (``cumulative_length``, a 0-d long tensor) on ``device``,
    made there by a fill rather than copied from the host: transformers' StaticLayer moves its
    CPU counter with a blocking ``.to(device)``, which on CUDA waits for the stream to drain, in
    every layer of a new cache's first prefill (issue 12, item 4: 32 syncs inside the 8B's first
    forward of a new chat). The value is read on the host where it lives, so nothing here waits
    for the device. A counter already on ``device`` is left as it is."""
    counter = layer.cumulative_length
    if counter.device == torch.device(device):
        return
    if counter.device.type == "cpu":
        layer.cumulative_length = torch.full((), int(counter), dtype=counter.dtype, device=device)
    else:  # another accelerator: a plain copy (not a path Headroom takes)
        layer.cumulative_length = counter.to(device)


def advance_fill(cache, tokens: int) -> None:
    """Move every layer's fill counter ``tokens`` on, in one launch on CUDA (``_foreach_add_``):
    after a step whose layers were written by `SpanLayer.write`. The 8B decode step had 32
    one-element increment kernels (0.8 µs each and their gaps, H200)."""
    torch._foreach_add_([layer.cumulative_length for layer in cache.layers], tokens)


def mark_capacity_dynamic(layer: StaticLayer) -> None:
    """Mark the capacity dimension of the layer's key/value tensors dynamic for torch.compile
    (outside a trace): one compiled step then serves every capacity."""
    if not torch.compiler.is_compiling():
        for tensor in (layer.keys, layer.values):
            torch._dynamo.maybe_mark_dynamic(tensor, 2)


def new_static_cache(config, capacity_tokens: int, kv_bits: int = 16,
                     kv_format: str = kv_quant.KV8_FORMAT) -> StaticCache:
    """A transformers StaticCache of ``capacity_tokens`` slots whose full-attention layers are
    `SpanLayer`s (sliding-window layers are left as transformers builds them). Allocates nothing
    until the first prefill (transformers' lazy initialization). kv_bits 8: the full-attention
    layers are `QuantizedSpanLayer`s in ``kv_format`` (sliding layers stay 16-bit); their keys
    and values must be read by Headroom's attention. ValueError for other bits or formats."""
    if kv_bits not in (8, 16):
        raise ValueError(f"KV cache of {kv_bits} bits: 16 or 8")
    if kv_format not in _LAYER_FOR_FORMAT:
        raise ValueError(f"unknown KV format {kv_format!r}")
    span_class = SpanLayer if kv_bits == 16 else _LAYER_FOR_FORMAT[kv_format]
    cache = StaticCache(config=config, max_cache_len=capacity_tokens)
    for layer in cache.layers:
        if type(layer) is StaticLayer:
            layer.__class__ = span_class
    return cache


def kv_bits_of(cache) -> int:
    """8 when any layer of ``cache`` holds 8-bit keys and values, else 16."""
    layers = getattr(cache, "layers", ())
    return 8 if any(isinstance(layer, QuantizedSpanLayer) for layer in layers) else 16


KV16_FORMAT = "16-bit"
"""`kv_format_of` a cache whose keys and values are in the compute dtype (bf16, fp16, fp32)."""


def kv_format_of(cache) -> str:
    """How ``cache`` holds keys and values: the 8-bit format of its QuantizedSpanLayers
    (kv_quant: "int8", "fp8"), else KV16_FORMAT. A decode step compiled for one format does
    not serve another (the layer classes and tensor dtypes differ: Dynamo would recompile)."""
    for layer in getattr(cache, "layers", ()):
        if isinstance(layer, QuantizedSpanLayer):
            return layer.kv_format
    return KV16_FORMAT


def capacity_of(cache) -> int | None:
    """Slots of a StaticCache (tokens), None for any other cache."""
    if not isinstance(cache, StaticCache) or not cache.layers:
        return None
    return int(cache.layers[0].max_cache_len)


def is_span_cache(cache) -> bool:
    """True when every layer of ``cache`` is a SpanLayer (the compiled step serves any capacity)."""
    return isinstance(cache, StaticCache) and bool(cache.layers) and all(
        isinstance(layer, SpanLayer) for layer in cache.layers)


def layer_bytes(cache) -> int:
    """Bytes of the largest initialized layer (keys + values), 0 when nothing is allocated."""
    sizes = [layer.keys.numel() * layer.keys.element_size()
             + layer.values.numel() * layer.values.element_size()
             for layer in cache.layers if getattr(layer, "is_initialized", False)]
    return max(sizes, default=0)


def growth_transient_bytes(cache) -> int:
    """Bytes held on top of the grown cache while `grow_static_cache` runs: one old layer."""
    return layer_bytes(cache)


def grow_static_cache(cache: StaticCache, capacity_tokens: int, filled_tokens: int) -> None:
    """Give every layer of ``cache`` ``capacity_tokens`` slots, keeping its first
    ``filled_tokens`` keys and values (positions [0, filled)); in place, layer by layer.

    The cache's fill counter (``cumulative_length``) is kept, so the next update writes at
    ``filled_tokens`` when the caller has cropped the cache to it. Raises ValueError when a
    layer is not a full-attention StaticLayer or the new capacity is smaller than ``filled``;
    torch.cuda.OutOfMemoryError propagates (the layers grown so far stay valid and larger)."""
    if filled_tokens > capacity_tokens:
        raise ValueError(f"cannot keep {filled_tokens} tokens in {capacity_tokens} slots")
    for layer in cache.layers:
        if not isinstance(layer, StaticLayer) or getattr(layer, "is_sliding", False):
            raise ValueError(f"{type(layer).__name__} cannot grow")
    for layer in cache.layers:
        layer.max_cache_len = capacity_tokens
        if not layer.is_initialized:
            continue
        for name in ("keys", "values"):
            old = getattr(layer, name)
            new = old.new_zeros((*old.shape[:2], capacity_tokens, old.shape[3]))
            new[:, :, :filled_tokens].copy_(old[:, :, :filled_tokens])
            setattr(layer, name, new)
            del old
            torch._dynamo.mark_static_address(new)
        mark_capacity_dynamic(layer)
