"""packaging/build_flash_attn.py: the inference-only FlashAttention-2 patch (issue 19).

The dispatch it generates and its refusal of sources it was not written for run everywhere; the
patch of the real sdist runs where the sdist is (``.gpu/fa2/`` or $HEADROOM_FA2_SDIST, never in
git: 8.5 MB), and is skipped otherwise.
"""

import importlib.util
import os
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_flash_attn", ROOT / "packaging" / "build_flash_attn.py")
bfa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bfa)


def _sdist() -> Path | None:
    given = os.environ.get("HEADROOM_FA2_SDIST")
    candidates = [Path(given)] if given else sorted((ROOT / ".gpu" / "fa2").glob("flash_attn-*.tar.gz"))
    return next((p for p in candidates if p.is_file()), None)


def test_kernel_sources_are_forward_and_split_kv_only():
    files = bfa.kernel_sources((64, 128), ("bf16",))
    assert len(files) == 8 and not any("bwd" in f for f in files)
    assert "csrc/flash_attn/src/flash_fwd_split_hdim128_bf16_causal_sm80.cu" in files
    assert "csrc/flash_attn/src/flash_fwd_hdim64_bf16_sm80.cu" in files


def test_dispatch_reaches_only_the_kernels_built_and_names_them_when_refusing():
    both = bfa.switch_macros((64, 128), ("bf16", "fp16"))
    assert "if (HEADDIM == 64)" in both and "if (HEADDIM == 128)" in both and "HEADDIM == 96" not in both
    assert "has head dimensions 64, 128; got " in both and "cutlass::half_t" in both
    bf16 = bfa.switch_macros((128,), ("bf16",))
    assert 'TORCH_CHECK(!(IS_FP16), "This FlashAttention build (Headroom, inference only) has no fp16 kernels' in bf16
    assert "cutlass::half_t" not in bf16


def test_a_source_that_differs_is_refused_not_half_patched():
    with pytest.raises(bfa.PatchError, match="flash_api.cpp: expected one occurrence"):
        bfa.patch_flash_api("void run_mha_fwd(Flash_fwd_params &params) {}\n")
    with pytest.raises(bfa.PatchError, match="source list was not found"):
        bfa.patch_setup("setup()\n", [], [])


@pytest.mark.skipif(_sdist() is None, reason="flash-attn sdist not here (.gpu/fa2/ or $HEADROOM_FA2_SDIST)")
def test_the_real_sdist_patches_to_16_kernel_files_and_a_stubbed_backward(tmp_path):
    with tarfile.open(_sdist()) as tar:
        tar.extractall(tmp_path, filter="data")
    root = next(tmp_path.iterdir())
    before = bfa.count_sources((root / "setup.py").read_text())
    diff = bfa.apply_patch(root, (64, 128), ("bf16", "fp16"), ("90",))
    setup = (root / "setup.py").read_text()
    assert (before, bfa.count_sources(setup)) == (72, 16)
    assert "flash_bwd" not in setup.split("sources=[", 1)[1].split("],", 1)[0]
    assert "setup_requires=" not in setup.split("setup(", 1)[1]
    assert '"-DFLASHATTENTION_DISABLE_BACKWARD"' in setup and "compiler_c17_flag = compiler_c17_flag +" in setup
    api = (root / "csrc/flash_attn/flash_api.cpp").read_text()
    assert "HEADROOM_FWD_HEADDIM_SWITCH(params.d" in api
    assert 'TORCH_CHECK(false, "This flash attention build does not support backward.");\n#else' in api
    build = (root / "flash_attn/headroom_build.py").read_text()
    assert "HEAD_DIMS = (64, 128)" in build and "CUDA_ARCHS = ('90',)" in build
    assert diff.count("\n+++ b/") == 5  # five files touched, all in the diff
    # the committed copy (packaging/, for reading) is what the script applies by default
    assert diff == (ROOT / "packaging" / "flash_attn-2.8.3.post2-headroom-inference.patch").read_text()
    with pytest.raises(bfa.PatchError):  # patched twice: the anchors are gone
        bfa.apply_patch(root, (64, 128), ("bf16",), ("90",))
