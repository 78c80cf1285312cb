"""User settings as frozen dataclasses, passed as a snapshot with every request.

Stored as JSON in the platformdirs config folder. Unknown or malformed fields fall back to
defaults instead of failing start-up.
"""

import json
import logging
import math
import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from app.core.backend_settings import BackendSettings, credentials_hidden, without_credentials
from app.core.json_files import keep_aside, write_atomically
from app.core.last_folders import LastFolders
from app.core.paths import config_dir

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings for one turn.

    temperature 0 means greedy decoding. max_new_tokens is in tokens. context_tokens caps the
    context window below the model's own (0 = auto: the largest context that fits this machine, see
    app.engine.local.turn_planner.Foresight.context_tokens).
    Samplers (issue 17; definitions in app.engine.local.samplers, transformers' own): top_k
    tokens kept (0 = off), min_p fraction of the top token's probability (0 = off),
    repetition_penalty (1 = off, > 1 discourages repeats). presence_penalty / frequency_penalty
    (OpenAI's, -2–2, 0 = off) go to remote servers only. seed: None = a fresh draw every turn (a
    negative seed, -1 in other tools, is read as None), an integer makes sampled replies repeat exactly.
    cpu_threads: intra-op threads of a model running on the CPU (``torch.set_num_threads``); 0 =
    automatic, the cores other programs leave idle (app.engine.local.cpu_threads), so one busy core
    does not stall every decode step (issue 12, item 6; GPT4All and LM Studio offer the same setting);
    at most logical_cores() (new-user trial: 1,024 on 2 cores decoded at 1.5 tok/s, Stop took a minute).
    kept_chat_cache_mib: host memory (MiB) for the KV caches of recently used conversations, so
    switching back to one prefills only the new message (issue 12, item 5; 0 = keep none;
    app.engine.local.session_pool).
    Summary (issue 17, item 4; app.core.history.select_window): summary_fold_at is the fraction of
    the prompt budget from which the oldest turns are folded into the summary (1 = only what no
    longer fits); summary_keep_turns newest turns are never folded, not by "Summarize now" either.
    """

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_new_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    context_tokens: int = 0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None
    cpu_threads: int = 0
    kept_chat_cache_mib: int = 4096
    summary_fold_at: float = 1.0
    summary_keep_turns: int = 2

    def validated(self) -> "GenerationSettings":
        """Clamp to sane ranges: max_new_tokens 1–MAX_NEW_TOKENS (0 or less: the default), temperature
        0–2, top_p (0, 1], context_tokens 0–MAX_CONTEXT_TOKENS, top_k 0–MAX_TOP_K, min_p 0–1,
        repetition_penalty REPETITION_PENALTY_RANGE (0 or less: the default), presence/frequency penalty
        -2–2 (OpenAI's range), seed None or 0–MAX_SEED (a non-integer or negative seed becomes None,
        random), cpu_threads 0–logical_cores(), kept_chat_cache_mib 0–MAX_KEPT_CHAT_CACHE_MIB,
        summary_fold_at SUMMARY_FOLD_AT_RANGE, summary_keep_turns 1–MAX_KEEP_TURNS. Raises ValueError
        or TypeError for a value that is not a number (or, for the sampler fields and temperature and
        top_p, not a finite one: a NaN temperature failed every answer), and TypeError for a
        system_prompt that is not text."""
        if not isinstance(self.system_prompt, str):  # a hand-edited file's 42 hung every turn (trial 4)
            raise TypeError(f"system_prompt is {type(self.system_prompt).__name__}, not text")
        return replace(
            self,
            max_new_tokens=_max_new_tokens(self.max_new_tokens),
            temperature=_clamped(self.temperature, 0.0, 2.0),
            top_p=_clamped(self.top_p, 0.01, 1.0),
            context_tokens=min(max(int(self.context_tokens), 0), MAX_CONTEXT_TOKENS),
            top_k=int(_clamped(self.top_k, 0, MAX_TOP_K)),
            min_p=_clamped(self.min_p, 0.0, 1.0),
            repetition_penalty=_repetition_penalty(self.repetition_penalty),
            presence_penalty=_clamped(self.presence_penalty, -2.0, 2.0),
            frequency_penalty=_clamped(self.frequency_penalty, -2.0, 2.0),
            seed=_seed(self.seed),
            cpu_threads=min(max(int(self.cpu_threads), 0), logical_cores()),
            kept_chat_cache_mib=min(max(int(self.kept_chat_cache_mib), 0), MAX_KEPT_CHAT_CACHE_MIB),
            summary_fold_at=_clamped(self.summary_fold_at, *SUMMARY_FOLD_AT_RANGE),
            summary_keep_turns=int(_clamped(self.summary_keep_turns, 1, MAX_KEEP_TURNS)),
        )



def _max_new_tokens(value) -> int:
    """max_new_tokens as validated() keeps it: 1–MAX_NEW_TOKENS; 0 or less (a hand-edited settings.json's
    0 or -3) is the default, not 1: a one-token answer with no word of why (new-user trial 14)."""
    tokens = int(value)
    if tokens < 1:
        return GenerationSettings.max_new_tokens
    return min(tokens, MAX_NEW_TOKENS)


def _repetition_penalty(value) -> float:
    """repetition_penalty as validated() keeps it: REPETITION_PENALTY_RANGE; 0 or less has no meaning
    in the CTRL formula (logits divided or multiplied by it) and is the default, 1.0 (off), not 0.5,
    which strongly favours repeats (new-user re-trial: 0 made SmolLM2 echo its system prompt)."""
    low, high = REPETITION_PENALTY_RANGE
    penalty = _clamped(value, -math.inf, high)
    return GenerationSettings.repetition_penalty if penalty <= 0 else max(penalty, low)


MAX_NEW_TOKENS = 32_768
"""The most max_new_tokens may be (the Settings field's and --max-new-tokens' bound)."""
MAX_CONTEXT_TOKENS = 1_048_576
"""The most context_tokens may be, in tokens (2**20): the Settings field's bound and validated()'s
(new-user trial: an imported preset's 10**12 was kept, beyond what the field can show)."""
MAX_TOP_K = 1_000_000
MAX_KEPT_CHAT_CACHE_MIB = 1_048_576  # 1 TiB of host memory: the Settings field's bound and validated()'s
SUMMARY_FOLD_AT_RANGE = (0.5, 1.0)  # below half the budget the summary would be rewritten every turn
MAX_KEEP_TURNS = 50
REPETITION_PENALTY_RANGE = (0.5, 2.0)
"""Below 1 favours repeats, above 1 discourages them; 1.1–1.3 is the usual range (CTRL paper)."""
MAX_SEED = 2**31 - 1  # the Settings field's reach (QSpinBox is 32-bit); torch and vLLM take any of these


def logical_cores() -> int:
    """The machine's logical cores (``os.cpu_count()``), at least 1: the most CPU threads a model
    may be given. More threads than cores only wait on each other at every op."""
    return max(os.cpu_count() or 1, 1)


def _clamped(value: object, low: float, high: float) -> float:
    """float(value) clamped to [low, high]; ValueError for NaN or ±inf (JSON can carry them)."""
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return min(max(number, low), high)


def _seed(value: object) -> int | None:
    """An integer seed in 0–MAX_SEED, or None: random (absent, a boolean, a fraction, text, or a
    negative number — llama.cpp, LM Studio and Ollama write -1 for "random", and a settings.json or
    preset from them meant that, not the fixed seed 0 it became: new-user trial 10)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value) if not isinstance(value, int) else value
    except ValueError:
        return None
    if isinstance(number, float) and (not number.is_integer()):
        return None
    return None if number < 0 else min(int(number), MAX_SEED)


MAX_RECENT_MODELS = 8


def model_key(path: str | Path) -> str:
    """The form a model path is remembered under: absolute, "~" expanded, symlinks kept (an HF
    cache snapshot folder stays the snapshot folder)."""
    return os.path.abspath(os.path.expanduser(str(path)))


@dataclass(frozen=True)
class ModelPermissions:
    """What one model may do when it loads; everything is off until the user allows it for this
    model (there is no global switch).

    trust_remote_code: run the Python code the folder ships (transformers ``trust_remote_code``).
    allow_pickle: load pickle weights (``.bin``/``.pt``/``.pth``/``.ckpt``), which can run code
    when unpickled; safetensors are always preferred where present.
    """

    path: str
    trust_remote_code: bool = False
    allow_pickle: bool = False


@dataclass(frozen=True)
class ModelContext:
    """The context length chosen for one model, in tokens; AUTO_CONTEXT (0) = "auto": the
    largest context the fit plan says fits with margin, capped by the model's trained context
    (app.engine.memory.context_fit; applied by app.engine.local.turn_planner.Foresight)."""

    path: str
    tokens: int = 0


AUTO_CONTEXT = 0


def resolve_context(setting: int, fitting: int, trained: int) -> int:
    """The context in force, tokens: an explicit setting capped by the trained context, or for
    AUTO_CONTEXT (≤ 0) the largest that fits (`fitting`) capped the same way."""
    if setting > 0:
        return min(int(setting), int(trained))
    return max(0, min(int(fitting), int(trained)))


@dataclass(frozen=True)
class Settings:
    """recent_models: model paths opened successfully, most recent first (at most
    MAX_RECENT_MODELS). model_permissions: per-model opt-ins, keyed by :func:`model_key`."""

    generation: GenerationSettings = GenerationSettings()
    last_model_path: str = ""
    recent_models: tuple[str, ...] = ()
    model_permissions: tuple[ModelPermissions, ...] = ()
    backend: BackendSettings = BackendSettings()  # for new conversations (each keeps its own)
    language: str = "auto"  # the window's language: "auto" (the system's), "en" or "ko"
    appearance: str = "system"  # light or dark: "system" (the desktop's), "light" or "dark"
    model_contexts: tuple[ModelContext, ...] = ()
    last_folders: LastFolders = LastFolders()  # where each kind of file dialog starts

    def context_for(self, path: str | Path) -> int:
        """This model's context setting in tokens: its own if set, else the global
        generation.context_tokens; AUTO_CONTEXT (0) when neither is set."""
        return self.own_context(path) or self.generation.context_tokens

    def own_context(self, path: str | Path) -> int:
        """The context set for this model itself, tokens (AUTO_CONTEXT when none is)."""
        key = model_key(path)
        return next((c.tokens for c in self.model_contexts if c.path == key), AUTO_CONTEXT)

    def with_context(self, path: str | Path, tokens: int) -> "Settings":
        """A copy with `tokens` as this model's context (AUTO_CONTEXT drops the entry)."""
        key = model_key(path)
        others = tuple(c for c in self.model_contexts if c.path != key)
        if tokens > 0:
            others += (ModelContext(key, int(tokens)),)
        return replace(self, model_contexts=others)

    def permissions_for(self, path: str | Path) -> ModelPermissions:
        """This model's opt-ins; all off when the user never changed them."""
        key = model_key(path)
        return next((p for p in self.model_permissions if p.path == key), ModelPermissions(key))

    def with_permissions(self, permissions: ModelPermissions) -> "Settings":
        """A copy with `permissions` stored for its model (an all-off entry is dropped)."""
        key = model_key(permissions.path)
        others = tuple(p for p in self.model_permissions if p.path != key)
        if permissions.trust_remote_code or permissions.allow_pickle:
            others += (replace(permissions, path=key),)
        return replace(self, model_permissions=others)

    def with_recent_model(self, path: str | Path) -> "Settings":
        """A copy with `path` first among the recent models and as the last model opened."""
        key = model_key(path)
        recent = (key, *(p for p in self.recent_models if p != key))[:MAX_RECENT_MODELS]
        return replace(self, last_model_path=str(path), recent_models=recent)


def settings_path() -> Path:
    return config_dir() / "settings.json"


def load_settings(path: Path | None = None) -> Settings:
    """Read settings; a missing or unreadable file gives defaults (logged, never raised)."""
    return read_settings(path)[0]


@dataclass(frozen=True)
class UnreadSettings:
    """Why the settings are the defaults: `reason` (English, technical: the OS's or the parser's
    words, with the path when the file stayed) and `kept_as`, the path the file was moved aside to
    ("" when it stayed where it is). The window says it in its own language (app.ui.application);
    str() is the English line, for the log and headless runs."""

    reason: str
    kept_as: str = ""
    error: OSError | None = field(default=None, compare=False)  # the file could not be opened: said by errno
    json_position: tuple[int, int] | None = None  # (line, column) where the JSON broke: said in the window's words

    def __str__(self) -> str:
        if self.kept_as:
            return (f"Settings could not be read ({self.reason}); the file was kept as {self.kept_as} "
                    "and the defaults are used.")
        return f"Settings could not be read ({self.reason}); the defaults are used."


(NOT_A_NUMBER, NOT_FINITE, NOT_WHOLE, NOT_TEXT, OUT_OF_RANGE, OUT_OF_RANGE_DEFAULT, NOT_AN_OBJECT,
 NOT_A_CHOICE, HOLDS_CREDENTIALS) = (
    "not a number", "not a finite number", "not a whole number", "not text", "out of range",
    "out of range, the default", "not an object", "not a choice", "holds credentials")
"""Why a value of settings.json is not used as written (UnusableValue.problem)."""

_SAID = {
    NOT_A_NUMBER: "{0} {1} is not a number; the default {2} is used.",
    NOT_FINITE: "{0} {1} is not a finite number; the default {2} is used.",
    NOT_WHOLE: "{0} {1} is not a whole number; the default {2} is used.",
    NOT_TEXT: "{0} {1} is not text; the default {2} is used.",
    OUT_OF_RANGE: "{0} {1} is out of range; {2} is used.",
    OUT_OF_RANGE_DEFAULT: "{0} {1} is out of range; the default {2} is used.",
    NOT_AN_OBJECT: "{0} {1} is not an object of settings; the defaults are used.",
    NOT_A_CHOICE: "{0} {1} is not one of its choices; the default {2} is used.",
    HOLDS_CREDENTIALS: "{0} {1} holds a user name or password before '@'; {2} is used: put the key in "
                       "Settings, API key.",
}
"""The English sentences; app.ui.application says each in the window's language."""

SHOWN_CHARACTERS = 40  # a value longer than this (a pasted prompt, a big list) is cut with "…"
RANDOM_SEED = "random"
"""The seed's default (None: a fresh draw every turn) as UnusableValue.used says it; json_text's
"null" is JSON's word, not the user's (new-user re-trial: "the default null is used")."""


@dataclass(frozen=True)
class UnusableValue:
    """One value of settings.json used otherwise than written: `key` its JSON key ("temperature";
    "generation" for that whole section; "backend.remote.retries" below the top level outside
    "generation"), `problem` one of NOT_A_NUMBER … NOT_A_CHOICE, `written`
    and `used` as JSON writes them (json_text: '"hot"', 'NaN', '2.0'; `used` "" for a section, and
    RANDOM_SEED for the seed's default). str() is the English sentence."""

    key: str
    problem: str
    written: str
    used: str = ""

    def __str__(self) -> str:
        return _SAID[self.problem].format(self.key, self.written, self.used)


@dataclass(frozen=True)
class UnusableSettings:
    """The values of a settings.json that was read, but not all as written: each one's default
    (or the nearest value in range) is used instead, the others are kept. Like UnreadSettings, the
    caller says it (the window in its language: app.ui.application; `--ask` on stderr); str() is
    the English line: "Settings: " and a sentence per value (new-user trial: `"temperature": "hot"`
    gave two raw WARNING log lines and the window said nothing)."""

    values: tuple[UnusableValue, ...]

    def __str__(self) -> str:
        return "Settings: " + " ".join(str(value) for value in self.values)


def json_text(value: object) -> str:
    """`value` as settings.json writes it ("hot" in quotes, NaN, Infinity, true, null, 0.7), cut to
    SHOWN_CHARACTERS with "…"."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # nested too deeply to write back
        text = _json_kind(value)
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS - 1] + "…"


def _text(value) -> str:
    """A path kept as text; anything else is no path (re-trial: `"last_model_path": 12` was said as
    "The model used last is no longer at 12")."""
    return value if isinstance(value, str) else ""


def read_settings(path: Path | None = None) -> tuple[Settings, UnreadSettings | UnusableSettings | None]:
    """The settings, and None, or why they are the defaults (UnreadSettings), or which values
    of a file that was read are not used as written (UnusableSettings). A file that is not settings JSON is
    moved aside to settings.unreadable-<time>.json first, so the next save does not overwrite what
    the user wrote (trial 4: a truncated file was silently replaced); one that cannot be read at
    all (a folder, no permission) is left where it is; its language and appearance are salvaged,
    so the window that says so speaks the user's chosen language. Never raises. Logged at INFO only:
    the caller says it (the window in its language, `--ask` once on stderr; as a WARNING it printed
    raw, once per read, on the command line)."""
    path = path or settings_path()
    text = ""
    try:
        text = path.read_text(encoding="utf-8-sig")
        raw = json.loads(text)  # Notepad writes a BOM: not "unreadable"
        if not isinstance(raw, dict):  # trial 15: null said "'NoneType' object has no attribute 'get'"
            raise ValueError(f"the file holds {_json_kind(raw)}, not a JSON object of settings")
        generation, unusable = _generation(raw.get("generation", {}))
        backend, backend_unusable = _backend(raw.get("backend"))
        unusable += backend_unusable + _choices(raw)
        return Settings(generation=generation, last_model_path=_text(raw.get("last_model_path")),
                        recent_models=_recent_models(raw.get("recent_models")),
                        model_permissions=_model_permissions(raw.get("model_permissions")),
                        backend=backend,
                        model_contexts=_model_contexts(raw.get("model_contexts")),
                        language=_language(raw.get("language")),
                        appearance=_appearance(raw.get("appearance")),
                        last_folders=LastFolders.from_json(raw.get("last_folders"))), \
            UnusableSettings(unusable) if unusable else None
    except FileNotFoundError:
        return Settings(), None
    except OSError as exc:  # a folder where the file belongs, no permission: nothing to move aside
        log.info("settings file %s unreadable (%s); using defaults", path, exc)
        return Settings(), UnreadSettings(f"{path}: {exc.strerror or exc}", error=exc)
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:  # JSON and UTF-8 errors are ValueErrors
        if isinstance(exc, RecursionError):  # json.loads on arrays nested 100,000 deep (new-user trial)
            exc = ValueError("nested too deeply")
        try:
            aside = keep_aside(path)
        except OSError as move_error:
            log.info("settings file %s unreadable (%s) and not movable (%s)", path, exc, move_error)
            return _salvaged_looks(text), UnreadSettings(f"{path}: {exc}")
        log.info("settings file %s unreadable (%s); moved to %s", path, exc, aside)
        # the whole path: the user finds the file to mend (new-user trial: only its name was said)
        position = (exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else None
        return _salvaged_looks(text), UnreadSettings(str(exc), str(aside), json_position=position)


def _salvaged_looks(text: str) -> Settings:
    """Defaults, but with the language and appearance a broken file still names ("language":
    "ko" before a stray comma): a user who chose Korean on an English system is told about the
    broken file in Korean, and the next save keeps the choice (new-user trial)."""
    def named(key: str) -> object:
        found = re.findall(rf'"{key}"\s*:\s*"([^"]*)"', text)
        return found[0] if len(found) == 1 else None  # named twice: no guess

    return Settings(language=_language(named("language")), appearance=_appearance(named("appearance")))


def _json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words: "null", "a list", "a number", "text", "true"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return {list: "a list", str: "text", dict: "an object"}.get(type(value), "a number")


WHOLE_NUMBER_FIELDS = frozenset(
    {f.name for f in fields(GenerationSettings) if type(f.default) is int} | {"seed"})
"""The settings that count (tokens, threads, MiB, turns) or name a seed: whole numbers only."""


def _check_whole(value: object) -> None:
    """Raise ValueError for a fraction or a boolean where a whole number belongs: validated()
    truncates them (new-user trial: "context_tokens": 1.5 became a context of 1 token, and every
    message was refused, with nothing said). 512.0 and text are left to validated()."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"not a whole number: {value!r}")


def _generation(raw: object) -> tuple[GenerationSettings, tuple[UnusableValue, ...]]:
    """GenerationSettings from the JSON object, and the values not used as written. Unknown keys
    are ignored; a malformed value (text where a number belongs, NaN, a fraction or a boolean where
    a whole number belongs) falls back to that field's default, keeping the others; one out of
    validated()'s range is clamped (temperature 99 → 2.0), and said too (a negative seed is "random",
    as written: not said). An older file simply lacks the newer keys: defaults, i.e. today's behaviour.
    Logged at INFO only: the caller says them, as it says an unreadable file (read_settings)."""
    if not isinstance(raw, dict):  # the other sections are kept (trial 15: "generation": [] lost the server URL)
        log.info("settings: 'generation' is %s, not an object; using the defaults", _json_kind(raw))
        return GenerationSettings(), (UnusableValue("generation", NOT_AN_OBJECT, json_text(raw)),)
    known = {f.name for f in fields(GenerationSettings)}
    kept, unusable = {}, []
    for key, value in raw.items():
        if key not in known:
            continue
        default = getattr(GenerationSettings(), key)
        try:
            if key in WHOLE_NUMBER_FIELDS:
                _check_whole(value)
            elif isinstance(value, bool):  # float(true) is 1.0: "temperature": true was read as 1
                raise ValueError(f"not a number: {value!r}")
            used = getattr(GenerationSettings(**{key: value}).validated(), key)
        except (ValueError, TypeError, OverflowError) as exc:
            log.info("settings: %s=%r unusable (%s); using the default", key, value, exc)
            kind = "text" if key == "system_prompt" else "whole" if key in WHOLE_NUMBER_FIELDS else "number"
            unusable.append(UnusableValue(key, _problem(value, kind), json_text(value), _used_text(default)))
            continue
        if key == "seed" and used is None and value is not None and not _negative(value):  # "soon", [1]
            log.info("settings: seed=%r unusable; using the default", value)
            unusable.append(UnusableValue(key, NOT_A_NUMBER, json_text(value), _used_text(default)))
        elif _moved(value, used):  # to the default: max_new_tokens or repetition_penalty ≤ 0 (re-trial)
            log.info("settings: %s=%r out of range; using %r", key, value, used)
            problem = OUT_OF_RANGE_DEFAULT if used == default else OUT_OF_RANGE
            unusable.append(UnusableValue(key, problem, json_text(value), json_text(used)))
        kept[key] = value
    return GenerationSettings(**kept).validated(), tuple(unusable)


def _used_text(default: object) -> str:
    """A default as UnusableValue.used says it: json_text, but the seed's None (random) as RANDOM_SEED."""
    return RANDOM_SEED if default is None else json_text(default)


def _problem(value: object, kind: str) -> str:
    """Why `value`, which validated() refused, cannot be a setting of `kind` ("text", "whole" or
    "number"), in plain words: text, null, a list, a boolean or NaN is no number; ±Infinity is no
    finite one; a fraction or a boolean is no whole one."""
    if kind == "text":
        return NOT_TEXT
    if isinstance(value, float) and math.isinf(value):
        return NOT_FINITE
    if kind == "whole" and (isinstance(value, bool) or (isinstance(value, float) and not math.isnan(value))):
        return NOT_WHOLE
    return NOT_A_NUMBER


def _negative(value: object) -> bool:
    """Whether `value` reads as a number below 0 (-1, "-1": a seed meaning "random")."""
    try:
        return float(value) < 0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _moved(written: object, used: object) -> bool:
    """Whether validated() changed the number `written` (the text "0.5" and 512.0 are 0.5 and 512)."""
    try:
        return float(written) != float(used)  # type: ignore[arg-type]
    except OverflowError:  # a whole number beyond a float's range: clamped
        return True
    except (TypeError, ValueError):
        return False


def _backend(raw: object) -> tuple[BackendSettings, tuple[UnusableValue, ...]]:
    """The "backend" object (BackendSettings.read: value by value), and its values not used as
    written: unusable ones (their defaults are used) and numbers clamped into range (a read timeout of
    9,999 s is 600). A missing object is the default (local), said of nothing."""
    default = BackendSettings()
    if raw is not None and not isinstance(raw, dict):
        return default, (UnusableValue("backend", NOT_AN_OBJECT, json_text(raw)),)
    backend, refused = BackendSettings.read(raw)
    if raw is None:
        return backend, ()
    remote_raw = raw.get("remote") if isinstance(raw.get("remote"), dict) else {}
    unusable = []
    for key in refused:
        name = f"backend.{key}"
        if key == "kind":
            unusable.append(UnusableValue(name, NOT_A_CHOICE, json_text(raw["kind"]), json_text(default.kind)))
        elif key == "remote":
            unusable.append(UnusableValue(name, NOT_AN_OBJECT, json_text(raw["remote"])))
        else:
            field_name = key.removeprefix("remote.")
            used = getattr(default.remote, field_name)
            kind = "text" if isinstance(used, str) else "whole" if isinstance(used, int) else "number"
            unusable.append(UnusableValue(name, _problem(remote_raw[field_name], kind),
                                          json_text(remote_raw[field_name]), json_text(used)))
    written = remote_raw.get("base_url")
    if isinstance(written, str) and without_credentials(written) != written:  # said without them
        unusable.append(UnusableValue("backend.remote.base_url", HOLDS_CREDENTIALS,
                                      json_text(credentials_hidden(written)), json_text(backend.remote.base_url)))
    for field_name, written in remote_raw.items():
        used = getattr(backend.remote, field_name, None)
        if f"remote.{field_name}" not in refused and isinstance(used, (int, float)) and _moved(written, used):
            unusable.append(UnusableValue(f"backend.remote.{field_name}", OUT_OF_RANGE, json_text(written),
                                          json_text(used)))
    return backend, tuple(unusable)


def _choices(raw: dict) -> tuple[UnusableValue, ...]:
    """The language and appearance written as none of their choices ("kr", "darkk"), said with the
    default used: the window had followed the system without a word, and the next save wrote it."""
    return tuple(UnusableValue(key, NOT_A_CHOICE, json_text(raw[key]), json_text(default))
                 for key, choices, default in (("language", LANGUAGES, "auto"), ("appearance", APPEARANCES, "system"))
                 if key in raw and raw[key] not in choices)


LANGUAGES = ("auto", "en", "ko")


def _language(raw: object) -> str:
    """The language setting from JSON; anything unknown follows the system ("auto")."""
    return raw if raw in LANGUAGES else "auto"


APPEARANCES = ("system", "light", "dark")


def _appearance(raw: object) -> str:
    """The appearance setting from JSON; anything unknown follows the desktop ("system")."""
    return raw if raw in APPEARANCES else "system"


def _recent_models(raw: object) -> tuple[str, ...]:
    """Recent model paths from JSON; entries that are not strings are skipped."""
    if not isinstance(raw, list):
        return ()
    return tuple(dict.fromkeys(model_key(p) for p in raw if isinstance(p, str) and p))[:MAX_RECENT_MODELS]


def _model_permissions(raw: object) -> tuple[ModelPermissions, ...]:
    """Per-model opt-ins from JSON; malformed entries are skipped, flags must be real booleans."""
    if not isinstance(raw, list):
        return ()
    kept = []
    for entry in raw:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            permissions = ModelPermissions(model_key(entry["path"]), entry.get("trust_remote_code") is True,
                                           entry.get("allow_pickle") is True)
            if permissions.trust_remote_code or permissions.allow_pickle:
                kept.append(permissions)
    return tuple(kept)


def _model_contexts(raw: object) -> tuple[ModelContext, ...]:
    """Per-model contexts from JSON; entries without a path or a positive integer are skipped."""
    if not isinstance(raw, list):
        return ()
    return tuple(ModelContext(model_key(e["path"]), e["tokens"]) for e in raw
                 if isinstance(e, dict) and isinstance(e.get("path"), str) and type(e.get("tokens")) is int
                 and e["tokens"] > 0)


def save_settings(settings: Settings, path: Path | None = None) -> None:
    """Write settings atomically (json_files.write_atomically; OSError names settings.json)."""
    write_atomically(path or settings_path(), json.dumps(asdict(settings), indent=2))
