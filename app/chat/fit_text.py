"""Whether a model fits, said in the window's language: the engine's fit data (app.engine.loading:
MemoryFit, FitPlan, MachineMemory, EntryNote — numbers and kinds, no Qt) turned into the lines
the Open model dialog shows. The engine keeps its own English lines (MemoryFit.detail,
FitPlan.summary) for the log and `python -m app --plan`; the window uses these instead.

Sizes are in the unit they reach (app.engine.memory.units.format_bytes: "300 B", "94 MiB",
"3.20 GiB") and token counts are grouped ("8,192"), as everywhere in the window; dtype names
(bfloat16, float32) and quantization names (Q4_1, bitsandbytes) are the field's words and are
not translated. A model that cannot be opened at all is said by
app.chat.error_text (its plain-language load failures).
"""

from __future__ import annotations

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from app.chat.error_text import plain_failure
from app.engine.loading.catalog import (
    CONVERSION,
    DAMAGED,
    GGUF,
    NO_WEIGHTS,
    PICKLE_ONLY,
    REFUSED,
    REMOTE_CODE,
    UNREADABLE,
)
from app.engine.loading.fit import FITS, NF4, NO_FIT, SAVED, TIGHT
from app.engine.loading.fit_plan import FULL, PARTIAL
from app.engine.memory.units import format_bytes

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls

# MemoryFit.verdict (the listing's, at the chosen context) and FitPlan.verdict (the plan's)
VERDICTS = {FITS: QT_TRANSLATE_NOOP("FitText", "fits"), TIGHT: QT_TRANSLATE_NOOP("FitText", "tight"),
            NO_FIT: QT_TRANSLATE_NOOP("FitText", "does not fit"),
            FULL: QT_TRANSLATE_NOOP("FitText", "fits at full context")}
_NOTES = {REMOTE_CODE: QT_TRANSLATE_NOOP("FitText", "needs its own code to load (trust_remote_code)"),
          PICKLE_ONLY: QT_TRANSLATE_NOOP("FitText", "pickle weights only (.bin/.pt)"),
          NO_WEIGHTS: QT_TRANSLATE_NOOP("FitText", "no weight files in this snapshot")}


def verdict_text(verdict: str) -> str:
    """A fit or plan verdict ("fits", "tight", "does not fit", "fits at full context")."""
    return translate("FitText", VERDICTS[verdict]) if verdict in VERDICTS else verdict


def plan_verdict_text(plan) -> str:
    """A FitPlan's verdict, with the context that fits when only part of it does."""
    if plan.verdict == PARTIAL:
        return translate("FitText", "fits with context {0}").format(f"{plan.context_fit:,}")
    return verdict_text(plan.verdict)


def weights_text(method: str, dtype: str) -> str:
    """How the weights load: "NF4 + bfloat16", "float32", "as saved (bitsandbytes)"."""
    if method == NF4:
        return f"NF4 + {dtype}"
    if method == SAVED:
        return translate("FitText", "as saved ({0})").format(dtype)
    return dtype


def machine_text(machine) -> str:
    """A MachineMemory: "18.35 GiB of 23.54 GiB RAM available" (+ the open model's bytes that
    its unload frees)."""
    if machine.device == "cuda":
        text = translate("FitText", "{0} of {1} GPU memory free")
    else:
        text = translate("FitText", "{0} of {1} RAM available")
    text = text.format(format_bytes(machine.free), format_bytes(machine.total))
    if machine.reclaimable:
        text = translate("FitText", "{0}, counting the open model's {1} freed on load").format(
            text, format_bytes(machine.reclaimable))
    return text


def fit_line(fit) -> str:
    """A MemoryFit in one sentence with every term: "fits: weights 513 MiB (float32) + KV
    360 MiB at 8,192 tokens = 873 MiB; 18.35 GiB of 23.54 GiB RAM available"."""
    return translate("FitText", "{0}: weights {1} ({2}) + KV {3} at {4} tokens = {5}; {6}").format(
        verdict_text(fit.verdict), format_bytes(fit.weights.bytes), weights_text(fit.weights.method, fit.weights.dtype),
        format_bytes(fit.kv_bytes), f"{fit.context_tokens:,}", format_bytes(fit.needed), machine_text(fit.machine))


def _custom(plan, chosen: int | None) -> bool:
    """Whether the model opens at a context of its own choosing (a Custom context short of the
    trained one), which the plan line then speaks of, rather than at the plan's own ("auto": the
    trained context, or the context that fits)."""
    auto = plan.verdict == PARTIAL and chosen == plan.context_fit  # what "auto" opens with
    return bool(chosen) and chosen < plan.trained_context and plan.verdict in (FULL, PARTIAL) and not auto


