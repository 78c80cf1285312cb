"""Plain-language texts for expected failures (issue 14, item 9): what happened and what to do,
in one line, translated. The engine's own words (an exception, or the one-line English reason
a worker signal carries) belong in the log; the chat logs them before it shows these lines.

Two entries: `plain_error(exc)` for an exception caught in the GUI thread, `plain_failure(reason,
during)` for the reason strings the worker emits (load_failed, generation_failed,
summary_failed). Both recognise the failures a user actually meets by type and by the wording
of the code that raises them (app.engine.loading.loader, app.engine.events.describe_failure,
app.engine.remote.errors, gguf, transformers, torch), so this module imports none of them.
Anything unrecognised gets a generic line that names the exception type only, never
"ValueError: cannot reshape array …". `load_stage_text` and `summary_verdict_text` say the
loader's progress stages and the summary's verdict in the window's language; `os_error_text` why
a file could not be read or written (an export, a save).
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, QObject

from app.core.paths import default_model_path
from app.engine.memory.units import format_bytes

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls


def _translated(noop: str) -> str:
    """A source string lupdate saw in a QT_TRANSLATE_NOOP("PlainError", …), translated."""
    return translate("PlainError", noop)


@dataclass(frozen=True)
class PlainError:
    """what: what happened, one sentence. todo: what the user can do, one sentence ("" if none)."""

    what: str
    todo: str = ""

    def line(self) -> str:
        return f"{self.what} {self.todo}".strip()


_GGUF = re.compile(r"gguf|magic|which we cannot handle", re.IGNORECASE)
_ARCHITECTURE = re.compile(
    r"does not recognize this architecture|unrecognized (configuration|model)|architecture .* is not supported"
    r"|model type .* (is not|not) (supported|recognized)|GGUF model with architecture"
    r"|model type .* is not a causal LM"
    # transformers' refusal of SDPA for a model without attention layers (trial 15: a Mamba GGUF was "damaged")
    r"|does not support an attention implementation", re.IGNORECASE)
# the architecture's name in app.engine.loading.gguf_header's refusals ("architecture 'superllama9'",
# "model type 'x'") and transformers' ("model type `zeta`", "GGUF model with architecture mamba9 is",
# "MambaForCausalLM does not support an attention implementation")
_ARCHITECTURE_NAME = re.compile(r"architecture '([^']+)'|model type [`']([^`']+)[`']|architecture ([\w.-]+) is"
                                r"|(\w+)ForCausalLM does not support")
# app.engine.loading.model_path.gguf_head_refusal: a file named .gguf that is none (trial 9: a text
# file renamed .gguf was "damaged; download it again")
_NOT_GGUF = re.compile(r"is not a GGUF file")
# app.engine.loading.gguf_header ("x.gguf is GGUF version 0; supported: 2 and 3") and the gguf
# package ("file appears to be version 9 which we cannot handle")
_GGUF_VERSION = re.compile(r"is GGUF version (\d+)|file appears to be version (\d+)")
_GGUF_TENSOR_TYPE = re.compile(r"tensor type (.+?) cannot be dequantized")
# app.engine.loading.gguf_header: a cut download ("it ends before its own tensors do: 290,474 of
# 435,712 bytes"; trial 14: --ask said only "could not be read" where --plan gave the sizes)
_GGUF_CUT = re.compile(r"ends before its own tensors do: ([\d,]+) of ([\d,]+) bytes")
# app.engine.loading.safetensors_header.damaged_safetensors: "<file>: damaged safetensors file (…)"
_DAMAGED_SAFETENSORS = re.compile(r"(?:^|: )([^:]+\.safetensors): damaged safetensors file")
# app.engine.loading.folder_trust: "tokenizer_config.json of badtok is unreadable (Expecting value: …)"
_DAMAGED_JSON = re.compile(r"(?:^|: )([\w.-]+\.json) of .* is (?:unreadable|not a JSON object)")
_MISSING_LAYERS = re.compile(r"damaged model: its config has ([\d,]+) layers but its weights only ([\d,]+)")
# a weights file the load itself found cut or corrupt (safetensors, torch's zip reader)
_CORRUPT_WEIGHTS = re.compile(r"SafetensorError|Error while deserializing header|PytorchStreamReader failed")
# torch's CUDA OOM; RAM: torch's CPU allocator ("DefaultCPUAllocator: can't allocate memory … Error code
# 12"), numpy's MemoryError ("Unable to allocate 64.0 MiB for an array"), ENOMEM (new-user trial: a load
# under a memory limit was "This GGUF file could not be read … installs it again")
_OOM = re.compile(r"out of memory|can't allocate memory|cannot allocate memory|unable to allocate|MemoryError",
                  re.IGNORECASE)
# app.engine.local.samplers.NON_FINITE_WORDS, and torch.multinomial's refusal of NaN probabilities
# where it arrives unwrapped (new-user trial: "The answer failed (RuntimeError)")
_NON_FINITE = re.compile(r"invalid numbers \(NaN or infinity\)|probability tensor contains either")
_TYPED = re.compile(r"^(?:.*?: )?([A-Z]\w*(?:Error|Exception|Warning))(?::|$)")

# RemoteError kinds (app.engine.remote.errors) and the wording each is raised with
_REMOTE_WORDS = (
    # app.core.backend_settings.RemoteSettings.check, met at a turn (trial 15: a hand-edited settings.json's
    # URL was "The answer failed. The details are in the log")
    ("url_credentials", ("holds a user name or password before '@'",)),
    ("url", ("is not an http(s) URL",)),
    ("no_model", ("no model name is set for the remote server",)),
    ("context_length", ("too long for its context",)),
    ("auth", ("refused the API key",)),
    ("not_found", ("HTTP 404", "does not serve")),
    ("busy", ("is busy (HTTP",)),
    ("timeout", ("connect timeout", "read timeout")),
    ("lost", ("broke mid-answer", "closed before the answer ended")),
    ("unreachable", ("cannot connect to", "cannot resolve the host")),
    ("protocol", ("did not return a model list", "other than JSON", "stream piece", "sent no answer stream")),
    ("server", ("answered HTTP", "failed mid-answer")),
)
_REMOTE_WHAT = {
    "url_credentials": QT_TRANSLATE_NOOP("PlainError", "The server URL in Settings holds a name or password "
                                                       "before “@”."),
    "url": QT_TRANSLATE_NOOP("PlainError", "The server URL in Settings is not an http(s) URL such as "
                                           "http://gpu-box:8000/v1."),
    "no_model": QT_TRANSLATE_NOOP("PlainError", "No model name is set for the remote server."),
    "unreachable": QT_TRANSLATE_NOOP("PlainError", "Headroom could not reach the server."),
    # trial 14: a server that stopped mid-answer was "could not reach", and the user checked a right address
    "lost": QT_TRANSLATE_NOOP("PlainError", "The connection to the server was lost while it answered."),
    "timeout": QT_TRANSLATE_NOOP("PlainError", "The server did not answer in time."),
    "auth": QT_TRANSLATE_NOOP("PlainError", "The server refused the API key."),
    "not_found": QT_TRANSLATE_NOOP("PlainError", "The server does not know this model or address."),
    "context_length": QT_TRANSLATE_NOOP("PlainError", "The server found the prompt too long for its context."),
    "busy": QT_TRANSLATE_NOOP("PlainError", "The server is busy."),
    "server": QT_TRANSLATE_NOOP("PlainError", "The server failed while answering."),
    "protocol": QT_TRANSLATE_NOOP("PlainError", "The server's answer was not understood."),
}
_REMOTE_TODO = {
    "url_credentials": QT_TRANSLATE_NOOP("PlainError", "Remove it from the URL and put the key in the API key "
                                                       "field instead."),
    "url": QT_TRANSLATE_NOOP("PlainError", "Fix the server address in Settings."),
    "no_model": QT_TRANSLATE_NOOP("PlainError", "Enter the model name the server serves in Settings."),
    "unreachable": QT_TRANSLATE_NOOP("PlainError", "Start the server, or fix its address in Settings."),
    "lost": QT_TRANSLATE_NOOP("PlainError", "The server may have stopped or restarted; check it, then try again."),
    "timeout": QT_TRANSLATE_NOOP("PlainError", "The server may be busy or down; try again, or check it."),
    "auth": QT_TRANSLATE_NOOP("PlainError", "Check the API key in Settings."),
    "not_found": QT_TRANSLATE_NOOP("PlainError", "Check the model name and the address in Settings."),
    "context_length": QT_TRANSLATE_NOOP("PlainError", "Start a new chat or send a shorter message."),
    "busy": QT_TRANSLATE_NOOP("PlainError", "Try again in a moment."),
    "server": QT_TRANSLATE_NOOP("PlainError", "Try again; if it keeps failing, look at the server's log."),
    "protocol": QT_TRANSLATE_NOOP("PlainError",
                                  "The address may not be an OpenAI-compatible server; check it in Settings."),
}


# why a file could not be read or written, by errno: the OS's own words (strerror) are English
# whatever the window's language (trial 9: "…내보내지 못했습니다: No such file or directory")
_OS_ERRORS = {
    errno.ENOENT: QT_TRANSLATE_NOOP("PlainError", "the file or its folder does not exist"),
    errno.EACCES: QT_TRANSLATE_NOOP("PlainError", "permission denied"),
    errno.EPERM: QT_TRANSLATE_NOOP("PlainError", "permission denied"),
    errno.ENOSPC: QT_TRANSLATE_NOOP("PlainError", "the disk is full"),
    errno.EROFS: QT_TRANSLATE_NOOP("PlainError", "the disk or folder is read-only"),
    errno.EISDIR: QT_TRANSLATE_NOOP("PlainError", "it is a folder, not a file"),
    errno.ENOTDIR: QT_TRANSLATE_NOOP("PlainError", "a part of the path is a file, not a folder"),
    errno.ENAMETOOLONG: QT_TRANSLATE_NOOP("PlainError", "the name is too long"),
    # mkdir(exist_ok=True) over a file: "already exists" misled when a file stands where a folder should
    errno.EEXIST: QT_TRANSLATE_NOOP("PlainError", "a file of that name is in the way"),
    errno.EBUSY: QT_TRANSLATE_NOOP("PlainError", "it is in use"),
    errno.EIO: QT_TRANSLATE_NOOP("PlainError", "the disk could not be read or written"),
    errno.ETXTBSY: QT_TRANSLATE_NOOP("PlainError", "it is in use"),
    # past a file system's largest file (FAT32: 4 GiB) or this process's file-size limit
    errno.EFBIG: QT_TRANSLATE_NOOP("PlainError", "the file is too large for this disk"),
    errno.EMFILE: QT_TRANSLATE_NOOP("PlainError", "too many files are open"),
    errno.ENFILE: QT_TRANSLATE_NOOP("PlainError", "too many files are open"),
    errno.ELOOP: QT_TRANSLATE_NOOP("PlainError", "the path's links lead in a circle"),
}
if hasattr(errno, "EDQUOT"):  # not on every platform
    _OS_ERRORS[errno.EDQUOT] = QT_TRANSLATE_NOOP("PlainError", "the disk is full")


def os_error_text(exc: OSError) -> str:
    """Why a file could not be read or written, one clause in the window's language to follow a
    colon ("Could not export to {0}: {1}"). An errno not known here is said as an error the system
    reported, the OS's own words quoted as its detail ("the system reported “Stale file handle”"):
    they alone were English in the Korean window, and OSError(None, None, path) read
    "[Errno None] None: …"."""
    known = _OS_ERRORS.get(exc.errno)
    if known:
        return _translated(known)
    # OSError("text") has no strerror, and str() of one with more arguments repeats the path
    detail = exc.strerror or (str(exc.args[0]) if len(exc.args) == 1 and exc.args[0] else "")
    if detail:
        return translate("PlainError", "the system reported “{0}”").format(detail)
    return translate("PlainError", "the system reported an error")


def os_error_line(exc: OSError) -> str:
    """`os_error_text` after the file it names ("/home/a/presets.json: permission denied"), for
    a line that does not name the file itself; the clause alone when the error names none."""
    reason = os_error_text(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason


def _see_log() -> str:
    return translate("PlainError", "The details are in the log (Help → About shows its folder).")


def _remote(kind: str) -> PlainError:
    return PlainError(_translated(_REMOTE_WHAT.get(kind, _REMOTE_WHAT["server"])),
                      _translated(_REMOTE_TODO.get(kind, _REMOTE_TODO["server"])))


def _remote_kind(message: str) -> str | None:
    return next((kind for kind, words in _REMOTE_WORDS if any(w in message for w in words)), None)


def _out_of_memory(during: str) -> PlainError:
    if during == "load":
        return PlainError(
            translate("PlainError", "There is not enough memory to load this model."),
            translate("PlainError", "Close other programs, or open a smaller or 4-bit model."))
    return PlainError(
        translate("PlainError", "The model ran out of memory during this answer."),
        translate("PlainError", "Send a shorter message, lower max new tokens in Settings, "
                                   "or start a new chat."))


def _unsupported_architecture(message: str) -> PlainError:
    """Naming the architecture where the message does (new-user trial: "superllama9" was not said)."""
    named = _ARCHITECTURE_NAME.search(message)
    name = next((group for group in named.groups() if group), "") if named else ""
    return PlainError(
        translate("PlainError", "This model's architecture ({0}) is not supported by the installed "
                                "transformers.").format(name) if name else
        translate("PlainError", "This model's architecture is not supported by the installed "
                                   "transformers."),
        translate("PlainError", "Open a model of a supported family (Llama, Mistral, Qwen, "
                                   "Gemma, Phi …)."))


def _damaged_todo() -> str:
    """What to do about a damaged model file: the same words for a GGUF and a weights file."""
    return translate("PlainError", "The file may be incomplete or damaged; download it again.")


def _install_todo() -> str:
    """What to do when the default model's file is not a whole GGUF: install_model finds that and
    installs it again (trial 9: "download it again" named no way to, the missing model's notice did)."""
    return translate("PlainError", "This is the default model: run `python -m app.install_model`, which "
                                   "installs it again.")


def _bad_gguf(default: bool = False) -> PlainError:
    return PlainError(translate("PlainError", "This GGUF file could not be read."),
                      _install_todo() if default else _damaged_todo())


def _gguf_refusal(message: str, default: bool) -> PlainError | None:
    """A .gguf refused for what its first bytes or header say, said as that (trial 9: a text file
    renamed .gguf and a GGUF of version 0 both read "could not be read … download it again");
    None for other messages. default: the file is the default model's."""
    if "is an empty file" in message:  # app.engine.loading.model_path / gguf_header (trial 7)
        return PlainError(translate("PlainError", "This file is empty (0 bytes): there is no model in it."),
                          _install_todo() if default else
                          translate("PlainError", "The download may not have finished; download it again, "
                                                  "or pick another file."))
    if _NOT_GGUF.search(message):
        return PlainError(translate("PlainError", "This file is not a GGUF file (it does not start with GGUF's "
                                                  "magic bytes)."),
                          _install_todo() if default else
                          translate("PlainError", "Pick a .gguf model file, or a model folder with a config.json."))
    if "big-endian GGUF" in message:  # app.engine.loading.gguf_header.BIG_ENDIAN_WORDS
        return PlainError(translate("PlainError", "This GGUF file is big-endian (made for IBM mainframes and "
                                                  "similar machines); Headroom reads little-endian GGUF files "
                                                  "only."),
                          _install_todo() if default else
                          translate("PlainError", "Pick the ordinary (little-endian) GGUF of this model, as "
                                                  "most downloads are."))
    version = _GGUF_VERSION.search(message)
    if version:
        return PlainError(translate("PlainError", "This file is GGUF version {0}; Headroom reads versions 2 "
                                                  "and 3.").format(version.group(1) or version.group(2)),
                          _install_todo() if default else
                          translate("PlainError", "Pick a GGUF file of version 2 or 3 (what current tools "
                                                  "write)."))
    cut = _GGUF_CUT.search(message)
    if cut:
        have, need = (int(group.replace(",", "")) for group in cut.groups())
        return PlainError(translate("PlainError", "This GGUF file is cut short: it has {0} of the {1} its "
                                                  "header lists.").format(format_bytes(have), format_bytes(need)),
                          _install_todo() if default else
                          translate("PlainError", "The download did not finish; download it again."))
    tensor_type = _GGUF_TENSOR_TYPE.search(message)
    if tensor_type:
        return PlainError(translate("PlainError", "This GGUF file stores weights as {0}, which Headroom cannot "
                                                  "convert.").format(tensor_type.group(1)),
                          translate("PlainError", "Pick another quantization of this model (Q4_K_M, Q8_0 "
                                                  "or F16, say)."))
    return None


# app.engine.loading.gguf_convert.convert_gguf's refusal and app.engine.loading.loader.convert_gguf's
# writing failure (new-user trial: a full or misplaced cache was said as a damaged GGUF, "reinstall it")
_NO_DISK = re.compile(r"not enough disk space to convert .*: it needs (.+) in (.+), (.+) free$")
_NOT_WRITTEN = re.compile(r"cannot write the conversion of .* in (.+): \[Errno (-?\d+|None)\] (.*)$")


def _conversion_cache_failure(message: str) -> PlainError | None:
    """A GGUF's conversion that could not be written to the cache, said as that; None otherwise."""
    full_todo = translate("PlainError", "Free some space there, or start Headroom with HEADROOM_CACHE_DIR set to "
                                        "a folder on another disk.")
    short = _NO_DISK.search(message)
    if short:
        needed, folder, free = short.groups()
        return PlainError(translate("PlainError", "There is not enough disk space to convert this GGUF file: it "
                                                  "needs {0} in {1}, and {2} is free.").format(needed, folder, free),
                          full_todo)
    failed = _NOT_WRITTEN.search(message)
    if failed:
        folder, number, words = failed.groups()
        code = int(number) if number != "None" else None
        full = code in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC))
        return PlainError(translate("PlainError", "The converted model could not be written to {0}: {1}.").format(
                          folder, os_error_text(OSError(code, words or None))),
                          full_todo if full else
                          translate("PlainError", "Check that folder, or start Headroom with HEADROOM_CACHE_DIR set "
                                                  "to another folder."))
    return None


