import torch

from app.engine.loading.placement import choose_placement

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
