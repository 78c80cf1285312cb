"""The CUDA NF4 mma GEMV (issue 15) without a GPU.

1. A pure-torch emulation of what one warp of SOURCE computes, instruction by instruction: the
   loads (which bytes, which absmax, which x), `prmt` with its sign-replicate mode, `mul.hi`,
   the byte-plane tables, and `mma.m16n8k16` assembled from the 32 lanes' registers by the PTX
   ISA's fragment layout (not by the kernel's own mapping). It must give bitsandbytes' weights
   bit for bit at the right k and W x to the bf16 rounding, so the mapping is proven before a GPU
   sees it.
2. The real source through NVRTC for sm_90 (where libnvrtc is found: a CUDA torch, a pip
   nvidia-cuda-nvrtc wheel, or $HEADROOM_NVRTC): no spills, the HMMA in the SASS, and the inner
   loop's instruction mix (cuobjdump from Triton's bundle or $HEADROOM_CUOBJDUMP).
"""

import collections
import glob
import os
import re
import shutil
import subprocess

import pytest
import torch

from app.engine.local import nf4_gemv as k
from app.engine.local import nf4_hook as hook
from app.engine.local import nf4_mma as mma
from app.engine.local import norm_fold
from tests.engine.test_nf4_gemv import FakeLinear4bit

M32 = 0xFFFFFFFF
M16, M1, PICK = (v & M32 for v in mma.OPAQUE)


# ----------------------------------------------------------------------------- PTX, emulated
def prmt(a, b, sel):
    """prmt.b32 (default mode) on int64 tensors of u32: byte n of the result is byte sel[4n+2:4n]
    of {b, a}; with sel bit 4n+3 set it is that byte's sign bit replicated (0x00 or 0xFF)."""
    a, b, sel = torch.broadcast_tensors(torch.as_tensor(a), torch.as_tensor(b), torch.as_tensor(sel))
    src = torch.stack([(a >> (8 * i)) & 255 for i in range(4)] + [(b >> (8 * i)) & 255 for i in range(4)], -1)
    out = torch.zeros_like(a)
    for n in range(4):
        nib = (sel >> (4 * n)) & 15
        byte = src.gather(-1, (nib & 7).unsqueeze(-1)).squeeze(-1)
        byte = torch.where((nib & 8) != 0, torch.where(byte >= 128, 255, 0), byte)
        out = out | (byte << (8 * n))
    return out


def shr(v, m):
    """mul.hi.u32 v, m."""
    return (v * m) >> 32


def bf16_bits(v: torch.Tensor) -> torch.Tensor:
    """cvt.rn.bf16.f32 as int64 bits."""
    return v.to(torch.bfloat16).view(torch.int16).long() & 0xFFFF


def tables(cb, s):
    """SOURCE's tables(): (l0..l3, h0..h3) for block scales s (any shape)."""
    r = [bf16_bits(cb[2 * i] * s) | (bf16_bits(cb[2 * i + 1] * s) << 16) for i in range(8)]
    return ([prmt(r[2 * i], r[2 * i + 1], 0x6420) for i in range(4)],
            [prmt(r[2 * i], r[2 * i + 1], 0x7531) for i in range(4)])


def lookup4(sel, selx, pick, t):
    (l0, l1, l2, l3), (h0, h1, h2, h3) = t
    lo = prmt(prmt(l0, l1, sel), prmt(l2, l3, selx), pick)
    hi = prmt(prmt(h0, h1, sel), prmt(h2, h3, selx), pick)
    return prmt(lo, hi, 0x4051), prmt(lo, hi, 0x6273)


def lookup8(w, t):
    wx = w ^ 0x88888888
    pick = (shr(w, M1) & 0x44444444) | PICK
    return (*lookup4(w, wx, pick, t), *lookup4(shr(w, M16), shr(wx, M16), shr(pick, M16), t))


def halves(r):
    """u32 registers of two bf16 → (..., 2) fp64 values (low half first)."""
    bits = torch.stack([r & 0xFFFF, r >> 16], -1).to(torch.int32) << 16
    return bits.view(torch.float32).double()


def _fragment_index():
    """Flat indices into A (16x16), B (16x8), D (16x8) of each lane's registers, by the PTX ISA's
    layout for mma.m16n8k16 (lane = 4*group + t): a0 = A[group][2t, 2t+1], a1 = A[group+8][..],
    a2, a3 = the same at columns + 8; b0 = B[2t, 2t+1][group], b1 = rows + 8;
    d0, d1 = D[group][2t, 2t+1], d2, d3 = D[group+8][..]."""
    lane = torch.arange(32)
    g, t = lane // 4, lane % 4
    a = torch.stack([torch.stack([row * 16 + col, row * 16 + col + 1], -1) for row, col in
                     ((g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8))])  # (4, 32, 2)
    b = torch.stack([torch.stack([row * 8 + g, (row + 1) * 8 + g], -1) for row in (2 * t, 2 * t + 8)])
    d = torch.stack([row * 8 + col for row, col in ((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t),
                                                    (g + 8, 2 * t + 1))])  # (4, 32)
    return a, b, d


A_IDX, B_IDX, D_IDX = _fragment_index()


def mma_16816(a, b, d):
    """mma.sync.m16n8k16.row.col.f32.bf16 on emulated registers: a (4, 32), b (2, 32) u32,
    d (4, 32) fp64 → d (4, 32). Sums in fp64 (products of bf16 are exact)."""
    A = torch.zeros(256, dtype=torch.float64).index_put_((A_IDX.reshape(-1),), halves(a).reshape(-1))
    B = torch.zeros(128, dtype=torch.float64).index_put_((B_IDX.reshape(-1),), halves(b).reshape(-1))
    D = torch.zeros(128, dtype=torch.float64).index_put_((D_IDX.reshape(-1),), d.reshape(-1))
    D = (A.view(16, 16) @ B.view(16, 8) + D.view(16, 8)).reshape(-1)
    return D[D_IDX]


