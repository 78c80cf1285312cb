"""Decide device, compute dtype, attention path and quantization *before* loading.

Deciding up front matters: asking transformers for `flash_attention_2` without a usable
`flash_attn` raises at load time, and recent transformers may try to fetch a hub kernel
instead — an offline app must do neither (FA2 unavailable, flash-attention #762; slow 4-bit from an fp32 compute
dtype, h2ogpt #682; no CUDA or a CPU-only bitsandbytes, bitsandbytes #1062).
"""

import importlib.util
import logging
from dataclasses import dataclass, field

import torch

log = logging.getLogger(__name__)

# FlashAttention-2 needs Ampere or newer (compute capability 8.0),
# https://github.com/Dao-AILab/flash-attention#installation-and-features
FA2_MIN_CAPABILITY = (8, 0)
# bf16 tensor cores arrived with Ampere too; older cards compute in fp16.
BF16_MIN_CAPABILITY = (8, 0)


@dataclass(frozen=True)
class Placement:
    """Where and how a model will run.

    device: "cuda" or "cpu". compute_dtype: the dtype of activations, which is also
    `bnb_4bit_compute_dtype` when quantize_4bit is set (both always equal, NF4 dtype mismatch, transformers #26066).
    attention: the `attn_implementation` to request. reasons: why each fallback was taken.
    """

    device: str
    compute_dtype: torch.dtype
    attention: str
    quantize_4bit: bool
    reasons: tuple[str, ...] = field(default=())


def flash_attn_importable() -> bool:
    """True only when the `flash_attn` package is installed *and* imports (a broken build
    with a missing CUDA symbol is common, flash-attention #762)."""
    if importlib.util.find_spec("flash_attn") is None:
        return False
    try:
        import flash_attn  # noqa: F401
    except Exception as exc:  # any import failure means the path is not usable
        log.info("flash_attn is installed but does not import: %s", exc)
        return False
    return True


def bitsandbytes_usable() -> tuple[bool, str]:
    """(usable, reason). bitsandbytes must import and have a CUDA build (bitsandbytes #1062)."""
    if importlib.util.find_spec("bitsandbytes") is None:
        return False, "bitsandbytes is not installed (pip install 'headroom[cuda]')"
    try:
        import bitsandbytes  # noqa: F401
    except Exception as exc:
        return False, f"bitsandbytes does not import: {exc}"
    return True, ""


def choose_placement(
    cuda_available: bool,
    capability: tuple[int, int] | None,
    has_flash_attn: bool,
    has_bitsandbytes: tuple[bool, str],
    already_quantized: bool = False,
    device_preference: str = "auto",
) -> Placement:
    """Pure decision table (no torch.cuda calls) so every branch is testable on CPU.

    CUDA: NF4 4-bit unless bitsandbytes is unusable or the folder brings its own
    quantization_config (a saved 4-bit folder reopened, bitsandbytes #1123); bf16 at capability >= 8.0 else fp16; FA2
    when flash_attn
    imports and capability >= 8.0, else SDPA. CPU: float32, SDPA, no quantization.
    """
    reasons: list[str] = []
    if device_preference == "cpu" or not cuda_available:
        if device_preference != "cpu":
            reasons.append("no CUDA device: running on the CPU in float32")
        return Placement("cpu", torch.float32, "sdpa", False, tuple(reasons))

    capability = capability or (0, 0)
    if capability >= BF16_MIN_CAPABILITY:
        dtype = torch.bfloat16
    else:
        dtype = torch.float16
        reasons.append(f"compute capability {capability[0]}.{capability[1]} < 8.0: fp16, not bf16")

    if has_flash_attn and capability >= FA2_MIN_CAPABILITY:
        attention = "flash_attention_2"
    else:
        attention = "sdpa"
        if not has_flash_attn:
            reasons.append("flash_attn not importable: SDPA attention")
        else:
            reasons.append("FlashAttention-2 needs compute capability >= 8.0: SDPA attention")

    usable, why = has_bitsandbytes
    quantize = usable and not already_quantized
    if already_quantized:
        reasons.append("folder carries its own quantization_config: honoured as saved")
    elif not usable:
        reasons.append(f"{why}: weights stay in {str(dtype).removeprefix('torch.')}")
    return Placement("cuda", dtype, attention, quantize, tuple(reasons))


def detect_placement(already_quantized: bool = False, device_preference: str = "auto") -> Placement:
    """Read this machine (CUDA, capability, flash_attn, bitsandbytes) and decide."""
    cuda = torch.cuda.is_available()
    capability = torch.cuda.get_device_capability(0) if cuda else None
    return choose_placement(
        cuda,
        capability,
        flash_attn_importable() if cuda else False,
        bitsandbytes_usable() if cuda else (False, "no CUDA"),
        already_quantized,
        device_preference,
    )
