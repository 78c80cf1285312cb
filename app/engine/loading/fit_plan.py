"""Fit plan: will this model fit on this machine, and at what context — before anything loads.

For an HF folder (its config.json) or a GGUF (its header, app.engine.loading.gguf_header; no
tensor data read): the weights in the form the placement rules would load them
(app.engine.loading.fit.project_weights: NF4 on CUDA, the compute dtype without bitsandbytes,
float32 on the CPU), KV bytes per token (app.engine.memory.kv_layout), the prefill spike of a
full-context prompt in the app's chunks (app.engine.memory.prefill_spike), free memory of the
device (app.engine.loading.fit.machine_memory) less the admission safety margin, and the verdict:

* "fits at full context": weights + KV + spike at the trained context + margin ≤ free;
* "fits with context N": only up to N tokens (N ≥ MIN_USEFUL_CONTEXT) fit;
* "does not fit": not even MIN_USEFUL_CONTEXT tokens fit beside the weights.

For a GGUF that is not converted yet the plan also carries the conversion's output size and the
free disk of the cache. ``python -m app --plan --model PATH`` prints :meth:`FitPlan.to_json`.
All sizes are bytes, lengths tokens.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.engine.loading.fit import estimate_parameters, machine_memory, project_weights
from app.engine.loading.model_path import is_gguf_file
from app.engine.memory.admission import safety_margin
from app.engine.memory.context_fit import MIN_USEFUL_CONTEXT, context_cost, largest_context
from app.engine.memory.kv_layout import KVLayout
from app.engine.memory.model_config import model_max_positions
from app.engine.memory.prefill_spike import PrefillModel
from app.engine.memory.units import dtype_nbytes, format_bytes

FULL, PARTIAL, NO_FIT = "fits at full context", "fits with context", "does not fit"


@dataclass(frozen=True)
class FitPlan:
    """The plan for one model on this machine (see the module doc). context_fit: largest context
    that fits (0: none) with a 16-bit KV cache; context_fit_kv8 / kv8_bytes_per_token: the same
    with an 8-bit KV cache (issue 16; None when the model's attention cannot read 8-bit KV);
    verdict text carries N for PARTIAL. conversion: None for an HF folder or a
    converted GGUF, else {"output_bytes", "needed_disk_bytes", "free_disk_bytes", "enough_disk", "folder"}."""

    source: str
    kind: str
    model: dict[str, Any]
    device: str
    compute_dtype: str
    weights_form: str
    weights_bytes: int
    kv_bytes_per_token: int
    prefill_chunk_tokens: int | None
    trained_context: int
    kv_bytes_full_context: int
    prefill_spike_full_context: int
    free_bytes: int
    total_bytes: int
    margin_bytes: int
    context_fit: int
    verdict: str
    conversion: dict[str, Any] | None = None
    weights_method: str = "dense"  # WeightProjection.method and .dtype (weights_form says both in English)
    weights_dtype: str = ""
    kv8_bytes_per_token: int | None = None
    context_fit_kv8: int | None = None

    @property
    def needed_full_context(self) -> int:
        return self.weights_bytes + self.kv_bytes_full_context + self.prefill_spike_full_context

    @property
    def verdict_text(self) -> str:
        return f"{PARTIAL} {self.context_fit:,}" if self.verdict == PARTIAL else self.verdict

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["needed_full_context"] = self.needed_full_context
        data["verdict_text"] = self.verdict_text
        return data

    def summary(self) -> str:
        """One line: "SmolLM2…gguf: fits at full context (8,192 tokens) on cpu: weights 513 MiB
        (float32) + KV 45 KiB/token (360 MiB at full context) + prefill 31 MiB + margin 480 MiB vs
        20.90 GiB free"."""
        name = Path(self.source).name
        disk = ""
        if self.conversion:
            c = self.conversion
            disk = (f"; conversion writes {format_bytes(c['output_bytes'])}, "
                    f"{format_bytes(c['free_disk_bytes'])} disk free"
                    + ("" if c["enough_disk"] else
                       f" — NOT ENOUGH DISK (needs {format_bytes(c['needed_disk_bytes'])})"))
        tokens = self.context_fit if self.verdict != FULL else self.trained_context
        return (f"{name}: {self.verdict_text} ({tokens:,} of {self.trained_context:,} tokens) on "
                f"{self.device}: weights {format_bytes(self.weights_bytes)} ({self.weights_form}) + KV "
                f"{format_bytes(self.kv_bytes_per_token)}/token ({format_bytes(self.kv_bytes_full_context)} at full "
                f"context) + prefill {format_bytes(self.prefill_spike_full_context)} + margin "
                f"{format_bytes(self.margin_bytes)} vs {format_bytes(self.free_bytes)} free{disk}"
                + (f"; with 8-bit KV {min(self.context_fit_kv8, self.trained_context):,} tokens fit"
                   if self.context_fit_kv8 is not None else ""))


def plan_model(path: Path, device_preference: str = "auto", reclaimable: int = 0) -> FitPlan:
    """The fit plan of `path` (HF folder, its config.json, or .gguf) on this machine.
    reclaimable: bytes the open model frees before the load (counted as free).
    Raises UnsupportedGguf, or ValueError / OSError for a path that is not a readable model."""
    from app.engine.loading.placement import detect_placement

    path = Path(path).expanduser()
    if not path.exists():
        raise ValueError(f"no model at {path}")
    if path.is_file() and path.name == "config.json":
        path = path.parent
    conversion = None
    if is_gguf_file(path):
        from app.engine.loading.gguf_header import read_gguf_header

        header = read_gguf_header(path)
        config, kind, saved_quant, saved_bytes = header.hf_config(), "gguf", None, 0
        described = header.describe()
        placement = detect_placement(False, device_preference, config)
        conversion = conversion_check(header, placement)
    elif path.is_dir() and (path / "config.json").is_file():
        from app.engine.loading.catalog import read_config

        config, raw = read_config(path)
        kind = "hf"
        saved = raw.get("quantization_config")
        saved_quant = str(saved.get("quant_method", "quantized")) if isinstance(saved, dict) else None
        saved_bytes = sum(p.stat().st_size for p in path.glob("*.safetensors"))
        placement = detect_placement(saved_quant is not None, device_preference, config)
        described = describe_config(config, raw)
    else:
        raise ValueError(f"{path} is neither a .gguf file nor a folder with config.json")
    machine = machine_memory(placement.device, reclaimable)
    return build_plan(str(path), kind, described, config, placement, machine.free, machine.total,
                      saved_quant, saved_bytes, conversion)


def conversion_check(header, placement) -> dict[str, Any] | None:
    """For a GGUF not converted yet at the dtype `placement` implies (bf16, fp16 on a GPU without
    bf16): output bytes, the free disk it needs (output + slack for tokenizer, config and headers), free
    disk of the cache, whether it is enough, the folder. None once converted."""
    from app.engine.loading import gguf_convert

    dtype = "float16" if str(placement.compute_dtype) == "torch.float16" else "bfloat16"
    if gguf_convert.cached_conversion(header.path, dtype) is not None:
        return None
    disk = gguf_convert.check_disk(header, dtype)
    return {"output_bytes": disk.output, "needed_disk_bytes": disk.needed, "free_disk_bytes": disk.free,
            "enough_disk": disk.enough, "folder": str(disk.folder)}


def build_plan(source: str, kind: str, described: dict, config: Any, placement, free: int, total: int,
               saved_quant: str | None = None, saved_bytes: int = 0,
               conversion: dict | None = None) -> FitPlan:
    """The plan from its parts (pure arithmetic; the tests drive it with fixed free memory)."""
    from app.engine.local.attention import uses_gqa
    from app.engine.local.generation import default_prefill_chunk

    weights = project_weights(estimate_parameters(config), placement, saved_quant, saved_bytes)
    element = dtype_nbytes(placement.compute_dtype)
    attention = placement.attention
    if attention == "sdpa" and uses_gqa(config):
        attention = "sdpa+gqa-packed"  # what loader.enable_packed_sdpa switches a GQA model to
    sliced = placement.quantize_4bit and placement.device == "cuda"  # the loader's nf4_prefill
    model = PrefillModel.from_config(config, element, attn_implementation=attention,
                                     quantized_4bit=placement.quantize_4bit,
                                     dynamic_cache=placement.device != "cuda", nf4_prefill_sliced=sliced)
    chunk = default_prefill_chunk(placement.device)
    trained = model_max_positions(config)
    margin = safety_margin(total)
    full = context_cost(model, trained, chunk)
    budget = free - margin - weights.bytes
    fit = largest_context(model, budget, trained, chunk) if budget > 0 else 0
    verdict = FULL if fit >= trained else PARTIAL if fit >= MIN_USEFUL_CONTEXT else NO_FIT
    kv8 = fit8 = None
    if attention == "sdpa+gqa-packed":  # 8-bit KV is read by Headroom's attention only
        from app.engine.local.split_kv_attention import kernel_runs_on

        model8 = PrefillModel.from_config(config, element, attn_implementation=attention,
                                          quantized_4bit=placement.quantize_4bit, kv_bits=8,
                                          nf4_prefill_sliced=sliced, kv8_kernel=kernel_runs_on(placement.device))
        kv8 = model8.layout.bytes_per_token
        fit8 = largest_context(model8, budget, trained, chunk) if budget > 0 else 0
    return FitPlan(
        source=source, kind=kind, model=described, device=placement.device,
        compute_dtype=str(placement.compute_dtype).removeprefix("torch."), weights_form=weights.form,
        weights_bytes=weights.bytes,
        kv_bytes_per_token=KVLayout.from_config(config, element).bytes_per_token,
        prefill_chunk_tokens=chunk, trained_context=trained, kv_bytes_full_context=full.kv_bytes,
        prefill_spike_full_context=full.prefill_spike, free_bytes=free, total_bytes=total,
        margin_bytes=margin, context_fit=fit, verdict=verdict, conversion=conversion,
        weights_method=weights.method, weights_dtype=weights.dtype,
        kv8_bytes_per_token=kv8, context_fit_kv8=fit8)


def describe_config(config: Any, raw: dict) -> dict[str, Any]:
    from app.engine.memory.model_config import config_attr, head_dim, kv_heads, text_config

    cfg = text_config(config)
    return {
        "architecture": (raw.get("architectures") or [""])[0], "model_type": raw.get("model_type", ""),
        "parameters": estimate_parameters(config).total,
        "quantization": str((raw.get("quantization_config") or {}).get("quant_method", "none")),
        "trained_context": model_max_positions(config),
        "layers": config_attr(cfg, "num_hidden_layers", "n_layer", "num_layers"),
        "attention_heads": config_attr(cfg, "num_attention_heads", "n_head"),
        "kv_heads": kv_heads(cfg), "head_dim": head_dim(cfg),
    }
