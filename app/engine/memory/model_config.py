"""Architecture numbers read from a transformers config, whatever each model family calls them.

Pure functions over a transformers ``PretrainedConfig`` (or any object with the same
attributes); no torch, no Qt. Lengths are tokens (int). The memory projection
(app.engine.memory.kv_layout, app.engine.memory.prefill_spike) and the fit check before loading
(app.engine.loading.fit) read shapes through these, so every one of them agrees on which
attribute wins: the text part of a multimodal config first, then the first alias that is set.
"""

from __future__ import annotations

from typing import Any

DEFAULT_MAX_POSITIONS = 2048
"""Used when a config names no position limit: small enough that no real model overflows."""

_POSITION_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length",
    "seq_length", "n_ctx", "seq_len", "model_max_length",
)


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


def config_attr(config: Any, *names: str, default: Any = None) -> Any:
    """The first of ``names`` set (not None) on ``config``, else ``default``: one number under its
    aliases, e.g. ``config_attr(cfg, "hidden_size", "n_embd", "d_model")`` (Llama, GPT-2, OPT)."""
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


def kv_heads(cfg: Any) -> int:
    """Key/value heads of one attention layer of a (text) config: ``num_key_value_heads`` when
    set (GQA, Ainslie et al. 2023); Falcon-40B ``new_decoder_architecture`` ``num_kv_heads``;
    1 for ``multi_query`` (MQA, Shazeer 2019: Falcon-7B, GPT-BigCode); else ``num_kv_heads`` /
    ``n_kv_heads``, defaulting to num_attention_heads (plain multi-head attention).

    Raises ValueError when the config names no attention head count.
    """
    heads = config_attr(cfg, "num_attention_heads", "n_head", "num_heads")
    if not heads:
        raise ValueError("config names no attention head count (num_attention_heads)")
    explicit = getattr(cfg, "num_key_value_heads", None)
    if explicit:
        return explicit
    if getattr(cfg, "new_decoder_architecture", False):  # Falcon-40B style
        return config_attr(cfg, "num_kv_heads", default=heads)
    if getattr(cfg, "multi_query", False):  # Falcon-7B, GPT-BigCode
        return 1
    return config_attr(cfg, "num_kv_heads", "n_kv_heads", default=heads)


def head_dim(cfg: Any) -> int:
    """Explicit ``head_dim`` if set, else hidden_size // num_attention_heads.

    Raises ValueError when the config gives neither.
    """
    explicit = getattr(cfg, "head_dim", None)
    if explicit:
        return explicit
    hidden = config_attr(cfg, "hidden_size", "n_embd", "d_model")
    heads = config_attr(cfg, "num_attention_heads", "n_head", "num_heads")
    if not hidden or not heads:
        raise ValueError("config gives neither head_dim nor hidden_size and heads")
    return hidden // heads
