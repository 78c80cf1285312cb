"""Byte units: binary KiB/MiB/GiB, human text for a byte count, and bytes per element of a dtype.

Pure Python, no torch, no Qt: the memory projection (app.engine.memory.kv_layout, prefill_spike,
admission) counts in these, and every widget that shows a size formats it here.
"""

from __future__ import annotations

from typing import Any

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40
_UNITS = (("KiB", KiB), ("MiB", MiB), ("GiB", GiB), ("TiB", TiB))

_DTYPE_BYTES = {
    "float64": 8, "double": 8, "float32": 4, "float": 4, "fp32": 4, "tf32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "half": 2, "fp16": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1, "int8": 1, "uint8": 1,
}


def format_bytes(n: float) -> str:
    """Human text for a byte count, in the largest binary unit it reaches (B, KiB, MiB, GiB,
    TiB): "512 B", "4.5 KiB", "712 MiB", "3.20 GiB". KiB and MiB show one decimal below 10 and
    none above; GiB and TiB two (memory is judged in GiB). Every size the user sees is
    formatted here, so a 94 MiB file never reads "0.09 GiB" and a 300-byte one never "0.00 GiB"."""
    sign, n = ("-" if n < 0 else ""), abs(n)
    if round(n) < 1024:
        return f"{sign}{n:.0f} B"
    for unit, size in _UNITS:
        value = n / size
        text = f"{value:.2f}" if size >= GiB else f"{value:.1f}" if value < 9.95 else f"{value:.0f}"
        if float(text) < 1024 or unit == _UNITS[-1][0]:  # "1024 KiB" reads as "1.0 MiB"
            return f"{sign}{text} {unit}"
    raise AssertionError("unreachable")


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
