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
import re
import struct
from pathlib import Path

log = logging.getLogger(__name__)

# safetensors refuses headers above 100 MB (MAX_HEADER_SIZE in safetensors/src/tensor.rs)
MAX_HEADER_BYTES = 100_000_000
DAMAGED_WORDS = "damaged safetensors file"
DAMAGED_MODEL_WORDS = "damaged model"  # files that are whole but do not make one model (missing_layers)


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


# a decoder layer's index in a tensor name: "model.layers.12.mlp…", "transformer.h.3.attn…"
_LAYER_INDEX = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)\.")


def missing_layers(folder: Path, layers: int) -> str | None:
    """The one-line reason when the ``*.safetensors`` files at the top of `folder` hold weights
    for fewer decoder layers than its config's `layers` ("its config has 1000 layers but its
    weights only 30"): transformers would fill the missing ones with random numbers and the model
    would answer noise, after allocating all of them (new-user trial 12: a GGUF whose block_count
    said 1000 took a minute and 13 GiB to load, then answered gibberish). None when every layer
    has weights, or when no tensor name carries a layer index. Reads only the headers."""
    found: set[int] = set()
    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            found |= {int(m[1]) for name in _tensor_names(path) if (m := _LAYER_INDEX.search(name))}
        except (OSError, ValueError, struct.error) as exc:  # damaged_safetensors says which file
            log.info("cannot read the tensor names of %s: %s", path, exc)
            return None
    if not found or len(found) >= layers:
        return None
    log.info("%s: config layers %d, weights for layers %s", folder, layers, sorted(found)[:8])
    return (f"{DAMAGED_MODEL_WORDS}: its config has {layers:,} layers but its weights only {len(found):,}; "
            "the files are incomplete or do not belong together — download the model again")


def _tensor_names(path: Path) -> list[str]:
    """The tensor names in a safetensors file's header."""
    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        if length > MAX_HEADER_BYTES:
            raise ValueError("impossible header length")
        header = json.loads(file.read(length).decode("utf-8"))
    return [name for name in header if name != "__metadata__"]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
