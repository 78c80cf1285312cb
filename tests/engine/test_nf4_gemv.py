"""The fused NF4 GEMV (issue 15) on the CPU: bitsandbytes' packing and double-quant absmax math
through the pure-torch mirror of the kernel, the custom op, the decode-row swap and its fallbacks.

The Triton kernel itself runs here only under Triton's interpreter (``TRITON_INTERPRET=1`` with
Triton installed); on the H200 it is checked by tests/benchmarks/nf4_gemv.py.
"""

import os
from types import SimpleNamespace

import pytest
import torch

from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_hook as hook
from app.engine.local.nf4_gemv import Plan

NF4 = torch.tensor([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
                    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0])  # bitsandbytes' NF4


def nearest(values: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    return (values[:, None] - table[None, :]).abs().argmin(dim=1).to(torch.uint8)


def quantize(w: torch.Tensor, nested: bool = True, quant_type: str = "nf4", dtype=torch.bfloat16):
    """A bitsandbytes-layout NF4 quant state for w (N, K) fp32, built without bitsandbytes:
    64-element blocks, high nibble first, absmax double-quantized in blocks of 256."""
    n, kdim = w.shape
    blocks = w.reshape(-1, 64)
    absmax = blocks.abs().amax(dim=1)
    q = nearest((blocks / absmax[:, None]).reshape(-1), NF4)
    packed = ((q[0::2] << 4) | q[1::2]).reshape(-1, 1)
    state2 = None
    offset = None
    if nested:
        offset = absmax.mean()
        centred = absmax - offset
        pad = (-centred.numel()) % 256
        groups = torch.cat([centred, centred.new_zeros(pad)]).reshape(-1, 256)
        absmax2 = groups.abs().amax(dim=1)
        code2 = torch.linspace(-1, 1, 256)
        absmax = nearest((groups / absmax2[:, None]).reshape(-1)[:centred.numel()], code2)
        state2 = SimpleNamespace(absmax=absmax2, code=code2, blocksize=256)
    qs = SimpleNamespace(quant_type=quant_type, blocksize=64, dtype=dtype, shape=torch.Size((n, kdim)),
                         nested=nested, absmax=absmax, code=NF4.clone(), offset=offset, state2=state2)
    return packed, qs


class FakeLinear4bit(torch.nn.Linear):
    """A Linear4bit stand-in: uint8 packed weight carrying a quant_state; its forward is the
    dense bf16 matmul of the reference-dequantized weight (what bitsandbytes computes)."""

    def __init__(self, n, kdim, seed=0, bias=False, **quant):
        super().__init__(kdim, n, bias=bias, dtype=torch.bfloat16)
        g = torch.Generator().manual_seed(seed)
        packed, qs = quantize(torch.randn(n, kdim, generator=g), **quant)
        self.weight = torch.nn.Parameter(packed, requires_grad=False)
        self.weight.quant_state = qs

    def forward(self, x):
        w = k.reference_dequantize(k.tensors_of(self))
        return torch.nn.functional.linear(x, w, self.bias)


def rel(a, b):
    return float((a.detach().float() - b.detach().float()).norm() / b.detach().float().norm())


def test_high_nibble_is_the_first_element():
    layer = FakeLinear4bit(1, 64, nested=False)
    layer.weight.data[:] = 0x1F  # every byte: first code 1, second code 15
    layer.weight.quant_state.absmax = torch.full((1,), 2.0)
    w = k.reference_dequantize(k.tensors_of(layer)).float()
    assert w[0, 0] == (NF4[1] * 2).bfloat16().float()
    assert w[0, 1] == 2.0 and w[0, 62] == w[0, 0] and w[0, 63] == 2.0


def test_nested_absmax_is_code2_times_absmax2_plus_offset_in_fp32():
    layer = FakeLinear4bit(8, 4096, seed=1)  # 512 blocks → 2 second-level groups
    t = k.tensors_of(layer)
    qs = layer.weight.quant_state
    i = torch.tensor([0, 255, 256, 511])
    expected = (qs.state2.code[qs.absmax[i].long()] * qs.state2.absmax[i // 256]) + qs.offset
    got = k.reference_absmax(t)
    assert torch.equal(got[i], expected)
    true_absmax = torch.randn(8, 4096, generator=torch.Generator().manual_seed(1)).reshape(-1, 64).abs().amax(1)
    assert float((got - true_absmax).abs().max()) < 0.02 * float(true_absmax.max())


def test_dequantize_matches_a_plain_loop():
    layer = FakeLinear4bit(3, 128, seed=2)
    t = k.tensors_of(layer)
    absmax = k.reference_absmax(t)
    flat = layer.weight.data.reshape(-1).tolist()
    codes = [c for b in flat for c in (b >> 4, b & 15)]
    loop = torch.tensor([float((NF4[c] * absmax[i // 64]).bfloat16()) for i, c in enumerate(codes)])
    assert torch.equal(k.reference_dequantize(t).float().reshape(-1), loop)


def test_pair_table_holds_high_then_low_code():
    pairs = k.pair_table(NF4).view(torch.float32).reshape(256, 2)
    assert pairs[0x3C, 0] == NF4[3] and pairs[0x3C, 1] == NF4[12]


def test_bit_identical_to_bitsandbytes_dequantize_4bit():
    F = pytest.importorskip("bitsandbytes.functional", exc_type=ImportError)
    w = torch.randn(96, 512, generator=torch.Generator().manual_seed(3)).bfloat16()
    packed, qs = F.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
    layer = FakeLinear4bit(96, 512)
    layer.weight = torch.nn.Parameter(packed, requires_grad=False)
    layer.weight.quant_state = qs
    ours = k.reference_dequantize(k.tensors_of(layer))
    assert torch.equal(ours.view(torch.int16), F.dequantize_4bit(packed, qs).view(torch.int16))


def test_reference_gemv_is_fp32_accumulation_of_bf16_weights():
    layer = FakeLinear4bit(64, 1024, seed=4)
    t = k.tensors_of(layer)
    x = torch.randn(1024, generator=torch.Generator().manual_seed(5)).bfloat16()
    exact = k.reference_dequantize(t).double() @ x.double()
    y = k.reference_gemv(x, t)
    assert y.dtype == torch.bfloat16 and y.shape == (64,)
    assert rel(y, exact) < 3e-3  # the bf16 output rounding only
    assert torch.equal(y, exact.to(torch.bfloat16)) or rel(y, exact) > 0  # real values, not zeros
    assert float(y.float().abs().mean()) > 1.0


def test_custom_op_on_cpu_runs_the_mirror():
    layer = FakeLinear4bit(32, 256, seed=6, bias=True)
    layer.bias.data.normal_()
    t = k.tensors_of(layer)
    x = torch.randn(1, 256).bfloat16()
    y = hook.run(x, t, Plan(), layer.bias)
    assert y.shape == (1, 32)
    assert torch.equal(y[0], k.reference_gemv(x[0], t, layer.bias))


def test_choose_plan_fills_the_h200_for_the_8b_shapes():
    for n, kdim in ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336), (2048, 8192), (3072, 3072)):
        plan = hook.choose_plan(n, kdim)
        programs = -(-n // plan.block_n) * plan.split_k
        assert programs >= hook.H200_SMS, (n, kdim, plan)
        assert kdim % (plan.block_k * plan.split_k) == 0
    assert hook.choose_plan(1024, 4096).split_k > 1 and hook.choose_plan(14336, 4096).split_k == 1


class TinyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = FakeLinear4bit(128, 64, seed=7)
        self.down = FakeLinear4bit(64, 128, seed=8, bias=True)
        self.down.bias.data.normal_()

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.up(x)))


def test_cpu_model_falls_back_with_a_reason_and_is_untouched():
    model = TinyModel()
    status = hook.install(model)
    assert not status.active and status.reason == "no CUDA device"
    assert "forward" not in model.up.__dict__ and "bitsandbytes GEMV (no CUDA device)" == status.label()


def test_missing_triton_is_a_reason(monkeypatch):
    monkeypatch.setattr(k, "triton", None)
    assert hook.unavailable_reason(torch.device("cuda")) == "Triton is not installed"


def test_unsupported_layers_fall_back():
    model = TinyModel()
    model.up.weight.quant_state.quant_type = "fp4"
    status = hook.install(model, require_cuda=False)
    assert not status.active and "fp4" in status.reason and "forward" not in model.down.__dict__


def test_decode_rows_use_the_op_and_prefill_keeps_the_original(monkeypatch):
    model = TinyModel()
    status = hook.install(model, require_cuda=False)
    assert status.active and status.layers == 2 and len(status.checks) == 2
    assert all(e_ref < hook.REF_TOLERANCE and e_bnb < hook.BNB_TOLERANCE for _, _, e_ref, e_bnb in status.checks)
    calls = []
    real = k.reference_gemv
    monkeypatch.setattr(k, "reference_gemv", lambda *a: calls.append(a[1].n) or real(*a))
    x = torch.randn(1, 1, 64).bfloat16()
    with torch.inference_mode():
        y = model(x)
        assert calls == [128, 64]
        prefill = model(torch.randn(1, 3, 64).bfloat16())
    assert calls == [128, 64] and prefill.shape == (1, 3, 64)
    hook.uninstall(model)
    with torch.inference_mode():
        assert rel(y, model(x)) < 1e-2


def test_a_disagreeing_kernel_is_not_installed(monkeypatch):
    model = TinyModel()
    monkeypatch.setattr(k, "reference_gemv", lambda x, t, bias=None: torch.zeros(t.n, dtype=torch.bfloat16))
    status = hook.install(model, require_cuda=False)
    assert not status.active and "disagrees with bitsandbytes on 128x64" in status.reason
    assert "forward" not in model.up.__dict__


def test_swapped_forward_compiles_in_one_graph():
    model = TinyModel()
    hook.install(model, require_cuda=False)
    x = torch.randn(1, 1, 64).bfloat16()
    with torch.inference_mode():
        eager = model(x)
        compiled = torch.compile(model, backend="aot_eager", fullgraph=True)(x)
    assert torch.equal(eager, compiled)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1" or k.triton is None,
                    reason="needs Triton's interpreter (TRITON_INTERPRET=1)")
@pytest.mark.parametrize("plan", [Plan(16, 128, 1, 4, 0), Plan(8, 64, 2, 4, 1), Plan(4, 128, 4, 4, 2),
                                  Plan(16, 64, 1, 4, 0), Plan(16, 128, 2, 4, 0, kernel=1),
                                  Plan(8, 64, 1, 4, 1, kernel=1), Plan(16, 64, 1, 4, 0, stages=3),
                                  Plan(8, 128, 1, 4, 0, kernel=1, stages=2), Plan(16, 128, 1, 4, 0, kernel=2),
                                  Plan(8, 64, 2, 4, 0, kernel=2), Plan(8, 256, 1, 4, 0, kernel=3, row_tiles=3),
                                  Plan(16, 64, 4, 4, 0, kernel=4), Plan(16, 128, 1, 4, 0, kernel=5),
                                  Plan(32, 64, 2, 4, 0, kernel=5), Plan(16, 128, 1, 4, 0, kernel=6),
                                  Plan(8, 64, 2, 4, 0, kernel=6)])
@pytest.mark.parametrize("nested", [True, False])
def test_triton_kernel_interpreted_matches_the_mirror(plan, nested):
    layer = FakeLinear4bit(40, 512, seed=9, bias=True, nested=nested)
    layer.bias.data.normal_()
    t = k.tensors_of(layer)
    x = torch.randn(512, generator=torch.Generator().manual_seed(10)).bfloat16()
    y = k.launch(x, t, plan, layer.bias)
    exact = k.reference_dequantize(t).double() @ x.double() + layer.bias.double()
    assert rel(y, exact) < 3e-3
    assert float((y == exact.to(torch.bfloat16)).float().mean()) > 0.9
    assert int(t.counters.abs().sum()) == 0  # the last program of each tile reset its counter


def test_a_slower_kernel_is_not_installed(monkeypatch):
    model = TinyModel()
    def timed(ours: dict):
        def time_per_token(prepared, plans):
            assert set(plans) == {(128, 64), (64, 128)} and all(len(p) == 1 for p in plans.values())
            return {shape: {None: 1990.0, p[0]: ours[shape]} for shape, p in plans.items()}
        return time_per_token

    monkeypatch.setattr(hook, "time_per_token", timed({(128, 64): 2850.0, (64, 128): 2850.0}))
    status = hook.install(model, require_cuda=False, require_faster=True)
    assert not status.active and "slower than bitsandbytes here (5.70 vs 3.98 ms per token)" in status.reason
    assert len(status.checks) == 2 and "forward" not in model.up.__dict__
    monkeypatch.setattr(hook, "time_per_token", timed({(128, 64): 1500.0, (64, 128): 2850.0}))
    status = hook.install(model, require_cuda=False, require_faster=True)
    assert status.active and status.layers == 1 and "forward" in model.up.__dict__  # the faster shape only
    assert "forward" not in model.down.__dict__ and status.label() == "fused NF4 GEMV (Triton) on 1 layers"
    assert set(status.kernels) == {(128, 64, "Triton"), (64, 128, "bitsandbytes")}
    assert (128, 64, "Triton", 1500.0) in status.timings


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1" or k.triton is None,
                    reason="needs Triton's interpreter (TRITON_INTERPRET=1)")
@pytest.mark.parametrize("plan", [Plan(8, 128, 1, 4, 0, kernel=2), Plan(16, 64, 1, 4, 0, kernel=5),
                                  Plan(8, 64, 1, 4, 0, kernel=6)])
def test_register_lookup_gives_bitsandbytes_weights_bit_for_bit(plan):
    """A one-hot x reads one column of W out exactly: every nibble position of a word, both
    halves of the prmt table, several blocks."""
    layer = FakeLinear4bit(24, 256, seed=3, bias=False, nested=True)
    t = k.tensors_of(layer)
    w = k.reference_dequantize(t)
    for j in (0, 1, 2, 3, 4, 5, 6, 7, 63, 64, 129, 255):
        x = torch.zeros(256, dtype=torch.bfloat16)
        x[j] = 1
        assert torch.equal(k.launch(x, t, plan).view(torch.int16), w[:, j].contiguous().view(torch.int16))
