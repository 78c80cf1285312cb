"""Read a GGUF file's header — metadata and tensor table — without touching any tensor data.

What it gives: the architecture, the transformers config it maps to, the parameter count, the
quantization type, the trained context and the KV shape, in milliseconds even for a 5 GB file
(the file is memory-mapped; only the header pages are read; string arrays such as the 128k-token
vocabulary are walked, not decoded). ``gguf.GGUFReader`` decodes every string of the vocabulary
into numpy parts and took 24 s for the 94 MB default model on the 2-core development machine.

Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (v2/v3: u64 counts, little
endian). Block sizes of the quantized types come from ``gguf.constants.GGML_QUANT_SIZES``. The
metadata → config mapping is transformers' own (``integrations/ggml.py`` GGUF_CONFIG_MAPPING and
GGUF_CONFIG_DEFAULTS_MAPPING, the renames of ``modeling_gguf_pytorch_utils.load_gguf_checkpoint``,
and ``integrations/gguf.get_gguf_config`` for the architectures it covers); tests check the result
equals ``AutoConfig.from_pretrained(gguf_file=...)``. No torch, no Qt.

Raises :class:`UnsupportedGguf` (one line naming what is unsupported) for a file that is not
GGUF, a file cut short or garbled (its header, junk in its version field included, or its tensor
data: checked against the file size, no data read), a big-endian GGUF, an architecture
transformers cannot build, a mixture-of-experts layout the streaming conversion cannot write
tensor by tensor, or a tensor type ``gguf.quants`` cannot dequantize.
"""

from __future__ import annotations

import logging
import re
import struct
from collections import Counter
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.loading.model_path import gguf_head_refusal

log = logging.getLogger(__name__)

_VERSIONS = (2, 3)
# Above this a version field is junk after the magic bytes (a garbled or not-really-GGUF file), not
# a format Headroom does not read: ggml numbers GGUF versions 1, 2, 3 (2023-24), so 1000 leaves room
# for every future one. 0 stays a version (trial 9 asked that "GGUF" + zeros be said as version 0).
_MAX_PLAUSIBLE_VERSION = 1000
_SCALAR = {0: "<B", 1: "<b", 7: "<?", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 10: "<Q", 11: "<q", 12: "<d"}
# Architectures whose transformers tensor processors merge several GGUF tensors into one (experts)
# or that are not causal LMs: they cannot be written one tensor at a time.
NOT_STREAMABLE = {"qwen2moe": "mixture-of-experts", "qwen3moe": "mixture-of-experts",
                  "gpt-oss": "mixture-of-experts", "gpt_oss": "mixture-of-experts",
                  "minimax-m2": "mixture-of-experts", "t5": "encoder-decoder", "t5encoder": "encoder"}


DAMAGED_WORDS = "damaged GGUF"
"""In every refusal of a file that is cut short or garbled (header or tensor data): the catalog
lists such a file as damaged, not as unsupported."""


BIG_ENDIAN_WORDS = "big-endian GGUF"
"""In the refusal of a GGUF written in big-endian byte order: a whole file Headroom does not read,
not a damaged one (app.chat.error_text says it in the window's language)."""


class UnsupportedGguf(ValueError):
    """This GGUF cannot be converted; str(exc) is one line naming what is unsupported."""


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of the file. shape: torch order (rows first). ggml_type: the ggml type id.
    offset: absolute byte offset of its data in the file. nbytes: bytes it occupies there."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int
    nbytes: int

    @property
    def elements(self) -> int:
        return prod(self.shape)

    @property
    def type_name(self) -> str:
        from gguf import GGMLQuantizationType

        try:
            return GGMLQuantizationType(self.ggml_type).name
        except ValueError:
            return f"type {self.ggml_type}"


