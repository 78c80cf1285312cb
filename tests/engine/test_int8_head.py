"""The 8-bit lm_head (app.engine.local.int8_head): its layout and quantization on the CPU, its kernel on CUDA."""

import types

import numpy as np
import pytest
import torch

from app.engine.local import int8_head

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_the_column_order_is_the_lanes_words_and_bytes_of_each_chunk():
    order = int8_head.column_order(1024)
    assert sorted(order.tolist()) == list(range(1024))
    # chunk 1, lane 3, word 2, byte 1: position 512 + 48 + 8 + 1 holds column 512 + 256 + 12 + 1
    assert int(order[512 + 16 * 3 + 4 * 2 + 1]) == 512 + 128 * 2 + 4 * 3 + 1
    assert order[:4].tolist() == [0, 1, 2, 3] and order[4:8].tolist() == [128, 129, 130, 131]


def test_a_biased_byte_in_the_mantissa_of_two_to_the_23_gives_the_signed_byte_back():
    """The kernel's byte_value: prmt places (b ^ 0x80) under 0x4B, less 2^23 + 128, exact for every byte."""
    signed = np.arange(-128, 128, dtype=np.int32)
    biased = (signed & 0xFF) ^ 0x80
    floats = (np.uint32(0x4B000000) | biased.astype(np.uint32)).view(np.float32)
    assert np.array_equal(floats - np.float32(8388736.0), signed.astype(np.float32))


def test_codes_and_scales_stand_for_the_weight_within_half_a_step():
    g = torch.Generator().manual_seed(0)
    weight = (torch.randn(300, 1024, generator=g) * 0.02).to(torch.bfloat16)
    weight[7] = 0  # a zero row: scale 0, codes 0
    head = int8_head.quantize(weight)
    assert head.codes.dtype == torch.int8 and head.scales.shape == (300,)
    assert int(head.codes.abs().max()) == 127 and float(head.scales[7]) == 0
    error = (int8_head.dequantized(head) - weight.float()).abs()
    assert bool((error <= head.scales[:, None] / 2 * (1 + 1e-4)).all())  # a float32 product off by its rounding
    assert float(error.max()) > 0  # the bf16 weights are not all on the 8-bit grid


def test_the_kernels_lane_sums_add_up_to_the_reference():
    """The kernel's order replayed in numpy: lane L adds, chunk by chunk, word k's bytes t times x at
    column 512c + 128k + 4L + t; the 32 lanes' sums times the scale are `reference`'s logits."""
    g = torch.Generator().manual_seed(1)
    weight = torch.randn(5, 1024, generator=g).to(torch.bfloat16)
    hidden = torch.randn(1024, generator=g).to(torch.bfloat16)
    head = int8_head.quantize(weight)
    codes, x = head.codes.numpy().astype(np.float64), hidden.float().numpy().astype(np.float64)
    lanes = np.zeros((5, 32))
    for c in range(2):
        for lane in range(32):
            for k in range(4):
                for t in range(4):
                    lanes[:, lane] += codes[:, 512 * c + 16 * lane + 4 * k + t] * x[512 * c + 128 * k + 4 * lane + t]
    want = int8_head.reference(head, hidden).numpy()
    np.testing.assert_allclose(lanes.sum(1) * head.scales.numpy(), want, rtol=1e-5, atol=1e-6)


def test_the_logits_are_within_a_percent_of_the_16_bit_head():
    g = torch.Generator().manual_seed(2)
    weight = (torch.randn(2000, 512, generator=g) * 0.02).to(torch.bfloat16)
    hidden = torch.randn(3, 512, generator=g).to(torch.bfloat16)
    exact = hidden.float() @ weight.float().t()
    got = int8_head.reference(int8_head.quantize(weight), hidden)
    assert got.shape == (3, 2000)
    assert 0 < float((got - exact).norm() / exact.norm()) < 1e-2


@pytest.mark.parametrize("shape", [(1, 512), (2, 512), (17, 1024), (1000, 4096), (128, 8192)])
def test_shapes_it_takes(shape):
    assert int8_head.shape_reason(torch.empty(shape, dtype=torch.bfloat16)) == ""


@pytest.mark.parametrize("shape", [(10, 576), (10, 8704), (10,)])
def test_shapes_it_refuses(shape):
    assert int8_head.shape_reason(torch.empty(shape, dtype=torch.bfloat16))
    with pytest.raises(ValueError):
        int8_head.quantize(torch.empty(shape, dtype=torch.bfloat16))


class _Model(torch.nn.Module):
    """An embedding and an lm_head, as a causal LM holds them (tied: one weight)."""

    def __init__(self, vocab: int, hidden: int, tied: bool = False, **kw):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden, **kw)
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False, **kw)
        if tied:
            self.lm_head.weight = self.embed.weight

    def get_input_embeddings(self):
        return self.embed


