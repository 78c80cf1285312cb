"""Smoke test of an installed or frozen Headroom: `headroom --self-test [--model PATH] [--cpu]`.

Made for the PyInstaller bundle, where a missing module, data file or native library only
shows when the code path runs (bitsandbytes' native library missing in a bundle, pyinstaller #7911; transformers' lazy
imports in a bundle, pyinstaller #9137), so every check runs the real path:

- the process defaults of `app/__init__.py` (offline, CUDA allocator) are in the environment;
- the bundled resources load through importlib.resources;
- each supported architecture's config and model class build on the meta device (transformers'
  lazy imports resolve) and the memory projection reads its KV layout;
- a bitsandbytes NF4 `Linear4bit` layer quantizes and multiplies on CUDA (bitsandbytes' native library missing in a
bundle, pyinstaller #7911), or the line
  says plainly that CUDA is absent and whether bitsandbytes imports;
- the default model (or --model) answers "What is the capital of France?" greedily with Paris;
- on CUDA with FlashAttention-2 in the LoadReport, a prefill and a decode step run under
  torch.profiler and FA2's own kernels (``flash::flash_fwd…``, not torch SDPA's
  ``pytorch_flash::…``) must be seen: an import alone proves nothing ("I thought FA2 was on").

Each check prints one line, `PASS|FAIL|SKIP <check>: <detail>`; the exit code is 0 when no
check failed, 1 otherwise. A failure is one line, never a traceback (--verbose logs it).
No Qt is imported.
"""

import logging
import os
import platform
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import app
from app.engine import events as ev

log = logging.getLogger(__name__)

QUESTION = "What is the capital of France?"
EXPECTED = "Paris"
# Model types the memory projection models explicitly (GQA, explicit head_dim, Mistral / Qwen2
# sliding windows, Gemma 2/3 hybrid layers), built from tiny shapes: only classes must resolve.
# The vocabulary is Phi-3's (32,064), which holds every family's default special-token ids.
ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3")
TINY_SHAPE = {"vocab_size": 32064, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
              "max_position_embeddings": 256}
RESOURCE_FILES = ("style.qss", "icons/headroom.svg", "icons/headroom-64.png")