@dataclass(frozen=True)
class GgufHeader:
    """A GGUF file's header. architecture: llama.cpp's name ("llama"); config: the transformers
    config dict (model_type, hidden_size, ...). Sizes in bytes, lengths in tokens."""

    path: Path
    file_bytes: int
    architecture: str
    metadata: dict[str, Any]
    tensors: tuple[GgufTensor, ...]
    config: dict[str, Any]

    @property
    def model_type(self) -> str:
        return str(self.config.get("model_type", self.architecture))

    @property
    def parameters(self) -> int:
        """Weights stored in the file (the embedding once when tied)."""
        return sum(t.elements for t in self.tensors)

    @property
    def quantization(self) -> str:
        """The type holding the most bytes ("Q4_K"), with the file type as llama.cpp named it."""
        by_bytes = Counter()
        for t in self.tensors:
            by_bytes[t.type_name] += t.nbytes
        return by_bytes.most_common(1)[0][0] if by_bytes else "none"

    @property
    def trained_context(self) -> int | None:
        value = self.config.get("max_position_embeddings")
        return int(value) if isinstance(value, int) and value > 0 else None

    @property
    def has_chat_template(self) -> bool:
        return isinstance(self.metadata.get("tokenizer.chat_template"), str)

    def hf_config(self):
        """The transformers PretrainedConfig (no weights, no file read)."""
        from transformers import AutoConfig

        config = dict(self.config)
        return AutoConfig.for_model(config.pop("model_type"), **config)

    def output_bytes(self, element_bytes: int = 2) -> int:
        """Bytes of the converted safetensors weights at `element_bytes` per weight (bf16: 2)."""
        return self.parameters * element_bytes

    def describe(self) -> dict[str, Any]:
        """What a plan or the dialog shows: JSON-ready."""
        cfg = self.config
        heads = cfg.get("num_attention_heads")
        return {
            "architecture": self.architecture, "model_type": self.model_type,
            "name": self.metadata.get("general.name", self.path.name),
            "parameters": self.parameters, "quantization": self.quantization,
            "file_bytes": self.file_bytes, "trained_context": self.trained_context,
            "layers": cfg.get("num_hidden_layers"), "attention_heads": heads,
            "kv_heads": cfg.get("num_key_value_heads", heads),
            "head_dim": cfg.get("head_dim") or (cfg.get("hidden_size", 0) // heads if heads else None),
            "chat_template": self.has_chat_template,
        }


def read_gguf_header(path: Path) -> GgufHeader:
    """Parse metadata and tensor table of `path`. Raises UnsupportedGguf (see module doc) or
    OSError when the file cannot be read."""
    path = Path(path)
    why = gguf_head_refusal(path)  # first: np.memmap's "cannot mmap an empty file" said nothing to act on
    if why is not None:
        raise UnsupportedGguf(why)
    blob = np.memmap(path, mode="r", dtype=np.uint8)
    try:
        metadata, tensor_count, pos = _read_metadata(blob, path.name)
        alignment = int(metadata.get("general.alignment", 32))
        raw, pos = _read_tensor_table(blob, tensor_count, pos)
    except (struct.error, UnicodeDecodeError, IndexError, OverflowError) as exc:
        # what is wrong, in words a user can act on (the codec's own message goes to the log)
        what = ("a name or text in it is not valid UTF-8" if isinstance(exc, UnicodeDecodeError)
                # a garbled length or count ("Python int too large to convert to C ssize_t")
                else "a length or count in it is larger than any file" if isinstance(exc, OverflowError)
                else "it ends before its own tables do")
        log.info("damaged GGUF header in %s: %s", path.name, exc)
        raise _damaged_header(path.name, what) from None
    finally:
        del blob
    data_start = (pos + alignment - 1) // alignment * alignment
    tensors = tuple(GgufTensor(name, shape, qtype, data_start + offset, _nbytes(qtype, shape, name))
                    for name, shape, qtype, offset in raw)
    architecture = str(metadata.get("general.architecture", ""))
    config = gguf_config(metadata, tuple(t.name for t in tensors))
    header = GgufHeader(path, path.stat().st_size, architecture, metadata, tensors, config)
    _check_supported(header)  # first: a whole download of an unsupported file would not open either
    inconsistent = _inconsistency(metadata, config, tuple(t.name for t in tensors))
    if inconsistent:  # said now: the conversion met them as ZeroDivisionError, IndexError, reshape errors
        raise _damaged_header(path.name, inconsistent)
    data_end = max((t.offset + t.nbytes for t in tensors), default=0)
    if data_end > header.file_bytes:  # a cut download: said now, not seconds into a conversion
        raise UnsupportedGguf(f"{path.name}: {DAMAGED_WORDS} file (it ends before its own tensors do: "
                              f"{header.file_bytes:,} of {data_end:,} bytes); the file is probably incomplete "
                              "or corrupted — download it again")
    return header


_BLOCK_INDEX = re.compile(r"blk\.(\d+)\.")  # a GGUF tensor's layer: "blk.12.attn_q.weight"

_SPECIAL_TOKENS = (("bos_token_id", "start-of-text"), ("eos_token_id", "end-of-text"),
                   ("unknown_token_id", "unknown"), ("padding_token_id", "padding"))
"""The special token ids transformers looks up in the vocabulary (gguf_tokenizer_mapping)."""


def _inconsistency(metadata: dict[str, Any], config: dict[str, Any], tensor_names: tuple[str, ...] = ()) -> str:
    """What in a header that parsed is impossible, in words ("its attention head count is 0"), or
    "". Only whole numbers are checked: a per-layer list (LFM2's KV heads, 0 on its convolution
    layers) and a missing count (Mamba has no attention) are no damage. A layer count above the
    layers its tensors hold ("blk.N.") is said before any conversion (new-user trial 13: a
    block_count of 40 for 30 layers was converted whole, then refused from the folder)."""
    layers = config.get("num_hidden_layers")
    held = {int(m[1]) for name in tensor_names if (m := _BLOCK_INDEX.match(name))}
    if isinstance(layers, int) and held and len(held) < layers:
        return f"it names {layers:,} layers but its tensors hold only {len(held):,}"
    heads, kv_heads = config.get("num_attention_heads"), config.get("num_key_value_heads")
    if isinstance(heads, int) and heads <= 0:
        return f"its attention head count is {heads}"
    if isinstance(kv_heads, int) and kv_heads <= 0:
        return f"its key-value head count is {kv_heads}"
    if isinstance(heads, int) and isinstance(kv_heads, int) and heads % kv_heads:
        # GQA shares each KV head among heads / kv_heads query heads: a whole number
        return f"its key-value head count ({kv_heads}) does not divide its attention head count ({heads})"
    vocabulary = metadata.get("tokenizer.ggml.tokens")  # a count: string arrays are walked, not kept
    for key, words in _SPECIAL_TOKENS:
        token = metadata.get(f"tokenizer.ggml.{key}")
        if isinstance(vocabulary, int) and isinstance(token, int) and not 0 <= token < vocabulary:
            return f"its {words} token id ({token:,}) is outside its vocabulary ({vocabulary:,} tokens)"
    return ""


def damaged_gguf(name: str, what: str) -> UnsupportedGguf:
    """The refusal of a file whose header parsed but whose conversion found it inconsistent (a
    tensor shape its head counts do not fit); what: what is wrong, in words a user can act on."""
    return UnsupportedGguf(f"{name}: {DAMAGED_WORDS} file ({what}); the file is probably "
                           "incomplete or corrupted — download it again")


def _damaged_header(name: str, what: str) -> UnsupportedGguf:
    """The refusal of a garbled or cut header; what: what is wrong, in words a user can act on."""
    return UnsupportedGguf(f"{name}: {DAMAGED_WORDS} header ({what}); the file is probably "
                           "incomplete or corrupted — download it again")


def _read_metadata(blob: np.ndarray, name: str) -> tuple[dict, int, int]:
    """The metadata after the magic bytes (checked by gguf_head_refusal), the tensor count and
    where the tensor table starts."""
    version, tensor_count, kv_count = struct.unpack_from("<IQQ", blob, 4)
    swapped = _big_endian_version(version)
    if swapped is not None:  # whole, in the other byte order: "GGUF version 50331648" named no version
        raise UnsupportedGguf(f"{name} is a {BIG_ENDIAN_WORDS} (version {swapped}); only little-endian "
                              "GGUF files are supported")
    if version > _MAX_PLAUSIBLE_VERSION:  # "GGUF version 1629516654" named a version no file has
        log.info("damaged GGUF header in %s: version field %d", name, version)
        raise _damaged_header(name, "its version field holds no GGUF version")
    if version not in _VERSIONS:
        raise UnsupportedGguf(f"{name} is GGUF version {version}; supported: 2 and 3")
    pos, metadata = 24, {}
    for _ in range(kv_count):
        key, pos = _read_string(blob, pos)
        (value_type,) = struct.unpack_from("<I", blob, pos)
        metadata[key], pos = _read_value(blob, pos + 4, value_type, key)
    if "general.architecture" not in metadata:
        raise UnsupportedGguf(f"{name} names no general.architecture")
    return metadata, tensor_count, pos


def _big_endian_version(version: int) -> int | None:
    """The version a big-endian GGUF (written for s390x and other big-endian machines) holds in
    the version field read little-endian, or None for a little-endian one. gguf.GGUFReader's
    test: the low 16 bits zero; the swapped version must be one a writer could use too."""
    swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
    if version > _MAX_PLAUSIBLE_VERSION and version & 0xFFFF == 0 and swapped <= _MAX_PLAUSIBLE_VERSION:
        return swapped
    return None


def _read_value(blob: np.ndarray, pos: int, value_type: int, key: str) -> tuple[Any, int]:
    if value_type in _SCALAR:
        fmt = _SCALAR[value_type]
        return struct.unpack_from(fmt, blob, pos)[0], pos + struct.calcsize(fmt)
    if value_type == 8:
        return _read_string(blob, pos)
    if value_type != 9:
        raise UnsupportedGguf(f"metadata {key} has unknown value type {value_type}")
    element_type, count = struct.unpack_from("<IQ", blob, pos)
    pos += 12
    if element_type in _SCALAR:
        fmt = _SCALAR[element_type]
        width = struct.calcsize(fmt)
        if count > 64:  # token types, scores: only their count matters here
            return count, pos + count * width
        return list(struct.unpack_from(f"<{count}{fmt[1]}", blob, pos)), pos + count * width
    if element_type != 8:
        raise UnsupportedGguf(f"metadata {key} is an array of unknown type {element_type}")
    for _ in range(count):  # vocabularies, merges: walked, never decoded (their count is kept)
        (length,) = struct.unpack_from("<Q", blob, pos)
        pos += 8 + length
    return count, pos


def _read_string(blob: np.ndarray, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", blob, pos)
    pos += 8
    return bytes(blob[pos:pos + length]).decode("utf-8"), pos + length


def _read_tensor_table(blob: np.ndarray, count: int, pos: int) -> tuple[list[tuple], int]:
    entries = []
    for _ in range(count):
        name, pos = _read_string(blob, pos)
        (n_dims,) = struct.unpack_from("<I", blob, pos)
        dims = struct.unpack_from(f"<{n_dims}Q", blob, pos + 4)
        qtype, offset = struct.unpack_from("<IQ", blob, pos + 4 + 8 * n_dims)
        pos += 4 + 8 * n_dims + 12
        entries.append((name, tuple(int(d) for d in reversed(dims)), int(qtype), int(offset)))
    return entries, pos


def _nbytes(qtype: int, shape: tuple[int, ...], name: str) -> int:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(qtype)]
    except (ValueError, KeyError):
        raise UnsupportedGguf(f"tensor {name} has ggml type {qtype}, unknown to the gguf package") from None
    return prod(shape) // block * size


def dequantizable(qtype: int) -> bool:
    """True when ``gguf.quants.dequantize`` implements this ggml type (F32, F16 and every type
    with a numpy dequantizer; the package names the others NotImplementedError)."""
    from gguf import GGMLQuantizationType, quants

    if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        return True
    traits = getattr(quants, "_type_traits", {})
    try:
        q = traits.get(GGMLQuantizationType(qtype))
    except ValueError:
        return False
    if q is None:
        return False
    return type(q).__dict__.get("dequantize_blocks") is not None or "dequantize_blocks" in vars(q)


def _check_supported(header: GgufHeader) -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    name, arch = header.path.name, header.architecture
    if arch in NOT_STREAMABLE:
        raise UnsupportedGguf(f"{name}: architecture {arch!r} ({NOT_STREAMABLE[arch]}) is not supported "
                              "by the conversion")
    if header.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise UnsupportedGguf(f"{name}: model type {header.model_type!r} is not a causal LM transformers knows")
    bad = sorted({t.type_name for t in header.tensors if not dequantizable(t.ggml_type)})
    if bad:
        raise UnsupportedGguf(f"{name}: tensor type {', '.join(bad)} cannot be dequantized "
                              "by the gguf package")


def gguf_config(metadata: dict[str, Any], tensor_names: tuple[str, ...]) -> dict[str, Any]:
    """The transformers config dict of a GGUF, as transformers itself builds it (see module doc).
    Raises UnsupportedGguf for an architecture transformers has no mapping for."""
    from transformers.integrations.ggml import GGUF_CONFIG_DEFAULTS_MAPPING, GGUF_CONFIG_MAPPING
    from transformers.integrations.gguf import GGUF_CONFIG_ARCHS, get_gguf_config

    arch = str(metadata["general.architecture"])
    if arch in GGUF_CONFIG_ARCHS:
        return get_gguf_config(metadata, tensor_names)
    updated = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss",
               "minimax-m2": "minimax_m2"}.get(arch, arch)
    if "llama" in arch and metadata.get("general.name") == "mistral":  # load_gguf_checkpoint's rule
        updated = "mistral"
    if arch not in GGUF_CONFIG_MAPPING and updated not in GGUF_CONFIG_MAPPING:
        raise UnsupportedGguf(f"architecture {arch!r} is not supported by transformers' GGUF mapping")
    config: dict[str, Any] = {}
    if "stablelm" in arch:
        config["use_qkv_bias"] = any(f"attn_{x}.bias" in n for n in tensor_names for x in "qkv")
        config["use_parallel_residual"] = not any("ffn_norm" in n for n in tensor_names)
    config["tie_word_embeddings"] = "output.weight" not in tensor_names or arch in ("falcon", "bloom")
    defaults = GGUF_CONFIG_DEFAULTS_MAPPING.get(updated, GGUF_CONFIG_DEFAULTS_MAPPING.get(arch) or {})
    for key, value in defaults.items():
        config.setdefault(key, value)
    for key, value in metadata.items():
        prefix, _, rest = key.replace(arch, updated).partition(".")
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, str) and arch in value:
            value = value.replace(arch, updated)
        renamed = GGUF_CONFIG_MAPPING.get(prefix, {}).get(rest, None) if prefix in GGUF_CONFIG_MAPPING else None
        if renamed is not None and renamed != -1:
            config[renamed] = value
    if config.get("model_type") == "gemma3":
        config["model_type"] = "gemma3_text"
    if config.get("model_type") == "gemma4":
        config["model_type"], config["eos_token_id"] = "gemma4_text", [1, 106, 50]
    if "vocab_size" not in config and isinstance(metadata.get("tokenizer.ggml.tokens"), int):
        config["vocab_size"] = metadata["tokenizer.ggml.tokens"]
    return config
