"""Open an HF folder or a `.gguf` file and report what is *actually* active.

A GGUF file is converted once, tensor by tensor, to a bf16 HF folder (safetensors + tokenizer)
in the user cache (app.engine.loading.gguf_convert, GGUF dequantized on load, transformers #34417); later opens load
that folder in
about a second.
"""

import gc
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from app.core.paths import cache_dir
from app.engine.loading.folder_trust import check_folder, remote_code_message
from app.engine.loading.model_path import model_source, refusal
from app.engine.loading.placement import Placement, detect_placement
from app.engine.loading.safetensors_header import damaged_safetensors, missing_layers
from app.engine.local.attention import enable_packed_sdpa
from app.engine.local.chat_format import PromptFormat, detect_format, stop_token_ids, template_problem
from app.engine.local.fa2_attention import enable_fa2_static
from app.engine.memory.model_config import config_attr, text_config
from app.engine.memory.units import format_bytes

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]  # (stage text, fraction 0..1)
CACHE_SUFFIX = ".hf"


class ModelLoadError(Exception):
    """A model could not be opened; str(exc) is one line meant for the user."""


class LoadCancelled(ModelLoadError):
    """The user cancelled loading; nothing stays in memory."""


@dataclass(frozen=True)
class LoadReport:
    """What is active after loading, read back from the loaded model, not from the request.

    weight_bytes: bytes held by parameters and buffers (`get_memory_footprint`).
    max_positions: the model's context length in tokens (None when the config does not say).
    fallbacks: the reason for every choice that differs from the best path.
    """

    name: str
    source: str
    device: str
    attention: str
    quantization: str
    weight_dtype: str
    compute_dtype: str
    weight_bytes: int
    max_positions: int | None
    has_chat_template: bool
    load_seconds: float
    fallbacks: tuple[str, ...]
    decode_kernel: str = ""  # NF4 decode rows: fused Triton GEMV or bitsandbytes (issue 15)
    template_problem: str = ""  # why its chat template was set aside (has_chat_template then False)
    attention_phases: tuple[str, ...] = ()  # the kernel of each phase and why (issue 19)
    nf4_prefill_sliced: bool = False  # 4-bit prefill dequantizes one slice at a time (nf4_prefill, issue 16)
    lm_head: str = ""  # "int8" (int8_head swapped it in, issue 15) or why it stayed 16-bit; "" off CUDA

    def summary(self) -> str:
        """One line for the status bar."""
        quant = "" if self.quantization == "none" else f" · {self.quantization}"
        return (f"{self.name} · {self.device} · {self.attention}{quant} · "
                f"{self.compute_dtype} · {format_bytes(self.weight_bytes)} weights")


@dataclass
class LoadedModel:
    """A model ready for generation. stop_ids: token ids that end a reply (replies that never stop,
    text-generation-webui #5885)."""

    model: torch.nn.Module
    tokenizer: object
    report: LoadReport
    prompt_format: PromptFormat
    stop_ids: frozenset[int]


def _check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise LoadCancelled("loading cancelled")


def conversion_dtype(device_preference: str = "auto") -> str:
    """The dtype a GGUF is converted to here: bfloat16, or float16 on a CUDA GPU without bf16
    (compute capability < 8.0, app.engine.loading.placement); the CPU path upcasts at load."""
    placement = detect_placement(False, device_preference)
    return "float16" if placement.compute_dtype == torch.float16 else "bfloat16"


def convert_gguf(gguf: Path, progress: Progress | None = None, cancel: threading.Event | None = None,
                 dtype: str | None = None) -> Path:
    """Convert a GGUF file to an HF folder in the user cache (app.engine.loading.gguf_convert:
    streamed tensor by tensor, bf16, atomic) and return it. The header is read first: an
    unsupported architecture or tensor type, or too little disk, is refused before anything is
    written. Raises ModelLoadError (one line) or LoadCancelled."""
    from app.engine.loading import gguf_convert as gc_
    from app.engine.loading.gguf_header import UnsupportedGguf, read_gguf_header

    error: ModelLoadError | None = None
    try:
        header = read_gguf_header(gguf)
        return gc_.convert_gguf(gguf, dtype or conversion_dtype(), progress, cancel, header)
    except gc_.ConversionCancelled:
        error = LoadCancelled("loading cancelled")
    except (UnsupportedGguf, gc_.ConversionRefused) as exc:
        error = ModelLoadError(f"cannot convert {gguf.name}: {exc}")
    except BrokenPipeError:  # the reader of `progress`'s lines went: not the file's fault (load_model)
        raise
    except Exception as exc:  # unreadable file, transformers refusing the tokenizer, disk full
        if _interrupted(exc):
            raise KeyboardInterrupt from None
        error = _load_error(f"cannot convert {gguf.name}", exc)
        if isinstance(exc, OSError) and gc_.writing_failure(exc):  # the cache's fault, not the file's
            error = ModelLoadError(f"cannot write the conversion of {gguf.name} in {cache_dir() / 'gguf'}: "
                                   f"[Errno {exc.errno}] {exc.strerror}")
    finally:
        gc.collect()
    raise error  # outside the except block: no __context__ keeps the failed frames alive


