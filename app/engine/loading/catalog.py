"""The models this machine already has: recent ones, the installed default, the local
Hugging Face cache — each with its size on disk and a projected memory fit (app.engine.loading.fit).

Reads file names, sizes and config.json only: listing never loads a model, so it takes
milliseconds per entry. The HF cache is read with ``huggingface_hub.scan_cache_dir``
(https://huggingface.co/docs/huggingface_hub/guides/manage-cache); a damaged cache, a repo
without a config or a config that is not a causal LM is skipped, never raised.
"""

import json
import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.core.settings import model_key
from app.engine.loading.fit import MachineMemory, MemoryFit, PlacementFor, machine_memory, project_fit
from app.engine.loading.model_path import is_gguf_file
from app.engine.memory.units import format_bytes

log = logging.getLogger(__name__)

RECENT, DEFAULT, HF_CACHE, CHOSEN = "recent", "default", "HF cache", "chosen"
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


# what stands out about a listed model (EntryNote.kind)
REMOTE_CODE, PICKLE_ONLY, NO_WEIGHTS = "remote code", "pickle only", "no weights"
GGUF, CONVERSION, UNREADABLE, REFUSED = "gguf", "conversion", "unreadable", "refused"
DAMAGED = "damaged"


@dataclass(frozen=True)
class EntryNote:
    """One thing that stands out about a listed model, for the window to say in its language.
    kind: REMOTE_CODE (needs trust_remote_code), PICKLE_ONLY (.bin/.pt weights only),
    NO_WEIGHTS (no weight files), GGUF (value: its quantization, "Q4_1"), CONVERSION (value:
    bytes the first open writes to the cache), UNREADABLE (value: why config.json could not be
    read, one line), REFUSED (value: why it cannot be opened at all, one line) or DAMAGED (value:
    which file is incomplete or corrupted and how, one line; the entry's refusal too)."""

    kind: str
    value: str | int = ""

    def text(self) -> str:
        """In English, for logs and tests: "GGUF Q4_1", "pickle weights only (.bin/.pt)"."""
        fixed = {REMOTE_CODE: "needs its own code to load (trust_remote_code)",
                 PICKLE_ONLY: "pickle weights only (.bin/.pt)", NO_WEIGHTS: "no weight files in this snapshot"}
        if self.kind in fixed:
            return fixed[self.kind]
        if self.kind == GGUF:
            return f"GGUF {self.value}"
        if self.kind == CONVERSION:
            return f"converted once on first open ({format_bytes(int(self.value))} to the cache)"
        if self.kind == UNREADABLE:
            return f"config.json unreadable: {self.value}"
        return str(self.value)


@dataclass(frozen=True)
class CatalogEntry:
    """One model that can be opened.

    path: what the window's open path receives (HF folder, HF cache snapshot folder or .gguf).
    origins: where it was found (RECENT, DEFAULT, HF_CACHE, CHOSEN), first one first.
    disk_bytes: size on disk (the .gguf file; a folder's files, each blob once). fit: at the
    model's context setting, for "auto" at the context the plan says fits; None when the config
    could not be read (see notes). notes: what stands out (EntryNote; `note` says them in English).
    plan: the fit plan (app.engine.loading.fit_plan: verdict, context that fits, conversion), or
    None where fit is None. A GGUF is planned from its header; nothing is converted to list it.
    refusal: why this path cannot be opened at all ("" when it can): a file that is not a GGUF or
    a GGUF with an unsupported architecture or tensor type or a damaged header, a folder without
    config.json, with one that cannot be read, without weight files
    (app.engine.loading.folder_trust.folder_refusal) or with a damaged safetensors file
    (app.engine.loading.safetensors_header).
    """

    name: str
    path: Path
    origins: tuple[str, ...]
    disk_bytes: int
    model_type: str = ""
    fit: MemoryFit | None = None
    notes: tuple[EntryNote, ...] = ()
    architectures: tuple[str, ...] = field(default=(), compare=False)
    plan: Any = field(default=None, compare=False)
    refusal: str = ""

    @property
    def note(self) -> str:
        """The notes in English, one line ("" when none)."""
        return "; ".join(note.text() for note in self.notes)


@dataclass(frozen=True)
class Candidate:
    """A model found by :meth:`Catalog.candidates`, not described yet (no config or header read).
    disk_bytes: known for HF cache snapshots (from the cache scan), else None."""

    name: str
    path: Path
    origins: tuple[str, ...]
    disk_bytes: int | None = None


