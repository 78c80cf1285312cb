"""Will a model fit on this machine? Projected from its config before anything is loaded.

needed = weights in the form the placement rules would load them (app.engine.loading.placement: NF4 on
CUDA with bitsandbytes, the compute dtype without it, float32 on the CPU) + the KV cache at the
model's default context (app.engine.memory.kv_layout.kv_cache_bytes), against the free memory of the
device it would run on (``torch.cuda.mem_get_info`` on CUDA, fragmentation: reserved is not free, dolly #79; available
RAM on the CPU (app.engine.memory.host_memory: the machine's, capped by a container's limit).
All sizes are bytes; the text shows them with format_bytes (adaptive binary units).

Parameters are counted from the config (no model is instantiated), for decoder-only
transformers: embeddings, attention (GQA, MLA), gated or plain MLP, mixture-of-experts and
norms. Biases are left out (< 0.1 % of any model measured in tests/engine/test_model_fit.py).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.engine.loading.placement import Placement
from app.engine.memory.admission import context_limit, safety_margin
from app.engine.memory.host_memory import host_memory
from app.engine.memory.kv_layout import KVLayout, kv_cache_bytes
from app.engine.memory.model_config import config_attr, head_dim, kv_heads, model_max_positions, text_config
from app.engine.memory.units import dtype_nbytes, format_bytes

# NF4 with double quantization (Dettmers et al. 2023, "QLoRA", §2): 4 bits per weight, one 8-bit
# absmax per 64-weight block, one fp32 constant per 256 blocks = 4.127 bits per parameter.
NF4_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
# The listing cannot project a prompt's prefill spike or the runtime's buffers: a model whose
# weights + KV leave less than this share of itself free is "tight", on top of the admission
# safety margin (app.engine.memory.admission.safety_margin: max(256 MiB, 2 % of the device)).
FIT_SLACK_FRACTION = 0.10
FITS, TIGHT, NO_FIT = "fits", "tight", "does not fit"
# MLP with two matrices (up, down) instead of three (gate, up, down)
_PLAIN_MLP = {"gpt2", "gpt_neox", "gptj", "gpt_bigcode", "falcon", "opt", "bloom", "phi", "starcoder2",
              "mpt", "codegen", "persimmon", "biogpt", "xglm", "gpt_neo"}
# learned absolute position embeddings (positions × hidden); the rest use RoPE or ALiBi
_LEARNED_POSITIONS = {"gpt2", "gpt_bigcode", "gpt_neo", "opt", "biogpt"}


@dataclass(frozen=True)
class ParameterCount:
    """Parameters by how NF4 treats them. embedding: input embeddings and an untied lm_head
    (bitsandbytes keeps both in the compute dtype). linear: decoder projection weights
    (quantized). other: norms."""

    embedding: int
    linear: int
    other: int

    @property
    def total(self) -> int:
        return self.embedding + self.linear + self.other


def estimate_parameters(config: Any) -> ParameterCount:
    """Parameter count of a decoder-only causal LM from its config (text part of a multimodal
    one). Raises ValueError when hidden size, layers or heads are missing."""
    cfg = text_config(config)
    hidden = config_attr(cfg, "hidden_size", "n_embd", "d_model")
    layers = config_attr(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    vocab = config_attr(cfg, "vocab_size", default=0)
    if not hidden or not layers:
        raise ValueError("config names no hidden size or layer count")
    tied = getattr(cfg, "tie_word_embeddings", getattr(config, "tie_word_embeddings", True))
    embedding = vocab * hidden * (1 if tied else 2)
    if getattr(cfg, "model_type", "") in _LEARNED_POSITIONS:
        embedding += model_max_positions(cfg) * hidden
    linear = layers * _attention_params(cfg, hidden)
    linear += sum(_mlp_params(cfg, hidden, i) for i in range(layers))
    other = (2 * layers + 1) * hidden
    return ParameterCount(embedding, linear, other)


def _attention_params(cfg: Any, hidden: int) -> int:
    heads = config_attr(cfg, "num_attention_heads", "n_head", "num_heads")
    if not heads:
        raise ValueError("config names no attention head count")
    if getattr(cfg, "kv_lora_rank", None) and getattr(cfg, "qk_rope_head_dim", None):
        # MLA (DeepSeek-V2/V3 modeling): q (optionally through a q_lora_rank bottleneck),
        # kv_a to the latent + rope key, kv_b back to per-head keys and values, o.
        qk = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
        q_rank = getattr(cfg, "q_lora_rank", None)
        q = hidden * q_rank + q_rank * heads * qk if q_rank else hidden * heads * qk
        kv = hidden * (cfg.kv_lora_rank + cfg.qk_rope_head_dim)
        kv += cfg.kv_lora_rank * heads * (cfg.qk_nope_head_dim + cfg.v_head_dim)
        return q + kv + heads * cfg.v_head_dim * hidden
    dim = head_dim(cfg)
    return 2 * hidden * heads * dim + 2 * hidden * kv_heads(cfg) * dim  # q, o + k, v


def _mlp_params(cfg: Any, hidden: int, layer: int) -> int:
    matrices = 2 if getattr(cfg, "model_type", "") in _PLAIN_MLP else 3
    inter = config_attr(cfg, "intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", default=4 * hidden)
    experts = config_attr(cfg, "n_routed_experts", "num_local_experts", "num_experts", default=0)
    dense_layers = config_attr(cfg, "first_k_dense_replace", default=0)
    if not experts or layer < dense_layers or layer in (getattr(cfg, "mlp_only_layers", None) or ()):
        return matrices * hidden * inter
    expert_inter = config_attr(cfg, "moe_intermediate_size", default=inter)
    shared = getattr(cfg, "shared_expert_intermediate_size", None) or (
        (getattr(cfg, "n_shared_experts", None) or 0) * expert_inter)
    return matrices * hidden * (experts * expert_inter + shared) + hidden * experts  # + router


NF4, DENSE, SAVED = "nf4", "dense", "saved"  # how the weights load (WeightProjection.method)


@dataclass(frozen=True)
class WeightProjection:
    """Bytes the weights will hold once loaded, and in what form: `method` NF4 (linear layers
    4-bit, the rest in `dtype`), DENSE (all in `dtype`) or SAVED (as the folder stores them,
    `dtype` naming its quantization method); `form` says it in English ("NF4 + bfloat16",
    "float32", "as saved (bitsandbytes)") for logs and the --plan output."""

    bytes: int
    form: str
    method: str = DENSE
    dtype: str = ""


def project_weights(params: ParameterCount, placement: Placement, saved_quantization: str | None = None,
                    saved_weight_bytes: int = 0) -> WeightProjection:
    """Weights as `placement` would load them. A folder carrying its own quantization_config
    is loaded as saved (a saved 4-bit folder reopened, bitsandbytes #1123): its weight files' size is the projection."""
    dtype = str(placement.compute_dtype).removeprefix("torch.")
    size = dtype_nbytes(placement.compute_dtype)
    if saved_quantization:
        return WeightProjection(saved_weight_bytes, f"as saved ({saved_quantization})", SAVED, saved_quantization)
    if placement.quantize_4bit:
        nf4 = round(params.linear * NF4_BYTES_PER_PARAM) + (params.embedding + params.other) * size
        return WeightProjection(nf4, f"NF4 + {dtype}", NF4, dtype)
    return WeightProjection(params.total * size, dtype, DENSE, dtype)


@dataclass(frozen=True)
class MachineMemory:
    """Memory a model could use here, bytes. device: "cuda" or "cpu". free: driver-free GPU
    memory or available RAM, plus `reclaimable` (the open model's weights, freed before the
    next load, VRAM kept after unload, bitsandbytes #1611)."""

    device: str
    free: int
    total: int
    reclaimable: int = 0

    def describe(self) -> str:
        where = "GPU memory free" if self.device == "cuda" else "RAM available"
        freed = (f", counting the open model's {format_bytes(self.reclaimable)} freed on load"
                 if self.reclaimable else "")
        return f"{format_bytes(self.free)} of {format_bytes(self.total)} {where}{freed}"


def machine_memory(device: str, reclaimable: int = 0) -> MachineMemory:
    """Free memory of the device a model would run on: ``torch.cuda.mem_get_info(0)`` for
    "cuda" (what the driver can still hand out, never reserved-but-cached, fragmentation: reserved is not free, dolly
    #79), else
    host RAM available to this process (app.engine.memory.host_memory: the machine's, capped
    by its control group's limit)."""
    if device == "cuda":
        import torch

        free, total = torch.cuda.mem_get_info(0)
    else:
        host = host_memory()
        free, total = host.available, host.total
    return MachineMemory(device, int(free) + reclaimable, int(total), reclaimable)


@dataclass(frozen=True)
class MemoryFit:
    """Projected memory of a model on this machine, bytes. verdict: FITS, TIGHT or NO_FIT.
    margin: admission safety margin + FIT_SLACK_FRACTION of weights + KV."""

    verdict: str
    weights: WeightProjection
    kv_bytes: int
    context_tokens: int
    margin: int
    machine: MachineMemory

    @property
    def needed(self) -> int:
        return self.weights.bytes + self.kv_bytes

    def summary(self) -> str:
        """Short cell text: "870 MiB of 21.30 GiB"."""
        return f"{format_bytes(self.needed)} of {format_bytes(self.machine.free)}"

    def detail(self) -> str:
        """One sentence with every term."""
        return (f"{self.verdict}: weights {format_bytes(self.weights.bytes)} ({self.weights.form}) + KV "
                f"{format_bytes(self.kv_bytes)} at {self.context_tokens:,} tokens = {format_bytes(self.needed)}; "
                f"{self.machine.describe()}")


def project_fit(config: Any, placement: Placement, machine: MachineMemory, context_setting: int = 0,
                saved_quantization: str | None = None, saved_weight_bytes: int = 0) -> MemoryFit:
    """Project weights + KV at min(model positions, context setting) tokens (cache dtype = compute
    dtype, as app.engine.local.turn_planner assumes) and judge it against `machine.free`: NO_FIT when
    needed > free, TIGHT when needed + margin > free, else FITS. Raises ValueError for a config
    without the shapes (see :func:`estimate_parameters`, ``KVLayout.from_config``)."""
    weights = project_weights(estimate_parameters(config), placement, saved_quantization, saved_weight_bytes)
    context = context_limit(model_max_positions(config), context_setting)
    kv = kv_cache_bytes(KVLayout.from_config(config, dtype_nbytes(placement.compute_dtype)), context)
    needed = weights.bytes + kv
    margin = safety_margin(machine.total) + round(FIT_SLACK_FRACTION * needed)
    verdict = NO_FIT if needed > machine.free else TIGHT if needed + margin > machine.free else FITS
    return MemoryFit(verdict, weights, kv, context, margin, machine)


PlacementFor = Callable[[bool], Placement]
"""already_quantized → Placement; app.engine.loading.placement.detect_placement in the app."""
