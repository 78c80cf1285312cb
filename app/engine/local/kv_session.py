"""A conversation's KV cache kept between turns (issue 5, item 1 and 2).

The generation worker owns one `KVSession` per conversation and passes it to
`stream_reply` / `stream_chat_reply` as ``session=``. The session remembers the token ids whose
keys and values are in its cache; a new turn keeps the longest common prefix of those ids and
the new prompt (the cache is cropped to it) and prefills only the rest, so time to first token
stays flat as the chat grows instead of re-reading the whole history every turn.

On CUDA the cache is a preallocated transformers `StaticCache` of ``capacity_tokens`` slots
(admission decides the size; it is only ever resized between turns), so decode allocates
nothing, cannot fragment memory mid-answer, and can run as one captured CUDA graph
(`app.engine.local.compiled_decode`). On the CPU it is a `DynamicCache` (fast tests, no waste).
With 8-bit KV (``kv_bits=8``, issue 16) the cache is always a static one of 8-bit layers
(`static_cache.QuantizedSpanLayer`), on the CPU too; changing the precision drops the cache, so
the next turn prefills the whole prompt once.

No Qt here, and no module-level state: the session is a plain object owned by its caller.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache, StaticCache

CAPACITY_STEP = 2048
"""Static caches are sized in multiples of this many tokens when the caller gives no capacity
or a turn outgrows it, so a few compiled shapes cover every conversation."""


def round_capacity(tokens: int, step: int = CAPACITY_STEP) -> int:
    """Smallest multiple of ``step`` that holds ``tokens`` tokens (at least one step)."""
    return max(step, -(-tokens // step) * step)


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token id lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class KVSession:
    """The KV cache of one conversation, kept between turns.

    capacity_tokens: slots of the preallocated StaticCache (CUDA, or ``static=True``); None lets
    the first turn pick ``round_capacity(prompt + max_new_tokens)``; a turn that needs more slots
    grows the cache, keeping its tokens. static: None = StaticCache on CUDA and DynamicCache on
    the CPU; True/False forces one (tests use True on the CPU). kv_bits: 16 (the compute dtype)
    or 8 (8-bit keys and values in a static cache; see `set_kv_bits`).

    Read by the memory projection: ``cached_tokens`` (tokens whose KV is held) and
    ``cache_bytes`` (bytes the cache tensors occupy: the whole capacity for a static cache).
    ``last_reused_tokens`` / ``last_prefill_tokens`` / ``last_growth`` describe the latest turn;
    ``notes`` records each growth and why a cache was rebuilt (resize, uncroppable layer).
    """

    def __init__(self, capacity_tokens: int | None = None, static: bool | None = None, kv_bits: int = 16):
        self.capacity_tokens = capacity_tokens
        self.static = static
        self.kv_bits = kv_bits
        self.cache = None
        self.token_ids: list[int] = []
        self.last_reused_tokens = 0
        self.last_prefill_tokens = 0
        self.last_growth: tuple[int | None, int, int] | None = None  # (old, new capacity, kept)
        self.notes: list[str] = []
        self._spare: tuple | None = None  # (model config, static, kv_bits, empty cache) made by prepare()

    # ----- what the projection reads ---------------------------------------------------------
    @property
    def cached_tokens(self) -> int:
        """Tokens whose keys and values the cache holds now."""
        return len(self.token_ids)

    @property
    def cache_bytes(self) -> int:
        """Bytes held by the cache tensors (keys + values of every layer), 0 when empty."""
        return sum(t.numel() * t.element_size() for _, _, t in self.tensors())

    def tensors(self):
        """(layer, "keys" or "values", tensor) for every key/value tensor the cache holds."""
        for layer in getattr(self.cache, "layers", ()) if self.cache is not None else ():
            for name in ("keys", "values"):
                tensor = getattr(layer, name, None)
                if isinstance(tensor, torch.Tensor) and tensor.numel():
                    yield layer, name, tensor

    @property
    def is_static(self) -> bool:
        return isinstance(self.cache, StaticCache)

    # ----- lifecycle ---------------------------------------------------------------------------
    def invalidate(self) -> None:
        """Forget the cache: call on edit, regenerate, summary, model change. Drops every tensor."""
        self.cache = None
        self.token_ids = []

    def set_kv_bits(self, kv_bits: int) -> bool:
        """Hold keys and values in ``kv_bits`` (16 or 8) from the next turn on. A cache held in
        the other precision is dropped now (the next turn prefills everything once); returns
        whether one was. ValueError for other bits."""
        if kv_bits not in (8, 16):
            raise ValueError(f"KV cache of {kv_bits} bits: 16 or 8")
        if kv_bits == self.kv_bits:
            return False
        dropped = self.cache is not None
        if dropped:
            self.notes.append(f"KV {self.kv_bits}-bit -> {kv_bits}-bit: cache dropped, re-prefilled")
        self.invalidate()
        self.kv_bits = kv_bits
        return dropped

    def reserve(self, capacity_tokens: int) -> None:
        """Set the capacity for the next turn (between turns only). A held static cache of
        another size is dropped now; the next turn allocates the new size and re-prefills
        (``begin_turn`` grows a cache by copying instead when a turn needs more slots)."""
        if capacity_tokens != self.capacity_tokens and self.is_static:
            self.notes.append(f"capacity {self.capacity_tokens} -> {capacity_tokens}: cache rebuilt")
            self.invalidate()
        self.capacity_tokens = capacity_tokens

    def prepare(self, model) -> None:
        """Build the empty cache object of the next turn now, between turns (the window activates
        a new chat before its first message is typed), so that turn does not: transformers'
        StaticCache and DynamicCache constructors read the config layer by layer (1.3 ms for a
        32-layer Llama config, 0.7 ms dynamic, on the 2-core CPU box; issue 12, item 4). It
        allocates no tensors (the layers allocate in the first prefill) and is used by the next
        turn that starts a cache, for the same model, precision and cache kind; a static one
        gets that turn's capacity. Nothing when a cache is held or the one prepared still fits."""
        static = self._wants_static(model)
        if self.cache is None and (self._spare is None or self._spare[:3] != (model.config, static, self.kv_bits)):
            self._spare = (model.config, static, self.kv_bits,
                           self._build_cache(model, static, self.capacity_tokens or CAPACITY_STEP))

    def begin_turn(self, model, prompt_ids: list[int], max_new_tokens: int, capacity_tokens: int | None = None):
        """Prepare the cache for a turn; return (cache, reused), reused = prompt tokens already
        cached (the caller prefills ``prompt_ids[reused:]``, never fewer than one token).

        Crops the cache to the common prefix. When the turn needs more slots than a static cache
        has, the cache grows to ``capacity_tokens`` (what admission admitted; default
        ``round_capacity(prompt + max_new_tokens)``) keeping the reused tokens
        (`static_cache.grow_static_cache`: copied on the device, not re-prefilled); a layer that
        cannot be cropped or grown is rebuilt and re-prefilled (noted in ``notes``).
        Raises nothing of its own; torch.cuda.OutOfMemoryError from growing propagates.
        """
        reused = max(min(common_prefix(self.token_ids, prompt_ids), len(prompt_ids) - 1), 0)
        wants_static = self._wants_static(model)
        if self.cache is None or self.is_static != wants_static:
            reused = 0
        if reused == 0:
            self.invalidate()
        elif reused < len(self.token_ids):
            try:
                self.cache.crop(reused - len(self.token_ids))
            except (RuntimeError, ValueError, NotImplementedError, AttributeError) as exc:
                self.notes.append(f"cache not croppable ({exc}): re-prefilled")
                reused = 0
                self.invalidate()
        self.last_growth = None
        if wants_static:
            need = len(prompt_ids) + max_new_tokens
            if self.capacity_tokens is None or self.capacity_tokens < need:
                reused = self._grow(max(capacity_tokens or round_capacity(need), need), reused)
        if self.cache is None:
            self.cache = self._new_cache(model)
        self.token_ids = list(prompt_ids[:reused])
        self.last_reused_tokens = reused
        self.last_prefill_tokens = len(prompt_ids) - reused
        return self.cache, reused

    def _grow(self, capacity: int, reused: int) -> int:
        """Give the session ``capacity`` slots, keeping ``reused`` cached tokens when a cache is
        held; returns the tokens kept (0 when the cache had to be dropped)."""
        from app.engine.local.static_cache import grow_static_cache

        old = self.capacity_tokens
        self.capacity_tokens = capacity
        if self.cache is None or reused == 0:
            self.notes.append(f"capacity {old} -> {capacity}: nothing cached to keep")
            return 0
        try:
            grow_static_cache(self.cache, capacity, reused)
        except ValueError as exc:
            self.notes.append(f"capacity {old} -> {capacity}: {exc}; cache rebuilt and re-prefilled")
            self.invalidate()
            return 0
        self.last_growth = (old, capacity, reused)
        self.notes.append(f"capacity {old} -> {capacity}: cache grown, {reused} tokens kept")
        return reused

    def commit(self, fed_ids: list[int]) -> None:
        """After a turn: ``fed_ids`` are exactly the tokens whose KV is now in the cache."""
        self.token_ids = list(fed_ids)

    # ----- internals ---------------------------------------------------------------------------
    def _wants_static(self, model) -> bool:
        if self.kv_bits == 8:
            return True  # 8-bit layers exist only in the static cache
        if self.static is not None:
            return self.static
        return model.device.type == "cuda"

    def _new_cache(self, model):
        static = self._wants_static(model)
        spare, self._spare = self._spare, None
        if spare is not None and spare[0] is model.config and spare[1:3] == (static, self.kv_bits):
            cache = spare[3]
            if not static:
                return cache
            from app.engine.local.static_cache import is_span_cache

            # only span layers not yet allocated take another capacity by its number alone
            # (as grow_static_cache does for them); anything else is built for this capacity
            if is_span_cache(cache) and not any(layer.is_initialized for layer in cache.layers):
                for layer in cache.layers:
                    layer.max_cache_len = self.capacity_tokens
                return cache
        return self._build_cache(model, static, self.capacity_tokens)

    def _build_cache(self, model, static: bool, capacity_tokens: int | None):
        if static:
            from app.engine.local.static_cache import new_static_cache

            return new_static_cache(model.config, capacity_tokens, self.kv_bits)
        return DynamicCache(config=model.config)
