"""What a picked model path is, told from its name and first bytes only: no parsing, no torch.

The window asks before it frees the open model (trial 6: a file of random bytes picked in Open
model unloaded the working model, failed, and reloaded it — on a GPU with an 8B model, a long
wait for nothing). The loader asks the same (resolve_model_folder), so both say it in the same
words. What only the header can tell (an unsupported architecture, a cut download) is still the
loader's: read_gguf_header takes seconds on a first call, too long for the GUI thread.
"""

from __future__ import annotations

from pathlib import Path

GGUF_MAGIC = b"GGUF"  # the first four bytes of every GGUF file (ggml's docs/gguf.md)


def model_source(path: Path) -> Path:
    """The path a choice stands for: the folder of a picked config.json (the open dialog offers
    it), else `path` itself with ~ expanded."""
    path = Path(path).expanduser()
    return path.parent if path.is_file() and path.name == "config.json" else path


def refusal(path: Path) -> str | None:
    """Why `path` cannot be a model Headroom opens (one English line, the loader's wording), or
    None when it may be one: a missing path, a file that is neither a .gguf (by its name or its
    first bytes) nor a folder's config.json, an empty or unreadable .gguf, or one that does not
    start with the GGUF magic bytes; a folder without config.json. Reads at most 4 bytes; never
    raises."""
    path = model_source(path)
    if not path.exists():
        return f"no model at {path}"
    if path.is_dir():
        has_config = (path / "config.json").is_file()
        return None if has_config else f"{path} is not a Hugging Face model folder (no config.json)"
    if not is_gguf_file(path):
        return f"{path.name} is not a .gguf file or a model folder (no config.json next to it)"
    try:
        return gguf_head_refusal(path)
    except OSError as exc:
        return f"cannot read {path.name}: {exc.strerror or exc}"


def is_gguf_file(path: Path) -> bool:
    """Whether `path` is a file to open as a GGUF: named .gguf, or starting with the GGUF magic bytes
    under another name (a hub cache's blob, a download renamed; new-user re-trial: a valid GGUF named
    "noext" was refused as "not a .gguf file"). Reads at most 4 bytes; never raises."""
    path = Path(path)
    if not path.is_file():
        return False
    if path.suffix.lower() == ".gguf":
        return True
    try:
        return gguf_head_refusal(path) is None
    except OSError:
        return False


def gguf_head_refusal(path: Path) -> str | None:
    """Why the file `path` is no GGUF by its first 4 bytes (empty, or not the GGUF magic bytes), or
    None. Raises OSError when it cannot be read. The one check of them: `refusal` and
    gguf_header.read_gguf_header both ask it."""
    with Path(path).open("rb") as file:
        head = file.read(len(GGUF_MAGIC))
    if not head:
        return f"{Path(path).name} is an empty file, not a GGUF model"
    if head != GGUF_MAGIC:
        return f"{Path(path).name} is not a GGUF file (no GGUF magic bytes)"
    return None
