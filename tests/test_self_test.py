"""`headroom --self-test` (app/self_test.py), run in-process on the real default model."""

import io
import subprocess
import sys

import pytest
import torch

from app import self_test


def run(*args, **kwargs) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = self_test.main(*args, out=out, **kwargs)
    return code, out.getvalue().splitlines()


@pytest.mark.real_model
def test_self_test_passes_on_the_default_model(real_model_folder):
    code, lines = run(device_preference="cpu")
    assert code == 0, "\n".join(lines)
    assert lines[0].startswith("headroom 0.1.0 self-test · source · Python")
    checks = lines[1:-1]
    assert all(line.split(" ", 1)[0] in ("PASS", "SKIP") for line in checks), checks
    for model_type in self_test.ARCHITECTURES:
        assert any(line.startswith(f"PASS architecture {model_type}: ") and "on meta" in line for line in checks)
    assert any(line.startswith("PASS process defaults: HF_HUB_OFFLINE=") for line in checks)
    assert any(line.startswith("PASS resources: 3 files") for line in checks)
    answer = next(line for line in checks if line.startswith("PASS model answers: "))
    assert "Paris" in answer and "SmolLM2-135M-Instruct" in answer
    if not torch.cuda.is_available():
        four_bit = next(line for line in checks if "4-bit layer" in line)
        assert four_bit.startswith("SKIP 4-bit layer: CUDA not available: 4-bit layer not exercised; bitsandbytes ")
    assert lines[-1].startswith("self-test OK: ") and ", 0 failing," in lines[-1]


def test_a_missing_model_fails_with_one_line_and_exit_1(tmp_path):
    """Through the CLI (`python -m app --self-test`), in a child process: main() sets up logging."""
    missing = tmp_path / "nope.gguf"
    result = subprocess.run([sys.executable, "-m", "app", "--self-test", "--cpu", "--model", str(missing)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("FAIL")] == [f"FAIL model answers: no model at {missing}"]
    assert lines[-1].startswith("self-test FAILED: ") and ", 1 failing," in lines[-1]
    assert "Traceback" not in result.stdout + result.stderr


def test_an_unexpected_error_becomes_one_fail_line():
    def broken():
        raise RuntimeError("native library missing\nsecond line of detail")

    result = self_test._guarded("4-bit layer", broken)
    assert result.line() == "FAIL 4-bit layer: RuntimeError: native library missing"


def test_the_process_defaults_check_names_what_is_missing(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert self_test.check_process_defaults().line() == "FAIL process defaults: not set: HF_HUB_OFFLINE"
