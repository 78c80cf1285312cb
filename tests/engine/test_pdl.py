"""Programmatic dependent launch (nvrtc.PDL): the launch structs, when it applies, and on a GPU that a
chain of dependent launches computes the same bits with it as without."""

import ctypes
import types

import pytest
import torch

from app.engine.local import compiled_decode, nvrtc


def test_launch_structs_have_cuda_h_layout():
    """cuLaunchKernelEx reads CUlaunchConfig and CUlaunchAttribute by offset (cuda.h, CUDA 12+)."""
    assert ctypes.sizeof(nvrtc._LaunchAttribute) == 72 and nvrtc._LaunchAttribute.value.offset == 8
    cfg = nvrtc._LaunchConfig
    offsets = [cfg.grid.offset, cfg.block.offset, cfg.shared.offset, cfg.stream.offset, cfg.attrs.offset,
               cfg.count.offset]
    assert offsets == [0, 12, 24, 32, 40, 48] and ctypes.sizeof(cfg) == 56


class _Kernel:
    def __init__(self):
        self.calls = []

    def __call__(self, **kw):
        self.calls.append(kw)


@pytest.mark.parametrize("pdl,device_takes_it", [(False, True), (True, False)])
def test_a_plain_launch_where_pdl_is_off_or_the_gpu_predates_hopper(monkeypatch, pdl, device_takes_it):
    monkeypatch.setattr(nvrtc, "PDL", pdl)
    monkeypatch.setattr(nvrtc, "_pdl_device", lambda index: device_takes_it)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    kernel = _Kernel()
    nvrtc.launch(kernel, (3, 2, 1), (64, 1, 1), [5, 1.5], 1024)
    assert kernel.calls == [{"grid": (3, 2, 1), "block": (64, 1, 1), "args": [5, 1.5], "shared_mem": 1024}]


@pytest.mark.parametrize("pdl", [False, True])
def test_inductor_launches_with_pdl_exactly_when_our_kernels_do(monkeypatch, pdl):
    seen = {}
    monkeypatch.setattr(nvrtc, "PDL", pdl)
    monkeypatch.setattr(torch, "compile", lambda fn, dynamic=None, options=None: seen.update(options) or fn)
    compiled_decode._inductor(len)
    assert seen.get("triton.enable_pdl", False) is pdl and seen["combo_kernels"] is True


hopper = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                            reason="needs a Hopper GPU (run on the GPU machine)")


def _layers(n: int, count: int) -> list:
    """``count`` NF4 layers (n, n), double-quantized by bitsandbytes, as the GEMV takes them."""
    F = pytest.importorskip("bitsandbytes.functional", exc_type=ImportError)
    from app.engine.local import nf4_gemv

    g = torch.Generator(device="cuda").manual_seed(n)
    out = []
    for _ in range(count):
        w = (torch.randn(n, n, generator=g, device="cuda") * 0.02).to(torch.bfloat16)
        packed, qs = F.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
        layer = types.SimpleNamespace(weight=types.SimpleNamespace(data=packed, quant_state=qs), bias=None)
        out.append(nf4_gemv.tensors_of(layer))
    return out


def _same_bits_with_and_without_pdl(monkeypatch, chain) -> None:
    """``chain`` (launches, each reading the one before's output) captured in a CUDA graph and replayed, with
    PDL off, then twice on: the same bits every time, and as the chain launched eagerly. A launch that read
    its input before the earlier one was done would differ from the plain graph, or from itself."""
    outs = {}
    for pdl in (False, True, True):
        monkeypatch.setattr(nvrtc, "PDL", pdl)
        chain()  # built outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = chain()
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
        outs.setdefault(pdl, []).append(out.clone())
        assert torch.equal(chain(), out)  # eager launches, the same bits
    assert torch.equal(outs[False][0], outs[True][0]) and torch.equal(outs[True][0], outs[True][1])