def preflight(path: Path, trust_remote_code: bool = False, allow_pickle: bool = False) -> None:
    """Refuse what can be refused before the open model is freed, so the window keeps it: the name
    and first bytes (`refusal`); a .gguf's header (cut short, damaged, an unsupported version,
    architecture or tensor type); a folder's JSON files (parsed whole: ~0.2 s for an 18 MB
    tokenizer.json), weight files and their opt-ins, and its safetensors headers: under a second.
    New-user trial: a cut GGUF freed the open model, failed, and reopened it. Raises ModelLoadError
    in load_model's own words."""
    from app.engine.loading.gguf_header import UnsupportedGguf, read_gguf_header

    why = refusal(path)
    if why is not None:
        raise ModelLoadError(why)
    source = model_source(path)
    if not source.is_file():
        _checked_folder(source, Path(path).name, trust_remote_code, allow_pickle)
        return
    try:
        read_gguf_header(source)
    except UnsupportedGguf as exc:
        raise ModelLoadError(f"cannot convert {source.name}: {exc}") from None
    except OSError as exc:
        raise ModelLoadError(f"cannot read {source.name}: {exc.strerror or exc}") from None


def _checked_folder(folder: Path, name: str, trust_remote_code: bool, allow_pickle: bool):
    """The folder's FolderTrust, after its config.json, weight files, opt-ins and safetensors
    headers are checked (app.engine.loading.folder_trust, safetensors_header); `name` is what the
    user opened, for the message. Raises ModelLoadError."""
    try:
        trust = check_folder(folder, trust_remote_code, allow_pickle)
    except ValueError as exc:  # TrustRequired included: one line that says how to allow it
        raise ModelLoadError(str(exc)) from None
    damage = damaged_safetensors(folder) if trust.use_safetensors else None
    if damage is not None:  # a download cut short: said with the file's name, before any weight loads
        raise ModelLoadError(f"cannot load {name}: {damage}")
    return trust


def resolve_model_folder(path: Path, progress: Progress | None = None,
                         cancel: threading.Event | None = None, device_preference: str = "auto") -> Path:
    """Map a user's choice (HF folder or .gguf file) to an HF folder, converting if needed.
    A GGUF's conversion lives in the user cache (app.engine.loading.gguf_convert.conversion_dir);
    the float32 folder older versions left beside it is ignored, and removed once converted."""
    from app.engine.loading.gguf_convert import cached_conversion, conversion_damage, discard_damaged, sweep_abandoned

    why = refusal(path)  # what the name and first bytes tell (the window asked the same before unloading)
    if why is not None:
        raise ModelLoadError(why)
    path = model_source(path)
    if path.is_file():
        dtype = conversion_dtype(device_preference)
        sweep_abandoned()  # before the disk check: a killed conversion's space counts as free
        cached = cached_conversion(path, dtype)
        if cached is not None and (damage := conversion_damage(cached)):
            log.warning("the conversion of %s is damaged (%s): converting it again", path.name, damage)
            discard_damaged(cached, dtype)
            cached = None
        return cached or convert_gguf(path, progress, cancel, dtype)
    return path


def _load_kwargs(placement: Placement) -> dict:
    kwargs: dict = {"dtype": placement.compute_dtype, "attn_implementation": placement.attention}
    if placement.device == "cuda":
        kwargs["device_map"] = {"": 0}
    if placement.quantize_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            # == dtype, always (NF4 dtype mismatch, transformers #26066)
            bnb_4bit_compute_dtype=placement.compute_dtype,
        )
    return kwargs


