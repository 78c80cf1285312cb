"""Is a folder's ``*.safetensors`` file whole? Checked from its header, before anything loads.

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON
(``{"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``), then the
tensor bytes; ``data_offsets`` count from the end of the header
(https://huggingface.co/docs/safetensors/index#format). A download cut short leaves a file
shorter than 8 + N + the largest ``end``, which the ``safetensors`` library refuses only when the
weights load ("SafetensorError: Error while deserializing header: incomplete metadata, file not
fully covered"). Reading the length and the header takes milliseconds, even for a shard of
gigabytes, so the catalog and the loader check every file first and say which one is damaged.
Pure Python: no torch, no safetensors import.
"""

import json
import logging
import struct
from pathlib import Path

log = logging.getLogger(__name__)

# safetensors refuses headers above 100 MB (MAX_HEADER_SIZE in safetensors/src/tensor.rs)
MAX_HEADER_BYTES = 100_000_000
DAMAGED_WORDS = "damaged safetensors file"


def safetensors_damage(path: Path) -> str | None:
    """Why the safetensors file `path` cannot be whole, in English words a user can act on
    ("it ends before its own tensors do"); None when its header is readable and the file is
    at least as long as the header says. Reads at most 8 + N bytes (N: the header length).
    Raises OSError when the file cannot be opened or read."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as file:
        head = file.read(8)
        if len(head) < 8:
            return "it ends before its header does"
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER_BYTES:
            return "its header length is impossible"
        if 8 + length > size:
            return "it ends before its header does"
        raw = file.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
        ends = [_end(entry) for name, entry in header.items() if name != "__metadata__"]
    except (UnicodeDecodeError, ValueError, AttributeError, TypeError, KeyError):
        return "its header is not readable"
    if 8 + length + max(ends, default=0) > size:
        return "it ends before its own tensors do"
    return None


def _end(entry: dict) -> int:
    begin, end = entry["data_offsets"]
    if not (isinstance(begin, int) and isinstance(end, int)) or not 0 <= begin <= end:
        raise ValueError(f"bad data_offsets {begin!r}, {end!r}")
    return end


def damaged_safetensors(folder: Path) -> str | None:
    """The one-line reason for the first damaged ``*.safetensors`` file at the top of `folder`
    (where transformers loads them from): "model.safetensors: damaged safetensors file (it ends
    before its own tensors do); the file is probably incomplete or corrupted — download it
    again", the GGUF header's wording (app.engine.loading.gguf_header). None when every file is
    whole or there is none. An unreadable file counts as damaged (its OSError is logged)."""
    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            what = safetensors_damage(path)
        except OSError as exc:
            log.info("cannot read %s: %s", path, exc)
            what = "it cannot be read"
        if what is not None:
            log.info("damaged safetensors file %s: %s (%d bytes)", path, what, _size(path))
            return (f"{path.name}: {DAMAGED_WORDS} ({what}); the file is probably incomplete or "
                    "corrupted — download it again")
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
