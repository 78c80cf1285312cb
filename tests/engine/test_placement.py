import pytest
import torch

from app.engine.loading.placement import FlashAttnBuild, choose_placement, flash_attn_build, model_attention_shape

BNB_OK = (True, "")
BNB_MISSING = (False, "bitsandbytes is not installed")


def test_cpu_is_float32_sdpa_unquantized():
    p = choose_placement(False, None, False, BNB_MISSING)
    assert (p.device, p.compute_dtype, p.attention, p.quantize_4bit) == ("cpu", torch.float32, "sdpa", False)
    assert "no CUDA" in p.reasons[0]


def test_ampere_with_flash_attn_gets_fa2_bf16_nf4():
    p = choose_placement(True, (8, 6), True, BNB_OK)
    assert (p.device, p.compute_dtype, p.attention, p.quantize_4bit) == (
        "cuda", torch.bfloat16, "flash_attention_2", True)
    assert p.reasons == ()


def test_turing_falls_back_to_sdpa_fp16_with_reasons():  # case C06
    p = choose_placement(True, (7, 5), True, BNB_OK)
    assert (p.compute_dtype, p.attention) == (torch.float16, "sdpa")
    assert any("fp16" in r for r in p.reasons)
    assert any("capability >= 8.0" in r for r in p.reasons)


def test_hopper_without_flash_attn_package_uses_sdpa():
    p = choose_placement(True, (9, 0), False, BNB_OK)
    assert p.attention == "sdpa" and p.compute_dtype == torch.bfloat16
    assert any("flash_attn not importable" in r for r in p.reasons)


def test_missing_bitsandbytes_keeps_half_precision_and_says_why():  # case C11
    p = choose_placement(True, (8, 0), False, BNB_MISSING)
    assert not p.quantize_4bit
    assert any("bitsandbytes is not installed" in r for r in p.reasons)


def test_saved_quantized_folder_is_not_requantized():  # case C13
    p = choose_placement(True, (8, 0), False, BNB_OK, already_quantized=True)
    assert not p.quantize_4bit
    assert any("own quantization_config" in r for r in p.reasons)


def test_cpu_preference_overrides_cuda():
    p = choose_placement(True, (9, 0), True, BNB_OK, device_preference="cpu")
    assert p.device == "cpu" and p.reasons == ()


# ----- FlashAttention-2 builds (issue 19): what the installed flash-attn can run decides, before loading
HEADROOM_BUILD = FlashAttnBuild("2.8.3.post2", (64, 128), ("bf16", "fp16"), ("90",))


def test_hopper_with_headroom_fa2_build_and_a_head_dim_it_has():
    p = choose_placement(True, (9, 0), HEADROOM_BUILD, BNB_OK, head_dim=128)
    assert (p.attention, p.flash_attn_version, p.reasons) == ("flash_attention_2", "2.8.3.post2", ())


@pytest.mark.parametrize("capability, head_dim, expected", [
    ((9, 0), 96, "head_dim 96: this flash-attn 2.8.3.post2 build has kernels for head_dim 64, 128 only"),
    ((8, 6), 128, "this flash-attn 2.8.3.post2 build has kernels for sm_90 only, this GPU is sm_86"),
    ((10, 0), 128, "this flash-attn 2.8.3.post2 build has kernels for sm_90 only, this GPU is sm_100"),
])
def test_a_model_or_gpu_the_build_cannot_run_keeps_sdpa_and_says_why(capability, head_dim, expected):
    p = choose_placement(True, capability, HEADROOM_BUILD, BNB_OK, head_dim=head_dim)
    assert (p.attention, p.flash_attn_version) == ("sdpa", None)
    assert p.reasons[-1] == f"{expected}: SDPA attention"


def test_a_bf16_only_build_refuses_fp16_and_upstream_builds_take_any_multiple_of_8():
    bf16_only = FlashAttnBuild("2.8.3.post2", (128,), ("bf16",), ("80",))
    assert choose_placement(True, (8, 9), bf16_only, BNB_OK, head_dim=128).attention == "flash_attention_2"
    assert bf16_only.refusal((8, 9), 128, torch.float16) == (
        "this flash-attn 2.8.3.post2 build has no fp16 kernels (bf16 only)")
    upstream = FlashAttnBuild("2.8.3")
    assert choose_placement(True, (8, 0), upstream, BNB_OK, head_dim=80).attention == "flash_attention_2"
    assert upstream.refusal((8, 0), 100, torch.bfloat16) == (
        "head_dim 100: FlashAttention-2 supports multiples of 8 up to 256")


def test_sliding_window_models_keep_sdpa_with_fa2_installed():
    p = choose_placement(True, (9, 0), HEADROOM_BUILD, BNB_OK, head_dim=128, sliding_window=True)
    assert p.attention == "sdpa"
    assert p.reasons[-1] == ("sliding-window layers: Headroom's FlashAttention-2 path covers full attention only: "
                             "SDPA attention")


def test_detect_placement_reads_head_dim_and_windows_from_the_config():
    from transformers import LlamaConfig, MistralConfig

    llama = LlamaConfig(hidden_size=256, num_attention_heads=4, num_key_value_heads=2)
    mistral = MistralConfig(hidden_size=256, num_attention_heads=2, sliding_window=64)
    assert model_attention_shape(llama) == (64, False)
    assert model_attention_shape(mistral) == (128, True)
    assert model_attention_shape(None) == (None, False)


def test_flash_attn_build_reads_headroom_build_module(monkeypatch):
    from tests.helpers.fake_flash_attn import FakeFlashAttn

    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    FakeFlashAttn(head_dims=(64, 128)).install(monkeypatch)
    assert flash_attn_build() == HEADROOM_BUILD
    FakeFlashAttn(version="2.8.3").install(monkeypatch)
    monkeypatch.delitem(__import__("sys").modules, "flash_attn.headroom_build", raising=False)
    assert flash_attn_build() == FlashAttnBuild("2.8.3")
