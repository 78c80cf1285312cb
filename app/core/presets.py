"""Presets: named sets of generation settings (system prompt, samplers, context and reply length)
that a chat can take in one pick (issue 17, item 2; LM Studio's "config presets").

A preset holds only the GenerationSettings fields it sets (`values`); `apply` replaces those and
keeps the chat's others, so a preset written by an older Headroom still applies after new settings
appear. The built-ins live in code (`BUILTIN_PRESETS`) and cannot be changed or shadowed; the user's
own presets are stored in the config folder as presets.json:

    {"format": "headroom-presets", "version": 1,
     "presets": [{"name": "...", "description": "...", "values": {"temperature": 0.3, ...}}]}

Export writes the same shape; import also takes a bare list of presets or one preset object, and
refuses a preset that sets nothing or has settings beside "values" (a layout Headroom never
writes: its fields were dropped and an empty preset imported, new-user trial), and a file that
holds no presets (`[]`, `{"presets": []}`: "Imported 0 presets" said it worked, new-user trial).
Import is all-or-nothing: every preset in the file is validated before any is added, so a bad
file leaves the library as it was and raises PresetError with one line for the user. Unknown keys
(say, from a newer version) are dropped and listed in the ImportResult's notes, values out of
range are clamped as the settings clamp them and listed in its `changed`. Names compare
without regard to case or surrounding spaces. A PresetError's str() is English (the log's); its
`kind` and facts let the window say it in its language (app.chat.presets), as IgnoredKey's do.

Pure Python: no Qt, no torch. The UI translates the built-ins' names and descriptions for display
(the stored names stay English, so files and exports are the same in every language).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from app.core.json_files import keep_aside, write_atomically
from app.core.paths import config_dir
from app.core.settings import DEFAULT_SYSTEM_PROMPT, GenerationSettings

log = logging.getLogger(__name__)

FORMAT = "headroom-presets"
VERSION = 1
MAX_NAME_CHARS = 80
MAX_DESCRIPTION_CHARS = 500
PRESET_FIELDS = tuple(f.name for f in fields(GenerationSettings))
"""The settings a preset may carry: every GenerationSettings field."""


# PresetError.kind: which sentence it is, so the window can say it in its language (trial 9: the
# parser's English with field names, "temperature = nan is not a usable value", in the Korean window)
NO_NAME, LONG_NAME, NOT_A_PRESET = "no name", "long name", "not a preset"
VALUES_NOT_AN_OBJECT, NOT_TEXT, NOT_A_NUMBER, UNUSABLE = "values not an object", "not text", "not a number", "unusable"
MISPLACED, NO_SETTINGS, OTHER_FORMAT = "misplaced", "no settings", "other format"
NAME_TAKEN, BUILTIN_NAME, NO_SUCH_PRESET = "name taken", "built-in name", "no such preset"
BUILTIN_KEPT = "built-in kept"
NO_PRESETS = "no presets"
FILE_UNREADABLE, NOT_A_TEXT_FILE, NOT_JSON, TOO_DEEP, NOT_MOVABLE = (
    "file unreadable", "not a text file", "not JSON", "too deep", "not movable")


class PresetError(ValueError):
    """A preset file or a preset change that cannot be used. str(): one English line, for the log
    and the tests. kind: which refusal (the constants above; "" for a line that is all there is),
    with its facts: preset (a preset's name as in the file, a built-in's stored name, or for
    LONG_NAME the name's first 20 characters), setting (a GenerationSettings field), value (a
    setting's value as given; LONG_NAME: the most characters a name may have; NOT_A_PRESET: the
    preset's place in the file, from 1; MISPLACED: the keys; OTHER_FORMAT: the format named;
    FILE_UNREADABLE: the OSError; NOT_JSON: (line, column)) and file (a file's name or path)."""

    def __init__(self, text: str, kind: str = "", *, preset: str = "", setting: str = "",
                 value: Any = None, file: str = ""):
        super().__init__(text)
        self.kind, self.preset, self.setting, self.value, self.file = kind, preset, setting, value, file


@dataclass(frozen=True)
class Preset:
    """name: unique among all presets (case-insensitive). values: GenerationSettings field → value,
    already validated (clamped like the settings). builtin: shipped with Headroom, read-only."""

    name: str
    values: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    builtin: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @property
    def key(self) -> str:
        return name_key(self.name)

    def apply(self, generation: GenerationSettings) -> GenerationSettings:
        """``generation`` with this preset's values in place; fields the preset lacks are kept."""
        return replace(generation, **self.values).validated()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "values": dict(self.values)}

    @classmethod
    def from_settings(cls, name: str, generation: GenerationSettings, description: str = "",
                      only: Iterable[str] = PRESET_FIELDS) -> Preset:
        """A user preset capturing ``generation`` ("save these settings as a preset"); ``only``
        limits it to some fields. Raises PresetError for an unusable name."""
        valid = generation.validated()
        return cls(check_name(name), {k: getattr(valid, k) for k in only if k in PRESET_FIELDS},
                   _description(description))