def _is_default_model(path: Path | None) -> bool:
    """Whether `path` is the default model's file (app.core.paths.default_model_path)."""
    if path is None:
        return False
    try:
        return Path(path).expanduser().resolve() == default_model_path().resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _bad_weights(name: str) -> PlainError:
    """A weights file that is cut short or corrupt: named when the loader knows which."""
    if name:
        return PlainError(translate("PlainError", "The weights file {0} could not be read.").format(name),
                          _damaged_todo())
    return PlainError(translate("PlainError", "A weights file of this model could not be read."), _damaged_todo())


def plain_error(exc: BaseException, during: str = "reply") -> PlainError:
    """The plain text for `exc` (see the module docstring); never raises. during: "load",
    "reply" or "summary" (what was running)."""
    names, message = {cls.__name__ for cls in type(exc).__mro__}, str(exc)
    if "RemoteError" in names:
        return _remote(getattr(exc, "kind", "") or _remote_kind(message) or "server")
    if isinstance(exc, FileNotFoundError):
        return PlainError(translate("PlainError", "A file Headroom needs is missing: {0}.").format(
                          exc.filename or message),
                          translate("PlainError", "Check that the folder or drive is still there."))
    if isinstance(exc, PermissionError):
        return PlainError(translate("PlainError", "Headroom may not read or write {0}.").format(
                          exc.filename or message),
                          translate("PlainError", "Check the file's permissions."))
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return PlainError(translate("PlainError", "The disk is full."),
                          translate("PlainError", "Free some space, then try again."))
    if "OutOfMemoryError" in names or isinstance(exc, MemoryError) or getattr(exc, "errno", None) == errno.ENOMEM:
        return _out_of_memory(during)
    known = _known_failure(message, during)
    if known is not None:
        return known
    return _generic(type(exc).__name__, during)