@dataclass(frozen=True)
class CheckResult:
    """status: "PASS", "FAIL" or "SKIP"; detail: one line."""

    status: str
    name: str
    detail: str

    def line(self) -> str:
        return f"{self.status} {self.name}: {self.detail}"


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _guarded(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    """Run one check; an unexpected exception becomes a FAIL line (traceback at debug level)."""
    try:
        return check()
    except Exception as exc:
        log.debug("%s\n%s", name, "".join(traceback.format_exception(exc)))
        return CheckResult("FAIL", name, _one_line(exc))


def check_process_defaults() -> CheckResult:
    """Every variable `app/__init__.py` sets (offline mode, CUDA allocator) is in os.environ;
    in the bundle the runtime hook sets them before anything imports torch."""
    missing = [name for name in app._PROCESS_DEFAULTS if name not in os.environ]
    if missing:
        return CheckResult("FAIL", "process defaults", f"not set: {', '.join(missing)}")
    shown = ("HF_HUB_OFFLINE", "PYTORCH_CUDA_ALLOC_CONF")
    return CheckResult("PASS", "process defaults", ", ".join(f"{n}={os.environ[n]}" for n in shown))


def check_resources() -> CheckResult:
    """The stylesheet and icons are readable through importlib.resources (design rule 12)."""
    root = resources.files("app.resources")
    sizes = [len(root.joinpath(name).read_bytes()) for name in RESOURCE_FILES]
    empty = [name for name, size in zip(RESOURCE_FILES, sizes, strict=True) if size == 0]
    if empty:
        return CheckResult("FAIL", "resources", f"empty: {', '.join(empty)}")
    return CheckResult("PASS", "resources", f"{len(sizes)} files, {sum(sizes):,} bytes")


def check_architecture(model_type: str) -> CheckResult:
    """Build `model_type`'s config and causal-LM class on the meta device (no memory, no
    weights) and read its KV bytes per token (bf16 cache) through the memory projection."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from app.engine.memory.kv_layout import kv_bytes_per_token

    name = f"architecture {model_type}"
    config = AutoConfig.for_model(model_type, **TINY_SHAPE)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    params = sum(p.numel() for p in model.parameters())
    if any(p.device.type != "meta" for p in model.parameters()):
        return CheckResult("FAIL", name, f"{type(model).__name__} allocated real weights")
    return CheckResult("PASS", name, f"{type(model).__name__} on meta, {params:,} parameters, "
                                     f"KV {kv_bytes_per_token(config, 2):,} B/token")


def _bitsandbytes() -> tuple[object | None, str]:
    """(module or None, one line saying whether and which bitsandbytes imports)."""
    try:
        import bitsandbytes
    except Exception as exc:  # ImportError, or a native library that fails to load
        return None, f"bitsandbytes not importable ({_one_line(exc)})"
    return bitsandbytes, f"bitsandbytes {getattr(bitsandbytes, '__version__', '?')} importable"


def check_4bit_layer() -> CheckResult:
    """Quantize a 64×64 NF4 `Linear4bit` on CUDA and compare its output with the dequantized
    weight's matmul (bitsandbytes' native library missing in a bundle, pyinstaller #7911: the native library is in the
    bundle and loads). SKIP without CUDA;
    FAIL when CUDA exists but bitsandbytes does not import or computes wrongly."""
    import torch

    name = "4-bit layer"
    bnb, state = _bitsandbytes()
    if not torch.cuda.is_available():
        return CheckResult("SKIP", name, f"CUDA not available: 4-bit layer not exercised; {state}")
    if bnb is None:
        return CheckResult("FAIL", name, f"CUDA available but {state}: NF4 loading would fall back")
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    torch.manual_seed(0)
    layer = bnb.nn.Linear4bit(64, 64, bias=False, compute_dtype=dtype, quant_type="nf4")
    layer = layer.to("cuda")  # the move quantizes the weight
    x = torch.randn(4, 64, device="cuda", dtype=dtype)
    with torch.inference_mode():
        y = layer(x)
        dense = bnb.functional.dequantize_4bit(layer.weight.data, layer.weight.quant_state).to(dtype)
        error = (y.float() - (x @ dense.t()).float()).abs().max().item()
    ok = bool(torch.isfinite(y).all()) and layer.weight.dtype == torch.uint8 and error < 0.05
    detail = (f"{state}; NF4 Linear4bit 64×64 on {torch.cuda.get_device_name(0)}, "
              f"{str(dtype).removeprefix('torch.')} compute, max |error| {error:.2g}")
    return CheckResult("PASS" if ok else "FAIL", name, detail)


def check_answer(model_path: Path | None, device_preference: str, keep: dict | None = None) -> CheckResult:
    """Load the default model (or `model_path`) and answer QUESTION greedily through the
    app's turn runner; PASS when the answer mentions EXPECTED. The loaded model is put in
    ``keep["loaded"]`` for the checks after this one."""
    from app.core.conversation import Message, Role
    from app.core.history import SummaryState
    from app.core.paths import default_model_path
    from app.core.settings import GenerationSettings
    from app.engine.loading.loader import ModelLoadError, load_model
    from app.engine.local import turn_runner as tr
    from app.engine.memory.probe import probe_for

    name = "model answers"
    path = Path(model_path) if model_path else default_model_path()
    if model_path is None and not path.exists():
        return CheckResult("FAIL", name, f"the default model is not installed ({path}); install it "
                                         "with `python -m app.install_model` or pass --model")
    started = time.perf_counter()
    try:
        loaded = load_model(path, device_preference=device_preference)
    except ModelLoadError as exc:
        return CheckResult("FAIL", name, str(exc))
    if keep is not None:
        keep["loaded"] = loaded
    settings = GenerationSettings(max_new_tokens=24, temperature=0.0)
    runner = tr.TurnRunner(loaded, probe_for(loaded.report.device))
    answer, outcome = "", "no reply"
    for event in runner.run_turn([Message(Role.USER, QUESTION)], SummaryState(), settings, threading.Event()):
        match event:
            case ev.TurnRefused(decision=decision):
                outcome = f"refused: {decision.reason}"
            case ev.TurnFailed(reason=reason):
                outcome = f"failed: {reason}"
            case ev.TurnCompleted(finished=finished):
                answer, outcome = finished.text.strip(), "done"
    seconds = time.perf_counter() - started
    where = f"{loaded.report.name} on {loaded.report.device}, {seconds:.1f} s"
    if outcome != "done":
        return CheckResult("FAIL", name, f"{outcome} ({where})")
    shown = " ".join(answer.split())[:80]
    return CheckResult("PASS" if EXPECTED.lower() in answer.lower() else "FAIL", name,
                       f"{QUESTION!r} → {shown!r} ({where})")


# FlashAttention-2's own kernels, as the profiler names them ("void flash::flash_fwd_kernel<…>",
# "…flash_fwd_splitkv_kernel…"); torch SDPA's copy lives in namespace pytorch_flash and is not FA2.
FA2_KERNEL = re.compile(r"(?<![\w:])flash::(flash_fwd\w*)")
FA2_PROMPT_TOKENS = 300


def fa2_kernels(names: Iterable[str]) -> dict[str, int]:
    """Launches of FA2's own kernels among profiler kernel names, by kernel (e.g.
    {"flash_fwd_kernel": 30}); torch SDPA's ``pytorch_flash::`` kernels are not counted."""
    counts: dict[str, int] = {}
    for name in names:
        match = FA2_KERNEL.search(name)
        if match:
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts


