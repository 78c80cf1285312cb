"""The CUDA 16-bit decode attention (kv16_mma, issue 15) without a GPU.

1. An emulation of one warp step of SOURCE in float64 numpy: each lane's registers gathered as
   `load_step` and `step` gather them (which key, which words of head_dim), `prmt` pairing two keys'
   values, and ``mma.m16n8k16`` assembled from the 32 lanes' registers by the PTX ISA's fragment
   layout (not by the kernel's own mapping). The scores must be Q Kᵀ at the right (row, key) and the
   output P V at the right (row, d): the permutations of head_dim are proven before a GPU sees them.
2. The host side: the split choice, the shapes the kernel refuses, and the source through NVRTC for
   sm_90 where libnvrtc is found (no spills, HMMA in the SASS where cuobjdump is found).
3. The dispatch in split_kv_attention: without CUDA the torch path answers.
"""


import numpy as np
import pytest
import torch

from app.engine.local import kv16_mma
from app.engine.local import split_kv_attention as kd


# ----------------------------------------------------------------------------- PTX, emulated
def lane_gc(lane: int) -> tuple[int, int]:
    return lane // 4, lane % 4


def mma_m16n8k16(a, b, c):
    """D = A B + C from per-lane fragments (PTX ISA, mma.m16n8k16 with .bf16/.f16 A and B, f32 C/D):
    a[lane] = 4 pairs (a0: row g, k 2c..2c+1; a1: row g+8; a2: row g, k 2c+8..; a3: row g+8, k 2c+8..),
    b[lane] = 2 pairs (b0: k 2c..2c+1, column g; b1: k 2c+8..), c[lane] = 4 floats (c0, c1: row g,
    columns 2c, 2c+1; c2, c3: row g+8). Returns d in c's layout."""
    A, B, C = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
    for lane in range(32):
        g, q = lane_gc(lane)
        for e in range(2):
            A[g, 2 * q + e], A[g + 8, 2 * q + e] = a[lane][0][e], a[lane][1][e]
            A[g, 2 * q + 8 + e], A[g + 8, 2 * q + 8 + e] = a[lane][2][e], a[lane][3][e]
            B[2 * q + e, g], B[2 * q + 8 + e, g] = b[lane][0][e], b[lane][1][e]
            C[g, 2 * q + e], C[g + 8, 2 * q + e] = c[lane][e], c[lane][2 + e]
    D = A @ B + C
    return [[D[g, 2 * q], D[g, 2 * q + 1], D[g + 8, 2 * q], D[g + 8, 2 * q + 1]]
            for g, q in map(lane_gc, range(32))]