def plain_failure(reason: str, during: str = "reply", path: Path | None = None) -> PlainError:
    """The plain text for a worker's one-line English `reason` (load_failed: during="load";
    generation_failed: "reply"; summary_failed: "summary"); never raises. path: the model that
    failed to open, when known (the default model's own file is repaired by install_model)."""
    known = _known_failure(reason, during, _is_default_model(path) if during == "load" else False)
    if known is not None:
        return known
    typed = _TYPED.match(reason.strip())
    return _generic(typed.group(1) if typed else "", during)


def _known_failure(message: str, during: str, default: bool = False) -> PlainError | None:
    """The failures recognised by their wording; None for anything else. default: the model that
    failed to open is the default model's file."""
    if _OOM.search(message):
        return _out_of_memory(during)
    if _ARCHITECTURE.search(message):
        return _unsupported_architecture(message)
    if _NON_FINITE.search(message):
        return PlainError(
            translate("PlainError", "The model produced invalid numbers (NaN or infinity)."),
            translate("PlainError", "Its weights may be damaged, or its compute dtype overflows; download the "
                                    "model again, or open another one."))
    if "trust_remote_code" in message:
        return PlainError(
            translate("PlainError", "This model needs to run Python code shipped with it, "
                                       "which is off."),
            translate("PlainError", "If you trust its source, tick “Run this model's own code” "
                                       "for it in Open model and open it again."))
    if message.startswith("no model at "):
        return PlainError(translate("PlainError", "There is no model at {0}.").format(
                          message.removeprefix("no model at ")),
                          translate("PlainError", "Pick another one in Open model."))
    # app.engine.loading.folder_trust.check_folder's refusals, before anything loads
    damaged_json = _DAMAGED_JSON.search(message)
    if damaged_json:  # config.json, tokenizer_config.json, tokenizer.json … (folder_trust.MODEL_JSON_FILES)
        return PlainError(translate("PlainError", "The {0} of this model folder could not be read.").format(
                          damaged_json.group(1)),
                          translate("PlainError", "It may be incomplete or damaged; download the model again, "
                                                  "or fix its {0}.").format(damaged_json.group(1)))
    if "has no weight files" in message:
        return PlainError(translate("PlainError", "This model folder has no weights files (.safetensors or .bin)."),
                          translate("PlainError", "The download may be incomplete; download the model again, "
                                                     "or pick another folder."))
    if "has only pickle weights" in message:
        return PlainError(
            translate("PlainError", "This model has only pickle weights (.bin / .pt), which can run code "
                                       "when loaded; they are off."),
            translate("PlainError", "If you trust its source, tick “Allow pickle weights (.bin / .pt) for this "
                                       "model” in Open model and open it again, or convert it to safetensors."))
    if "no config.json next to it" in message:  # e.g. model.safetensors alone: weights, no config
        return PlainError(translate("PlainError", "There is no config.json next to this file, and it is not "
                                                     "a .gguf file."),
                          translate("PlainError", "Headroom opens a model folder with a config.json, or a "
                                                     ".gguf file: pick the folder, or add its config.json."))
    if "no config.json" in message:
        return PlainError(translate("PlainError", "This folder has no config.json."),
                          translate("PlainError", "Headroom opens a model folder with a config.json, or a "
                                                     ".gguf file."))
    # app.engine.loading.safetensors_header.missing_layers; before the GGUF wording (a converted GGUF too)
    short = _MISSING_LAYERS.search(message)
    if short:
        return PlainError(translate("PlainError", "This model's files do not match: its configuration names {0} "
                                                  "layers, its weights hold only {1}.").format(*short.groups()),
                          translate("PlainError", "The files are incomplete or do not belong together; download "
                                                  "the model again."))
    if "weights do not match its config.json" in message:  # app.engine.loading.loader: other tensor shapes
        return PlainError(translate("PlainError", "This model's weights do not match its config.json: their "
                                                  "tensors have other shapes than it names."),
                          translate("PlainError", "The config.json was edited or belongs to another model; "
                                                  "download the model again."))
    # before the GGUF wording below: a converted GGUF's folder or file name says "gguf" too
    damaged = _DAMAGED_SAFETENSORS.search(message)
    if damaged:
        return _bad_weights(damaged.group(1))
    if during == "load" and _CORRUPT_WEIGHTS.search(message):
        return _bad_weights("")
    # a .gguf's first bytes or header: before the GGUF wording below, which would say "damaged"
    refused = _gguf_refusal(message, default)
    if refused is not None:
        return refused
    # before the GGUF wording below: "not a .gguf file" is no damaged GGUF
    if "not a .gguf file or a model folder" in message:
        return PlainError(translate("PlainError", "This is not a model Headroom can open."),
                          translate("PlainError", "Pick a .gguf file or a model folder "
                                                     "with a config.json."))
    if message == "no model is loaded":
        return PlainError(translate("PlainError", "No model is loaded."),
                          translate("PlainError", "Open a model first (Open model…)."))
    if message == "attached documents are read by the local model only":  # app.workers.generation_worker
        return remote_documents_refusal()
    if message.startswith("this server cannot continue a stopped answer"):
        return PlainError(translate("PlainError", "This server cannot continue a stopped answer."),
                          translate("PlainError", "Use Regenerate for a new answer instead."))
    conversion = _conversion_cache_failure(message)  # before the GGUF wording: the cache's fault, not the file's
    if conversion is not None:
        return conversion
    if during == "load" and (message.startswith("cannot convert") or _GGUF.search(message)):
        return _bad_gguf(default)
    kind = _remote_kind(message)
    return _remote(kind) if kind else None


