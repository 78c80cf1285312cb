"""NF4 prefill in row slices (issue 16) on the CPU: the byte / absmax ranges of a row slice
against the pure-torch NF4 reference (no bitsandbytes), the spike model's new dequant term,
and, where bitsandbytes is importable, the sliced forward against its own dequantize + linear."""

import pytest
import torch

from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_prefill as sp
from app.engine.memory.prefill_spike import (
    PREFILL_DEQUANT_SLICE_BYTES,
    PrefillModel,
    dequant_workspace_bytes,
    prefill_breakdown,
)
from tests.engine.test_memory import llama3_8b
from tests.engine.test_nf4_gemv import NF4, FakeLinear4bit, rel


def reference_dequantizer(kdim: int):
    """A slice dequantized as a non-nested NF4 tensor of its own, by nf4_gemv's reference."""
    return sp.reference_dequantizer(NF4, kdim)


@pytest.mark.parametrize("nested", [True, False])
@pytest.mark.parametrize("rows", [1, 7, 64, 100, 256])
def test_row_slices_reassemble_the_whole_dequantized_weight(nested, rows):
    layer = FakeLinear4bit(256, 128, seed=11, nested=nested)
    t = k.tensors_of(layer)
    whole = k.reference_dequantize(t)
    absmax = k.reference_absmax(t)
    deq = reference_dequantizer(128)
    parts = []
    for n0, n1 in sp.row_ranges(256, rows):
        b0, b1 = sp.packed_range(n0, n1, 128)
        a0, a1 = sp.absmax_range(n0, n1, 128, 64)
        assert (b1 - b0, a1 - a0) == ((n1 - n0) * 64, (n1 - n0) * 2)
        parts.append(deq(t.packed[b0:b1], absmax[a0:a1], n1 - n0))
    assert torch.equal(torch.cat(parts).view(torch.int16), whole.view(torch.int16))


@pytest.mark.parametrize("bias", [False, True])
def test_sliced_linear_equals_the_dense_product_of_the_dequantized_weight(bias):
    layer = FakeLinear4bit(256, 128, seed=12, bias=bias)
    if bias:
        layer.bias.data.normal_()
    t = k.tensors_of(layer)
    x = torch.randn(2, 5, 128, generator=torch.Generator().manual_seed(13)).bfloat16()
    ref = torch.nn.functional.linear(x, k.reference_dequantize(t), layer.bias)
    out = sp.sliced_linear(x, t.packed, k.reference_absmax(t), 256, 128, 64, 96, reference_dequantizer(128),
                           layer.bias)
    assert out.shape == (2, 5, 256) and out.dtype == torch.bfloat16
    assert rel(out, ref) < 4e-3  # bf16 output rounding; each column's sum is the same dot product
    assert float(ref.detach().float().abs().mean()) > 1.0


def test_slice_rows_fits_the_budget_in_equal_slices():
    mib = 2**20
    assert sp.slice_rows(14336, 4096, 2, 32 * mib) == 3584  # gate/up: 4 slices of 29.4 MB
    assert sp.slice_rows(4096, 14336, 2, 32 * mib) == 1024  # down: 4 slices
    assert sp.slice_rows(4096, 4096, 2, 32 * mib) == 4096  # q/o: exactly 32 MiB, one slice
    assert sp.slice_rows(10, 64, 2, 1) == 1
    for n, kdim in ((14336, 4096), (4096, 14336), (1000, 4096)):
        rows = sp.slice_rows(n, kdim, 2, 32 * mib)
        assert rows * kdim * 2 <= 32 * mib and sp.row_ranges(n, rows)[-1][1] == n


def test_dequant_term_is_one_slice_plus_fp32_absmax_for_llama3_8b():
    whole = dequant_workspace_bytes(llama3_8b(), 2)
    sliced = dequant_workspace_bytes(llama3_8b(), 2, sliced=True)
    assert whole == 14_336 * 4_096 * 2 == 117_440_512
    assert PREFILL_DEQUANT_SLICE_BYTES == 33_554_432
    assert sliced == 33_554_432 + 14_336 * 4_096 // 64 * 4 == 37_224_448
    model = PrefillModel.from_config(llama3_8b(), 2, attn_implementation="sdpa+gqa-packed", quantized_4bit=True,
                                     dynamic_cache=False, kv_bits=8, nf4_prefill_sliced=True)
    plain = PrefillModel.from_config(llama3_8b(), 2, attn_implementation="sdpa+gqa-packed", quantized_4bit=True,
                                     dynamic_cache=False, kv_bits=8)
    a = prefill_breakdown(model, 128, 98_600 - 128, chunk_size=128)
    b = prefill_breakdown(plain, 128, 98_600 - 128, chunk_size=128)
    assert a.dequant == 37_224_448 and b.total - a.total == 117_440_512 - 37_224_448


