"""A Hugging Face hub cache laid out as huggingface_hub writes it, without a download:

    models--org--name/blobs/<sha256>                      file contents
    models--org--name/snapshots/<commit>/<file> -> ../../blobs/<sha256>
    models--org--name/refs/main                           <commit>

(https://huggingface.co/docs/huggingface_hub/guides/manage-cache#understand-caching)
"""

import hashlib
import json
import os
from pathlib import Path


def add_repo(cache: Path, repo_id: str, files: dict[str, bytes | int], commit: str = "a" * 40,
             repo_type: str = "model") -> Path:
    """Put `files` into the cache as repo `repo_id`; returns the snapshot folder. A value is the
    file's bytes, or an int: a sparse file of that size (a "16 GB" weight file that takes no disk;
    a ``.safetensors`` one starts with a header whose one tensor covers the file, so it reads as
    whole: app.engine.loading.safetensors_header)."""
    repo = cache / f"{repo_type}s--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if isinstance(data, int):
            blob = repo / "blobs" / hashlib.sha256(f"{name}:{data}".encode()).hexdigest()
            with open(blob, "wb") as f:
                if name.endswith(".safetensors"):
                    f.write(safetensors_header(data))
                f.truncate(data)
        else:
            blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
            blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def add_folder(cache: Path, repo_id: str, folder: Path, commit: str = "b" * 40) -> Path:
    """Put every file of a saved model folder into the cache as repo `repo_id`."""
    files = {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}
    return add_repo(cache, repo_id, files, commit)


def config_bytes(config) -> bytes:
    """config.json contents of a transformers config (or a plain dict)."""
    data = config if isinstance(config, dict) else config.to_dict()
    return json.dumps(data).encode()


def safetensors_header(file_bytes: int) -> bytes:
    """The first bytes of a safetensors file of `file_bytes` bytes whose one uint8 tensor covers
    the rest of it (https://huggingface.co/docs/safetensors/index#format); the JSON is padded
    with spaces, as safetensors itself pads it."""
    def header(data: int) -> str:
        return json.dumps({"weight": {"dtype": "U8", "shape": [data], "data_offsets": [0, data]}})

    length = len(header(file_bytes))  # at least as long as the header of the smaller tensor
    return length.to_bytes(8, "little") + header(file_bytes - 8 - length).ljust(length).encode()
