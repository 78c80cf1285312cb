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


TORCH_FLASH = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>"
               "(pytorch_flash::Flash_fwd_params)")
FA2_FWD = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, false>(flash::Flash_fwd_params)"
FA2_SPLIT = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(flash::Flash_fwd_params)"


def test_fa2_kernels_are_told_apart_from_torch_sdpa_flash():
    names = [TORCH_FLASH, FA2_FWD, FA2_FWD, FA2_SPLIT, "void gemv2T_kernel<float>(...)"]
    assert self_test.fa2_kernels(names) == {"flash_fwd_kernel": 2, "flash_fwd_splitkv_kernel": 1}
    assert self_test.fa2_kernels([TORCH_FLASH]) == {}


class _Loaded:
    """A loaded model as the FA2 check sees it: a tiny CPU model on "fa2+static" (fake flash_attn)
    whose LoadReport says CUDA and FlashAttention-2."""

    def __init__(self, monkeypatch, attention="flash_attention_2 (flash-attn 2.8.3.post2)", fallbacks=(),
                 decode="fa2"):
        from types import SimpleNamespace

        from transformers import AutoModelForCausalLM, LlamaConfig

        from app.engine.local import fa2_attention as fa
        from tests.helpers.fake_flash_attn import FakeFlashAttn

        FakeFlashAttn().install(monkeypatch)
        self.model = AutoModelForCausalLM.from_config(LlamaConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
            num_key_value_heads=2), dtype=torch.float32).eval()
        self.model.config._attn_implementation = fa.FA2_LABEL
        phases = fa.enable_fa2_static(self.model, decode)
        self.tokenizer = type("Tok", (), {"encode": lambda self, text, add_special_tokens=False: [5, 6, 7] * 50})()
        self.report = SimpleNamespace(device="cuda:0", attention=attention, fallbacks=fallbacks,
                                      attention_phases=phases.lines())


@pytest.mark.parametrize("seen, status", [([FA2_FWD, FA2_SPLIT], "PASS"), ([TORCH_FLASH], "FAIL"),
                                          ([FA2_FWD], "FAIL")])
def test_the_fa2_check_passes_only_when_its_kernels_ran(monkeypatch, seen, status):
    """The prefill must launch FA2's forward kernel and the decode step (FA2 phase) its split-KV
    kernel; torch SDPA's own flash kernel does not count."""
    runs = []

    def profiled(run):
        runs.append(run())
        return [seen[0]] if len(runs) == 1 else seen[1:]

    monkeypatch.setattr(self_test, "_profiled_kernels", profiled)
    result = self_test.check_flash_attention(_Loaded(monkeypatch))
    assert result.status == status, result.line()
    assert len(runs) == 2 and runs[0].shape == (64,)  # the prefill's last logits, then the decode step
    if status == "PASS":
        assert result.detail.startswith("prefill of 300 tokens: flash_fwd_kernel ×1; decode step: "
                                        "flash_fwd_splitkv_kernel ×1")
    else:
        assert "the LoadReport says FlashAttention-2 but the profiler saw no FA2 kernel" in result.detail


def test_with_the_packed_decode_only_the_prefill_must_run_fa2(monkeypatch):
    monkeypatch.setattr(self_test, "_profiled_kernels", lambda run: (run(), [FA2_FWD])[1])
    assert self_test.check_flash_attention(_Loaded(monkeypatch, decode="packed")).status == "PASS"


def test_the_fa2_check_says_why_it_is_skipped(monkeypatch):
    no_model = self_test.check_flash_attention(None)
    assert no_model.line() == "SKIP FlashAttention-2: no model loaded (see the check above)"
    loaded = _Loaded(monkeypatch, "sdpa+gqa-packed", ("head_dim 96: this flash-attn 2.8.3.post2 build has kernels "
                                                      "for head_dim 64, 128 only: SDPA attention",))
    assert self_test.check_flash_attention(loaded).line() == (
        "SKIP FlashAttention-2: attention is sdpa+gqa-packed (head_dim 96: this flash-attn 2.8.3.post2 build has "
        "kernels for head_dim 64, 128 only: SDPA attention)")
    loaded.report.device = "cpu"
    assert self_test.check_flash_attention(loaded).line() == (
        "SKIP FlashAttention-2: CUDA not available: FlashAttention-2 not exercised")