def name_key(name: str) -> str:
    """The form names are compared in: stripped, case-folded."""
    return name.strip().casefold()


def check_name(name: object) -> str:
    """The stripped name; PresetError when it is not text, empty, or longer than MAX_NAME_CHARS."""
    if not isinstance(name, str) or not name.strip():
        raise PresetError("a preset needs a name", NO_NAME)
    name = " ".join(name.split())
    if len(name) > MAX_NAME_CHARS:
        raise PresetError(f"the preset name {name[:20]!r}… is longer than {MAX_NAME_CHARS} characters",
                          LONG_NAME, preset=name[:20], value=MAX_NAME_CHARS)
    return name


def _description(text: object) -> str:
    return text.strip()[:MAX_DESCRIPTION_CHARS] if isinstance(text, str) else ""


def _builtin(name: str, description: str, **values: Any) -> Preset:
    valid = GenerationSettings(**values).validated()
    return Preset(name, {k: getattr(valid, k) for k in values}, description, builtin=True)


BUILTIN_PRESETS: tuple[Preset, ...] = (
    _builtin("Balanced", "Today's defaults: varied but on topic.",
             system_prompt=DEFAULT_SYSTEM_PROMPT, temperature=0.7, top_p=0.95, top_k=0, min_p=0.0,
             repetition_penalty=1.0),
    _builtin("Precise", "Nearly greedy: facts, extraction, short exact answers.",
             system_prompt="You are a precise assistant. Answer accurately and concisely, and say so "
                           "when you are not sure.",
             temperature=0.2, top_p=1.0, top_k=20, min_p=0.1, repetition_penalty=1.0),
    _builtin("Creative", "Stories and brainstorming: more varied words, fewer repeats.",
             system_prompt="You are an imaginative writing partner. Use vivid, varied language and "
                           "offer surprising ideas.",
             temperature=1.0, top_p=1.0, top_k=0, min_p=0.05, repetition_penalty=1.1,
             presence_penalty=0.3, frequency_penalty=0.3),
    _builtin("Code", "Programming: low temperature, long replies, no penalty on repeated tokens.",
             system_prompt="You are an expert programmer. Answer with correct, idiomatic code in fenced "
                           "blocks and explain it briefly.",
             temperature=0.2, top_p=0.95, top_k=0, min_p=0.05, repetition_penalty=1.0, max_new_tokens=2048),
    _builtin("한국어 도우미", "Answers in natural Korean whatever the question's language.",
             system_prompt="당신은 친절하고 정확한 한국어 도우미입니다. 사용자가 어떤 언어로 질문하든 "
                           "자연스러운 한국어로 답하고, 확실하지 않은 내용은 확실하지 않다고 말하세요.",
             temperature=0.7, top_p=0.9, top_k=0, min_p=0.05, repetition_penalty=1.05),
)