def remote_documents_refusal() -> PlainError:
    """Files attached in a chat a remote server answers: the server reads none (said by Send before
    anything goes, and for the worker's refusal of a message sent with files)."""
    return PlainError(translate("PlainError", "Attached files are read by the local model only; this chat's "
                                              "answers come from a remote server."),
                      translate("PlainError", "Send the message without the files, or switch this chat to "
                                              "the local model in Settings."))


def _generic(type_name: str, during: str) -> PlainError:
    what = {"load": QT_TRANSLATE_NOOP("PlainError", "The model could not be opened."),
            "summary": QT_TRANSLATE_NOOP("PlainError", "The summary of earlier turns could not be written."),
            }.get(during, QT_TRANSLATE_NOOP("PlainError", "The answer failed."))
    what = _translated(what)
    if type_name:
        what = translate("PlainError", "{0} ({1})").format(what.rstrip("."), type_name) + "."
    return PlainError(what, _see_log())


def load_stage_text(stage: str) -> str:
    """The loader's progress line (app.engine.loading.loader, gguf_convert) in the window's
    language. The fit plan line ("Plan: …") and the conversion's disk line are technical
    summaries of numbers and stay English after a translated prefix."""
    for pattern, template in _STAGES:
        match = pattern.match(stage)
        if match:
            return _translated(template).format(*match.groups())
    return stage


