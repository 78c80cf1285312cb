"""What a model folder would make this process execute, checked before anything loads.

A folder can run code in two ways, and both stay off unless the user allows them *for that
model* (app.core.settings.ModelPermissions):

* Python files it ships, named by ``auto_map`` in config.json; transformers runs them only with
  ``trust_remote_code=True`` (https://huggingface.co/docs/transformers/models#custom-models).
* Pickle weights (``pytorch_model.bin``, ``*.pt``, ``*.pth``, ``*.ckpt``): unpickling can call
  any function (https://docs.python.org/3/library/pickle.html, the red warning box), which is
  why safetensors exists (https://huggingface.co/docs/safetensors). When a folder has both,
  the safetensors are loaded (``use_safetensors=True``) and the pickle files never opened.

Reads file names and the folder's JSON files only; never imports a model class.
"""

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SAFETENSORS_SUFFIXES = (".safetensors",)
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
# pickle files a training run leaves beside the weights; they are never loaded as weights
_NOT_WEIGHTS = {"training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.pt"}
# Auto classes whose custom code would run when Headroom loads a folder
_LOADED_AUTO_CLASSES = ("AutoConfig", "AutoModelForCausalLM", "AutoModel")

ENABLE_CODE = "Run this model's own code"
ENABLE_PICKLE = "Allow pickle weights"


class TrustRequired(ValueError):
    """Loading needs a permission the user has not given for this model.

    str(exc) is one line for the user: what is needed, the risk, and how to allow it.
    permission: "trust_remote_code" or "allow_pickle".
    """

    def __init__(self, message: str, permission: str):
        super().__init__(message)
        self.permission = permission


@dataclass(frozen=True)
class WeightFiles:
    """Weight file names at the top of a folder (where transformers looks for them)."""

    safetensors: tuple[str, ...]
    pickle: tuple[str, ...]


@dataclass(frozen=True)
class FolderTrust:
    """What the loader passes to transformers: use_safetensors (True whenever safetensors
    exist; False only for a pickle-only folder the user allowed) and trust_remote_code."""

    use_safetensors: bool
    trust_remote_code: bool


def weight_files(folder: Path) -> WeightFiles:
    """Safetensors and pickle weight files directly in `folder` (sorted names)."""
    names = sorted(p.name for p in Path(folder).iterdir() if p.is_file())
    return WeightFiles(
        tuple(n for n in names if n.endswith(SAFETENSORS_SUFFIXES)),
        tuple(n for n in names if n.endswith(PICKLE_SUFFIXES) and n not in _NOT_WEIGHTS),
    )


def needs_remote_code(config: dict) -> bool:
    """True when config.json maps a loaded Auto class to the folder's own code *and*
    transformers has no built-in class for its model_type (with one, the code is not needed:
    transformers uses its own class when trust_remote_code is off)."""
    from transformers import CONFIG_MAPPING

    auto_map = config.get("auto_map")
    if not isinstance(auto_map, dict) or not any(k in auto_map for k in _LOADED_AUTO_CLASSES):
        return False
    return config.get("model_type") not in CONFIG_MAPPING


def remote_code_message(name: str) -> str:
    """The one-line refusal for a model that needs its own Python code."""
    return (f"{name} needs to run Python code shipped with it (trust_remote_code), which is off; "
            f"if you trust its source, tick “{ENABLE_CODE}” for it in Open model… and open it again")


# The JSON files of a folder that transformers reads besides config.json, each a JSON object: the
# tokenizer's (tokenization_utils_base: tokenizer_config, special_tokens_map, added_tokens,
# chat_template, tokenizer.json; a BPE vocab.json), the generation defaults and a sharded
# checkpoint's index. New-user trial: a damaged tokenizer_config.json was "The model could not be
# opened (JSONDecodeError)"; a damaged generation_config.json was dropped in silence (its stop
# tokens with it).
MODEL_JSON_FILES = ("tokenizer_config.json", "tokenizer.json", "special_tokens_map.json", "added_tokens.json",
                    "chat_template.json", "vocab.json", "generation_config.json", "model.safetensors.index.json",
                    "pytorch_model.bin.index.json")


def _json_object(folder: Path, name: str) -> dict:
    """`folder`'s JSON file `name`; ValueError (one line, naming the file) when it cannot be read,
    is not JSON (a download cut short, an edit gone wrong) or is no JSON object."""
    try:
        value = json.loads((folder / name).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{name} of {folder.name} is unreadable ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} of {folder.name} is not a JSON object")
    return value


PARSED_JSON_BYTES = 1 << 20
"""Larger JSON files (a tokenizer.json: 9 MB for Llama 3, 33 MB for Gemma) are checked by their
two ends only in the Open model listing (`folder_refusal`): it asks every listed folder, and parsing
them all took seconds. `check_folder`, right before a load, parses them whole (0.1–0.5 s)."""
_SPACE = b" \t\r\n"  # JSON's whitespace (RFC 8259 §2)
_STEP = 1 << 16


