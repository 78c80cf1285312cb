"""The 8-bit prefill's transient on the kernel path is what app.engine.memory.prefill_spike counts:
the rotated query, the kernel's packed rows and output, the permuted output — three query-sized
tensors at most — and the rotation computes in float32 pieces, not whole copies. Measured on the
CPU with the kernel's launch stood in by its output allocation (the kernel itself allocates
nothing else); tests/helpers/live_bytes counts the tensors alive at once."""

import pytest
import torch

from app.engine.local import attention, kv_quant, split_kv_attention
from app.engine.memory import kv_layout
from app.engine.memory.prefill_spike import PrefillModel, _kv8_kernel_workspace
from tests.helpers.live_bytes import LiveBytes


def test_rotate_in_pieces_equals_the_whole_rotation(monkeypatch):
    x = torch.randn(2, 300, 8, 64).transpose(1, 2)  # (B, H, c, d), not contiguous, as a query is
    whole = kv_quant._rotated(x)
    monkeypatch.setattr(kv_quant, "ROTATE_PIECE_ELEMENTS", 4096)
    pieces = kv_quant.rotate(x)
    assert pieces.shape == x.shape and pieces.dtype == x.dtype and torch.allclose(pieces, whole, atol=1e-6)
    assert torch.allclose(kv_quant.rotate(pieces), x, atol=1e-5)  # its own inverse


@pytest.fixture
def kernel_stand_in(monkeypatch):
    """The Triton path on the CPU, its launch replaced by the output it allocates."""
    monkeypatch.setattr(split_kv_attention, "triton_applies", lambda query, key: True)
    monkeypatch.setattr(split_kv_attention, "_guarded", lambda rows, *args: torch.empty_like(rows))
    monkeypatch.setattr(kv_quant, "ROTATE_PIECE_ELEMENTS", 4096)


def test_the_kernel_paths_transient_is_three_query_sized_tensors(kernel_stand_in):
    b, hq, hkv, c, d, span = 1, 8, 2, 512, 64, 700
    query = torch.randn(b, c, hq, d, dtype=torch.bfloat16).transpose(1, 2)  # as the model hands it over
    key = kv_quant.quantize(torch.randn(b, hkv, span, d))
    value = kv_quant.quantize(torch.randn(b, hkv, span, d))
    with LiveBytes() as live:
        out = attention.blockwise_8bit_prefill(query, key, value, span, d ** -0.5, attend=None)
    unit = c * hq * d * 2  # one query-sized bf16 tensor
    assert out.shape == (b, c, hq, d)
    assert 2.9 * unit <= live.peak <= 3.1 * unit  # was 7 units: two whole float32 copies, q kept alive
    model = PrefillModel.from_config(_config(hidden=hq * d, heads=hq, kv_heads=hkv), 2, kv_bits=8, kv8_kernel=True)
    assert _kv8_kernel_workspace(model, model.layout.layers[0], c) >= live.peak  # the projection covers it


def _config(hidden=4096, heads=32, kv_heads=8):
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=hidden, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=heads,
                       num_key_value_heads=kv_heads, vocab_size=128256)


def test_the_model_counts_three_query_sized_tensors_and_the_split_partials():
    config = _config()
    model = PrefillModel.from_config(config, 2, kv_bits=8, kv8_kernel=True, attn_implementation="sdpa+gqa-packed")
    layer = model.layout.layers[0]
    assert model.kv8_kernel and layer.quantized
    assert _kv8_kernel_workspace(model, layer, 16384) == 3 * 16384 * 32 * 128 * 2  # 403 MB, over the write's 268
    short = _kv8_kernel_workspace(model, layer, 128)
    assert short == 3 * 128 * 32 * 128 * 2 + kv_layout.KV8_SPLIT_PARTIAL_ROWS * 128 * 4  # + ~17 MB of partials
    assert not PrefillModel.from_config(config, 2, kv_bits=16, kv8_kernel=True).kv8_kernel