_STAGES = (
    (re.compile(r"^Opening the model file$"), QT_TRANSLATE_NOOP("PlainError", "Opening the model file")),
    (re.compile(r"^Loading the tokenizer$"), QT_TRANSLATE_NOOP("PlainError", "Loading the tokenizer")),
    (re.compile(r"^Loading weights \((.+)\)$"), QT_TRANSLATE_NOOP("PlainError", "Loading weights ({0})")),
    (re.compile(r"^Ready$"), QT_TRANSLATE_NOOP("PlainError", "Ready")),
    (re.compile(r"^Reading the GGUF tokenizer and chat template$"),
     QT_TRANSLATE_NOOP("PlainError", "Reading the GGUF tokenizer and chat template")),
    (re.compile(r"^Converted$"), QT_TRANSLATE_NOOP("PlainError", "Converted")),
    (re.compile(r"^Checking whether (.+) was converted before$"),
     QT_TRANSLATE_NOOP("PlainError", "Checking whether {0} was converted before")),
    (re.compile(r"^Converted before: reused$"), QT_TRANSLATE_NOOP("PlainError", "Converted before: reused")),
    (re.compile(r"^Waiting for another Headroom converting this file$"),
     QT_TRANSLATE_NOOP("PlainError", "Waiting for another Headroom converting this file")),
    (re.compile(r"^Converted by another Headroom: reused$"),
     QT_TRANSLATE_NOOP("PlainError", "Converted by another Headroom: reused")),
    # the percentage first: the status bar elides the line's end (new-user trial: "…up_proj.weight (69…")
    (re.compile(r"^Converting (.+) \((\d+%)\)$"), QT_TRANSLATE_NOOP("PlainError", "Converting {1}: {0}")),
    (re.compile(r"^Plan: (.+)$", re.DOTALL), QT_TRANSLATE_NOOP("PlainError", "Plan: {0}")),
)