def plan_head(plan, chosen: int | None = None) -> str:
    """The plan's verdict with its tokens, at the context the model will open with (chosen,
    tokens; None, the trained context or the context the plan fits: the plan's own verdict):
    "fits at full context (8,192 of 8,192 tokens)", "fits with context 5,301 (5,301 of 8,192
    tokens)", "fits at the chosen context (4,096 of 8,192 tokens)", "the chosen 65,536 tokens
    do not fit (31,587 of 131,072 tokens fit)"."""
    trained = f"{plan.trained_context:,}"
    if _custom(plan, chosen):
        if chosen <= plan.context_fit:
            return translate("FitText", "fits at the chosen context ({0} of {1} tokens)").format(
                f"{chosen:,}", trained)
        if plan.verdict == PARTIAL:
            return translate("FitText", "the chosen {0} tokens do not fit ({1} of {2} tokens fit)").format(
                f"{chosen:,}", f"{plan.context_fit:,}", trained)
    tokens = plan.trained_context if plan.verdict == FULL else plan.context_fit
    return translate("FitText", "{0} ({1} of {2} tokens)").format(plan_verdict_text(plan), f"{tokens:,}", trained)


def plan_line(plan, chosen: int | None = None, chosen_kv_bytes: int | None = None) -> str:
    """A FitPlan in one sentence (the model's name left to the line above it): "fits at full
    context (8,192 of 8,192 tokens) on cpu: weights … + KV 45 KiB/token (360 MiB at full
    context) + prefill 31 MiB + margin 480 MiB vs 18.35 GiB free", and the conversion's
    disk when a GGUF is converted at its first open. chosen: the context the model opens with
    (tokens; None: the plan's own), which the verdict speaks of (plan_head).

    At a Custom context every figure is about it (a trial read "KV 90 MiB at 2,048 tokens" on
    the fit line and "360 MiB at full context" on this one): the KV cache at the chosen context
    (chosen_kv_bytes, bytes: MemoryFit.kv_bytes, exact with sliding windows; None: the
    per-token bytes times the chosen tokens, at most the full context's), the prefill spike as
    at most the full context's, and 8-bit KV only where it changes whether the chosen context
    fits."""
    weights = (format_bytes(plan.weights_bytes),
               weights_text(plan.weights_method, plan.weights_dtype or plan.compute_dtype))
    custom = _custom(plan, chosen)
    if custom:
        kv = chosen_kv_bytes if chosen_kv_bytes is not None else min(
            plan.kv_bytes_per_token * chosen, plan.kv_bytes_full_context)
        line = translate("FitText", "{0} on {1}: weights {2} ({3}) + KV {4}/token ({5} at {6} tokens) "
                                    "+ prefill at most {7} + margin {8} vs {9} free").format(
            plan_head(plan, chosen), plan.device, *weights, format_bytes(plan.kv_bytes_per_token),
            format_bytes(kv), f"{chosen:,}", format_bytes(plan.prefill_spike_full_context),
            format_bytes(plan.margin_bytes), format_bytes(plan.free_bytes))
    else:
        line = translate("FitText", "{0} on {1}: weights {2} ({3}) + KV {4}/token "
                                    "({5} at full context) + prefill {6} + margin {7} vs {8} free").format(
            plan_head(plan, chosen), plan.device, *weights,
            format_bytes(plan.kv_bytes_per_token), format_bytes(plan.kv_bytes_full_context),
            format_bytes(plan.prefill_spike_full_context), format_bytes(plan.margin_bytes),
            format_bytes(plan.free_bytes))
    conversion = plan.conversion
    if conversion:
        disk = translate("FitText", "conversion writes {0}, {1} disk free").format(
            format_bytes(conversion["output_bytes"]), format_bytes(conversion["free_disk_bytes"]))
        if not conversion["enough_disk"]:  # the refusal's figure: the output and some slack
            disk = translate("FitText", "{0} — NOT ENOUGH DISK (needs {1})").format(
                disk, format_bytes(conversion["needed_disk_bytes"]))
        line = f"{line}; {disk}"
    fit8 = getattr(plan, "context_fit_kv8", None)
    if fit8 is None or (custom and chosen <= plan.context_fit):  # 8-bit changes nothing for what fits
        return line
    if custom and chosen <= fit8:
        return f"{line}; " + translate("FitText", "with 8-bit KV the chosen {0} tokens fit").format(f"{chosen:,}")
    return f"{line}; " + translate("FitText", "with 8-bit KV {0} tokens fit").format(
        f"{min(fit8, plan.trained_context):,}")


def note_text(note, path=None) -> str:
    """One EntryNote: what stands out about a listed model (at `path`, for a refusal's advice)."""
    if note.kind in _NOTES:
        return translate("FitText", _NOTES[note.kind])
    if note.kind == GGUF:
        return f"GGUF {note.value}"
    if note.kind == CONVERSION:
        return translate("FitText", "converted once on first open ({0} to the cache)").format(
            format_bytes(int(note.value)))
    if note.kind == UNREADABLE:
        return translate("FitText", "its config.json could not be read")
    if note.kind in (REFUSED, DAMAGED):
        return refusal_text(str(note.value), path)
    return str(note.value)


def notes_line(entry) -> str:
    """A CatalogEntry's notes, one line ("" when none)."""
    return "; ".join(note_text(note, entry.path) for note in entry.notes)


def is_damaged(entry) -> bool:
    """Whether a CatalogEntry cannot open because one of its files is incomplete or corrupt."""
    return any(note.kind == DAMAGED for note in entry.notes)


def refusal_text(reason: str, path=None) -> str:
    """Why a listed file cannot be opened (CatalogEntry.refusal, the engine's English reason):
    what happened and what to do, in one line. path: the entry's (the default model's own file
    is repaired by install_model)."""
    return plain_failure(reason, "load", path).line()
