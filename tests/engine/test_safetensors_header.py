"""The safetensors header check (app.engine.loading.safetensors_header) on real files."""

import json
import shutil
import struct

import pytest

from app.engine.loading.safetensors_header import damaged_safetensors, safetensors_damage


def _truncated_copy(tiny_model_dir, folder, keep: float = 0.5):
    """A copy of the tiny model whose model.safetensors keeps `keep` of its bytes (a cut download)."""
    shutil.copytree(tiny_model_dir, folder)
    weights = folder / "model.safetensors"
    full = weights.stat().st_size
    with open(weights, "r+b") as file:
        file.truncate(int(full * keep))
    return folder


def test_a_whole_file_passes_and_a_cut_one_says_it_ends_early(tiny_model_dir, tmp_path):
    assert safetensors_damage(tiny_model_dir / "model.safetensors") is None
    assert damaged_safetensors(tiny_model_dir) is None
    folder = _truncated_copy(tiny_model_dir, tmp_path / "cut")
    assert safetensors_damage(folder / "model.safetensors") == "it ends before its own tensors do"
    assert damaged_safetensors(folder) == (
        "model.safetensors: damaged safetensors file (it ends before its own tensors do); the file is "
        "probably incomplete or corrupted — download it again")


@pytest.mark.parametrize("content, why", [
    (b"\x10\0\0", "it ends before its header does"),  # shorter than the length field
    (struct.pack("<Q", 500) + b"{}", "it ends before its header does"),  # header cut
    (struct.pack("<Q", 2**40), "its header length is impossible"),
    (struct.pack("<Q", 4) + b"\xff\xfe{}", "its header is not readable"),  # not UTF-8
    (struct.pack("<Q", 8) + b"not json", "its header is not readable"),
    (struct.pack("<Q", 2) + b"[]", "its header is not readable"),  # JSON, but no tensor table
    (b"\0" * 64, "its header is not readable"),  # zeros: an empty header
])
def test_unreadable_headers_say_why(tmp_path, content, why):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    assert safetensors_damage(path) == why


def test_metadata_is_no_tensor_and_one_byte_short_is_damaged(tmp_path):
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    assert safetensors_damage(path) is None
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 7)
    assert safetensors_damage(path) == "it ends before its own tensors do"