def _json_ends(folder: Path, name: str) -> None:
    """ValueError (one line, naming the file) when `folder`'s large JSON file `name` cannot be read
    or does not start with "{" and end with "}": a download cut short, the usual damage. A UTF-8
    BOM is refused too (tokenizers and transformers' json.load both refuse it). Whitespace is stepped
    past, up to PARSED_JSON_BYTES at the end; beyond that the file is not refused (new-user
    re-trial: a valid tokenizer.json with 100 trailing spaces was called damaged)."""
    try:
        with open(folder / name, "rb") as file:
            head = file.read(_STEP).lstrip(_SPACE)
            tail = _last_byte(file)
    except OSError as exc:
        raise ValueError(f"{name} of {folder.name} is unreadable ({exc})") from None
    if (head and not head.startswith(b"{")) or tail not in (b"}", b""):  # b"": only whitespace seen
        raise ValueError(f"{name} of {folder.name} is unreadable (cut short, or not a JSON object)")


def _last_byte(file) -> bytes:
    """The last byte of `file` that is not whitespace, read back _STEP bytes at a time, at most
    PARSED_JSON_BYTES; b"" when there is none in them."""
    end = file.seek(0, 2)
    stop = max(end - PARSED_JSON_BYTES, 0)
    while end > stop:
        start = max(end - _STEP, stop)
        file.seek(start)
        chunk = file.read(end - start).rstrip(_SPACE)
        if chunk:
            return chunk[-1:]
        end = start
    return b""


def _config(folder: Path, whole: bool) -> dict:
    """`folder`'s config.json, after the other JSON files the load reads (MODEL_JSON_FILES, those
    present) were read as well: parsed, or by their ends only when over PARSED_JSON_BYTES and not
    `whole`; ValueError (one line, naming the file) for the first that cannot be read or is no JSON
    object. New-user re-trial: damage mid-file and a BOM passed the ends and failed the load as
    "The model could not be opened (JSONDecodeError)"."""
    config = _json_object(folder, "config.json")
    for name in MODEL_JSON_FILES:
        try:
            stat = (folder / name).stat()
        except OSError:
            continue  # absent: the load does without it
        if stat.st_size > PARSED_JSON_BYTES and not whole:
            _json_ends(folder, name)
        else:
            _parses(str(folder / name), stat.st_size, stat.st_mtime_ns)
    return config


@lru_cache(maxsize=64)
def _parses(path: str, size: int, mtime_ns: int) -> bool:
    """True once the JSON file at `path` (of that size and mtime) was read as a JSON object;
    `_json_object`'s ValueError otherwise, which is not cached. preflight and load_model check the
    same folder one open apart: a large tokenizer.json is parsed once, not twice."""
    file = Path(path)
    _json_object(file.parent, file.name)
    return True


def _no_weights(folder: Path) -> str:
    return f"{folder.name} has no weight files (*.safetensors or pytorch_model.bin)"


def folder_refusal(folder: Path) -> str | None:
    """Why `folder` cannot load whatever the user allows, in check_folder's words (config.json or
    another JSON file the load reads unreadable or no JSON object, no weight files at all), or
    None. The Open model dialog asks it, so such a folder is refused there, not listed as fitting
    and failing on Open (trial 9); a JSON file over PARSED_JSON_BYTES by its ends only (the load's
    own check_folder parses it). A folder whose files cannot be listed: None (the loader says why)."""
    folder = Path(folder)
    try:
        _config(folder, whole=False)
    except ValueError as exc:
        return str(exc)
    try:
        files = weight_files(folder)
    except OSError:
        return None
    return None if files.safetensors or files.pickle else _no_weights(folder)


def check_folder(folder: Path, trust_remote_code: bool = False, allow_pickle: bool = False) -> FolderTrust:
    """Decide how `folder` may load. Raises TrustRequired when it needs remote code that is not
    trusted, or has only pickle weights that are not allowed; ValueError when config.json or
    another JSON file the load reads (each parsed whole) is unreadable or the folder has no weight
    files at all (`folder_refusal`)."""
    folder = Path(folder)
    config = _config(folder, whole=True)
    if needs_remote_code(config) and not trust_remote_code:
        raise TrustRequired(remote_code_message(folder.name), "trust_remote_code")
    files = weight_files(folder)
    if files.safetensors:
        return FolderTrust(True, trust_remote_code)
    if not files.pickle:
        raise ValueError(_no_weights(folder))
    if not allow_pickle:
        shown = ", ".join(files.pickle[:3]) + (", …" if len(files.pickle) > 3 else "")
        raise TrustRequired(
            f"{folder.name} has only pickle weights ({shown}), which can run arbitrary code when "
            f"loaded; if you trust its source, tick “{ENABLE_PICKLE}” for it in Open model… "
            "(or convert it to safetensors)", "allow_pickle")
    return FolderTrust(False, trust_remote_code)
