"""torch.compile's and Triton's on-disk caches live in the user cache folder (issue 12, item 3: a
second launch reaches the compiled path in ≤ 10 s only if both caches are found again)."""

import os

import torch
from torch._inductor.runtime.cache_dir_utils import default_cache_dir

from app.engine.local.compiled_decode import use_compile_caches


def test_both_caches_go_to_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())  # what torch writes itself
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)

    inductor = use_compile_caches()

    assert inductor == str(tmp_path / "headroom" / "torchinductor")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == inductor
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "headroom" / "triton")


def test_folders_the_user_chose_are_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "my-triton"))

    assert use_compile_caches() == str(tmp_path / "mine")
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "my-triton")


def test_the_decode_step_compiles_with_combo_kernels_unless_turned_off(monkeypatch):
    """Inductor's combo kernels launch a layer's independent small kernels as one (H200, 8B: 446 →
    382 launches a step, 3.531 → 3.449 ms; bitwise the same logits): on by default, off by its switch."""
    from app.engine.local import compiled_decode

    seen = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: seen.append(kw) or fn)
    compiled_decode._inductor(len)
    monkeypatch.setenv(compiled_decode.COMBO_KERNELS_OPT_OUT, "0")
    compiled_decode._inductor(len)
    assert seen == [{"dynamic": None, "options": {"combo_kernels": True}}, {"dynamic": None, "options": {}}]