def hf_cache_dir() -> Path:
    """The hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else huggingface_hub's default
    (read now, not at import, so a changed environment is honoured)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def folder_disk_bytes(folder: Path) -> int:
    """Bytes of the files in `folder` and below, following symlinks (HF snapshots link to
    blobs), each target counted once. Unreadable files count 0."""
    seen, total = set(), 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                real = os.path.realpath(os.path.join(root, name))
                if real not in seen:
                    seen.add(real)
                    total += os.stat(real).st_size
            except OSError:
                continue
    return total


def looks_like_causal_lm(config: dict) -> bool:
    """True when config.json names a causal-LM architecture (…ForCausalLM, …LMHeadModel, or a
    …ForConditionalGeneration whose model_type AutoModelForCausalLM maps), or names none but
    its model_type is one AutoModelForCausalLM knows."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    architectures = config.get("architectures") or []
    known_type = config.get("model_type") in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    if not architectures:
        return known_type
    return any(str(a).endswith(_CAUSAL_SUFFIXES) or (known_type and str(a).endswith("ForConditionalGeneration"))
               for a in architectures)


def scan_hf_cache(cache_dir: Path | None = None) -> list[tuple[str, Path, int]]:
    """(repo id, snapshot folder, size on disk in bytes) of every cached model repo whose
    snapshot has a config.json — the revision "main" points at, else the newest. Returns []
    for a missing or unreadable cache; corrupted repos are logged and skipped."""
    from huggingface_hub import scan_cache_dir

    try:
        info = scan_cache_dir(cache_dir or hf_cache_dir())
    except Exception as exc:  # noqa: BLE001 - CacheNotFound, OSError, ValueError: nothing cached
        log.info("HF cache not scanned: %s", exc)
        return []
    for warning in info.warnings:
        log.info("HF cache: skipped %s", warning)
    found = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id.lower()):
        if repo.repo_type != "model":
            continue
        revisions = [r for r in repo.revisions if (Path(r.snapshot_path) / "config.json").is_file()]
        if not revisions:
            continue
        chosen = max(revisions, key=lambda r: ("main" in r.refs, r.last_modified))
        found.append((repo.repo_id, Path(chosen.snapshot_path), int(chosen.size_on_disk)))
    return found


def read_config(folder: Path) -> tuple[Any, dict]:
    """(config object, raw dict) of `folder`'s config.json: the transformers config class when
    transformers knows the model_type (for its defaults), else a generic PretrainedConfig.
    Never runs the folder's code. Raises OSError / ValueError for a missing or broken file."""
    from transformers import AutoConfig, PretrainedConfig

    raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError("config.json is not a JSON object")
    try:
        return AutoConfig.from_pretrained(folder, trust_remote_code=False), raw
    except Exception:  # noqa: BLE001 - unknown model_type, remote-code config: plain attributes
        return PretrainedConfig(**raw), raw