def summary_verdict_text(verdict: str) -> str:
    """The summary's verdict (app.core.history.SummaryVerdict.reason) in the window's language,
    with what was left out of it as repetition (app.core.repetition.Cleaned.describe); a verdict
    of another shape is returned as it is."""
    left_out = _LEFT_OUT.search(verdict)
    if left_out:
        parts = [_translated(template).format(*match.groups())
                 for pattern, template in _LEFT_OUT_PARTS for match in [pattern.search(left_out.group(1))] if match]
        return f"{summary_verdict_text(verdict[:left_out.start()])} ({', '.join(parts)})"
    for pattern, template in _CLAUSES:  # app.core.history's added clauses, said after the rest
        clause = pattern.search(verdict)
        if clause:
            rest = summary_verdict_text(verdict[:clause.start()] + verdict[clause.end():])
            return f"{rest}; {_translated(template).format(*clause.groups())}"
    kept = _NOTHING_TO_FOLD.search(verdict)
    if kept:  # a count with a singular ("the last turn stays"): Qt picks the form and writes %n
        return SummaryVerdict.tr("nothing to fold: the last %n turns stay as they are", "", int(kept.group(1)))
    for pattern, template in _VERDICTS:
        match = pattern.search(verdict)
        if match:
            return _translated(template).format(*match.groups())
    return verdict