def test_install_slices_only_large_weights_and_keeps_decode_rows():
    model = torch.nn.Sequential(FakeLinear4bit(256, 128, seed=14), FakeLinear4bit(64, 128, seed=15))
    calls = []
    big = model[0]
    original = big.forward
    def decode_wrapper(x):  # stands for nf4_hook's
        calls.append(tuple(x.shape))
        return original(x)

    big.forward = decode_wrapper
    status = sp.install(model, require_cuda=False, budget=256 * 128)  # 256x128 bf16 = 64 KiB > budget
    assert status.layers == 1 and status.rows == ((256, 128, 128),)
    assert "_headroom_nf4_prefill" not in model[1].__dict__  # fits one slice: untouched
    row = torch.randn(1, 1, 128).bfloat16()
    big(row)
    assert calls == [(1, 1, 128)]  # M == 1 went to the previous forward
    x = torch.randn(1, 3, 128).bfloat16()
    with torch.no_grad():
        out = big(x)
    assert calls == [(1, 1, 128)]  # three rows: the sliced path
    assert rel(out, original(x)) < 4e-3 and float(out.float().abs().mean()) > 1.0
    # a turn admitted with the whole weight's transient: the previous forward, whole
    assert sp.set_sliced(model, False) == 1
    with torch.no_grad():
        whole = big(x)
    assert calls == [(1, 1, 128), (1, 3, 128)] and torch.equal(whole, original(x))
    assert sp.set_sliced(model, True) == 1
    with torch.no_grad():
        big(x)
    assert calls == [(1, 1, 128), (1, 3, 128)]  # sliced again
    assert sp.uninstall(model) == 1 and big.forward is decode_wrapper and "_headroom_nf4_prefill" not in big.__dict__
    assert "_headroom_nf4_sliced" not in big.__dict__ and sp.set_sliced(model, False) == 0


def test_set_sliced_walks_the_model_once_per_install(monkeypatch):
    """set_sliced runs before every NF4 turn's prefill (issue 12, item 4): the wrapped layers are
    found once, not by walking every module each turn; a new install finds them again."""
    from app.engine.local import nf4_hook

    model = torch.nn.Sequential(FakeLinear4bit(256, 128, seed=14), FakeLinear4bit(256, 128, seed=16),
                                FakeLinear4bit(64, 128, seed=15))
    walks = []
    walk = nf4_hook.nf4_layers
    monkeypatch.setattr(nf4_hook, "nf4_layers", lambda m: walks.append(1) or walk(m))
    assert sp.install(model, require_cuda=False, budget=256 * 128).layers == 2
    walks.clear()
    for flag in (False, True, False):
        assert sp.set_sliced(model, flag) == 2
        assert [layer.__dict__.get("_headroom_nf4_sliced") for layer in model] == [flag, flag, None]
    assert len(walks) == 1
    assert sp.uninstall(model) == 2 and sp.set_sliced(model, False) == 0  # found again: none wrapped
    assert sp.install(model, require_cuda=False, budget=256 * 128).layers == 2
    assert sp.set_sliced(model, False) == 2 and model[0]._headroom_nf4_sliced is False
    x = torch.randn(1, 3, 128).bfloat16()
    with torch.no_grad():  # the flag set through __dict__ is the one the wrapped forward reads
        assert torch.equal(model[0](x), model[0]._headroom_nf4_prefill[0](x))
    assert list(model.named_children()) == [("0", model[0]), ("1", model[1]), ("2", model[2])]


def test_not_sliced_where_the_layout_does_not_allow_it():
    layer = FakeLinear4bit(256, 128)
    assert sp.why_not_sliced(layer, budget=1) == ""
    assert sp.why_not_sliced(layer) == "fits one slice"
    layer.weight.quant_state.blocksize = 256  # K = 128 would split a block across rows
    assert "blocksize" in sp.why_not_sliced(layer, budget=1)
    assert sp.install(torch.nn.Sequential(FakeLinear4bit(256, 128)), require_cuda=True, budget=1).layers == 0


# ----------------------------------------------------------------------------- with bitsandbytes (CPU backend)
def bnb_linear(n, kdim, nested, bias, quant_type="nf4"):
    bnb = pytest.importorskip("bitsandbytes", exc_type=ImportError)
    F = bnb.functional
    g = torch.Generator().manual_seed(n + kdim)
    w = torch.randn(n, kdim, generator=g).bfloat16()
    packed, qs = F.quantize_4bit(w, blocksize=64, compress_statistics=nested, quant_type=quant_type)
    layer = FakeLinear4bit(n, kdim, bias=bias)
    layer.weight = torch.nn.Parameter(packed, requires_grad=False)
    layer.weight.quant_state = qs
    if bias:
        layer.bias.data.normal_(generator=g)
    return layer, F


@pytest.mark.parametrize("nested", [True, False])
@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
@pytest.mark.parametrize("bias", [False, True])
def test_sliced_forward_matches_bitsandbytes_dequantize_and_linear(nested, quant_type, bias):
    layer, F = bnb_linear(256, 128, nested, bias, quant_type)
    qs = layer.weight.quant_state
    x = torch.randn(3, 7, 128, generator=torch.Generator().manual_seed(16)).bfloat16()
    ref = torch.nn.functional.linear(x, F.dequantize_4bit(layer.weight.data, qs), layer.bias)
    if quant_type == "nf4":  # undone double quantization: the same fp32 scales as nf4_gemv's mirror
        assert torch.equal(sp.bnb_absmax(qs), k.reference_absmax(k.tensors_of(layer)))
    model = torch.nn.Sequential(layer)
    assert sp.install(model, require_cuda=False, budget=100 * 128 * 2).rows == ((256, 128, 86),)
    out = layer(x)
    assert out.shape == ref.shape and out.dtype == torch.bfloat16
    assert rel(out, ref) < 4e-3 and float(ref.float().abs().mean()) > 1.0
    # each slice's weights are bit-identical to the rows of the whole dequantized weight
    whole = F.dequantize_4bit(layer.weight.data, qs)
    deq = sp.bnb_dequantizer(qs, 128)
    absmax = sp.bnb_absmax(qs)
    for n0, n1 in sp.row_ranges(256, 86):
        b0, b1 = sp.packed_range(n0, n1, 128)
        a0, a1 = sp.absmax_range(n0, n1, 128, 64)
        part = deq(layer.weight.data.reshape(-1)[b0:b1], absmax[a0:a1], n1 - n0)
        assert torch.equal(part.view(torch.int16), whole[n0:n1].view(torch.int16))