@dataclass(frozen=True)
class Catalog:
    """Lists models and projects their fit on one machine.

    machine: free memory to judge against. placement_for: already_quantized → Placement
    (app.engine.loading.placement.detect_placement in the app, a fixed decision in tests).
    context_setting: the user's context cap in tokens (0 = the model's own).
    """

    machine: MachineMemory
    placement_for: PlacementFor
    cache_dir: Path | None = None
    context_setting: int = 0

    @classmethod
    def for_this_machine(cls, device_preference: str = "auto", reclaimable: int = 0,
                         context_setting: int = 0) -> "Catalog":
        """Placement rules and free memory of this machine (CUDA when present and wanted)."""
        from app.engine.loading.placement import detect_placement

        def placement_for(already_quantized: bool):
            return detect_placement(already_quantized, device_preference)

        device = placement_for(False).device
        return cls(machine_memory(device, reclaimable), placement_for, None, context_setting)

    def candidates(self, recent: tuple[str, ...] | list[str], default_path: Path | None) -> list[Candidate]:
        """What :meth:`entries` lists, before any model is described: recent models (most recent
        first), then the installed default, then the HF cache (causal LMs only, judged from the
        raw config.json); a model found twice is one candidate with both origins. Missing paths
        are left out. Stats files and scans the cache: fast, but still file-system work."""
        found: dict[str, tuple[str, Path, list[str], int | None]] = {}

        def add(path: Path, origin: str, name: str | None = None, size: int | None = None) -> None:
            key = model_key(path)
            if key in found:
                found[key][2].append(origin)
            elif Path(path).exists():
                found[key] = (name or _display_name(Path(path)), Path(path), [origin], size)

        for path in recent:
            add(Path(path), RECENT)
        if default_path is not None:
            add(default_path, DEFAULT)
        for repo_id, snapshot, size in scan_hf_cache(self.cache_dir):
            add(snapshot, HF_CACHE, repo_id, size)
        return [Candidate(name, path, tuple(origins), size) for name, path, origins, size in found.values()
                if origins[0] != HF_CACHE or _raw_is_causal(path)]

    def entries(self, recent: tuple[str, ...] | list[str], default_path: Path | None) -> list[CatalogEntry]:
        """:meth:`candidates`, each described (:meth:`describe_candidate`), in the same order."""
        described = (self.describe_candidate(c) for c in self.candidates(recent, default_path))
        return [entry for entry in described if entry is not None]

    def describe_candidate(self, candidate: Candidate, context_setting: int | None = None) -> CatalogEntry | None:
        """`candidate` described (see :meth:`describe`), with all its origins; None for a model
        found only in the HF cache that is not a causal LM (no encoders, no datasets)."""
        entry = self.describe(candidate.path, candidate.origins[0], name=candidate.name,
                              disk_bytes=candidate.disk_bytes, context_setting=context_setting)
        if candidate.origins[0] == HF_CACHE and not _is_causal(entry):
            return None
        return replace(entry, origins=candidate.origins)

    def describe(self, path: Path, origin: str = CHOSEN, *, name: str | None = None,
                 disk_bytes: int | None = None, context_setting: int | None = None) -> CatalogEntry:
        """One entry for `path` (HF folder, snapshot folder, a folder's config.json or .gguf).
        context_setting: this model's context in tokens for the fit's KV term (None: the
        catalog's; 0: the model's own). Reads the config or GGUF header (milliseconds to seconds
        on first use: run it off the GUI thread). Never raises: what could not be read is said in
        the entry's note, and what cannot be opened at all in its refusal."""
        path = Path(path)
        context = self.context_setting if context_setting is None else context_setting
        if path.is_file() and path.name == "config.json":
            path = path.parent
        name = name or _display_name(path)
        size = disk_bytes if disk_bytes is not None else (
            path.stat().st_size if path.is_file() else folder_disk_bytes(path) if path.is_dir() else 0)
        if is_gguf_file(path):
            return self._describe_gguf(path, origin, name, size, context)
        folder = _config_folder(path)
        if folder is None:
            why = ("no config.json: not a model folder" if path.is_dir()
                   else f"{path.name} is not a .gguf file or a model folder (no config.json next to it)")
            return CatalogEntry(name, path, (origin,), size, notes=(EntryNote(REFUSED, why),), refusal=why)
        # what the loader refuses whatever the user allows: refused here too, not listed as fitting
        # (trial 9: a folder with only config.json, or a broken one, had Open enabled, then failed)
        refused = _folder_refusal(folder)
        try:
            config, raw = read_config(folder)
            plan = self._plan(path, "hf", config, raw, folder)
            fit = self._fit(config, raw, folder, _fit_context(context, plan))
        except Exception as exc:  # noqa: BLE001 - any config a listing cannot read is one note
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            log.info("%s: config.json unreadable: %s", path, reason)
            return CatalogEntry(name, path, (origin,), size, notes=(EntryNote(UNREADABLE, reason),), refusal=refused)
        # its fit is kept when refused (the HF cache listing judges causal LMs by it)
        entry = CatalogEntry(name, path, (origin,), size, str(raw.get("model_type", "")), fit,
                             _notes(raw, folder), tuple(str(a) for a in raw.get("architectures") or ()), plan,
                             refused)
        return entry if refused else _with_damage(entry, folder)

    def _describe_gguf(self, path: Path, origin: str, name: str, size: int, context: int) -> CatalogEntry:
        """A GGUF listed from its header (app.engine.loading.gguf_header, milliseconds): the fit as
        it would load once converted; an unsupported or damaged file says why in note and refusal."""
        from app.engine.loading.gguf_header import DAMAGED_WORDS, read_gguf_header

        try:
            header = read_gguf_header(path)
            config = header.hf_config()
            plan = self._plan(path, "gguf", config, {}, None, header)
            fit = project_fit(config, self.placement_for(False), self.machine, _fit_context(context, plan))
        except Exception as exc:  # noqa: BLE001 - unsupported or damaged: one note, never raised
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            log.info("%s cannot be opened: %s", path, reason)
            kind = DAMAGED if DAMAGED_WORDS in reason else REFUSED
            return CatalogEntry(name, path, (origin,), size, notes=(EntryNote(kind, reason),), refusal=reason)
        notes = (EntryNote(GGUF, header.quantization),)
        if plan.conversion:
            notes += (EntryNote(CONVERSION, plan.conversion["output_bytes"]),)
        return CatalogEntry(name, path, (origin,), size, header.model_type, fit, notes,
                            tuple(config.architectures or ()), plan)

    def _plan(self, path: Path, kind: str, config: Any, raw: dict, folder: Path | None, header=None):
        from app.engine.loading import fit_plan

        saved = raw.get("quantization_config")
        quant = str(saved.get("quant_method", "quantized")) if isinstance(saved, dict) else None
        saved_bytes = sum(p.stat().st_size for p in folder.glob("*.safetensors")) if folder else 0
        described = header.describe() if header is not None else fit_plan.describe_config(config, raw)
        conversion = fit_plan.conversion_check(header, self.placement_for(False)) if header else None
        return fit_plan.build_plan(str(path), kind, described, config, self.placement_for(quant is not None),
                                   self.machine.free, self.machine.total, quant, saved_bytes, conversion)

    def _fit(self, config: Any, raw: dict, folder: Path, context: int) -> MemoryFit:
        saved = raw.get("quantization_config")
        quant = None
        if isinstance(saved, dict):
            quant = str(saved.get("quant_method", "quantized"))
        placement = self.placement_for(quant is not None)
        weights_on_disk = sum(p.stat().st_size for p in folder.glob("*.safetensors")) or sum(
            p.stat().st_size for p in folder.glob("*.bin"))
        return project_fit(config, placement, self.machine, context, quant, weights_on_disk)