_LEFT_OUT = re.compile(r" \((left out [^()]+)\)$")
_LEFT_OUT_PARTS = (
    (re.compile(r"(\d+) repeated sentences?"), QT_TRANSLATE_NOOP("PlainError", "repeated sentences left out: {0}")),
    (re.compile(r"a loop of (\d+) characters"), QT_TRANSLATE_NOOP("PlainError", "a loop of {0} characters cut")),
)
_CLAUSES = (  # app.core.history._head_given_way and FOLDED_LOST
    (re.compile(r"; the earlier summary cut to (\d+) of (\d+) sentences(?=: )"),
     QT_TRANSLATE_NOOP("PlainError", "the earlier summary was cut to {0} of its {1} sentences to make room")),
    (re.compile(r"; the folded turns were left out$"),
     QT_TRANSLATE_NOOP("PlainError", "the turns it folded are no longer in the history")),
)


class SummaryVerdict(QObject):
    """The translation context for a verdict with a count ("the last turn stays"): lupdate reads
    SummaryVerdict.tr(text, "", n) as a plural message, never translate(context, text, None, n).
    Never instantiated; no signals."""


_NOTHING_TO_FOLD = re.compile(r"^nothing to fold: the last (\d+) turns stay as they are$")
_VERDICTS = (
    (re.compile(r"kept an extract: history (\d+) → (\d+) tokens"),
     QT_TRANSLATE_NOOP("PlainError", "the model's summary was not usable; kept an extract "
                       "(history {0} → {1} tokens)")),
    (re.compile(r"kept the first and last (\d+) of (\d+) messages: history (\d+) → (\d+) tokens"),
     QT_TRANSLATE_NOOP("PlainError", "the model's summary was not usable; kept what the first and last {0} of {1} "
                       "messages said (history {2} → {3} tokens)")),
    (re.compile(r"kept (\d+) of (\d+) messages, what the user stated first: history (\d+) → (\d+) tokens"),
     QT_TRANSLATE_NOOP("PlainError", "the model's summary was not usable; kept what {0} of {1} messages said, what "
                       "the user stated before what they asked (history {2} → {3} tokens)")),
    (re.compile(r"^history (\d+) → (\d+) tokens$"), QT_TRANSLATE_NOOP("PlainError", "history {0} → {1} tokens")),
    (re.compile(r"^summary cancelled$"), QT_TRANSLATE_NOOP("PlainError", "cancelled")),
    (re.compile(r"^empty summary$"), QT_TRANSLATE_NOOP("PlainError", "the model wrote nothing; kept the previous one")),
    (re.compile(r"^summary is (\d+) tokens, cap is (\d+)$"),
     QT_TRANSLATE_NOOP("PlainError", "too long ({0} tokens, cap {1}); kept the previous one")),
    (re.compile(r"^the model repeated the conversation instead of summarizing it \((\d+) of (\d+) lines\)$"),
     QT_TRANSLATE_NOOP("PlainError", "the model copied the conversation instead of summarizing it; kept the "
                       "previous one")),
    (re.compile(r"^the model repeated itself \((\d+) repeated sentences, (\d+) kept\)$"),
     QT_TRANSLATE_NOOP("PlainError", "the model repeated itself; kept the previous one")),
    (re.compile(r"^history does not shrink \((\d+) → (\d+) tokens\)$"),
     QT_TRANSLATE_NOOP("PlainError", "it would not shorten the history ({0} → {1} tokens); kept the previous one")),
    # app.core.history._other_language and _dropped_facts, when no extract stands in
    (re.compile(r"^the summary is not written in \w+, the conversation's language$"),
     QT_TRANSLATE_NOOP("PlainError", "the model did not write it in the conversation's language; kept the "
                       "previous one")),
    (re.compile(r"^the model dropped the earlier summary's facts \(kept (\d+) of (\d+); lost (.*)\)$"),
     QT_TRANSLATE_NOOP("PlainError", "the model left out most facts of the earlier summary (kept {0} of {1}; "
                       "lost: {2}); kept the previous one")),
    # app.core.history._copied_answers, _cut_previous and _dropped_facts after an extract
    (re.compile(r"^the model copied an answer instead of summarizing \((\d+) of (\d+) words\)$"),
     QT_TRANSLATE_NOOP("PlainError", "the model copied an answer instead of summarizing; kept the previous one")),
    (re.compile(r"^the model wrote back part of the earlier summary \((\d+) of its (\d+) word 4-grams\)$"),
     QT_TRANSLATE_NOOP("PlainError", "the model wrote back only part of the earlier summary; kept the previous one")),
    (re.compile(r"^the model dropped what the user said \((.*)\)$"),
     QT_TRANSLATE_NOOP("PlainError", "the model left out what the user said (lost: {0}); kept the previous one")),
    (re.compile(r"^the model left out what the user said in the folded turns \((.*)\)$"),
     QT_TRANSLATE_NOOP("PlainError", "the model left out what the user said in the turns it folded (lost: {0}); "
                       "kept the previous one")),
    # "Summarize now" with nothing it can fold (app.engine.summary_flow.fold_now)
    (re.compile(r"^nothing to fold: the newest turn alone is (\d+) tokens over the context$"),
     QT_TRANSLATE_NOOP("PlainError", "nothing to fold: the newest turn alone does not fit the context "
                       "({0} tokens over)")),
)
