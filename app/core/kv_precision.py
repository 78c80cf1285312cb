"""A conversation's KV cache precision (issue 16): "16-bit", "8-bit" or "auto". Pure Python.

"16-bit" keeps keys and values in the model's compute dtype (bf16 on a GPU, as before issue 16);
"8-bit" keeps them as 8-bit codes with one scale per vector (app.engine.local.kv_quant), about
half the bytes, so about twice the context fits; "auto" decides per turn: 16-bit when the turn
fits at 16-bit, 8-bit when only 8-bit fits. A turn in another precision than the chat's cache
drops that cache and reads the history again once, as an explicit switch does. Stored with the
conversation (app.core.store, column ``kv_precision``).
"""

KV_16 = "16-bit"
KV_8 = "8-bit"
KV_AUTO = "auto"
KV_PRECISIONS = (KV_16, KV_8, KV_AUTO)
DEFAULT_KV_PRECISION = KV_16


def kv8_supported(attention: str) -> bool:
    """Whether a model loaded with `attention` (LoadReport.attention) can keep an 8-bit KV cache:
    only where Headroom's own attention runs, its packed SDPA ("sdpa+gqa-packed") or its FA2 path
    ("flash_attention_2 (flash-attn X)" in the LoadReport, "fa2+static" as registered); not
    transformers' eager or plain SDPA. The one rule the window and Foresight both apply."""
    return (attention.endswith("gqa-packed") or attention.startswith("flash_attention_2")
            or attention == "fa2+static")


def valid_kv_precision(value: object) -> str:
    """``value`` when it is one of KV_PRECISIONS, else the default (a damaged or newer row)."""
    return value if value in KV_PRECISIONS else DEFAULT_KV_PRECISION


def kv_bits_choices(precision: str, kv8_available: bool) -> tuple[int, ...]:
    """KV bits to try for a turn, in order, the first admitted one runs: "16-bit" (16,);
    "8-bit" (8,); "auto" (16, 8), whatever the chat's cache holds now: a chat that went 8-bit
    for a long turn comes back to 16-bit once a turn fits there again (after a summary folded
    turns, or with memory freed), at the cost of one re-read of its history (trial 9: "auto"
    kept an 8-bit cache with plenty of memory free, against what the README and the combo say).
    Without 8-bit support: (16,)."""
    if not kv8_available or precision == KV_16:
        return (16,)
    if precision == KV_8:
        return (8,)
    return (16, 8)