def _quantization_name(model) -> str:
    config = getattr(model.config, "quantization_config", None)
    if config is None:
        return "none"
    config = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    if config.get("load_in_4bit"):
        double = " + double quant" if config.get("bnb_4bit_use_double_quant") else ""
        return f"{str(config.get('bnb_4bit_quant_type', 'fp4')).upper()} 4-bit{double}"
    if config.get("load_in_8bit"):
        return "int8"
    return str(config.get("quant_method", "quantized"))


def _max_positions(config) -> int | None:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for name in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
        value = getattr(text, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _decode_kernel(model, placement: Placement) -> tuple[str, str] | None:
    """(kernel, why) of a 16-bit decode step's attention on a CUDA model (built and checked there,
    split_kv_attention.decode_kernel); None elsewhere."""
    if model.device.type != "cuda":
        return None
    from app.engine.local import split_kv_attention

    try:
        config = getattr(model.config, "get_text_config", lambda: model.config)()
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        groups = heads // (getattr(config, "num_key_value_heads", None) or heads)
    except (AttributeError, TypeError, ZeroDivisionError):  # a config without these: the report keeps its default
        return None
    dtype = placement.compute_dtype if isinstance(placement.compute_dtype, torch.dtype) else model.dtype
    return split_kv_attention.decode_kernel(model.device, dtype, head_dim, groups)


def build_report(model, tokenizer, source: Path, placement: Placement, seconds: float,
                 phases=None, template_dropped: str = "") -> LoadReport:
    """Read back what the loaded model actually uses. phases: the `fa2_attention.AttentionPhases`
    in force (None: derived from the active implementation). template_dropped: why the model's
    chat template was set aside (chat_format.template_problem), "" when it was not."""
    from app.engine.local.fa2_attention import FA2_LABEL, attention_label, sdpa_phases

    fallbacks = list(placement.reasons)
    active = getattr(model.config, "_attn_implementation", None) or "unknown"
    label = attention_label(active, placement.flash_attn_version)
    if label.split(" ")[0].split("+")[0] != placement.attention:
        fallbacks.append(f"requested {placement.attention}, transformers activated {active}")
    if placement.attention == FA2_LABEL and phases is None:
        fallbacks.append("flash_attention_2 loaded but Headroom's static-cache FA2 path is not active")
    phases = phases or sdpa_phases(active, _decode_kernel(model, placement))
    if template_dropped:
        fallbacks.append(f"its chat template fails ({template_dropped}): prompts use a plain User/Assistant "
                         "transcript")
    elif not getattr(tokenizer, "chat_template", None):
        fallbacks.append("no chat template (a base model?): prompts use a plain User/Assistant transcript")
    quant = _quantization_name(model)
    compute = placement.compute_dtype if quant != "none" else model.dtype
    return LoadReport(
        name=source.name.removesuffix(CACHE_SUFFIX),
        source=str(source),
        device=str(model.device),
        attention=label,
        quantization=quant,
        weight_dtype=str(model.dtype).removeprefix("torch."),
        compute_dtype=str(compute).removeprefix("torch."),
        weight_bytes=int(model.get_memory_footprint()),
        max_positions=_max_positions(model.config),
        has_chat_template=bool(getattr(tokenizer, "chat_template", None)),
        template_problem=template_dropped,
        load_seconds=seconds,
        fallbacks=tuple(fallbacks),
        attention_phases=phases.lines(),
    )


def load_model(path: Path, progress: Progress | None = None, cancel: threading.Event | None = None,
               trust_remote_code: bool = False, device_preference: str = "auto",
               allow_pickle: bool = False) -> LoadedModel:
    """Open `path` (HF folder or .gguf) for generation and return model, tokenizer, report.

    trust_remote_code / allow_pickle: this model's opt-ins (app.engine.loading.folder_trust); without
    them a folder that needs its own code, or has only pickle weights, is refused with a line
    saying how to allow it. Safetensors are loaded whenever present; hub kernels never are.
    Never moves or casts the model after a 4-bit load (.to() on a 4-bit model raises, bitsandbytes #547); on any
    failure nothing stays
    referenced (no half-loaded model in memory). Raises ModelLoadError with a one-line reason,
    or LoadCancelled.
    """
    report = progress or (lambda _text, _frac: None)
    started = time.perf_counter()
    why = refusal(Path(path))  # before a folder's own check, which would say less ("config.json … unreadable")
    if why is not None:
        raise ModelLoadError(why)
    source = model_source(Path(path))
    trust = None
    if source.is_dir():  # a folder is checked before its plan (new-user trial: a config.json alone was
        # planned as "does not fit … weights 25.10 GiB", then said to have no weights)
        trust = _checked_folder(source, Path(path).name, trust_remote_code, allow_pickle)
    _report_plan(Path(path), device_preference, report)
    folder = resolve_model_folder(Path(path), report, cancel, device_preference)
    _check_cancel(cancel)
    if trust is None:  # a GGUF's conversion
        trust = _checked_folder(folder, Path(path).name, trust_remote_code, allow_pickle)
    model = tokenizer = None
    error: ModelLoadError | None = None
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
        layers = config_attr(text_config(config), "num_hidden_layers", "n_layer", "num_layers", "n_layers", default=0)
        missing = missing_layers(folder, layers) if layers and trust.use_safetensors else None
        if missing is not None:  # before a weight is allocated: transformers would fill them with noise
            raise ModelLoadError(f"cannot load {Path(path).name}: {missing}")
        placement = detect_placement(getattr(config, "quantization_config", None) is not None,
                                     device_preference, config)
        if placement.device == "cuda":  # before the load's own kernel checks compile anything
            from app.engine.local.compiled_decode import use_compile_caches

            use_compile_caches()
        report("Loading the tokenizer", 0.8)
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
        tokenizer.padding_side = "left"  # generation pads on the left (right padding with FA2, trl #1018)
        template_dropped = template_problem(tokenizer)
        if template_dropped:  # broken, it failed every turn; without it, prompts are a plain transcript
            log.info("the chat template of %s fails (%s); using a plain transcript", folder, template_dropped)
            tokenizer.chat_template = None
        _check_cancel(cancel)
        report(f"Loading weights ({placement.device}, {placement.attention})", 0.85)
        model = AutoModelForCausalLM.from_pretrained(
            folder, trust_remote_code=trust_remote_code, use_safetensors=trust.use_safetensors,
            use_kernels=False, **_load_kwargs(placement))
        model.eval()
        enable_packed_sdpa(model)  # "sdpa" → "sdpa+gqa-packed" for GQA models (no repeat_kv copy)
        phases = enable_fa2_static(model)  # "flash_attention_2" → FA2 over the static cache
        nf4 = _install_nf4_gemv(model, placement)
        sliced = _install_nf4_prefill(model, placement)  # after the GEMV: it keeps the decode rows
        head = _install_int8_head(model, placement)
        _check_cancel(cancel)
        fmt = detect_format(tokenizer)
        built = build_report(model, tokenizer, folder, placement, time.perf_counter() - started, phases,
                             template_dropped)
        if nf4 is not None:
            built = replace(built, decode_kernel=nf4.label())
        if sliced:
            built = replace(built, nf4_prefill_sliced=True)
        built = replace(built, lm_head=head)
        loaded = LoadedModel(model, tokenizer, built, fmt,
                             stop_token_ids(tokenizer, model.generation_config, fmt))
        report("Ready", 1.0)
        log.info("loaded %s", loaded.report)
        return loaded
    except (ModelLoadError, BrokenPipeError):  # a pipe closed under `progress` (`--ask … 2>&1 | head`): app.main
        raise  # ends as a Unix filter (new-user re-trial: logged as "cannot load …: BrokenPipeError")
    except Exception as exc:
        if _interrupted(exc):
            raise KeyboardInterrupt from None
        error = _load_error(f"cannot load {Path(path).name}", exc)
        damage = damaged_safetensors(folder) if _corrupt_file_error(exc) else None
        if damage is not None:  # the header looked whole, the load found otherwise: name the file
            error = ModelLoadError(f"cannot load {Path(path).name}: {damage}")
        if "ignore_mismatched_sizes" in str(exc):  # transformers' words for weights of other shapes than the config's
            error = ModelLoadError(f"cannot load {Path(path).name}: its weights do not match its config.json "
                                   "(tensor shapes differ)")
        if "trust_remote_code" in str(exc):  # e.g. a tokenizer that ships its own code
            error = ModelLoadError(remote_code_message(Path(path).name))
    finally:
        # On failure drop the half-loaded model; on success `loaded` holds the references.
        model = tokenizer = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    raise error  # outside the except block: no __context__ keeps the failed frames alive


NF4_GEMV_OPT_IN = "HEADROOM_NF4_GEMV"
"""Set to 0 to keep bitsandbytes' GEMV for decode rows. On by default since the CUDA mma kernel
(issue 15, app.engine.local.nf4_mma): on the H200 its GEMV takes 3.16 ms per 8B token against
bitsandbytes' 3.98 (tests/benchmarks/results/nf4_gemv_h200_cuda.json), and the window's decode at
4k tokens went from 185.5 to 222.3 tok/s greedy together with the 16-bit split-KV attention
(results/decode_anatomy_h200.json, 2026-12-02); the load spends its self-check and timing, 4.9-8.8 s
in all for the 8B (its model load included)."""


def _install_nf4_gemv(model, placement: Placement):
    """Swap the fused NF4 GEMV in for decode rows (app.engine.local.nf4_hook) unless opted out,
    after its self-check against bitsandbytes and per shape only where it is faster; None when
    the model has no 4-bit layers on CUDA (quantized at load, or a pre-quantized bitsandbytes
    checkpoint)."""
    if placement.device != "cuda":
        return None
    from app.engine.local.nf4_hook import Nf4GemvStatus, install, nf4_layers

    if not nf4_layers(model):
        return None
    if os.environ.get(NF4_GEMV_OPT_IN) == "0":
        return Nf4GemvStatus(False, f"fused NF4 GEMV turned off ({NF4_GEMV_OPT_IN}=0)")
    status = install(model)
    log.info("%s; per shape %s; µs per token %s; CUDA mma: %s; one launch (µs per token, against apart): %s",
             status.label(), status.kernels, status.timings, status.mma_reason or "used", status.groups)
    return status


def _install_nf4_prefill(model, placement: Placement) -> bool:
    """Dequantize 4-bit weights one slice at a time in prefill (app.engine.local.nf4_prefill) on
    CUDA; True when any layer was sliced. The CPU keeps bitsandbytes' forward (its CPU backend
    repacks the weight; Headroom never quantizes on the CPU)."""
    if placement.device != "cuda":
        return False
    from app.engine.local import nf4_prefill

    status = nf4_prefill.install(model)
    log.info("%s", status.label())
    return status.active


def _install_int8_head(model, placement: Placement) -> str:
    """The lm_head read in 8 bits a weight (app.engine.local.int8_head) on CUDA: "int8" when swapped, else
    why it stays 16-bit; "" off CUDA."""
    if placement.device != "cuda":
        return ""
    from app.engine.local import int8_head

    try:
        reason = int8_head.install(model)
    except Exception as exc:  # noqa: BLE001 - the 16-bit head still works: the load goes on without the swap
        reason = f"the int8 lm_head failed: {type(exc).__name__}: {str(exc)[:200]}"
    if reason:
        log.info("lm_head stays 16-bit: %s", reason)
    return reason or "int8"


def _report_plan(path: Path, device_preference: str, report: Progress) -> None:
    """The fit plan (app.engine.loading.fit_plan) as the first progress line, before any
    conversion or weight is read. Advisory: a model that cannot be planned still goes to the
    loader, whose error is the one reported."""
    from app.engine.loading.fit_plan import plan_model

    try:
        plan = plan_model(path, device_preference)
    except Exception as exc:  # noqa: BLE001 - unsupported files are refused by the loader itself
        log.info("no fit plan for %s: %s", path, exc)
        return
    log.info("fit plan: %s", plan.summary())
    report(f"Plan: {plan.summary()}", 0.0)


def _corrupt_file_error(exc: BaseException) -> bool:
    """Whether `exc` is a weights file that could not be read: safetensors' SafetensorError
    ("Error while deserializing header: …"), or torch's zip reader on a cut pickle file."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "SafetensorError" in names or "PytorchStreamReader failed" in str(exc)


def _interrupted(exc: BaseException) -> bool:
    """Whether Ctrl+C is behind `exc`: a KeyboardInterrupt raised inside a lazy import comes back as
    transformers' or accelerate's ImportError / RuntimeError (new-user re-trial: Ctrl+C 0.3 s after
    start said "This GGUF file could not be read … installs it again")."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _load_error(what: str, exc: BaseException) -> ModelLoadError:
    """Log the full traceback, then build a one-line error that does *not* chain `exc`:
    its frames may reference a half-loaded model and would keep it in memory (an OOM not recovered, pytorch #27600;
    VRAM kept after unload, bitsandbytes #1611)."""
    log.info("%s\n%s", what, "".join(traceback.format_exception(exc)))  # text: no frames kept
    lines = str(exc).strip().splitlines()
    detail = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return ModelLoadError(f"{what}: {detail}")