# ----------------------------------------------------------------------------- one warp, emulated
def warp_fragments(t, tile, st):
    """The A registers warp `tile` builds in super-tile `st` (SOURCE's load() and step()):
    16 mma tiles x (4, 32) u32, and the x element each lane's uint4 of x starts at (16, 32)."""
    lane = torch.arange(32)
    g, c = lane // 4, lane % 4
    ra = torch.clamp(tile * 16 + g, max=t.n - 1)
    rb = torch.clamp(tile * 16 + g + 8, max=t.n - 1)
    words, scale = t.packed.view(torch.int32).long() & M32, k.reference_absmax(t)
    ta = tables(t.code, scale[ra * (t.k // 64) + 4 * st + c])
    tb = tables(t.code, scale[rb * (t.k // 64) + 4 * st + c])
    frags, xs = [], []
    for i in range(8):  # word i of each lane's 32-byte block: the row's bytes 4i .. 4i+3
        ea = lookup8(words[ra * (t.k // 8) + 32 * st + 8 * c + i], ta)
        eb = lookup8(words[rb * (t.k // 8) + 32 * st + 8 * c + i], tb)
        frags += [torch.stack([ea[0], eb[0], ea[1], eb[1]]), torch.stack([ea[2], eb[2], ea[3], eb[3]])]
        xs += [256 * st + 64 * c + 8 * i] * 2
    return frags, xs


def warp_rows(frags, x_bits):
    """(16,) fp64 row sums of one warp as lanes c == 0 store them (d0: row g, d2: row g+8);
    frags from warp_fragments (all super-tiles), x_bits (K/2,) int64: x as u32 pairs of bf16."""
    d = torch.zeros(4, 32, dtype=torch.float64)
    for j, (a, x0) in enumerate(frags):
        xv = x_bits[x0 // 2 + torch.arange(4)[:, None]]  # the lane's uint4 of x: (4, 32)
        half = j % 2  # tile 2i takes xv.x, xv.y; tile 2i+1 xv.z, xv.w
        d = mma_16816(a, xv[2 * half:2 * half + 2], d)
    assert torch.equal(d[0], d[1]) and torch.equal(d[2], d[3])  # every column of D is W x
    c0 = torch.arange(32) % 4 == 0
    return torch.cat([d[0][c0], d[2][c0]])  # rows g = 0..7, then 8..15


def emulated(t):
    """x → y (N,) fp64 of the emulated kernel for layer t (fragments built once)."""
    frags = [[f for st in range(t.k // 256) for f in zip(*warp_fragments(t, tile, st), strict=True)]
             for tile in range(-(-t.n // 16))]

    def gemv(x):
        x_bits = x.view(torch.int32).long() & M32
        return torch.cat([warp_rows(f, x_bits) for f in frags])[:t.n]
    return gemv


@pytest.mark.parametrize("nested", [True, False])
def test_emulated_warp_reads_every_weight_at_its_k_bit_for_bit(nested):
    """x = e_j reads column j of W: each weight is looked up exactly (all 16 codes in both
    nibbles occur) and multiplied by the x element of its own k; rows past N are clamped."""
    layer = FakeLinear4bit(24, 512, seed=21, nested=nested)
    t = k.tensors_of(layer)
    w = k.reference_dequantize(t).double()
    assert set(t.packed.reshape(-1).tolist()) >= set(range(0, 256, 17))  # codes 0..15 high and low
    gemv = emulated(t)
    for j in (0, 1, 2, 3, 4, 7, 8, 63, 64, 65, 130, 255, 256, 300, 511):
        x = torch.zeros(512, dtype=torch.bfloat16)
        x[j] = 1
        assert torch.equal(gemv(x), w[:, j]), j


def test_emulated_warp_computes_w_x():
    layer = FakeLinear4bit(40, 768, seed=22)
    t = k.tensors_of(layer)
    x = torch.randn(768, generator=torch.Generator().manual_seed(23)).bfloat16()
    exact = k.reference_dequantize(t).double() @ x.double()
    y = emulated(t)(x)
    assert float((y - exact).abs().max()) < 1e-9 * float(exact.abs().max())  # exact products, fp64 sums
    assert torch.equal(y.to(torch.bfloat16), k.reference_gemv(x, t))


def test_prmt_emulation_follows_the_ptx_manual():
    a, b = torch.tensor([0x33221100]), torch.tensor([0x77665544])
    assert prmt(a, b, 0x3210).item() == 0x33221100 and prmt(a, b, 0x7654).item() == 0x77665544
    assert prmt(a, b, 0x0415).item() == 0x00441155
    assert prmt(torch.tensor([0x00008000]), b, 0x0009).item() == 0x000000FF  # sign of byte 1
    assert shr(torch.tensor([0xF0000001]), M1).item() == 0x78000000


def test_launch_shapes_cover_k_once_per_warp():
    for n, kdim in ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336)):
        steps = kdim // 256
        for warps, split in mma.launch_shapes(n, kdim):
            iters = steps // (warps * split)
            covered = sorted((s * warps + w) * iters + i for s in range(split) for w in range(warps)
                             for i in range(iters))
            assert covered == list(range(steps))
        warps, split = mma.choose_launch(n, kdim)
        assert (warps, split) in mma.launch_shapes(n, kdim)
        assert -(-n // 16) * warps * split <= 16 * 132  # Llama-3-8B: one wave of 16 warps an SM each
    assert [mma.choose_launch(n, kd) for n, kd in ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336))] \
        == [(8, 1), (8, 2), (2, 1), (8, 1)]  # 2, 1, 8, 7 super-tiles a warp
    assert mma.choose_launch(3584, 18944) == (1, 37)  # Qwen2-7B down: 4 waves of 2 beat 1 wave of 37
    assert mma.choose_launch(65536, 4096) == (1, 1)  # more row tiles than a wave: K whole
    assert mma.shape_reason(4096, 4160) and not mma.shape_reason(4100, 4096)


def test_unavailable_without_cuda():
    assert mma.unavailable_reason(torch.device("cpu")) == "no CUDA device"


# ----------------------------------------------------------------------------- nf4_hook's choice
class TwoShapes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = FakeLinear4bit(64, 256, seed=31)
        self.down = FakeLinear4bit(32, 512, seed=32)


def test_install_keeps_the_fastest_kernel_per_shape(monkeypatch):
    """With the CUDA kernel available (here: pretended; the op runs the CPU mirror) both kernels
    are self-checked on every shape and each shape gets its fastest."""
    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    model = TwoShapes()

    def time_per_token(prepared, plans):
        assert [kernel.kernel for kernel in plans[(64, 256)]] == [hook.MMA_KERNEL, 2]
        fast = {(64, 256): hook.MMA_KERNEL, (32, 512): 2}
        return {shape: {None: 50.0, **{p: 10.0 if p.kernel == fast[shape] else 20.0 for p in ps}}
                for shape, ps in plans.items()}

    monkeypatch.setattr(hook, "time_per_token", time_per_token)
    status = hook.install(model, require_cuda=False, require_faster=True)
    assert status.active and status.layers == 2 and len(status.checks) == 2 and len(status.mma_checks) == 2
    assert set(status.kernels) == {(64, 256, "CUDA mma"), (32, 512, "Triton")}
    assert model.up._headroom_nf4_gemv == hook.mma_plan(64, 256) and model.down._headroom_nf4_gemv.kernel == 2
    assert status.mma_reason == "32x512: Triton is faster"
    assert status.label() == "fused NF4 GEMV (CUDA mma + Triton) on 2 layers"
    x = torch.randn(1, 256).bfloat16()
    with torch.inference_mode():
        assert torch.equal(model.up(x)[0], k.reference_gemv(x[0], k.tensors_of(model.up)))


def test_a_disagreeing_cuda_kernel_is_dropped_and_said_why(monkeypatch):
    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    real = hook.self_check
    monkeypatch.setattr(hook, "self_check", lambda layer, t, plan: (0.5, 0.5) if plan.kernel == hook.MMA_KERNEL
                        else real(layer, t, plan))
    model = TwoShapes()
    status = hook.install(model, require_cuda=False, require_faster=False)
    assert status.active and {name for _, _, name in status.kernels} == {"Triton"}
    assert status.mma_reason.startswith("NF4 GEMV (CUDA mma) disagrees with bitsandbytes on 64x256")
    assert len(status.mma_checks) == 1  # dropped after its first shape


def test_without_triton_the_cuda_kernel_alone_is_used(monkeypatch):
    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    monkeypatch.setattr(hook, "unavailable_reason", lambda device, require_cuda=True: "Triton is not installed")
    model = TwoShapes()
    status = hook.install(model, require_cuda=False, require_faster=False)
    assert status.active and set(status.kernels) == {(64, 256, "CUDA mma"), (32, 512, "CUDA mma")}
    assert status.mma_reason == "" and not status.checks and len(status.mma_checks) == 2


class SiblingLayer(torch.nn.Module):
    """q/k/v and gate/up of one input, called in a Llama layer's order."""

    def __init__(self, seed: int, bias: bool = False):
        super().__init__()
        self.q_proj = FakeLinear4bit(64, 256, seed=seed, bias=bias)
        self.k_proj = FakeLinear4bit(32, 256, seed=seed + 1, bias=bias)
        self.v_proj = FakeLinear4bit(32, 256, seed=seed + 2, bias=bias)
        self.gate_proj = FakeLinear4bit(48, 256, seed=seed + 3, bias=bias)
        self.up_proj = FakeLinear4bit(48, 256, seed=seed + 4, bias=bias)

    def forward(self, h):
        q, k_, v = self.q_proj(h), self.k_proj(h), self.v_proj(h)
        gate, up = self.gate_proj(h), self.up_proj(h)
        return torch.cat([q, k_ * 2, v * 3, gate * up], dim=-1)


def _expected(layer: SiblingLayer, h: torch.Tensor) -> torch.Tensor:
    rows = [k.reference_gemv(h.reshape(-1), k.tensors_of(m), m.bias) for m in
            (layer.q_proj, layer.k_proj, layer.v_proj, layer.gate_proj, layer.up_proj)]
    return torch.cat([rows[0], rows[1] * 2, rows[2] * 3, rows[3] * rows[4]]).view(1, 1, -1)


@pytest.mark.parametrize("bias", [False, True])
def test_siblings_of_one_input_run_as_one_launch(monkeypatch, bias):
    """q, k, v (and gate, up) of a decode row come from one group launch, the first layer's call;
    the others take their rows; a prefill chunk (several rows) still runs each layer itself."""
    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    model = torch.nn.ModuleList([SiblingLayer(40, bias), SiblingLayer(50, bias)])
    launches = []
    real = hook.Nf4Group.run
    monkeypatch.setattr(hook.Nf4Group, "run",
                        lambda self, x, fold=None: launches.append(self.names) or real(self, x, fold))
    status = hook.install(model, require_cuda=False, require_faster=False)
    assert [(g[0], g[1], g[2], g[5]) for g in status.groups] == [
        ("q_proj+k_proj+v_proj", 128, 256, True), ("gate_proj+up_proj", 96, 256, True)]
    assert status.label().endswith("; q_proj+k_proj+v_proj, gate_proj+up_proj as one launch each")
    assert launches == [("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj")]  # install's check of each kind
    launches.clear()
    h = torch.randn(1, 1, 256).bfloat16()
    with torch.inference_mode():
        for layer in model:
            assert torch.equal(layer(h), _expected(layer, h))
    assert launches == [("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj")] * 2 and hook._PENDING == {}
    chunk = torch.randn(1, 3, 256).bfloat16()
    with torch.inference_mode():
        assert torch.equal(model[0].k_proj(chunk), model[0].k_proj.__class__.forward(model[0].k_proj, chunk))
    assert len(launches) == 4
    hook.uninstall(model)
    assert not any("forward" in m.__dict__ or "_headroom_nf4_group" in m.__dict__ for m in model.modules())


def _traced_once(monkeypatch, layers: list, expected) -> None:
    """The swapped ``layers``, each called through one torch.compile'd function: one graph serves all
    (no guard tells them apart), each output is ``expected(layer, h)``, nothing is left pending."""
    import torch._dynamo.testing

    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    model = torch.nn.ModuleList(layers)
    hook.install(model, require_cuda=False, require_faster=False)
    counter = torch._dynamo.testing.CompileCounter()
    step = torch.compile(lambda layer, h: layer(h), backend=counter, fullgraph=True)
    h = torch.randn(1, 1, 256).bfloat16()
    torch._dynamo.reset()
    with torch.inference_mode():
        for layer in model:
            assert torch.equal(step(layer, h), expected(layer, h))
    assert counter.frame_count == 1 and hook._PENDING == {}
    hook.uninstall(model)


def test_a_compiled_step_traces_the_group_once_for_every_layer(monkeypatch):
    """Dynamo follows the hand-off through _PENDING."""
    _traced_once(monkeypatch, [SiblingLayer(60), SiblingLayer(70)], _expected)


def test_a_group_launch_that_disagrees_stays_separate_launches(monkeypatch):
    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    monkeypatch.setattr(hook, "_group_check", lambda group: float("nan") if group.names[0] == "q_proj" else 0.0)
    model = torch.nn.ModuleList([SiblingLayer(80)])
    status = hook.install(model, require_cuda=False, require_faster=False)
    assert [g[0] for g in status.groups] == ["gate_proj+up_proj"]
    assert "_headroom_nf4_group" not in model[0].k_proj.__dict__ and "_headroom_nf4_group" in model[0].up_proj.__dict__
    h = torch.randn(1, 1, 256).bfloat16()
    with torch.inference_mode():
        assert torch.equal(model[0](h), _expected(model[0], h))
    hook.uninstall(model)


# ----------------------------------------------------------------------------- NVRTC, offline
def _nvrtc():
    try:
        return mma.nvrtc_library()
    except mma.CompileError as exc:
        pytest.skip(f"no NVRTC here ({exc}); pip nvidia-cuda-nvrtc and set HEADROOM_NVRTC")


def _cuobjdump():
    found = [os.environ.get("HEADROOM_CUOBJDUMP", ""), shutil.which("cuobjdump") or ""]
    try:
        import triton

        found.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"))
    except ImportError:
        pass
    found += glob.glob("/tmp/tritonsite/triton/backends/nvidia/bin/cuobjdump")
    return next((p for p in found if p and os.access(p, os.X_OK)), None)


def loop_mix(sass: str, function: str, containing: str = "") -> collections.Counter:
    """Opcode counts (without modifiers) of the longest loop (a backward branch) of ``function``; with
    ``containing`` (an opcode) the longest loop that holds it."""
    body = sass.split(f"Function : {function}\n")[1].split("Function : ")[0]  # the whole name, not a prefix
    ins = [(int(addr, 16), text.strip()) for addr, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", body)]
    backward = [(int(m.group(1), 16), addr) for addr, text in ins
                if (m := re.search(r"\bBRA\s+0x([0-9a-f]+)", text)) and int(m.group(1), 16) < addr]
    if containing:
        backward = [(lo, hi) for lo, hi in backward if any(lo <= a <= hi and containing in t for a, t in ins)]
    lo, hi = max(backward, key=lambda r: r[1] - r[0])
    return collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]
                               for addr, text in ins if lo <= addr <= hi)


ALU = ("PRMT", "LOP3", "SHF", "IADD3", "LEA", "ISETP", "VIADD", "SEL", "BFE", "BFI")


def _compiled(arch: str) -> tuple[bytes, str]:
    cubin, log = mma.compile_cubin(arch, _nvrtc(), ("--ptxas-options=-v",))
    for name in (*mma.KERNELS.values(), *mma.GROUP_KERNELS.values(), *mma.PAIR_KERNELS.values()):
        props = log.split(f"Compiling entry function '{name}'")[1].split("Compile time")[0]
        assert "0 bytes spill stores, 0 bytes spill loads" in props and "0 bytes stack frame" in props, props
        assert int(re.search(r"Used (\d+) registers", props).group(1)) <= 128  # 16 warps per SM
    return cubin, log


@pytest.mark.parametrize("arch", ["80", "86", "89", "120"])
def test_source_compiles_for_other_gpus_without_spills(arch):
    """Ampere (A100, RTX 30), Ada (RTX 40), consumer Blackwell (RTX 50): bf16 mma needs sm_80."""
    _compiled(arch)


def test_source_compiles_for_sm90_without_spills_and_with_hmma(tmp_path):
    cubin, _ = _compiled("90")
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump to read the SASS")
    (tmp_path / "k.cubin").write_bytes(cubin)
    sass = subprocess.run([tool, "-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True,
                          check=True).stdout
    for name in (*mma.KERNELS.values(), *mma.GROUP_KERNELS.values(), *mma.PAIR_KERNELS.values()):
        mix = loop_mix(sass, name)  # one super-tile per lane: 2 rows x 64 weights
        assert mix["HMMA"] == 16 and mix["PRMT"] == 272 and mix["F2FP"] == 16, mix
        assert sum(mix[op] for op in ALU) / 128 < 2.7, mix  # integer pipe per weight (Triton: ~4.4)
        # x from shared memory (8 x 16 bytes a lane), the nested codebook too; from global memory only
        # the codes (4 x 16 bytes) and the block scales (18 / 14 loads from global memory before)
        assert mix["LDS"] >= 8 and mix["LDG"] <= (6 if name.endswith("plain") else 8), mix
        # under PDL the first super-tile's codes (4 x 16 bytes a lane, evict-first) are in flight before
        # griddepcontrol.wait (ACQBULK); ptxas alone sinks them below it
        body = sass.split(f"Function : {name}\n")[1].split("Function : ")[0]
        before_wait = body.split("ACQBULK")[0]
        assert body.count("ACQBULK") == 1 and before_wait.count("LDG.E.EF.128") == 4, name


def test_the_folded_norms_kernels_build_beside_the_shipped_ones_unchanged(tmp_path):
    """-DNORM_FOLD (norm_fold.FOLD) adds the FOLD_KERNELS: no spills, at most 128 registers, the shipped
    loop; the reader stages the sums with the inputs (cp.async: LDGSTS) and the writer loads its residual
    and norm weight once; the shipped kernels' SASS is the same as without the switch."""
    plain, _ = mma.compile_cubin("90", _nvrtc())
    folded, log = mma.compile_cubin("90", _nvrtc(), ("--ptxas-options=-v", "-DNORM_FOLD"))
    for name in mma.FOLD_KERNELS.values():
        props = log.split(f"Compiling entry function '{name}'")[1].split("Compile time")[0]
        assert "0 bytes spill stores, 0 bytes spill loads" in props and "0 bytes stack frame" in props, props
        assert int(re.search(r"Used (\d+) registers", props).group(1)) <= 128
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump to read the SASS")

    def sass(cubin: bytes, path) -> str:
        path.write_bytes(cubin)
        return subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout

    def body(text: str, name: str) -> str:  # its instructions, addresses and encodings aside
        found = text.split(f"Function : {name}\n")[1].split("Function : ")[0]
        return "\n".join(" ".join(i.split()) for i in re.findall(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);", found))

    before, after = sass(plain, tmp_path / "plain.cubin"), sass(folded, tmp_path / "folded.cubin")
    for name in (*mma.KERNELS.values(), *mma.GROUP_KERNELS.values(), *mma.PAIR_KERNELS.values()):
        assert body(before, name) == body(after, name), name
    for (kind, nested), name in mma.FOLD_KERNELS.items():
        mix = loop_mix(after, name, containing="HMMA")  # the main loop (the norm's sum is a loop too)
        assert mix["HMMA"] == 16 and mix["PRMT"] == 272, (name, mix)
        shipped = {"gemv": mma.KERNELS, "group": mma.GROUP_KERNELS, "pair": mma.PAIR_KERNELS}[kind][nested]
        extra = body(after, name).count("LDGSTS") - body(before, shipped).count("LDGSTS")
        assert extra == (0 if kind == "gemv" else 1), name  # FOLD_IN: one more cp.async loop, for the sums


class _Kernel:
    """A loaded kernel's shared-memory settings as torch.cuda._utils._CudaKernel keeps them."""

    def __init__(self):
        self._max_shared_mem_bytes, self.configured = 0, []

    def set_shared_memory_config(self, size):
        self._max_shared_mem_bytes = size
        self.configured.append(size)


def test_a_launch_stages_its_inputs_and_asks_for_more_than_48_kb_once():
    kernel = _Kernel()
    assert mma._x_bytes(kernel, 14336) == 28672 and kernel.configured == []  # Llama-3-8B down, split 1
    assert mma._x_bytes(kernel, 28672) == 57344 and kernel.configured == [57344]  # 70B down: opt in
    assert mma._x_bytes(kernel, 28672) == 57344 and kernel.configured == [57344]  # once


def test_the_emulation_mirrors_the_source():
    """The emulated lines above, as they stand in SOURCE (a change to one must reach the other)."""
    for line in ("t.l0 = prmt(r[0], r[1], 0x6420); t.h0 = prmt(r[0], r[1], 0x7531);",
                 "r[i] = bf16x2(mul_rn(cb[2 * i + 1], s), mul_rn(cb[2 * i], s));",
                 "u32 lo = prmt(prmt(t.l0, t.l1, sel), prmt(t.l2, t.l3, selx), pick);",
                 "e01 = prmt(lo, hi, 0x4051);", "e23 = prmt(lo, hi, 0x6273);",
                 "u32 wx = w ^ 0x88888888u;", "u32 pick = (shr(w, k.m1) & 0x44444444u) | k.pick;",
                 "lookup4(shr(w, k.m16), shr(wx, k.m16), shr(pick, k.m16), t, e[2], e[3]);",
                 "mma(d, ea[0], eb[0], ea[1], eb[1], xv.x, xv.y);", "mma(d, ea[2], eb[2], ea[3], eb[3], xv.z, xv.w);",
                 "const uint4* pa = r.wa + 8 * st;", "r.wa = w + (long long)ra * (k / 32) + 2 * c;",
                 "r.ba = ra * (k / 64) + c;", "x_s + 32 * (warp * iters + i) + 8 * c",
                 "const int ra = min(tile * 16 + g, n - 1), rb = min(tile * 16 + g + 8, n - 1);",
                 "if (c == 0) { red[warp][g] = d[0]; red[warp][g + 8] = d[2]; }"):
        assert line in mma.SOURCE, line


def test_the_variant_benchmark_still_patches_the_source():
    """tests/benchmarks/nf4_mma_variants.py times patched copies of SOURCE: each patch must still
    find its lines (a change to SOURCE that breaks one shows here, not on the next GPU run)."""
    from tests.benchmarks import nf4_mma_variants as variants

    for name, (patches, _) in variants.VARIANTS.items():
        assert not patches or variants.patched(patches) != mma.SOURCE, name
    assert variants.patched(variants._TIMELINE).count("clock64()") == 3
    assert "Loads load(" in mma.SOURCE and "void step(" in mma.SOURCE  # nf4_layer_chain calls them


def test_the_layer_chain_kernels_compile_for_sm90_without_spills():
    """tests/benchmarks/nf4_layer_chain.py's kernels (the shipped ones with an L2 prefetch first, a
    persistent one over a group's tiles) build on SOURCE's gemv/group/load/step, in every layout
    (each patch still finds its line)."""
    from tests.benchmarks import nf4_layer_chain as chain

    lib = _nvrtc()
    for layout, patches in chain.LAYOUTS.items():
        _, log = mma.compile_cubin("90", lib, ("--ptxas-options=-v",), source=chain.chain_source(patches))
        for name in ("chain_gemv", "chain_group", "chain_persist"):
            props = log.split(f"Compiling entry function '{name}'")[1].split("Compile time")[0]
            assert "0 bytes spill stores, 0 bytes spill loads" in props, (layout, props)
            assert int(re.search(r"Used (\d+) registers", props).group(1)) <= 128


# ----------------------------------------------------------------------------- silu(gate) * up, one launch
class SiluMLP(torch.nn.Module):
    """A Llama MLP: down(act(gate(x)) * up(x)); ``scale`` makes the forward something else."""

    def __init__(self, seed: int, act=None, scale: float = 1.0, bias: bool = False):
        super().__init__()
        self.gate_proj = FakeLinear4bit(64, 256, seed=seed, bias=bias)
        self.up_proj = FakeLinear4bit(64, 256, seed=seed + 1, bias=bias)
        self.down_proj = torch.nn.Linear(64, 256, bias=False, dtype=torch.bfloat16)
        self.act_fn = act or torch.nn.SiLU()
        self.scale = scale

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x) * self.scale)


def _mlp_expected(mlp: SiluMLP, h: torch.Tensor) -> torch.Tensor:
    gate, up = (k.reference_gemv(h.reshape(-1), k.tensors_of(m), m.bias) for m in (mlp.gate_proj, mlp.up_proj))
    return mlp.down_proj((torch.nn.functional.silu(gate) * up).view(1, 1, -1))


@pytest.mark.parametrize("bias", [False, True])
def test_an_mlp_runs_silu_of_gate_times_up_as_one_launch(monkeypatch, bias):
    """A decode row's gate, up, silu and product are one launch (the MLP's forward swapped); a prefill
    chunk runs the MLP's own forward; uninstall gives it back."""
    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    model = torch.nn.ModuleList([SiluMLP(10, bias=bias), SiluMLP(20, bias=bias)])
    launches = []
    real = hook.Nf4GateUp.run
    monkeypatch.setattr(hook.Nf4GateUp, "run",
                        lambda self, x, fold=None: launches.append(id(self.mlp)) or real(self, x, fold))
    status = hook.install(model, require_cuda=False, require_faster=False)
    row = next(g for g in status.groups if g[0] == "silu(gate_proj)*up_proj")
    assert row[1:3] == (128, 256) and row[5] is True and "silu(gate_proj)*up_proj" in status.label()
    launches.clear()
    h = torch.randn(1, 1, 256).bfloat16()
    with torch.inference_mode():
        for mlp in model:
            assert torch.equal(mlp(h), _mlp_expected(mlp, h))
    assert launches == [id(model[0]), id(model[1])]
    chunk = torch.randn(1, 3, 256).bfloat16()
    with torch.inference_mode():
        assert model[0](chunk).shape == (1, 3, 256)
    assert len(launches) == 2
    hook.uninstall(model)
    assert not any("forward" in m.__dict__ or "_headroom_nf4_gate_up" in m.__dict__ for m in model.modules())


@pytest.mark.parametrize("mlp", [SiluMLP(30, act=torch.nn.GELU()), SiluMLP(40, scale=2.0)],
                         ids=["gelu", "another_forward"])
def test_an_mlp_that_is_not_silu_of_gate_times_up_keeps_its_forward(monkeypatch, mlp):
    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    model = torch.nn.ModuleList([mlp])
    status = hook.install(model, require_cuda=False, require_faster=False)
    assert "forward" not in mlp.__dict__ and not any(g[0].startswith("silu") and g[5] for g in status.groups)
    assert "silu" not in status.label()
    h = torch.randn(1, 1, 256).bfloat16()
    with torch.inference_mode():
        expected = mlp.down_proj(mlp.act_fn(mlp.gate_proj.__class__.forward(mlp.gate_proj, h))
                                 * mlp.up_proj.__class__.forward(mlp.up_proj, h) * mlp.scale)
        assert rel_l2(mlp(h), expected) < 1e-2
    hook.uninstall(model)


def rel_l2(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


def test_an_mlp_whose_gate_and_up_have_different_nested_codebooks_is_not_paired():
    mlp = SiluMLP(70)
    mlp.up_proj.weight.quant_state.state2.code = mlp.up_proj.weight.quant_state.state2.code + 1
    prepared = [(m, k.tensors_of(m)) for m in (mlp.gate_proj, mlp.up_proj)]
    assert hook.gate_up_pairs(mlp, prepared) == []
    prepared[1] = (mlp.up_proj, k.tensors_of(SiluMLP(70).up_proj))
    assert len(hook.gate_up_pairs(mlp, prepared)) == 1


def test_a_compiled_step_traces_the_paired_mlp_once_for_every_layer(monkeypatch):
    _traced_once(monkeypatch, [SiluMLP(50), SiluMLP(60)], _mlp_expected)


def test_pair_reason_names_what_the_paired_launch_cannot_take():
    gate, up = (k.tensors_of(FakeLinear4bit(64, 256, seed=s)) for s in (1, 2))
    assert mma.pair_reason(gate, up) == ""
    assert "shape" in mma.pair_reason(gate, k.tensors_of(FakeLinear4bit(32, 256, seed=3)))
    odd = k.tensors_of(FakeLinear4bit(48, 256, seed=4))  # 192 blocks: not a whole 256-block of absmax2
    assert "one array" in mma.pair_reason(odd, k.tensors_of(FakeLinear4bit(48, 256, seed=5)))
    both = mma.pair_absmax2(gate, up)
    assert torch.equal(both, torch.cat([gate.absmax2, up.absmax2]))


cuda = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 0),
                          reason="needs an Ampere or later GPU (run on the GPU machine)")


@cuda
@pytest.mark.parametrize("split_k", [1, 4])
def test_the_paired_launch_is_the_group_launch_then_silu_times_up_on_the_gpu(split_k):
    """Gate's and up's rows are the group launch's bits; silu and the product round as torch's eager ops."""
    from tests.engine.test_pdl import _layers

    gate, up = _layers(4096, 2)[:2]
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(4096, generator=g, device="cuda").to(torch.bfloat16)
    counters = torch.zeros(1024, dtype=torch.int32, device="cuda")
    rows = mma.launch_group(x, [gate, up], [None, None], counters, 1, split_k)  # the same sums in the same order
    y = mma.launch_pair(x, gate, up, [None, None], mma.pair_absmax2(gate, up), counters, 1, split_k)
    expected = torch.nn.functional.silu(rows[:4096]) * rows[4096:]
    # silu in fp32 by NVRTC's expf (--fmad=false) and torch's kernel may differ in the last fp32 bit, which
    # flips a bf16 rounding now and then: at most one bf16 step apart, and rarely
    ulps = (y.view(torch.int16).int() - expected.view(torch.int16).int()).abs()
    differ = int((ulps > 0).sum())
    print(f"paired launch vs group + torch silu*mul: {differ} of {ulps.numel()} differ by one bf16 step")
    assert int(ulps.max()) <= 1 and differ <= ulps.numel() // 100  # H200: 0 of 4096 (split 4)
    assert int(counters.abs().sum()) == 0


def _nf4_gpu(n: int, kdim: int, seed: int):
    """An NF4 layer (n, kdim) double-quantized by bitsandbytes on the GPU, as the GEMV takes it."""
    import types

    F = pytest.importorskip("bitsandbytes.functional", exc_type=ImportError)
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = (torch.randn(n, kdim, generator=g, device="cuda") * 0.02).to(torch.bfloat16)
    packed, qs = F.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
    return k.tensors_of(types.SimpleNamespace(weight=types.SimpleNamespace(data=packed, quant_state=qs), bias=None))


@cuda
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("warps,split_k", [(8, 1), (4, 4)])
def test_the_folded_writer_is_the_launch_then_the_residual_add_and_weight_on_the_gpu(monkeypatch, warps, split_k,
                                                                                       bias):
    """norm_fold's FOLD_OUT launch: h, g and the tiles' sums of squares are, bit for bit, what norm_fold.written
    makes of the plain launch's y (the same sums in the same order, the bias added before rounding)."""
    monkeypatch.setattr(norm_fold, "FOLD", True)
    t = _nf4_gpu(4096, 4096, 1)
    g = torch.Generator(device="cuda").manual_seed(5)
    x, residual, weight, b = (torch.randn(4096, generator=g, device="cuda").to(torch.bfloat16) for _ in range(4))
    y = mma.launch(x, t, b if bias else None, warps, split_k)
    got = mma.launch(x, t, b if bias else None, warps, split_k, fold_out=(residual, weight))
    want = norm_fold.written(y, residual, weight)
    assert all(torch.equal(a, w) for a, w in zip(got, want, strict=True))
    assert int(t.counters.abs().sum()) == 0


@cuda
@pytest.mark.parametrize("warps,split_k", [(8, 1), (4, 4)])
def test_the_folded_readers_scale_by_the_norm_on_the_gpu(monkeypatch, warps, split_k):
    """norm_fold's FOLD_IN launches: with sums that make r exactly 1 or 4 the group's rows are the plain
    launch's (times 4: a power of two commutes with rounding); with any sums within one bf16 step of
    bf16(r · plain); the pair is silu(gate) * up of the folded group's rows, as unfolded."""
    monkeypatch.setattr(norm_fold, "FOLD", True)
    gate, up = _nf4_gpu(4096, 4096, 2), _nf4_gpu(4096, 4096, 3)
    g = torch.Generator(device="cuda").manual_seed(6)
    x = torch.randn(4096, generator=g, device="cuda").to(torch.bfloat16)
    counters = torch.zeros(1024, dtype=torch.int32, device="cuda")
    plain = mma.launch_group(x, [gate, up], [None, None], counters, warps, split_k)
    for tile_sum, factor in ((16.0, 1), (1.0, 4)):  # mean of squares 1 and 1/16: r = 1 and 4
        ssq = torch.full((256,), tile_sum, device="cuda")
        got = mma.launch_group(x, [gate, up], [None, None], counters, warps, split_k, fold_in=(ssq, 0.0))
        assert torch.equal(got, (plain.float() * factor).to(torch.bfloat16)), factor
    ssq = torch.rand(256, generator=g, device="cuda") * 40
    r = norm_fold.norm_scale(ssq.cpu(), 4096, 1e-5).cuda()
    rows = mma.launch_group(x, [gate, up], [None, None], counters, warps, split_k, fold_in=(ssq, 1e-5))
    near = (plain.float() * r).to(torch.bfloat16)
    assert int((rows.view(torch.int16).int() - near.view(torch.int16).int()).abs().max()) <= 1
    paired = mma.launch_pair(x, gate, up, [None, None], mma.pair_absmax2(gate, up), counters, warps, split_k,
                             fold_in=(ssq, 1e-5))
    expected = torch.nn.functional.silu(rows[:4096]) * rows[4096:]
    ulps = (paired.view(torch.int16).int() - expected.view(torch.int16).int()).abs()
    assert int(ulps.max()) <= 1 and int((ulps > 0).sum()) <= ulps.numel() // 100  # silu's expf, as unfolded
    assert int(counters.abs().sum()) == 0


@cuda
@pytest.mark.parametrize("split_k", [1, 2])
def test_the_folded_group_scales_by_the_mirrors_r_bit_for_bit_on_the_gpu(monkeypatch, split_k):
    """x one-hot at input j: each row's sum is its weight W[:, j] exactly, so y = bf16(r · W[:, j] + b) shows
    the kernel's r bit for bit against norm_fold.norm_scale (the sums' order mirrored), over q/k/v's three
    segments of unequal size with biases."""
    monkeypatch.setattr(norm_fold, "FOLD", True)
    layers = [_nf4_gpu(n, 4096, 10 + i) for i, n in enumerate((4096, 1024, 1024))]
    g = torch.Generator(device="cuda").manual_seed(7)
    biases = [torch.randn(t.n, generator=g, device="cuda").to(torch.bfloat16) for t in layers]
    ssq = torch.rand(256, generator=g, device="cuda") * 40 + torch.logspace(-3, 3, 256, device="cuda")
    r = norm_fold.norm_scale(ssq.cpu(), 4096, 1e-6)
    counters = torch.zeros(1024, dtype=torch.int32, device="cuda")
    for j in (0, 1234, 4095):
        x = torch.zeros(4096, device="cuda", dtype=torch.bfloat16)
        x[j] = 1.0
        got = mma.launch_group(x, layers, biases, counters, 4, split_k, fold_in=(ssq, 1e-6))
        want = torch.cat([norm_fold.folded_rows(k.reference_dequantize(t)[:, j].float().cpu(), r, b.cpu())
                          for t, b in zip(layers, biases, strict=True)])
        assert torch.equal(got.cpu(), want), j
    assert int(counters.abs().sum()) == 0


def _parameters(macro: str) -> list[str]:
    """A kernel argument macro of SOURCE (ARGS, GROUP_ARGS, PAIR_ARGS) as "pointer" / "int" per parameter."""
    body = re.search(rf"#define {macro} (.*?)\n(?!    )", mma.SOURCE, re.S).group(1).replace("\\\n", " ")
    for i in range(3):  # GROUP_ARGS' SEGMENT(i)
        segment = re.search(r"#define SEGMENT\(i\) (.*?)\n(?!    )", mma.SOURCE, re.S).group(1).replace("\\\n", " ")
        body = body.replace(f"SEGMENT({i})", segment.replace("##i", str(i)))
    return ["pointer" if "*" in p else "float" if "double" in p else "int" for p in body.split(",")]


def _kinds(args: list) -> list[str]:
    return ["pointer" if isinstance(a, torch.Tensor) else "float" if isinstance(a, float) else "int" for a in args]


@pytest.mark.parametrize("nested", [True, False])
def test_each_launcher_passes_what_its_kernel_declares(monkeypatch, nested):
    """The launchers run only on a GPU: here their argument lists are checked against the kernels'
    parameter lists in SOURCE: the count, and a tensor where the kernel takes a pointer (two pointers or
    two ints swapped would still pass: the GPU tests see those)."""
    seen = []
    monkeypatch.setattr(mma, "_kernels", lambda device: collections.defaultdict(lambda: mma._kernels))
    monkeypatch.setattr(mma, "_x_bytes", lambda kernel, inputs, extra=0: 2 * inputs + extra)
    monkeypatch.setattr(mma.nvrtc, "launch", lambda kernel, grid, block, args, shared: seen.append((args, shared)))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    gate, up, third = (k.tensors_of(FakeLinear4bit(64, 512, seed=s, nested=nested)) for s in (1, 2, 3))
    x, counters = torch.randn(512).bfloat16(), torch.zeros(64, dtype=torch.int32)
    mma.launch(x, gate, torch.randn(64).bfloat16())
    mma.launch_group(x, [gate, up, third], [None] * 3, counters)
    mma.launch_pair(x, gate, up, [None, None], mma.pair_absmax2(gate, up), counters, 1, 2)
    # the folded norm's launches (norm_fold): the same arguments, then FOLD_ARGS
    residual, weight = torch.randn(64).bfloat16(), torch.randn(64).bfloat16()
    h, g, ssq = mma.launch(x, gate, None, fold_out=(residual, weight))
    assert h.shape == g.shape == (64,) and ssq.shape == (4,) and ssq.dtype == torch.float32
    sums = torch.zeros(32)  # 512 inputs: 32 tiles of 16
    mma.launch_group(x, [gate, up, third], [None] * 3, counters, fold_in=(sums, 1e-5))
    mma.launch_pair(x, gate, up, [None, None], mma.pair_absmax2(gate, up), counters, 1, 2, fold_in=(sums, 1e-5))
    macros = ("ARGS", "GROUP_ARGS", "PAIR_ARGS")
    for index, ((args, _), macro) in enumerate(zip(seen, macros + macros, strict=True)):
        assert _kinds(args) == _parameters(macro) + (_parameters("FOLD_ARGS") if index >= 3 else []), macro
    assert [shared for _, shared in seen[4:]] == [2 * 512 + 4 * 32, 2 * 256 + 4 * 32]  # x, then the sums
    # FOLD_ARGS: ssq, its count, eps, residual, norm weight, g, ssq_out: the writer's outputs and inputs
    writer = seen[3][0][-7:]
    assert [a.data_ptr() for a in (writer[3], writer[5], writer[6])] == [residual.data_ptr(), g.data_ptr(),
                                                                         ssq.data_ptr()]
    assert writer[4].data_ptr() == weight.data_ptr() and writer[1:3] == [0, 0.0]
    for reader in (seen[4][0][-7:], seen[5][0][-7:]):  # the readers' sums, their count and eps
        assert reader[0].data_ptr() == sums.data_ptr() and reader[1:3] == [32, 1e-5]


@pytest.mark.parametrize("sums", [torch.zeros(16), torch.zeros(64)[::2], torch.zeros(32, dtype=torch.float64)],
                         ids=["not_one_per_16_inputs", "strided", "not_float32"])
def test_a_folded_launch_refuses_sums_it_cannot_stage(sums):
    gate = k.tensors_of(FakeLinear4bit(64, 512, seed=1))
    with pytest.raises(ValueError, match="ssq must be 32 contiguous float32 sums"):
        mma.launch_group(torch.zeros(512).bfloat16(), [gate, gate], [None, None], torch.zeros(8, dtype=torch.int32),
                         fold_in=(sums, 1e-5))


def test_a_folded_writer_refuses_a_residual_of_another_size():
    gate = k.tensors_of(FakeLinear4bit(64, 512, seed=1))
    with pytest.raises(ValueError, match="residual must be 64 bf16 values"):
        mma.launch(torch.zeros(512).bfloat16(), gate, fold_out=(torch.zeros(63).bfloat16(), torch.zeros(64).bfloat16()))


def test_an_in_place_silu_is_still_silu():
    assert hook._silu(torch.nn.SiLU(inplace=True)) and not hook._silu(torch.nn.GELU())


def test_a_paired_launch_needs_a_bias_each_or_none():
    gate, up = (k.tensors_of(FakeLinear4bit(64, 256, seed=s)) for s in (1, 2))
    bias = torch.zeros(64, dtype=torch.bfloat16)
    for biases in ([bias, None], [None, bias]):
        with pytest.raises(ValueError, match="bias each or none"):
            mma.launch_pair(torch.zeros(256, dtype=torch.bfloat16), gate, up, biases, mma.pair_absmax2(gate, up),
                            torch.zeros(8, dtype=torch.int32))


def test_every_mlp_class_is_checked_before_any_is_paired(monkeypatch):
    """One MLP of each class runs the check: a second class with another forward keeps all unpaired."""
    class Doubled(SiluMLP):
        pass

    monkeypatch.setattr(mma, "unavailable_reason", lambda device: "")
    model = torch.nn.ModuleList([SiluMLP(90), Doubled(100, scale=2.0)])
    status = hook.install(model, require_cuda=False, require_faster=False)
    assert not any("forward" in mlp.__dict__ for mlp in model) and "silu" not in status.label()
    hook.uninstall(model)