def words(row: np.ndarray) -> list:
    """A row of 16-bit values as the u32 words a lane loads: word i = (element 2i low, 2i+1 high)."""
    return [(row[2 * i], row[2 * i + 1]) for i in range(len(row) // 2)]


def prmt_pairs(wa, wb, sel: int):
    """prmt.b32 on two words of 16-bit pairs: 0x5410 = (low of a, low of b), 0x7632 = the high halves."""
    return (wa[0], wb[0]) if sel == 0x5410 else (wa[1], wb[1])


def emulate_step(q: np.ndarray, k: np.ndarray, v: np.ndarray, p: np.ndarray | None = None):
    """One warp step of SOURCE: q (G, D) rows, k and v (16, D) keys of the step. Returns (scores
    (G, 16) as the lanes hold them after the first products, output (G, D) of P V with P = p (G, 16),
    or the scores themselves when p is None, as the lanes hold it after the second)."""
    groups, d = q.shape
    zero = (0.0, 0.0)
    qw = [words(q[min(g, groups - 1)][c * d // 4:(c + 1) * d // 4]) if g < groups else [zero] * (d // 8)
          for g, c in map(lane_gc, range(32))]
    kw = [[words(k[key][c * d // 4:(c + 1) * d // 4]) for key in (g, g + 8)] for g, c in map(lane_gc, range(32))]
    s = [[0.0] * 4 for _ in range(32)]  # s0, s1 (n-tile 0), s2, s3 (n-tile 1) per lane
    for j in range(d // 16):
        for tile in range(2):
            a = [[qw[lane][2 * j], zero, qw[lane][2 * j + 1], zero] for lane in range(32)]
            b = [[kw[lane][tile][2 * j], kw[lane][tile][2 * j + 1]] for lane in range(32)]
            c = [[s[lane][2 * tile], s[lane][2 * tile + 1], 0.0, 0.0] for lane in range(32)]
            out = mma_m16n8k16(a, b, c)
            for lane in range(32):
                s[lane][2 * tile], s[lane][2 * tile + 1] = out[lane][0], out[lane][1]
    scores = np.full((groups, 16), np.nan)
    for lane in range(32):
        g, c = lane_gc(lane)
        if g < groups:
            for i, key in enumerate((2 * c, 2 * c + 1, 8 + 2 * c, 9 + 2 * c)):
                scores[g, key] = s[lane][i]
    probs = scores if p is None else p
    pa = []  # the A fragment of P V: the scores' registers as they stand
    for lane in range(32):
        g, c = lane_gc(lane)
        row = probs[g] if g < groups else np.zeros(16)
        pa.append([(row[2 * c], row[2 * c + 1]), zero, (row[8 + 2 * c], row[9 + 2 * c]), zero])
    vw = [[words(v[key][g * d // 8:(g + 1) * d // 8]) for key in (2 * c, 2 * c + 1, 8 + 2 * c, 9 + 2 * c)]
          for g, c in map(lane_gc, range(32))]
    o = [[0.0] * (d // 4) for _ in range(32)]
    for u in range(d // 16):
        for half, sel in enumerate((0x5410, 0x7632)):
            t = 2 * u + half
            b = [[prmt_pairs(vw[lane][0][u], vw[lane][1][u], sel), prmt_pairs(vw[lane][2][u], vw[lane][3][u], sel)]
                 for lane in range(32)]
            c = [[o[lane][t], o[lane][d // 8 + t], 0.0, 0.0] for lane in range(32)]
            out = mma_m16n8k16(pa, b, c)
            for lane in range(32):
                o[lane][t], o[lane][d // 8 + t] = out[lane][0], out[lane][1]
    output = np.full((groups, d), np.nan)
    for lane in range(32):
        g, c = lane_gc(lane)
        if g < groups:
            output[g, c * d // 4:(c + 1) * d // 4] = o[lane]  # o[i] is d = c·D/4 + i
    return scores, output


@pytest.mark.parametrize("groups,d", [(4, 128), (8, 64), (3, 128)])
def test_one_warp_step_gives_scores_and_output_at_the_right_places(groups, d):
    rng = np.random.default_rng(groups * d)
    q, k, v = rng.standard_normal((groups, d)), rng.standard_normal((16, d)), rng.standard_normal((16, d))
    p = rng.random((groups, 16))
    scores, output = emulate_step(q, k, v, p)
    np.testing.assert_allclose(scores, q @ k.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(output, p @ v, rtol=1e-12, atol=1e-12)


def test_a_swapped_value_pairing_is_caught():
    """The emulation can fail: pairing the values the other way round (keys 2c+1, 2c) moves them."""
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((4, 128)), rng.standard_normal((16, 128)), rng.standard_normal((16, 128))
    p = rng.random((4, 16))
    swapped = v.copy()
    swapped[0::2], swapped[1::2] = v[1::2], v[0::2]
    _, output = emulate_step(q, k, swapped, p)
    assert not np.allclose(output, p @ v)


# ----------------------------------------------------------------------------- host side
@pytest.mark.parametrize("span,programs,sms,want", [
    (2048, 8, 132, (16, 128)), (4096, 8, 132, (16, 256)), (32768, 8, 132, (17, 1984)), (300, 2, 132, (3, 128)),
    (8, 2, 132, (1, 64)), (131072, 8, 132, (17, 7744)), (4096, 1, 132, (32, 128)),
    (32768, 8, 24, (4, 8192)), (262144, 8, 24, (32, 8192)),  # a small GPU: the marks' shared memory caps a split
])
def test_launch_split(span, programs, sms, want):
    splits, split_len = kv16_mma.launch_split(span, programs, sms=sms)
    assert (splits, split_len) == want
    assert split_len % kv16_mma.SPLIT_ALIGN == 0 and splits <= kv16_mma.MAX_SPLITS
    assert split_len <= kv16_mma.MAX_SPLIT_KEYS
    assert (splits - 1) * split_len < span <= splits * split_len  # every split has keys


def test_shape_reason_names_what_the_kernel_does_not_take():
    q = torch.zeros(1, 8, 4, 128, dtype=torch.bfloat16)
    kv = torch.zeros(1, 8, 64, 128, dtype=torch.bfloat16)
    valid = torch.ones(1, 64, dtype=torch.bool)
    assert kv16_mma.shape_reason(q, kv, kv, valid) == ""
    assert kv16_mma.shape_reason(q, kv, kv, None) == ""
    assert "head_dim 96" in kv16_mma.shape_reason(torch.zeros(1, 8, 4, 96), kv[..., :96], kv[..., :96], None)
    assert "12 query heads" in kv16_mma.shape_reason(torch.zeros(1, 8, 12, 128, dtype=torch.bfloat16), kv, kv, None)
    assert "bf16 or fp16" in kv16_mma.shape_reason(q, kv.float(), kv.float(), None)
    assert "valid" in kv16_mma.shape_reason(q, kv, kv, valid[:, 1:33])  # misaligned, and the wrong length
    long = kv[:, :, :1].expand(1, 8, kv16_mma.MAX_SPLITS * kv16_mma.MAX_SPLIT_KEYS + 64, 128)  # no memory
    assert "slots" in kv16_mma.shape_reason(q, long, long, None)
    odd_rows = torch.zeros(1, 8, 64, 132, dtype=torch.bfloat16)[..., 4:]  # rows 8 bytes off 16-byte alignment
    assert "aligned" in kv16_mma.shape_reason(q, odd_rows, kv, None)
    assert kv16_mma.shape_reason(q, kv[:, :, 1:], kv[:, :, 1:], None) == ""  # a row later is still aligned


def test_no_cuda_means_the_torch_path_answers():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 4, 64, generator=g)
    k, v = torch.randn(1, 2, 40, 64, generator=g), torch.randn(1, 2, 40, 64, generator=g)
    valid = torch.arange(40).view(1, 40) < 30
    assert kd._mma_guarded(q, k, v, valid, 0.125) is None
    assert kv16_mma.unavailable_reason(torch.device("cpu")) in ("no CUDA device", "HEADROOM_KV16_MMA=0")
    got = kd.kv16_decode(q, k, v, valid, 0.125)
    want = torch.softmax((q @ k.transpose(2, 3) * 0.125).masked_fill(~valid, float("-inf")), -1) @ v
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_source_compiles_for_sm90_without_spills_in_the_common_shape():
    try:
        from app.engine.local import nvrtc

        lib = nvrtc.nvrtc_library()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no NVRTC here ({exc}); pip nvidia-cuda-nvrtc and set HEADROOM_NVRTC")
    _, log = nvrtc.compile_cubin("90", kv16_mma.SOURCE, "kv16_mma.cu", ("--ptxas-options=-v", "-DMERGE_KERNELS"), lib)
    for name in kv16_mma.KERNEL_NAMES + kv16_mma.ROPE_KERNEL_NAMES + kv16_mma.MERGE_KERNEL_NAMES:
        assert f"Compiling entry function '{name}'" in log
        props = log.split(f"Compiling entry function '{name}'")[1].split("Compile time")[0]
        assert "0 bytes spill stores" in props and "0 bytes stack frame" in props, props
    assert "error" not in log.lower()


@pytest.mark.parametrize("value,want", [(None, "ticket"), ("launch", "launch"), ("poll", "poll"), ("fast", "ticket")])
def test_the_merge_switch_at_import(value, want):
    from tests.helpers.kernels import switch_at_import

    assert switch_at_import("app.engine.local.kv16_mma", "MERGE", "HEADROOM_KV16_MERGE", value) == want
    assert set(kd.MERGED_BY) == set(kv16_mma.MERGES)  # the load report says how each merges


@pytest.mark.parametrize("merge,heads,slots,want", [
    ("ticket", 8, 2048, ["kv16_rope_decode_bf16_d128", 0]),
    ("launch", 8, 2048, ["kv16_rope_decode_bf16_d128", 1, "kv16_merge_bf16_d128"]),
    ("launch", 8, 64, ["kv16_rope_decode_bf16_d128", 1]),  # one split: the attention writes the output
    ("poll", 8, 2048, ["kv16_rope_decode_bf16_d128", 2]),
    ("poll", 8, 6144, ["kv16_rope_decode_bf16_d128", 2]),  # 8 x 16 blocks on 132 SMs
    ("poll", 8, 18432, ["kv16_rope_decode_bf16_d128", 0]),  # 8 x 17: a split would wait behind split 0
    ("poll", 32, 2048, ["kv16_rope_decode_bf16_d128", 0]),  # 32 x 5: 32 spinning split 0s hold 32 of 132 SMs
])
def test_each_merge_launches_what_it_needs(monkeypatch, merge, heads, slots, want):
    """MERGE picks the kernel's ``merge`` argument and, for "launch" with 2+ splits, a merge launch of
    (B·Hkv, g) blocks of d threads over the attention launch's own partials and output."""
    from app.engine.local import nvrtc

    launched = []
    monkeypatch.setattr(kv16_mma, "MERGE", merge)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    properties = type("Properties", (), {"multi_processor_count": 132, "major": 9, "minor": 0})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: properties)
    monkeypatch.setattr(nvrtc, "launch", lambda kernel, grid, block, args, shared=0, cluster=None: launched.append(
        (kernel, grid, block, args)))
    monkeypatch.setattr(kv16_mma, "_counters_for", lambda device, n: torch.zeros(n * 65, dtype=torch.int32))
    q, new = torch.zeros(1, heads, 4, 128, dtype=torch.bfloat16), torch.zeros(1, heads, 1, 128, dtype=torch.bfloat16)
    kv, angles = torch.zeros(1, heads, slots, 128, dtype=torch.bfloat16), torch.zeros(128, dtype=torch.bfloat16)
    names = {name: name for name in kv16_mma.KERNEL_NAMES + kv16_mma.ROPE_KERNEL_NAMES + kv16_mma.MERGE_KERNEL_NAMES}
    out = kv16_mma.decode_rope(q, new, new, angles, angles, kv, kv, torch.tensor(5), None, 0.1, kernels=names)
    attention = launched[0][3]
    assert [launched[0][0], attention[21]] + [k for k, *_ in launched[1:]] == want
    if len(launched) > 1:
        _, grid, block, args = launched[1]
        splits = launched[0][1][1]
        assert grid == (heads, 4, 1) and block == (128, 1, 1) and splits > 1
        assert args[0] is attention[5] and args[1] is attention[6] and args[2] is out and args[3:] == [4, splits]


def test_the_counters_hold_a_ticket_and_a_head_of_flags_for_each_head(monkeypatch):
    monkeypatch.setattr(kv16_mma, "_counters", {})
    counters = kv16_mma._counters_for(torch.device("cpu"), 300)
    assert counters.dtype == torch.int32 and counters.numel() >= 300 * (1 + kv16_mma.MAX_SPLITS)
    assert int(counters.abs().sum()) == 0
    assert kv16_mma._counters_for(torch.device("cpu"), 8) is counters  # allocated once (before any capture)


@pytest.mark.parametrize("merge,merge_kernels", [("ticket", False), ("poll", False), ("launch", True)])
def test_the_merge_kernels_are_built_only_for_the_merge_launch(monkeypatch, merge, merge_kernels):
    from app.engine.local import nvrtc

    built = []
    monkeypatch.setattr(kv16_mma, "MERGE", merge)
    monkeypatch.setattr(nvrtc, "load", lambda index, source, name, names, options=(): built.append((names, options)))
    kv16_mma.load_kernels(0)
    names, options = built[0]
    assert set(kv16_mma.MERGE_KERNEL_NAMES) <= set(names) if merge_kernels else not set(names) & set(
        kv16_mma.MERGE_KERNEL_NAMES)
    assert options == (("-DMERGE_KERNELS",) if merge_kernels else ())
    assert set(kv16_mma.KERNEL_NAMES + kv16_mma.ROPE_KERNEL_NAMES) <= set(names)


# ----------------------------------------------------------------------------- on a GPU
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (run on the GPU machine)")


@cuda
@pytest.mark.parametrize("merge", kv16_mma.MERGES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("groups,d,span,filled,holes", [
    (4, 128, 2048, 1600, False), (4, 128, 300, 263, True), (8, 64, 4096, 4096, False), (1, 128, 8, 8, False),
    (7, 128, 33000, 17001, True), (3, 64, 130, 1, False), (2, 128, 8192, 7000, False),  # 64 splits: two trips
])
def test_matches_the_torch_path_on_cuda(monkeypatch, merge, dtype, groups, d, span, filled, holes):
    monkeypatch.setattr(kv16_mma, "MERGE", merge)
    assert kv16_mma.unavailable_reason(torch.device("cuda")) == ""
    g = torch.Generator(device="cuda").manual_seed(span + groups)
    q = torch.randn(1, 2, groups, d, generator=g, device="cuda", dtype=dtype)
    k = torch.randn(1, 2, span, d, generator=g, device="cuda", dtype=dtype) * 2
    v = torch.randn(1, 2, span, d, generator=g, device="cuda", dtype=dtype)
    valid = (torch.arange(span, device="cuda") < filled).view(1, span)
    if holes:
        valid &= torch.rand(1, span, generator=g, device="cuda") > 0.3
        k[:, :, ~valid[0]] = float("nan")  # a key not valid scores nothing, whatever it holds
    v[:, :, filled:] = 0  # the static cache's empty tail: zero-filled (a warp's first step may read it)
    want = kd.reference(q, k.nan_to_num(), v.nan_to_num(), valid, d ** -0.5)
    got = kv16_mma.decode(q, k, v, valid, d ** -0.5)
    error = float((got.float() - want.float()).norm() / want.float().norm())
    triton = kd._attend(q, k, v, valid, span - 1, span, groups, d ** -0.5)  # the kernel it replaces
    triton_error = float((triton.float() - want.float()).norm() / want.float().norm())
    assert error < kd.SELF_CHECK_TOLERANCE and error < 1.25 * triton_error + 1e-3, (error, triton_error)
    assert torch.equal(kv16_mma.decode(q, k, v, valid, d ** -0.5), got)  # bitwise repeatable
    assert int(kv16_mma._counters[q.device].abs().sum()) == 0  # tickets and flags left at zero
    monkeypatch.setattr(kv16_mma, "MERGE", "ticket")
    assert torch.equal(kv16_mma.decode(q, k, v, valid, d ** -0.5), got)  # every merge adds in one order


@cuda
@pytest.mark.parametrize("merge", kv16_mma.MERGES)
def test_every_merge_replays_in_a_cuda_graph(monkeypatch, merge):
    monkeypatch.setattr(kv16_mma, "MERGE", merge)
    test_replays_in_a_cuda_graph_as_the_cache_fills()


@cuda
def test_replays_in_a_cuda_graph_as_the_cache_fills():
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, 8, 4, 128, generator=g, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 8, 2048, 128, generator=g, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(1, 8, 2048, 128, generator=g, device="cuda", dtype=torch.bfloat16)
    valid = torch.zeros(1, 2048, dtype=torch.bool, device="cuda")
    valid[:, :100] = True
    kv16_mma.decode(q, k, v, valid, 0.088)  # built and counters allocated outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = kv16_mma.decode(q, k, v, valid, 0.088)
    for filled in (100, 1000, 1999):
        valid[:, :filled] = True
        graph.replay()
        want = kd.reference(q, k, v, valid, 0.088)
        assert float((out.float() - want.float()).norm() / want.float().norm()) < 1e-2


def test_the_load_report_names_the_decode_kernel_that_runs():
    from app.engine.local.attention import PACKED_SDPA
    from app.engine.local.fa2_attention import sdpa_phases

    cpu = kd.decode_kernel(torch.device("cpu"), torch.bfloat16, 128, 4)
    assert cpu[0] == "packed GQA matmul (Headroom)"
    phases = sdpa_phases(PACKED_SDPA, ("split-KV decode, one CUDA launch (Headroom)", "why"))
    assert phases.lines()[1] == "decode: split-KV decode, one CUDA launch (Headroom) (why)"
    assert sdpa_phases(PACKED_SDPA).lines()[1].startswith("decode: packed GQA matmul (Headroom)")


@cuda
def test_the_load_report_names_the_cuda_kernel_on_cuda():
    kernel, why = kd.decode_kernel(torch.device("cuda", torch.cuda.current_device()), torch.bfloat16, 128, 4)
    assert kernel == "split-KV decode, one CUDA launch (Headroom)", why
    kernel, why = kd.decode_kernel(torch.device("cuda", torch.cuda.current_device()), torch.bfloat16, 96, 4)
    assert kernel == "split-KV decode, Triton (Headroom)" and "head_dim 96" in why


def test_the_cluster_merge_variant_compiles_for_sm90():
    """tests/benchmarks/decode_attention.py's CLUSTER_PATCHES (the splits merged in distributed shared
    memory) still apply to SOURCE and build: distributed shared memory and cluster barriers in the SASS."""
    try:
        from app.engine.local import nvrtc

        lib = nvrtc.nvrtc_library()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no NVRTC here ({exc}); pip nvidia-cuda-nvrtc and set HEADROOM_NVRTC")
    from tests.benchmarks import decode_attention

    source = kv16_mma.SOURCE
    for old, new in decode_attention.CLUSTER_PATCHES:
        assert old in source, old[:60]
        source = source.replace(old, new)
    assert "atomicAdd" not in source and source.count("cluster_sync();") == 2
    _, log = nvrtc.compile_cubin("90", source, "kv16_cluster.cu", ("--ptxas-options=-v",), lib)
    for name in kv16_mma.KERNEL_NAMES:
        props = log.split(f"Compiling entry function '{name}'")[1].split("Compile time")[0]
        assert "0 bytes spill stores" in props, props


@pytest.mark.parametrize("span,cluster", [(2048, 16), (6144, 8), (300, 16), (32768, 16)])
def test_a_cluster_launch_takes_exactly_its_splits(monkeypatch, span, cluster):
    """decode(cluster=n): n splits a head, launched as one cluster along y, covering the span."""
    from app.engine.local import nvrtc

    seen = {}
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    properties = type("Properties", (), {"multi_processor_count": 132, "major": 9, "minor": 0})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: properties)
    monkeypatch.setattr(nvrtc, "launch", lambda kernel, grid, block, args, shared, cluster=None: seen.update(
        grid=grid, cluster=cluster, split_len=args[10]))
    monkeypatch.setattr(kv16_mma, "_counters_for", lambda device, heads: torch.zeros(heads, dtype=torch.int32))
    q = torch.zeros(1, 8, 4, 128, dtype=torch.bfloat16)
    kv = torch.zeros(1, 8, span, 128, dtype=torch.bfloat16)
    kv16_mma.decode(q, kv, kv, None, 0.1, kernels={"kv16_decode_bf16_d128": object()}, cluster=cluster)
    assert seen["grid"] == (8, cluster, 1) and seen["cluster"] == (1, cluster, 1)
    assert seen["split_len"] % kv16_mma.SPLIT_ALIGN == 0 and (seen["split_len"] - 64) * cluster < span
    assert seen["split_len"] * cluster >= span


def test_the_kernel_is_checked_for_each_dtype_and_head_dim(monkeypatch):
    """mma_ready runs the self-check once per (device, dtype, head_dim), not once per device: a second model
    of another shape is checked too; a failure stops the kernel for all of them."""
    checks = []
    monkeypatch.setattr(kd, "_mma_checked", set())
    monkeypatch.setattr(kd, "mma_failure", "")
    monkeypatch.setattr(kv16_mma, "unavailable_reason", lambda device: "")
    monkeypatch.setattr(kd, "mma_self_check", lambda device, dtype, d: checks.append((dtype, d)) or 0.0)
    device = torch.device("cuda", 0)
    assert kd.mma_ready(device, torch.bfloat16, 128) and kd.mma_ready(device, torch.bfloat16, 128)
    assert kd.mma_ready(device, torch.bfloat16, 64) and kd.mma_ready(device, torch.float16, 128)
    assert checks == [(torch.bfloat16, 128), (torch.bfloat16, 64), (torch.float16, 128)]
    monkeypatch.setattr(kd, "mma_self_check", lambda device, dtype, d: 0.5)
    assert not kd.mma_ready(device, torch.float16, 64) and "self-check" in kd.mma_failure
    assert not kd.mma_ready(device, torch.bfloat16, 128)