@dataclass(frozen=True)
class ChangedValue:
    """A value that validation changed on import: `setting` (a GenerationSettings field) was
    `given` in the file and is `kept` (clamped into its range; a fractional seed is None,
    random; a negative whole one is None too, but that is how other tools say random: no change).
    `preset`: the preset's name as stored ("" until the import names it)."""

    setting: str
    given: Any
    kept: Any
    preset: str = ""


@dataclass(frozen=True)
class IgnoredKey:
    """A key an import dropped: an unknown setting under "values" (`field` False) or an unknown
    field of the preset object itself (`field` True), of the preset named `preset` in the file.
    str() is the English note (the log's); the window says it in its language (app.chat.presets)."""

    preset: str
    key: str
    field: bool = False

    def __str__(self) -> str:
        return f"preset {self.preset!r}: unknown {'field' if self.field else 'setting'} {self.key!r} ignored"


def parse_values(raw: object, name: str) -> tuple[dict[str, Any], list[IgnoredKey], list[ChangedValue]]:
    """Validated GenerationSettings values from a JSON object of the preset `name`, the unknown
    keys dropped, and the values validation changed (clamped into range, said on import rather
    than in silence). Raises PresetError (naming the preset and the field) for a value of the
    wrong kind."""
    where = f"preset {name!r}"
    if not isinstance(raw, dict):
        raise PresetError(f"{where}: 'values' must be an object of settings", VALUES_NOT_AN_OBJECT, preset=name)
    values, notes, changed = {}, [], []
    for key, value in raw.items():
        if key not in PRESET_FIELDS:
            notes.append(IgnoredKey(name, str(key)))
            continue
        default = getattr(GenerationSettings(), key)
        kind_ok = (isinstance(value, str) if isinstance(default, str)
                   else value is None or _is_number(value) if key == "seed"
                   else _is_number(value))
        if not kind_ok:
            wants_text = isinstance(default, str)
            raise PresetError(f"{where}: {key} = {value!r} is not a {'text' if wants_text else 'number'}",
                              NOT_TEXT if wants_text else NOT_A_NUMBER, preset=name, setting=key, value=value)
        try:
            valid = GenerationSettings(**{key: value}).validated()
        except (ValueError, TypeError, OverflowError):  # NaN, infinity, 1e400 as an int
            raise PresetError(f"{where}: {key} = {value!r} is not a usable value", UNUSABLE,
                              preset=name, setting=key, value=value) from None
        values[key] = getattr(valid, key)
        # 1 for 1.0 or 7.0 for seed 7 is the same value, not a change; nor is random for seed -1
        # (llama.cpp's, LM Studio's and Ollama's way to say it: new-user trial 10 saw "Seed -1 → 0")
        if values[key] != value and not (key == "seed" and values[key] is None and float(value).is_integer()):
            changed.append(ChangedValue(key, value, values[key]))
    return values, notes, changed


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def preset_from_json(raw: object, index: int = 1, lenient: bool = False
                     ) -> tuple[Preset, list[IgnoredKey], list[ChangedValue]]:
    """One user preset from its JSON object ({"name", "description"?, "values"}), the `index`-th
    of its file (from 1), notes on what was ignored and the values changed to fit their range.
    Raises PresetError, also for settings beside "values" rather than in it and for a preset with
    no setting Headroom knows, unless ``lenient`` (then those are only noted or kept empty)."""
    if not isinstance(raw, dict):
        raise PresetError(f"preset {index}: a preset must be an object with a name and values", NOT_A_PRESET,
                          value=index)
    name = check_name(raw.get("name"))
    where = f"preset {name!r}"
    values, notes, changed = parse_values(raw.get("values", {}), name)
    misplaced = [key for key in raw if key in PRESET_FIELDS]
    if misplaced and not lenient:
        raise PresetError(f"{where}: its settings ({', '.join(misplaced)}) belong under \"values\", "
                          "as Headroom exports them", MISPLACED, preset=name, value=tuple(misplaced))
    if not values and not lenient:
        raise PresetError(f"{where} has no setting Headroom knows under \"values\"", NO_SETTINGS, preset=name)
    notes += [IgnoredKey(name, str(key), field=True) for key in raw
              if key not in ("name", "description", "values", "builtin")]
    return Preset(name, values, _description(raw.get("description"))), notes, changed


