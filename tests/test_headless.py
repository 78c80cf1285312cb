"""`python -m app --ask` as a script would use it."""

import subprocess
import sys

import pytest


def run_app(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_ask_prints_paris_and_exits_zero(real_model_folder):
    result = run_app("--ask", "What is the capital of France?")
    assert result.returncode == 0, result.stderr
    assert "Paris" in result.stdout
    assert "tok/s" in result.stderr  # speed line goes to stderr, the answer alone to stdout


def test_model_flag_opens_an_hf_folder(tiny_model_dir):
    result = run_app("--ask", "hi", "--model", str(tiny_model_dir), "--max-new-tokens", "4")
    assert result.returncode == 0, result.stderr
    assert "4 tokens" in result.stderr


@pytest.mark.parametrize("make_bad, reason", [
    (lambda d: d / "nope.gguf", "headroom: no model at"),
    (lambda d: (d / "x.gguf").write_bytes(b"junk" * 10) and d / "x.gguf", "headroom: cannot convert x.gguf"),
])
def test_bad_model_exits_non_zero_with_one_line(tmp_path, make_bad, reason):
    result = run_app("--ask", "hi", "--model", str(make_bad(tmp_path)))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("headroom:")]
    assert len(errors) == 1 and errors[0].startswith(reason)
    assert "Traceback" not in result.stderr