def _with_damage(entry: CatalogEntry, folder: Path) -> CatalogEntry:
    """`entry`, refused with a DAMAGED note when one of `folder`'s safetensors files is shorter
    than its header says or has an unreadable header (a download cut short). Its fit is kept
    (the HF cache listing judges causal LMs by it), but the refusal is what the window shows."""
    from app.engine.loading.safetensors_header import damaged_safetensors

    reason = damaged_safetensors(folder)
    if reason is None:
        return entry
    log.info("%s cannot be opened: %s", entry.path, reason)
    return replace(entry, notes=(EntryNote(DAMAGED, reason), *entry.notes), refusal=reason)


def _folder_refusal(folder: Path) -> str:
    """folder_trust.folder_refusal, "" for none; logged, as a GGUF's refusal is."""
    from app.engine.loading.folder_trust import folder_refusal

    refused = folder_refusal(folder) or ""
    if refused:
        log.info("%s cannot be opened: %s", folder, refused)
    return refused


def _fit_context(setting: int, plan) -> int:
    """The context the listed fit is projected at: the setting, or for "auto" (0) the context the
    plan says fits when that is less than the model's own (0 = the model's own)."""
    from app.engine.loading.fit_plan import PARTIAL

    return plan.context_fit if setting <= 0 and plan.verdict == PARTIAL else setting


def _raw_is_causal(folder: Path) -> bool:
    """Whether `folder`'s config.json names a causal LM (read as JSON only; unreadable: False)."""
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(raw, dict) and looks_like_causal_lm(raw)


def _is_causal(entry: CatalogEntry) -> bool:
    return entry.fit is not None and looks_like_causal_lm(
        {"architectures": list(entry.architectures), "model_type": entry.model_type})


def _display_name(path: Path) -> str:
    if path.suffix.lower() == ".gguf":
        return path.name
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3].removeprefix("models--").replace("--", "/")  # an HF cache snapshot
    return path.name


def _config_folder(path: Path) -> Path | None:
    """The folder whose config.json describes `path` (a folder; GGUFs are read from their header)."""
    if path.is_dir():
        return path if (path / "config.json").is_file() else None
    return None


def _notes(raw: dict, folder: Path) -> tuple[EntryNote, ...]:
    from app.engine.loading.folder_trust import needs_remote_code, weight_files

    notes = [EntryNote(REMOTE_CODE)] if needs_remote_code(raw) else []
    try:
        files = weight_files(folder)
    except OSError:
        return tuple(notes)
    if files.pickle and not files.safetensors:
        notes.append(EntryNote(PICKLE_ONLY))
    elif not files.safetensors and not files.pickle:
        notes.append(EntryNote(NO_WEIGHTS))
    return tuple(notes)