def presets_from_json(raw: object, lenient: bool = False
                      ) -> tuple[list[Preset], list[IgnoredKey], list[list[ChangedValue]]]:
    """The presets of a presets file, an export, a bare list, or a single preset object, the notes,
    and each preset's changed values (a list per preset, in order); all are validated before any
    is returned (``lenient``: see `preset_from_json`). Raises PresetError."""
    if isinstance(raw, dict) and "presets" in raw:
        if raw.get("format", FORMAT) != FORMAT:
            raise PresetError(f"this is not a Headroom presets file (format {raw.get('format')!r})", OTHER_FORMAT,
                              value=raw.get("format"))
        if isinstance(raw.get("version"), int) and raw["version"] > VERSION:
            log.info("presets file version %s is newer than %s; reading what is known", raw["version"], VERSION)
        raw = raw["presets"]
    items = raw if isinstance(raw, list) else [raw]
    presets, notes, changed = [], [], []
    for index, item in enumerate(items, 1):
        preset, more, its_changes = preset_from_json(item, index, lenient)
        presets.append(preset)
        notes += more
        changed.append(its_changes)
    return presets, notes, changed


@dataclass(frozen=True)
class ImportResult:
    """What an import did: added (names as stored), renamed (original → stored name, for clashes),
    replaced (user presets overwritten), notes (ignored unknown keys), changed (values clamped
    into their range, each with the stored name of its preset)."""

    added: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    replaced: tuple[str, ...] = ()
    notes: tuple[IgnoredKey, ...] = ()
    changed: tuple[ChangedValue, ...] = ()


CLASH_POLICIES = ("rename", "replace", "error")


