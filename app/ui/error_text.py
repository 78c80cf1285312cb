"""Plain-language texts for expected failures (issue 14, item 9): what happened and what to do,
in one line each, translated; the exception itself (type, message, traceback) belongs in the log.

`plain_error(exc)` recognises failures by type and by the wording of the libraries that raise
them (gguf, transformers, torch, the remote backend's RemoteError kinds), so this module imports
none of them. Anything unrecognised gets a generic line that names the exception type only:
never "ValueError: cannot reshape array …" in front of the user.

Not wired yet: the chat layer (being restructured) should route `notice` texts through it.
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication


def _tr(text: str) -> str:
    return QCoreApplication.translate("PlainError", text)


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
    r"|model type .* (is not|not) (supported|recognized)|GGUF model with architecture", re.IGNORECASE)
_OOM = re.compile(r"out of memory", re.IGNORECASE)

_REMOTE_TODO = {
    "config": "Check the server address and model name in Settings.",
    "unreachable": "Start the server, or fix its address in Settings.",
    "timeout": "The server may be busy or down; try again, or check it.",
    "auth": "Check the API key in Settings.",
    "not_found": "Check the model name and the address in Settings.",
    "context_length": "Start a new chat or send a shorter message.",
    "busy": "The server is busy; try again in a moment.",
    "server": "Try again; if it keeps failing, look at the server's log.",
    "protocol": "The address may not be an OpenAI-compatible server; check it in Settings.",
}


def _type_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def plain_error(exc: BaseException) -> PlainError:
    """The plain text for `exc` (see the module docstring); never raises."""
    names, message = _type_names(exc), str(exc)
    first = message.strip().splitlines()[0] if message.strip() else ""
    if "RemoteError" in names:
        kind = getattr(exc, "kind", "")
        return PlainError(_tr("The server could not answer: {0}.").format(first.rstrip(".")),
                          _tr(_REMOTE_TODO.get(kind, "Try again, or check the server in Settings.")))
    if "OutOfMemoryError" in names or _OOM.search(message):
        return PlainError(_tr("The model ran out of memory during this answer."),
                          _tr("Shorten the conversation or the answer length, or open a smaller model."))
    if _ARCHITECTURE.search(message):
        return PlainError(_tr("This model's architecture is not supported by the installed transformers."),
                          _tr("Open a model of a supported family (Llama, Mistral, Qwen, Gemma, Phi …)."))
    if "ModelLoadError" in names and _GGUF.search(message):
        return PlainError(_tr("This GGUF file could not be read: {0}.").format(first.rstrip(".")),
                          _tr("The file may be incomplete or damaged; download it again."))
    if "ModelLoadError" in names:
        return PlainError(_tr("The model could not be opened: {0}.").format(first.rstrip(".")))
    if isinstance(exc, FileNotFoundError):
        return PlainError(_tr("A file Headroom needs is missing: {0}.").format(exc.filename or first),
                          _tr("Check that the folder or drive is still there."))
    if isinstance(exc, PermissionError):
        return PlainError(_tr("Headroom may not read or write {0}.").format(exc.filename or _tr("a file")),
                          _tr("Check the file's permissions."))
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return PlainError(_tr("The disk is full."), _tr("Free some space, then try again."))
    return PlainError(_tr("Something went wrong ({0}).").format(type(exc).__name__),
                      _tr("The details are in the log (its folder is shown in Help → About)."))