@hopper
def test_a_graph_of_dependent_launches_computes_the_same_bits_with_pdl(monkeypatch):
    """Each launch reads the one before's output (GEMV, GEMV group, attention, GEMV): a launch that
    read it before the earlier one was done would differ from the plain graph, or from itself."""
    from app.engine.local import kv16_mma, nf4_mma

    layers = _layers(1024, 4)
    counters = torch.zeros(256, dtype=torch.int32, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(1)
    keys = torch.randn(1, 8, 512, 128, generator=g, device="cuda", dtype=torch.bfloat16)
    values = torch.randn(1, 8, 512, 128, generator=g, device="cuda", dtype=torch.bfloat16)
    valid = torch.ones(1, 512, dtype=torch.bool, device="cuda")
    x = torch.randn(1024, generator=g, device="cuda").to(torch.bfloat16)

    def chain():
        y = nf4_mma.launch(x, layers[0])
        y = nf4_mma.launch_group(y, layers[1:3], [None, None], counters)[:1024] * 0.5
        att = kv16_mma.decode(y.view(1, 8, 1, 128), keys, values, valid, 0.088)
        return nf4_mma.launch(att.reshape(-1), layers[3])

    _same_bits_with_and_without_pdl(monkeypatch, chain)
    assert int(counters.abs().sum()) == 0


@hopper
def test_a_folded_norm_chain_computes_the_same_bits_with_pdl(monkeypatch):
    """norm_fold's launches as a layer chains them: a writer (o_proj) leaves h, g and the sums, a reader
    (q/k/v) scales by them, the next writer (down) adds the residual written two launches before. Under
    PDL in a graph every read after griddepcontrol.wait: the same bits as plain launches and as eager ones."""
    from app.engine.local import nf4_mma, norm_fold

    monkeypatch.setattr(norm_fold, "FOLD", True)
    layers = _layers(1024, 4)
    counters = torch.zeros(256, dtype=torch.int32, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(2)
    x, residual, weight, weight2 = (torch.randn(1024, generator=g, device="cuda").to(torch.bfloat16)
                                    for _ in range(4))

    def chain():
        h, normed, ssq = nf4_mma.launch(x, layers[0], fold_out=(residual, weight))
        y = nf4_mma.launch_group(normed, layers[1:3], [None, None], counters, fold_in=(ssq, 1e-5))[:1024]
        h2, normed2, ssq2 = nf4_mma.launch(y, layers[3], fold_out=(h, weight2))
        return torch.cat([h2, nf4_mma.launch_group(normed2, layers[1:3], [None, None], counters,
                                                   fold_in=(ssq2, 1e-5)), ssq2.view(torch.bfloat16)])

    _same_bits_with_and_without_pdl(monkeypatch, chain)
    assert int(counters.abs().sum()) == 0


def test_inductor_waits_ahead_of_every_access_unless_told_otherwise(monkeypatch):
    """"wait_first": each access is taken as depending on the kernel before (Inductor's rule then
    writes its wait); "as_is" leaves Inductor's own dependency analysis alone."""
    from torch._inductor.codegen.triton import TritonKernel
    from torch._inductor.virtualized import V

    seen = []

    def inductors_rule(self, wait_buffer, *dependencies, consider_reads=False):
        seen.append(V.graph.scheduler.previous_node)  # None: Inductor writes the wait

    monkeypatch.setattr(TritonKernel, "_handle_pdl_before_access", inductors_rule)
    assert compiled_decode._inductor_waits_first() and compiled_decode._inductor_waits_first()  # wrapped once
    scheduler = types.SimpleNamespace(previous_node="the GEMV before")
    with V.set_graph_handler(types.SimpleNamespace(scheduler=scheduler)):
        TritonKernel._handle_pdl_before_access(None, "buffer", "x")
        monkeypatch.setattr(compiled_decode, "INDUCTOR_PDL", "as_is")
        TritonKernel._handle_pdl_before_access(None, "buffer", "x")
    assert seen == [None, "the GEMV before"] and scheduler.previous_node == "the GEMV before"


def test_a_cluster_launch_attribute_carries_its_dims():
    """CUlaunchAttribute with id CLUSTER_DIMENSION holds x, y, z as the union's first three words; PDL's
    attribute is the same bytes as before clusters (id 6, value 1)."""
    (pdl, cluster) = nvrtc._attributes(True, (1, 16, 1))
    raw = bytes(cluster)
    assert len(raw) == 72 and raw[:4] == (4).to_bytes(4, "little") and raw[8:20] == b"".join(
        v.to_bytes(4, "little") for v in (1, 16, 1))
    assert bytes(pdl)[:12] == (6).to_bytes(4, "little") + bytes(4) + (1).to_bytes(4, "little")
    assert nvrtc._attributes(False, None) == []