@dataclass(frozen=True)
class PresetLibrary:
    """The built-ins followed by the user's presets (``user``, in the order added). Immutable:
    every change returns a new library."""

    user: tuple[Preset, ...] = ()

    @property
    def all(self) -> tuple[Preset, ...]:
        return BUILTIN_PRESETS + self.user

    def get(self, name: str) -> Preset | None:
        key = name_key(name)
        return next((p for p in self.all if p.key == key), None)

    def with_preset(self, preset: Preset, replace_existing: bool = False) -> PresetLibrary:
        """Add ``preset`` as a user preset. Raises PresetError when its name is a built-in's, or
        another user preset's unless ``replace_existing`` (which keeps that preset's place)."""
        preset = replace(preset, name=check_name(preset.name), builtin=False)
        existing = self.get(preset.name)
        if existing is not None and existing.builtin:
            raise PresetError(f"{preset.name!r} is a built-in preset; choose another name", BUILTIN_NAME,
                              preset=existing.name)
        if existing is not None and not replace_existing:
            raise PresetError(f"a preset named {existing.name!r} already exists", NAME_TAKEN, preset=existing.name)
        if existing is None:
            return PresetLibrary(self.user + (preset,))
        return PresetLibrary(tuple(preset if p.key == existing.key else p for p in self.user))

    def without(self, name: str) -> PresetLibrary:
        """Remove a user preset. Raises PresetError for a built-in or an unknown name."""
        found = self.get(name)
        if found is None:
            raise PresetError(f"there is no preset named {name!r}", NO_SUCH_PRESET, preset=name)
        if found.builtin:
            raise PresetError(f"{found.name!r} is a built-in preset and cannot be removed", BUILTIN_KEPT,
                              preset=found.name)
        return PresetLibrary(tuple(p for p in self.user if p.key != found.key))

    def free_name(self, name: str) -> str:
        """``name``, or "name (2)", "name (3)", … : the first not taken."""
        return _first_free(name, lambda key: self.get(key) is not None)[0]

    def imported(self, raw: object, on_clash: str = "rename", lenient: bool = False
                 ) -> tuple[PresetLibrary, ImportResult]:
        """Add the presets of ``raw`` (parsed JSON, see `presets_from_json`, also for ``lenient``).
        A name already taken: "rename" stores it as "name (2)"; "replace" overwrites a user preset
        (a built-in's name is still renamed); "error" raises. All or nothing: PresetError leaves
        ``self`` as it was."""
        if on_clash not in CLASH_POLICIES:
            raise ValueError(f"on_clash must be one of {CLASH_POLICIES}, not {on_clash!r}")
        presets, notes, changes = presets_from_json(raw, lenient)
        # one dict, not a library per preset: a file of 20,000 presets took 53 s (third trial)
        builtin = {p.key: p for p in BUILTIN_PRESETS}
        user = {p.key: p for p in self.user}  # insertion order is the library's; replacing keeps a place
        added, renamed, replaced, changed = [], [], [], []
        seen_in_file: set[str] = set()
        next_suffix: dict[str, int] = {}  # name → the "(n)" to try first, so a name repeated n times stays linear
        for preset, its_changes in zip(presets, changes, strict=True):
            existing = builtin.get(preset.key) or user.get(preset.key)
            clash = existing is not None and (existing.builtin or on_clash != "replace"
                                              or preset.key in seen_in_file)
            if clash and on_clash == "error":
                raise PresetError(f"a preset named {existing.name!r} already exists; nothing was imported",
                                  NAME_TAKEN, preset=existing.name)
            if clash:
                new_name, next_suffix[preset.key] = _first_free(
                    preset.name, lambda key: key in builtin or key in user, next_suffix.get(preset.key, 2))
                renamed.append((preset.name, new_name))
                preset = replace(preset, name=new_name)
            elif existing is not None:
                replaced.append(existing.name)
            user[preset.key] = replace(preset, builtin=False)
            seen_in_file.add(preset.key)
            added.append(preset.name)
            changed += (replace(c, preset=preset.name) for c in its_changes)
        return (PresetLibrary(tuple(user.values())),
                ImportResult(tuple(added), tuple(renamed), tuple(replaced), tuple(notes), tuple(changed)))


def _first_free(name: str, taken, first: int = 2) -> tuple[str, int]:
    """``name`` when ``taken(name_key(name))`` is false, else "name (n)" for the first n ≥ ``first``
    not taken, the name shortened so the whole stays within MAX_NAME_CHARS; and the n to try
    first next time."""
    candidate, n = name, first
    while taken(name_key(candidate)):
        suffix = f" ({n})"
        candidate, n = name[:MAX_NAME_CHARS - len(suffix)] + suffix, n + 1
    return candidate, n


def presets_path() -> Path:
    return config_dir() / "presets.json"


def to_json(presets: Iterable[Preset]) -> dict[str, Any]:
    """The file shape for ``presets`` (built-ins included only if passed)."""
    return {"format": FORMAT, "version": VERSION, "presets": [p.to_json() for p in presets]}


def _write_atomically(path: Path, data: dict[str, Any], make_folder: bool = True) -> None:
    write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False), make_folder)


def save_presets(library: PresetLibrary, path: Path | None = None) -> None:
    """Write the user presets (temp file + rename)."""
    _write_atomically(path or presets_path(), to_json(library.user))


@dataclass(frozen=True)
class KeptAside:
    """A presets.json that could not be used as presets and was moved aside: reason, one English
    line (say, "presets.json is not valid JSON (line 1, column 23)"); kept_as, where it went;
    error, the PresetError the reason is of (the window says it in its language)."""

    reason: str
    kept_as: Path
    error: PresetError | None = field(default=None, compare=False)


def load_presets(path: Path | None = None) -> PresetLibrary:
    """The user presets from presets.json (`read_presets` without its note)."""
    return read_presets(path)[0]


