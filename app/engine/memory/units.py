"""Byte units: binary MiB/GiB, human text for a byte count, and bytes per element of a dtype.

Pure Python, no torch, no Qt: the memory projection (app.engine.memory.kv_layout, prefill_spike,
admission) counts in these, and every widget that shows a size formats it here.
"""

from __future__ import annotations

from typing import Any

MiB = 1 << 20
GiB = 1 << 30

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
