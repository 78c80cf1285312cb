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
    flash_attn_version: the flash-attn package's version when ``attention`` is FlashAttention-2.
    """

    device: str
    compute_dtype: torch.dtype
    attention: str
    quantize_4bit: bool
    reasons: tuple[str, ...] = field(default=())
    flash_attn_version: str | None = None  # the flash-attn package's, when attention is FA2


# Head dimensions upstream flash-attn builds kernels for (csrc/flash_attn/src, generate_kernels.py)
FA2_UPSTREAM_HEAD_DIMS = (32, 64, 96, 128, 192, 256)


@dataclass(frozen=True)
class FlashAttnBuild:
    """What an installed flash-attn can run. version: the package's own (flash_attn.__version__).
    head_dims / dtypes / cuda_archs: None for an upstream build (every head dim up to 256, bf16
    and fp16, Ampere and newer); set by Headroom's inference-only build
    (packaging/build_flash_attn.py writes them to ``flash_attn.headroom_build``): exact head dims,
    and SASS for ``cuda_archs`` only ("90" runs on compute capability 9.x)."""

    version: str
    head_dims: tuple[int, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    cuda_archs: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        """How the LoadReport names it, e.g. "flash-attn 2.8.3.post2"."""
        return f"flash-attn {self.version}"

    def refusal(self, capability: tuple[int, int], head_dim: int | None, dtype: torch.dtype) -> str | None:
        """Why this build cannot run a model of ``head_dim`` in ``dtype`` on ``capability``, or
        None when it can. Upstream: head dim a multiple of 8 up to 256; this build's lists
        otherwise (a kernel that is not compiled in would raise at the first forward)."""
        name = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, str(dtype))
        if self.dtypes is not None and name not in self.dtypes:
            return f"this {self.label} build has no {name} kernels ({', '.join(self.dtypes)} only)"
        if head_dim is not None:
            if self.head_dims is not None and head_dim not in self.head_dims:
                dims = ", ".join(map(str, self.head_dims))
                return f"head_dim {head_dim}: this {self.label} build has kernels for head_dim {dims} only"
            if self.head_dims is None and (head_dim > 256 or head_dim % 8):
                return f"head_dim {head_dim}: FlashAttention-2 supports multiples of 8 up to 256"
        if self.cuda_archs is not None and not any(
                int(a) // 10 == capability[0] and int(a) % 10 <= capability[1] for a in self.cuda_archs):
            archs = ", ".join(f"sm_{a}" for a in self.cuda_archs)
            return (f"this {self.label} build has kernels for {archs} only, this GPU is "
                    f"sm_{capability[0]}{capability[1]}")
        return None


def flash_attn_build() -> FlashAttnBuild | None:
    """The installed flash-attn when it is installed *and* imports (a broken build with a missing
    CUDA symbol is common, flash-attention #762), else None."""
    if importlib.util.find_spec("flash_attn") is None:
        return None
    try:
        import flash_attn
        import flash_attn.bert_padding  # noqa: F401  transformers imports it for FA2 (needs einops)
    except Exception as exc:  # any import failure means the path is not usable
        log.info("flash_attn is installed but does not import: %s", exc)
        return None
    version = str(getattr(flash_attn, "__version__", "?"))
    try:
        from flash_attn import headroom_build as hb
    except ImportError:  # an upstream build
        return FlashAttnBuild(version)
    return FlashAttnBuild(version, tuple(hb.HEAD_DIMS), tuple(hb.DTYPES), tuple(hb.CUDA_ARCHS))


def flash_attn_importable() -> bool:
    """True only when the `flash_attn` package is installed *and* imports."""
    return flash_attn_build() is not None


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
    has_flash_attn: bool | FlashAttnBuild | None,
    has_bitsandbytes: tuple[bool, str],
    already_quantized: bool = False,
    device_preference: str = "auto",
    head_dim: int | None = None,
    sliding_window: bool = False,
) -> Placement:
    """Pure decision table (no torch.cuda calls) so every branch is testable on CPU.

    CUDA: NF4 4-bit unless bitsandbytes is unusable or the folder brings its own
    quantization_config (a saved 4-bit folder reopened, bitsandbytes #1123); bf16 at capability >= 8.0 else fp16; FA2
    when flash_attn imports (``has_flash_attn``: True, or the build's FlashAttnBuild), capability
    >= 8.0, the build has kernels for ``head_dim`` and the dtype on this GPU
    (`FlashAttnBuild.refusal`) and the model has no sliding-window layers (Headroom's FA2 path
    over its static cache covers full attention only, app.engine.local.fa2_attention), else
    SDPA. CPU: float32, SDPA, no quantization.
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

    build = FlashAttnBuild("?") if has_flash_attn is True else has_flash_attn or None
    refusal = None
    if build is None:
        refusal = "flash_attn not importable"
    elif capability < FA2_MIN_CAPABILITY:
        refusal = "FlashAttention-2 needs compute capability >= 8.0"
    elif sliding_window:
        refusal = "sliding-window layers: Headroom's FlashAttention-2 path covers full attention only"
    else:
        refusal = build.refusal(capability, head_dim, dtype)
    attention = "sdpa" if refusal else "flash_attention_2"
    if refusal:
        reasons.append(f"{refusal}: SDPA attention")

    usable, why = has_bitsandbytes
    quantize = usable and not already_quantized
    if already_quantized:
        reasons.append("folder carries its own quantization_config: honoured as saved")
    elif not usable:
        reasons.append(f"{why}: weights stay in {str(dtype).removeprefix('torch.')}")
    version = build.version if build is not None and not refusal else None
    return Placement("cuda", dtype, attention, quantize, tuple(reasons), version)


def detect_placement(already_quantized: bool = False, device_preference: str = "auto",
                     config=None) -> Placement:
    """Read this machine (CUDA, capability, flash_attn, bitsandbytes) and decide; ``config``
    (the model's, when known) gives the head dim and sliding windows the FA2 build must cover."""
    cuda = torch.cuda.is_available()
    capability = torch.cuda.get_device_capability(0) if cuda else None
    head_dim, sliding = model_attention_shape(config)
    return choose_placement(
        cuda,
        capability,
        flash_attn_build() if cuda else None,
        bitsandbytes_usable() if cuda else (False, "no CUDA"),
        already_quantized,
        device_preference,
        head_dim,
        sliding,
    )


def model_attention_shape(config) -> tuple[int | None, bool]:
    """(head_dim, has sliding-window layers) of a model config; (None, False) when unknown."""
    if config is None:
        return None, False
    from app.engine.memory.kv_layout import KVLayout
    from app.engine.memory.model_config import head_dim, text_config

    try:
        layout = KVLayout.from_config(config, 2)
        return head_dim(text_config(config)), any(layer.window is not None for layer in layout.layers)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        log.info("attention shape unknown: %s", exc)
        return None, False