def test_install_says_why_a_head_stays_16_bit(monkeypatch):
    assert int8_head.install(_Model(100, 512)) == "the lm_head is not bf16 on CUDA"
    assert "tied" in int8_head.install(_Model(100, 512, tied=True))
    with_bias = _Model(100, 512)
    with_bias.lm_head = torch.nn.Linear(512, 100)
    assert int8_head.install(with_bias) == "the lm_head is not a bias-free Linear"
    monkeypatch.setattr(int8_head, "ENABLED", False)
    model = _Model(100, 512)
    assert int8_head.install(model) == "turned off (HEADROOM_LM_HEAD_INT8=0)"
    assert type(model.lm_head) is torch.nn.Linear


def test_the_loader_reports_the_head_only_on_cuda():
    from app.engine.loading import loader

    assert loader._install_int8_head(_Model(100, 512), types.SimpleNamespace(device="cpu")) == ""


def test_many_rows_or_another_dtype_go_through_the_reference(monkeypatch):
    """A prefill asking every position's logits (more than KERNEL_ROWS rows) or float32 rows: `reference`,
    VOCAB_SLICE rows of the weight at a time, the same logits as one product."""
    monkeypatch.setattr(int8_head, "VOCAB_SLICE", 64)
    g = torch.Generator().manual_seed(3)
    head = int8_head.quantize(torch.randn(200, 512, generator=g).to(torch.bfloat16))
    module = int8_head.Int8LmHead(head)
    assert (module.in_features, module.out_features) == (512, 200)
    hidden = torch.randn(1, int8_head.KERNEL_ROWS + 1, 512, generator=g).to(torch.bfloat16)
    want = (hidden.float() @ int8_head.dequantized(head).t())
    torch.testing.assert_close(module(hidden), want, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(module(hidden[:, :2].float()), want[:, :2], rtol=1e-5, atol=1e-4)


@cuda
@pytest.mark.parametrize("vocab,hidden", [(1, 512), (7, 1024), (4099, 512), (128256 // 8, 4096), (300, 8192)])
def test_the_kernel_gives_the_reference_logits(vocab, hidden):
    g = torch.Generator(device="cuda").manual_seed(vocab)
    weight = (torch.randn(vocab, hidden, generator=g, device="cuda") * 0.02).to(torch.bfloat16)
    head = int8_head.quantize(weight)
    x = torch.randn(2, 1, hidden, generator=g, device="cuda").to(torch.bfloat16)
    got = int8_head.logits(head, x)
    want = int8_head.reference(head, x)
    assert got.shape == (2, 1, vocab) and got.dtype == torch.float32
    assert float((got - want).norm() / want.norm()) < int8_head.SELF_CHECK_TOLERANCE
    assert torch.equal(int8_head.logits(head, x), got)  # a fixed order: the same bits


@cuda
def test_the_kernel_replays_in_a_cuda_graph():
    weight = torch.randn(5000, 1024, device="cuda").to(torch.bfloat16)
    head = int8_head.quantize(weight)
    x = torch.randn(1, 1024, device="cuda").to(torch.bfloat16)
    int8_head.logits(head, x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = int8_head.logits(head, x)
    x.copy_(torch.randn(1, 1024, device="cuda").to(torch.bfloat16))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, int8_head.logits(head, x))


@cuda
def test_install_swaps_a_cuda_head_for_its_8_bit_copy():
    model = _Model(3000, 1024, device="cuda", dtype=torch.bfloat16)
    weight = model.lm_head.weight.detach().clone()
    assert int8_head.install(model) == ""
    assert type(model.lm_head) is int8_head.Int8LmHead and model.lm_head.codes.shape == (3000, 1024)
    x = torch.randn(1, 1, 1024, device="cuda").to(torch.bfloat16)
    got = model.lm_head(x)
    assert got.dtype == torch.float32
    exact = x.float() @ weight.float().t()
    assert float((got - exact).norm() / exact.norm()) < 2e-2


def test_a_swap_that_raises_leaves_the_16_bit_head_and_the_load_going(monkeypatch):
    from app.engine.loading import loader

    def broken(model):
        raise RuntimeError("CUDA error: an illegal memory access")

    monkeypatch.setattr(int8_head, "install", broken)
    model = _Model(100, 512)
    said = loader._install_int8_head(model, types.SimpleNamespace(device="cuda"))
    assert said.startswith("the int8 lm_head failed: RuntimeError") and type(model.lm_head) is torch.nn.Linear


def test_the_kernel_compiles_for_sm90_without_spills_and_two_blocks_an_sm():
    """__launch_bounds__(256, 2): at most 128 registers a thread, none spilled; x's float32 copy (32 KB at
    MAX_HIDDEN) beside the static shared memory stays under the 48 KB a launch has without opting in."""
    from tests.helpers.kernels import entry_report, ptxas_log

    report = entry_report(ptxas_log(int8_head.SOURCE, "int8_head.cu"), "int8_head")
    assert report["spill_stores"] == 0 and report["registers"] <= 128, report
    assert report["smem"] + 4 * int8_head.MAX_HIDDEN <= 48 * 1024, report