def read_presets(path: Path | None = None) -> tuple[PresetLibrary, KeptAside | None]:
    """The user presets from presets.json, and None or, for the user, why there are none and where
    the file went; a missing file gives none. A file that cannot be read as presets (not JSON,
    not UTF-8, nested too deeply, a bad preset) is moved aside to presets.unreadable-<time>.json
    and the library starts empty, so the next save does not overwrite it. PresetError (one line
    naming the file) when the file is left where it is unread: it cannot be read at all (a folder
    in its place, no permission) or cannot be moved aside; the caller must then not save over it,
    or the user's presets are lost."""
    path = path or presets_path()
    try:
        # lenient: an empty preset an older import stored must not send the whole file aside
        return PresetLibrary().imported(_read_json(path), on_clash="rename", lenient=True)[0], None
    except FileNotFoundError:
        return PresetLibrary(), None
    except OSError as exc:  # a folder, no permission: stopped the app at start (new-user trial)
        log.warning("presets file %s unreadable (%s); left where it is", path, exc)
        raise PresetError(f"{path}: {exc.strerror or exc}", FILE_UNREADABLE, file=str(path), value=exc) from None
    except (ValueError, RecursionError) as exc:  # PresetError; RecursionError only as a safety net
        try:
            aside = keep_aside(path)
        except OSError as move_error:
            log.warning("presets file %s unreadable (%s) and not movable (%s)", path, exc, move_error)
            raise PresetError(f"the presets file {path} cannot be read or moved aside", NOT_MOVABLE,
                              file=str(path)) from None
        log.warning("presets file %s unreadable (%s); moved to %s", path, exc, aside)
        # said in the window (trial: the user's presets vanished at start with only this log line)
        error = exc if isinstance(exc, PresetError) else PresetError("nested too deeply", TOO_DEEP, file=path.name)
        return PresetLibrary(), KeptAside(str(error), aside, error)


def _read_json(path: Path) -> object:
    """The JSON in `path`, read as utf-8-sig (Notepad writes a BOM: not "unreadable"). Raises
    OSError (FileNotFoundError included) when it cannot be read, PresetError naming the file
    when it is not UTF-8 or not JSON, or nests too deeply for json.loads."""
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise PresetError(f"{path.name} is not a text file", NOT_A_TEXT_FILE, file=path.name) from None
    except json.JSONDecodeError as exc:
        raise PresetError(f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno})", NOT_JSON,
                          file=path.name, value=(exc.lineno, exc.colno)) from None
    except RecursionError:  # [[[…]]] 100,000 deep opened the crash dialog (new-user trial)
        raise PresetError(f"{path.name} is not valid JSON (nested too deeply)", TOO_DEEP, file=path.name) from None


def export_presets(presets: Iterable[Preset], path: Path) -> None:
    """Write ``presets`` to ``path`` in the presets file shape (built-ins export like any other).
    Raises OSError (naming ``path``), ENOENT when its folder does not exist: it is not made."""
    _write_atomically(path, to_json(presets), make_folder=False)


def import_presets(library: PresetLibrary, path: Path, on_clash: str = "rename"
                   ) -> tuple[PresetLibrary, ImportResult]:
    """`PresetLibrary.imported` from a file. Raises PresetError (one line) for a file that cannot be
    read, is not JSON (or nests too deeply for the parser), holds no presets (NO_PRESETS) or an
    unusable one; the library is then unchanged. (presets.json itself may hold none: `read_presets`.)"""
    try:
        raw = _read_json(Path(path))
    except OSError as exc:
        raise PresetError(f"cannot read {Path(path).name}: {exc.strerror or exc}", FILE_UNREADABLE,
                          file=Path(path).name, value=exc) from None
    imported, result = library.imported(raw, on_clash)
    if not result.added:  # an import that adds nothing is no success
        raise PresetError(f"{Path(path).name} holds no presets", NO_PRESETS, file=Path(path).name)
    return imported, result