def _profiled_kernels(run: Callable[[], object]) -> list[str]:
    """Names of the CUDA kernels launched while ``run`` runs (one entry per launch)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def check_flash_attention(loaded) -> CheckResult:
    """With FlashAttention-2 in the LoadReport, prefill FA2_PROMPT_TOKENS tokens into a static
    cache through Headroom's own prefill and run one decode step, each under torch.profiler;
    PASS when FA2's kernels ran in the prefill (and in the decode step when its phase is FA2).
    SKIP without CUDA or when the LoadReport names another attention (with the reason)."""
    import torch

    from app.engine.local.generation import forward_step, prefill
    from app.engine.local.kv_session import KVSession

    name = "FlashAttention-2"
    if loaded is None:
        return CheckResult("SKIP", name, "no model loaded (see the check above)")
    report = loaded.report
    if not report.device.startswith("cuda"):
        return CheckResult("SKIP", name, "CUDA not available: FlashAttention-2 not exercised")
    if not report.attention.startswith("flash_attention_2"):
        why = [f for f in report.fallbacks if "SDPA attention" in f or "FlashAttention" in f]
        return CheckResult("SKIP", name, f"attention is {report.attention}" + (f" ({why[0]})" if why else ""))
    model, session = loaded.model, KVSession()
    ids = (loaded.tokenizer.encode(" ".join([QUESTION] * 60), add_special_tokens=False) * 2)[:FA2_PROMPT_TOKENS]
    cache, _ = session.begin_turn(model, ids, 4)
    x = torch.tensor([ids], device=model.device)
    step = torch.zeros((1, 1), dtype=torch.long, device=model.device)
    with torch.inference_mode():
        in_prefill = fa2_kernels(_profiled_kernels(lambda: prefill(model, x, cache, None)))
        in_decode = fa2_kernels(_profiled_kernels(lambda: forward_step(model, step, cache)))
    session.invalidate()
    decode_fa2 = any(line.startswith("decode: FlashAttention-2") for line in report.attention_phases)
    shown = (f"prefill of {len(ids)} tokens: {_counts(in_prefill)}; decode step: {_counts(in_decode)} "
             f"({report.attention})")
    ok = bool(in_prefill) and (bool(in_decode) or not decode_fa2)
    return CheckResult("PASS" if ok else "FAIL", name, shown if ok else
                       f"the LoadReport says FlashAttention-2 but the profiler saw no FA2 kernel where it "
                       f"should run: {shown}")


def _counts(kernels: dict[str, int]) -> str:
    return ", ".join(f"{k} ×{n}" for k, n in sorted(kernels.items())) or "no FA2 kernel"


def run_checks(model_path: Path | None = None, device_preference: str = "auto") -> Iterator[CheckResult]:
    """Every check in order, each result as soon as it is known."""
    yield _guarded("process defaults", check_process_defaults)
    yield _guarded("resources", check_resources)
    for model_type in ARCHITECTURES:
        yield _guarded(f"architecture {model_type}", lambda m=model_type: check_architecture(m))
    yield _guarded("4-bit layer", check_4bit_layer)
    kept: dict = {}
    yield _guarded("model answers", lambda: check_answer(model_path, device_preference, kept))
    yield _guarded("FlashAttention-2", lambda: check_flash_attention(kept.get("loaded")))


def header() -> str:
    """Where this runs: frozen or source, Python, torch, transformers, CUDA."""
    import torch
    import transformers

    kind = "frozen bundle" if getattr(sys, "frozen", False) else "source"
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA"
    return (f"headroom {app.__version__} self-test · {kind} · Python {platform.python_version()} · "
            f"torch {torch.__version__} · transformers {transformers.__version__} · {cuda}")


def main(model_path: Path | None = None, device_preference: str = "auto", out=None) -> int:
    """Print the header, one line per check and a verdict to `out` (default stdout);
    return 0 when no check failed, else 1."""
    out = out or sys.stdout
    print(header(), file=out, flush=True)
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for result in run_checks(model_path, device_preference):
        counts[result.status] += 1
        print(result.line(), file=out, flush=True)
    verdict = "OK" if counts["FAIL"] == 0 else "FAILED"
    print(f"self-test {verdict}: {counts['PASS']} checks passed, {counts['FAIL']} failing, "
          f"{counts['SKIP']} skipped", file=out, flush=True)
    return 0 if counts["FAIL"] == 0 else 1
