"""Convert a GGUF file to an HF folder tensor by tensor: bf16 safetensors shards in the user cache.

Peak memory stays near one tensor, not the model (issue 13): tensor bytes are read with plain
file reads (a memory map would leave every touched page of a 5 GB file in the process RSS),
dequantized with ``gguf.quants.dequantize`` (numpy), cast and written straight into a
safetensors shard whose header space is reserved first and filled in at the end (the format:
8-byte little-endian header length, a JSON header padded with spaces, then the raw data —
https://github.com/huggingface/safetensors#format). Large row-local tensors (the 128k × 4096
embedding of Llama-3-8B, 2 GiB in float32) go through in ~64 MiB row chunks.

GGUF → HF tensor names and the per-tensor fixes (Llama's q/k reverse permutation, Gemma's
norm − 1, ...) are transformers' own (``modeling_gguf_pytorch_utils.get_gguf_hf_weights_map`` on
a meta-device model and ``TENSOR_PROCESSORS``); the config comes from the header
(app.engine.loading.gguf_header); the tokenizer and chat template are built by transformers from
the GGUF (``AutoTokenizer.from_pretrained(gguf_file=...)``, the one step that reads the whole
vocabulary). Output goes to ``<cache>/gguf/<stem>-<digest>-<dtype>/`` through a temporary folder
and one rename, so an interrupted conversion never leaves a folder that looks valid. A file whose
content (sha256) was converted before, at another path or name, gets hard links to that conversion
instead (`reuse_conversion`); a path's conversion of what it held before goes (`drop_replaced`).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import logging
import os
import shutil
import struct
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
from filelock import FileLock, Timeout

from app.core.paths import cache_dir
from app.engine.loading.gguf_header import GgufHeader, GgufTensor, damaged_gguf, read_gguf_header
from app.engine.loading.safetensors_header import damaged_safetensors
from app.engine.memory.units import GiB, MiB, format_bytes

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]
SOURCE_STAMP = "headroom-source.json"
CONVERTER_VERSION = 2  # 1: float32 folder beside the GGUF (loader.py before issue 13)
CHUNK_BYTES = 64 * MiB  # float32 bytes dequantized at once for row-local tensors
SHARD_BYTES = 2 * GiB
DISK_SLACK = 64 * MiB  # tokenizer, config, headers
_DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4}
_ROW_LOCAL = {"TensorProcessor", "Gemma2TensorProcessor", "NemotronTensorProcessor", "Lfm2TensorProcessor",
              "MambaTensorProcessor"}


class ConversionRefused(Exception):
    """The conversion cannot start (not enough disk); str(exc) is one line for the user."""


class ConversionCancelled(Exception):
    """The cancel event was set; the partial output has been removed."""


def sweep_abandoned() -> list[Path]:
    """Remove the temporary folders (``<cache>/gguf/*.partial-<pid>``) of conversions whose process
    is gone: one killed mid-way (kill -9, a power cut) never reached its own clean-up, and an 8B
    model's would hold 16 GB for good (new-user trial: they stayed through later runs). A folder
    whose process still runs (another Headroom converting) is left alone. Returns those removed."""
    removed = []
    for folder in (cache_dir() / "gguf").glob("*.partial-*"):
        pid = folder.name.rpartition(".partial-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            log.info("removed the abandoned conversion %s", folder)
            removed.append(folder)
    return removed


def _stamp(gguf: Path, dtype: str) -> dict:
    stat = gguf.stat()
    return {"file": str(gguf.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "dtype": dtype, "converter": CONVERTER_VERSION}


def writing_failure(exc: OSError) -> bool:
    """Whether `exc` came from writing the conversion, not from reading the GGUF: a full disk or
    quota, or an error on a path inside the conversion cache (a file where its folder belongs, a
    read-only or foreign-owned folder). New-user trial: these were said as a damaged GGUF."""
    if exc.errno in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return True
    cache = cache_dir().absolute()
    return any(name is not None and cache in (path := Path(os.fsdecode(name)).absolute(), *path.parents)
               for name in (exc.filename, exc.filename2))


def conversion_dir(gguf: Path, dtype: str = "bfloat16") -> Path:
    """Where the conversion of `gguf` at `dtype` lives: ``<cache>/gguf/<stem>-<digest>-<dtype>/
    <file>.hf``, the digest over its absolute path, size and mtime (a changed file converts
    anew). The inner name is the one the folder had beside the GGUF, so reports and served-model
    names stay "SmolLM2-135M-Instruct.Q4_1.gguf.hf"."""
    stamp = _stamp(gguf, dtype)
    digest = hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()[:12]
    return cache_dir() / "gguf" / f"{gguf.stem}-{digest}-{dtype}" / f"{gguf.name}.hf"


def cached_conversion(gguf: Path, dtype: str = "bfloat16") -> Path | None:
    """The converted folder if it exists and was made from this exact file, else None."""
    folder = conversion_dir(gguf, dtype)
    stamp, expected = _read_stamp(folder), _stamp(gguf, dtype)  # the stamp may hold more (the content's sha256)
    return folder if {key: stamp.get(key) for key in expected} == expected else None


def conversion_damage(folder: Path) -> str | None:
    """Why a finished conversion cannot be used as it is: a file gone or of another size than when it
    was converted (its stamp lists them), a .json file that no longer parses, or a safetensors file
    cut short or garbled (a crash before the disk had it, an edit). None when whole. Reads sizes,
    the .json files and the safetensors headers only. New-user trial: a cut model.safetensors
    in the cache was reused forever, and a fresh download of the same GGUF reused it again."""
    stamp = _read_stamp(folder)
    written = stamp.get("files")  # name → bytes when converted
    now = _file_sizes(folder)
    if not isinstance(written, dict):  # a stamp from before the list: what every conversion writes
        written = {name: now.get(name, -1) for name in ("config.json", "tokenizer.json")}
    changed = sorted(name for name, size in written.items() if now.get(name) != size)
    if changed:
        return f"{', '.join(changed)} missing or of another size than converted"
    digests = stamp.get("digests")  # name → sha256 of the small files (stamps from 2026-12-06 on)
    if isinstance(digests, dict):
        changed = sorted(name for name, digest in digests.items() if _sha256(folder / name) != digest)
        if changed:  # an edit that kept the size (a value in config.json): the load would fail or mislead
            return f"{', '.join(changed)} changed since converted"
    for file in sorted(folder.glob("*.json")):
        try:
            json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return f"{file.name}: {exc}"
    if not any(folder.glob("*.safetensors")):
        return "no weights file"
    return damaged_safetensors(folder)


def _small_file_digests(folder: Path) -> dict[str, str]:
    """sha256 of the conversion's files but its weights and stamp (config, generation config,
    tokenizer: a few MB in all, read at each open in ~10-30 ms; the weights' GBs are not)."""
    return {file.name: _sha256(file) for file in folder.iterdir()
            if file.is_file() and file.name != SOURCE_STAMP and file.suffix != ".safetensors"}


def _sha256(file: Path) -> str | None:
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError:
        return None


def _file_sizes(folder: Path) -> dict[str, int]:
    """The conversion's files (its stamp left out) and their sizes in bytes."""
    return {file.name: file.stat().st_size for file in folder.iterdir() if file.is_file() and file.name != SOURCE_STAMP}


def discard_damaged(folder: Path, dtype: str) -> None:
    """Remove a damaged conversion, and the conversions of the same content that share its damage
    (hard links of one file: `reuse_conversion`), so the next open converts anew."""
    sha256 = _content_of(folder, dtype)
    for other in (cache_dir() / "gguf").glob(f"*-{dtype}/*.hf"):
        if other == folder or (sha256 and _content_of(other, dtype) == sha256 and conversion_damage(other)):
            shutil.rmtree(other.parent, ignore_errors=True)
            log.warning("removed the damaged conversion %s", other.parent)


def _read_stamp(folder: Path) -> dict:
    """A conversion's SOURCE_STAMP; {} where it is missing or unreadable."""
    try:
        stamp = json.loads((folder / SOURCE_STAMP).read_text())
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def content_sha256(gguf: Path, progress: Progress | None = None, cancel: threading.Event | None = None) -> str:
    """The sha256 of the whole file, read in CHUNK_BYTES pieces (cancel checked between them): what
    makes two files one conversion (`reuse_conversion`). ~1 GB/s here: seconds for an 8B model, against
    minutes of converting it."""
    (progress or (lambda _text, _frac: None))(f"Checking whether {gguf.name} was converted before", 0.0)
    digest = hashlib.sha256()
    with open(gguf, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            _check(cancel)
            digest.update(chunk)
    return digest.hexdigest()


def reuse_conversion(gguf: Path, dtype: str, sha256: str) -> Path | None:
    """This file's conversion made from another file of the same content (a copy, a moved or renamed
    file: new-user trial, four 261 MB conversions of one model, 16 GB each for an 8B), hard-linked
    into this file's own folder: no disk used, and no folder another Headroom may be loading from is
    renamed or changed. None where there is none, or where the file system has no hard links (FAT,
    exFAT): then it is converted."""
    source = next((folder for folder in (cache_dir() / "gguf").glob(f"*-{dtype}/*.hf")
                   if _content_of(folder, dtype) == sha256 and conversion_damage(folder) is None), None)
    if source is None:
        return None
    target = conversion_dir(gguf, dtype)
    tmp_home = target.parent.with_name(f"{target.parent.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp_home, ignore_errors=True)
    try:
        (tmp_home / target.name).mkdir(parents=True)
        for file in source.iterdir():
            if file.is_file() and file.name != SOURCE_STAMP:
                os.link(file, tmp_home / target.name / file.name)
        written = _read_stamp(source)
        (tmp_home / target.name / SOURCE_STAMP).write_text(json.dumps({
            **_stamp(gguf, dtype), "sha256": sha256, "files": written.get("files"), "digests": written.get("digests")}))
        shutil.rmtree(target.parent, ignore_errors=True)
        tmp_home.rename(target.parent)
    except OSError as exc:
        log.info("conversion of %s not reused from %s (%s): converting", gguf.name, source, exc)
        return None
    finally:
        shutil.rmtree(tmp_home, ignore_errors=True)
    log.info("conversion of %s reused from %s (same sha256)", gguf.name, source)
    return target


def _content_of(folder: Path, dtype: str) -> str | None:
    """The sha256 a conversion was made from (None: unknown, made before it was recorded)."""
    stamp = _read_stamp(folder)
    if (stamp.get("dtype"), stamp.get("converter")) != (dtype, CONVERTER_VERSION):
        return None
    return stamp.get("sha256")


def drop_replaced(gguf: Path, dtype: str, keep: Path) -> None:
    """Remove this path's conversions of earlier contents (the file was replaced, e.g. downloaded
    again: new-user trial, each left its 261 MB); `keep` is the current one."""
    path = str(gguf.resolve())
    for folder in (cache_dir() / "gguf").glob(f"*-{dtype}/*.hf"):
        stamp = _read_stamp(folder)
        if folder != keep and stamp.get("file") == path and stamp.get("dtype") == dtype:
            shutil.rmtree(folder.parent, ignore_errors=True)
            log.info("removed %s: a conversion of what %s held before", folder.parent, gguf.name)


@dataclass(frozen=True)
class DiskCheck:
    """Disk needed by a conversion, bytes. output: the safetensors weights; free: free space on the
    cache's file system now."""

    folder: Path
    output: int
    free: int

    @property
    def needed(self) -> int:
        return self.output + DISK_SLACK

    @property
    def enough(self) -> bool:
        return self.free >= self.needed

    def describe(self) -> str:
        return (f"conversion writes {format_bytes(self.output)} to {self.folder.parent.parent}; "
                f"{format_bytes(self.free)} free there")


def check_disk(header: GgufHeader, dtype: str = "bfloat16") -> DiskCheck:
    """Output size of converting `header` at `dtype` against the free space of the cache folder
    (``shutil.disk_usage`` of its nearest existing parent)."""
    folder = conversion_dir(header.path, dtype)
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return DiskCheck(folder, header.output_bytes(_DTYPES[dtype]), shutil.disk_usage(probe).free)


def convert_gguf(gguf: Path, dtype: str = "bfloat16", progress: Progress | None = None,
                 cancel: threading.Event | None = None, header: GgufHeader | None = None) -> Path:
    """Convert `gguf` to an HF folder (config, generation config, tokenizer with chat template,
    safetensors shards at `dtype`) in the cache and return it. Cancel is checked before every
    tensor and chunk. Raises UnsupportedGguf (refused from the header), ConversionRefused (disk),
    ConversionCancelled, or OSError / ValueError from reading the file. A header whose values do
    not fit together (past `read_gguf_header`'s checks) is refused as a damaged GGUF
    (UnsupportedGguf), never as transformers' ZeroDivisionError, IndexError or reshape error."""
    report = progress or (lambda _text, _frac: None)
    header = header or read_gguf_header(gguf)
    with _converting(gguf, dtype, report, cancel):
        cached = cached_conversion(gguf, dtype)  # another Headroom converted it while this one waited
        if cached is not None and conversion_damage(cached) is None:
            report("Converted by another Headroom: reused", 1.0)
            return cached
        return _convert(gguf, dtype, report, cancel, header)


@contextmanager
def _converting(gguf: Path, dtype: str, report: Progress, cancel: threading.Event | None):
    """Hold the lock of `gguf`'s conversion folder (``<cache>/locks/<folder>.lock``, filelock: fcntl /
    msvcrt; kept, 0 bytes: removing a lock file races the next waiter) while converting. Two processes
    converting one file at once (the window on first start, `--ask` in a terminal) replaced each other's
    finished folder, and the one loading from it found "no weights files" (new-user trial). Waits for
    the other, saying so; cancel checked."""
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(locks / f"{conversion_dir(gguf, dtype).parent.name}.lock"))
    said = False
    while True:
        _check(cancel)
        try:
            lock.acquire(timeout=0.25)
            break
        except Timeout:
            if not said:
                report("Waiting for another Headroom converting this file", 0.0)
                said = True
    try:
        yield
    finally:
        lock.release()


def _convert(gguf: Path, dtype: str, report: Progress, cancel: threading.Event | None,
             header: GgufHeader) -> Path:
    sha256 = content_sha256(gguf, report, cancel)
    reused = reuse_conversion(gguf, dtype, sha256)
    if reused is not None:
        drop_replaced(gguf, dtype, reused)
        report("Converted before: reused", 1.0)
        return reused
    disk = check_disk(header, dtype)
    if not disk.enough:
        raise ConversionRefused(f"not enough disk space to convert {gguf.name}: it needs "
                                f"{format_bytes(disk.needed)} in {disk.folder.parent.parent}, "
                                f"{format_bytes(disk.free)} free")
    report(disk.describe(), 0.0)
    home = disk.folder.parent  # renamed into place as a whole: there is no half-written folder
    tmp_home = home.with_name(f"{home.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp_home, ignore_errors=True)
    tmp = tmp_home / disk.folder.name
    tmp.mkdir(parents=True)
    try:
        _check(cancel)
        report("Reading the GGUF tokenizer and chat template", 0.02)
        _save_tokenizer_and_config(header, tmp)
        _write_weights(header, tmp, dtype, report, cancel)
        (tmp / SOURCE_STAMP).write_text(json.dumps({**_stamp(gguf, dtype), "sha256": sha256,
                                                    "files": _file_sizes(tmp),
                                                    "digests": _small_file_digests(tmp)}))
        _flush(tmp)
        shutil.rmtree(home, ignore_errors=True)
        tmp_home.rename(home)
    finally:
        shutil.rmtree(tmp_home, ignore_errors=True)
    _drop_legacy_cache(gguf)
    drop_replaced(gguf, dtype, disk.folder)
    report("Converted", 1.0)
    return disk.folder


def _flush(folder: Path) -> None:
    """fsync every file before the folder is renamed into place: the rename may reach the disk before
    the data does, and a power cut would leave a whole-looking conversion with cut files."""
    for file in folder.iterdir():
        if file.is_file():
            with open(file, "rb") as f:
                os.fsync(f.fileno())


def _check(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise ConversionCancelled("conversion cancelled")


def _save_tokenizer_and_config(header: GgufHeader, folder: Path) -> None:
    """config.json and generation_config.json from the header; the tokenizer (vocabulary, merges,
    special tokens, chat template) built by transformers from the GGUF. The tokenizer class is
    the one AutoTokenizer picks for the model type (its own, else TokenizersBackend), called
    directly: AutoTokenizer(gguf_file=) first rebuilds the config through gguf.GGUFReader, which
    took 58 s of the 62 s for the default model on the busy 2-core machine (direct: 4.5 s, the
    saved files byte-identical)."""
    from transformers import GenerationConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES, tokenizer_class_from_name
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    try:  # arithmetic and look-ups on header values: they fail only on impossible ones
        config = header.hf_config()
        config.architectures = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[header.model_type]]
        config.save_pretrained(folder)
        GenerationConfig.from_model_config(config).save_pretrained(folder)
        name = (TOKENIZER_MAPPING_NAMES.get(header.model_type) or "TokenizersBackend").removesuffix("Fast")
        tokenizer_class = tokenizer_class_from_name(name) or TokenizersBackend
        tokenizer = tokenizer_class.from_pretrained(header.path.parent, gguf_file=header.path.name)
    except (ZeroDivisionError, IndexError) as exc:
        log.info("GGUF settings of %s do not fit together: %r", header.path.name, exc)
        raise damaged_gguf(header.path.name, "its model settings or its tokenizer's do not fit together") from None
    tokenizer.save_pretrained(folder)


def _drop_legacy_cache(gguf: Path) -> None:
    """Remove the float32 folder the previous converter left beside the GGUF (`<file>.gguf.hf`),
    only when it carries that converter's stamp, i.e. Headroom made it."""
    legacy = gguf.with_name(gguf.name + ".hf")
    if (legacy / SOURCE_STAMP).is_file():
        shutil.rmtree(legacy, ignore_errors=True)
        log.info("removed the previous float32 conversion %s", legacy)


# ------------------------------------------------------------------------------------- weights


@dataclass(frozen=True)
class _Planned:
    tensor: GgufTensor
    hf_name: str


def _name_map(header: GgufHeader):
    """(GGUF → HF tensor names, transformers' tensor processor) for this architecture."""
    import gguf
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.modeling_gguf_pytorch_utils import (
        TENSOR_PROCESSORS,
        TensorProcessor,
        get_gguf_hf_weights_map,
    )

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(header.hf_config())
    processor = TENSOR_PROCESSORS.get(header.architecture, TensorProcessor)(config=header.config)
    # transformers builds gguf's TensorNameMap anew for every submodule it recurses into (~1,000 of
    # them): 9.5 s of pure Python for a 135M model, the GUI starved of the GIL meanwhile (ui_stalls).
    # The map depends only on (arch, layers) and is only read, so one is built and shared.
    original = gguf.get_tensor_name_map
    gguf.get_tensor_name_map = functools.cache(original)
    try:
        mapping = get_gguf_hf_weights_map(model, processor)
    finally:
        gguf.get_tensor_name_map = original
    if header.architecture == "gpt2":  # its processor renames output.weight out of band
        mapping["output.weight"] = "lm_head.weight"
    return mapping, processor


def _write_weights(header: GgufHeader, folder: Path, dtype: str, report: Progress,
                   cancel: threading.Event | None) -> None:
    mapping, processor = _name_map(header)
    planned = [_Planned(t, mapping[t.name]) for t in header.tensors if t.name in mapping]
    skipped = [t.name for t in header.tensors if t.name not in mapping]
    if skipped:
        log.info("GGUF tensors with no HF counterpart, not written: %s", ", ".join(skipped))
    shards = _shard(planned, _DTYPES[dtype])
    total = sum(p.tensor.nbytes for p in planned) or 1
    done = 0
    weight_map = {}
    with open(header.path, "rb") as source:
        for index, shard in enumerate(shards, start=1):
            name = ("model.safetensors" if len(shards) == 1
                    else f"model-{index:05d}-of-{len(shards):05d}.safetensors")
            writer = _ShardWriter(folder / name, shard, dtype)
            for item in shard:
                _check(cancel)
                report(f"Converting {item.hf_name} ({done / total:.0%})", 0.05 + 0.9 * done / total)
                writer.add(item.hf_name, _tensor_pieces(source, item.tensor, processor, dtype, cancel))
                weight_map[item.hf_name] = name
                done += item.tensor.nbytes
            writer.close()
    if len(shards) > 1:
        index = {"metadata": {"total_size": sum(p.tensor.elements for p in planned) * _DTYPES[dtype]},
                 "weight_map": weight_map}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def _shard(planned: list[_Planned], element_bytes: int) -> list[list[_Planned]]:
    shards, current, size = [], [], 0
    for item in planned:
        nbytes = item.tensor.elements * element_bytes
        if current and size + nbytes > SHARD_BYTES:
            shards.append(current)
            current, size = [], 0
        current.append(item)
        size += nbytes
    return shards + ([current] if current else [])


def _tensor_pieces(source, tensor: GgufTensor, processor, dtype: str, cancel):
    """Yield (array in its HF shape, rows of it) pieces of one tensor, dequantized and processed;
    row-local 2-D tensors in chunks of about CHUNK_BYTES of float32, the others whole."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    qtype = GGMLQuantizationType(tensor.ggml_type)
    rows = tensor.shape[0] if len(tensor.shape) == 2 else 1
    row_bytes = tensor.nbytes // rows
    row_local = type(processor).__name__ in _ROW_LOCAL or (
        type(processor).__name__ == "LlamaTensorProcessor"
        and ".attn_q." not in tensor.name and ".attn_k." not in tensor.name)
    step = rows
    if row_local and len(tensor.shape) == 2:
        step = max(1, CHUNK_BYTES // (4 * tensor.shape[1]))
    for start in range(0, rows, step):
        _check(cancel)
        count = min(step, rows - start)
        source.seek(tensor.offset + start * row_bytes)
        buffer = bytearray(count * row_bytes)  # writable: torch.from_numpy needs it
        if source.readinto(buffer) != len(buffer):
            raise ValueError(f"{tensor.name}: the GGUF file ends early")
        raw = np.frombuffer(buffer, dtype=np.uint8)
        shape = (count, *tensor.shape[1:]) if len(tensor.shape) == 2 else tensor.shape
        weights = dequantize(raw.reshape(count, row_bytes), qtype).reshape(shape)
        try:  # Llama's q/k un-permutation reshapes by the header's head counts
            weights = processor.process(weights=weights, name=tensor.name, tensor_key_mapping={},
                                        parsed_parameters={"tensors": {}}).weights
        except (ValueError, ZeroDivisionError) as exc:
            log.info("GGUF tensor %s does not fit the header: %s", tensor.name, exc)
            raise damaged_gguf(source.name and Path(source.name).name,
                               f"its tensor {tensor.name} does not fit the head counts in its header") from None
        yield _cast(weights, dtype)


def _cast(weights: np.ndarray, dtype: str) -> np.ndarray:
    """C-contiguous bytes of `weights` at `dtype` (bf16 through torch: numpy has none), shape kept."""
    if dtype == "float32":
        return np.ascontiguousarray(weights, dtype=np.float32)
    if dtype == "float16":
        return np.ascontiguousarray(weights, dtype=np.float16)
    import torch

    t = torch.from_numpy(np.ascontiguousarray(weights, dtype=np.float32)).to(torch.bfloat16)
    return t.view(torch.int16).numpy()  # same bytes; the header says BF16


class _ShardWriter:
    """One safetensors file written front to back: header space reserved, data streamed, header
    written last (padded with spaces, as the format allows)."""

    _CODES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}

    def __init__(self, path: Path, items: list[_Planned], dtype: str):
        self.path, self.code = path, self._CODES[dtype]
        self.entries: dict[str, dict] = {}
        self.offset = 0
        longest = json.dumps({p.hf_name: {"dtype": "BF16", "shape": [2**40] * 4, "data_offsets": [2**50, 2**50]}
                              for p in items} | {"__metadata__": {"format": "pt"}})
        self.reserved = (len(longest) + 7) // 8 * 8
        self.file = open(path, "wb")
        self.file.write(b"\0" * (8 + self.reserved))

    def add(self, name: str, pieces) -> None:
        start, shape = self.offset, None
        for piece in pieces:
            self.file.write(memoryview(piece).cast("B"))
            self.offset += piece.nbytes
            shape = list(piece.shape) if shape is None else [shape[0] + piece.shape[0], *shape[1:]]
        self.entries[name] = {"dtype": self.code, "shape": shape, "data_offsets": [start, self.offset]}

    def close(self) -> None:
        header = json.dumps({"__metadata__": {"format": "pt"}, **self.entries}).encode()
        header = header + b" " * (self.reserved - len(header))
        self.file.seek(0)
        self.file.write(struct.pack("<Q", len(header)) + header)
        self.file.close()
