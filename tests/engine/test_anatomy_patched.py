"""tests/benchmarks/anatomy_patched.py, kernel-source A/Bs on the app path (issue 15): every patch still
applies to its kernel's SOURCE exactly once (a kernel that moved on stops the run, not a silent base
run), changes it, and builds for sm_90 without spills where NVRTC is found."""

import pytest

from tests.benchmarks import anatomy_patched as ap
from tests.helpers.kernels import entry_report, ptxas_log

KERNELS = {"app.engine.local.kv16_mma": "kv16_rope_decode_bf16_d128", "app.engine.local.nf4_mma": "nf4_mma_pair_nested"}


SOURCE_PATCHES = [name for name, (_, patches) in ap.PATCHES.items() if patches]


@pytest.mark.parametrize("name", SOURCE_PATCHES)
def test_each_patch_applies_once_and_changes_the_source(name):
    module, source = ap.patched_source(name)
    assert source != module.SOURCE
    assert len(source) - len(module.SOURCE) == sum(len(b) - len(a) for a, b in ap.PATCHES[name][1])


def test_every_patch_without_source_changes_has_a_hook():
    assert all(name in ap.HOOKS for name, (_, patches) in ap.PATCHES.items() if not patches and name != "base")


def test_base_is_the_source_as_shipped():
    module, source = ap.patched_source("base")
    assert source == module.SOURCE


def test_a_patch_whose_text_is_gone_stops(monkeypatch):
    monkeypatch.setitem(ap.PATCHES, "stale", ("app.engine.local.kv16_mma", [("no such text", "x")]))
    with pytest.raises(ValueError, match="0 times"):
        ap.patched_source("stale")


def test_an_unknown_patch_is_a_usage_error(capsys):
    assert ap.main(["no_such_patch"]) == 2
    assert "late_release" in capsys.readouterr().err


@pytest.mark.parametrize("name", SOURCE_PATCHES)
def test_each_patched_kernel_builds_for_sm90_without_spills(name):
    module_name = ap.PATCHES[name][0]
    _, source = ap.patched_source(name)
    report = entry_report(ptxas_log(source, f"{name}.cu"), KERNELS[module_name])
    assert report["spill_stores"] == 0 and report["registers"] > 0, report


def test_merge_cluster_launches_two_to_eight_splits_as_one_cluster(monkeypatch):
    """The hook's launch passes a cluster of a head's splits (of at least 256 keys), at most 8 (the patch's
    shared-memory rows hold 8), up to 2,048 slots, else none (the ticket merge): Llama-3-8B's 8 KV heads on
    132 SMs take 8 at 2,048 slots and none at 6,144 (16 splits); the self-checks' 2 heads 2 splits at 300
    keys and none at 8."""
    import types

    import torch

    from app.engine.local import kv16_mma

    launched = []
    monkeypatch.setattr(kv16_mma, "MIN_SPLIT_KEYS", kv16_mma.MIN_SPLIT_KEYS)
    monkeypatch.setattr(kv16_mma, "MERGE", "launch")
    monkeypatch.setattr(kv16_mma, "_launch", lambda *args: launched.append(args[-1]))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: types.SimpleNamespace(
        multi_processor_count=132))
    capability = [(9, 0)]
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: capability[0])
    ap.HOOKS["merge_cluster"]()
    assert kv16_mma.MIN_SPLIT_KEYS == 256 and kv16_mma.MERGE == "ticket"
    for heads, slots in ((8, 2048), (8, 6144), (8, 4096), (2, 300), (2, 8), (8, 512)):
        query = torch.empty(1, heads, 4, 128, device="meta")
        kv16_mma._launch(query, torch.empty(1, heads, slots, 128, device="meta"), None, None, 0.1, None)
    assert launched == [8, 0, 0, 2, 0, 2]
    capability[0] = (8, 0)  # no clusters before Hopper: the ticket
    kv16_mma._launch(query, torch.empty(1, 8, 2048, 128, device="meta"), None, None, 0.1, None)
    kv16_mma._launch(query, torch.empty(1, 8, 2048, 128, device="meta"), None, None, 0.1, None, None, 1, 5)
    assert launched[-2:] == [0, 5]  # a cluster asked for is passed on as it is


def _fake_attention(wrong_at=None):
    """Stand-ins for kv16_mma.decode and _launch on the CPU: the shipped kernels' output is the query
    scaled by the split count; the patched ones' the same, but for the launch whose (kernels, splits,
    query heads a KV head) is ``wrong_at``, a wrong share. Records (kernels, splits, rope)."""
    calls = []

    def run(query, key, value, valid, scale, rope, kernels, waves, cluster):
        calls.append((kernels, cluster, rope is not None))
        if rope:  # this token's key in the cache, as both kernels write it
            key[:, :, 263] = rope[0][:, :, 0]
        out = query * cluster
        if (kernels, cluster, query.shape[2]) == wrong_at:
            out = out.clone()
            out[..., : query.shape[-1] // 2] = 0
        return out

    def decode(query, key, value, valid, scale, kernels=None, waves=1, cluster=0):
        return run(query, key, value, valid, scale, None, kernels, waves, cluster)

    return calls, run, decode


def test_the_kv_prefetch_check_compares_the_kernels_own_splits(monkeypatch):
    """kv_prefetch's GPU check (stand-in kernels on the CPU): 4 spans masked and not and 2 RoPE spans at
    the kernel's own split (cluster 0), for 3 group sizes, 2 head_dims and 2 dtypes, both kernel sets."""
    from app.engine.local import kv16_mma, nvrtc

    calls, run, decode = _fake_attention()
    monkeypatch.setattr(nvrtc, "load", lambda *args: "shipped")
    monkeypatch.setattr(kv16_mma, "_kernels", lambda index: "patched")
    monkeypatch.setattr(kv16_mma, "_launch", run)
    monkeypatch.setattr(kv16_mma, "decode", decode)
    assert ap.CHECKS["kv_prefetch"]("source", device="cpu") == ""
    assert len(calls) == 2 * 2 * 3 * (4 * 2 + 2) * 2 and {n for _, n, _ in calls} == {0}


@pytest.mark.parametrize("wrong_at", [None, ("patched", 6, 4)])
def test_merge_cluster_check_compares_every_shape_and_finds_a_wrong_share(monkeypatch, wrong_at):
    """The GPU check before the anatomy (run here on the CPU with stand-in kernels): the shipped and
    patched kernels at each of 2-8 splits, for 3 group sizes, 2 head_dims and 2 dtypes, masked and not,
    and the RoPE kernel at 3 and 8 splits; a share computed wrong is named, and main stops on it."""
    from app.engine.local import kv16_mma, nvrtc

    calls, run, decode = _fake_attention(wrong_at)
    monkeypatch.setattr(nvrtc, "load", lambda *args: "shipped")
    monkeypatch.setattr(kv16_mma, "_kernels", lambda index: "patched")
    monkeypatch.setattr(kv16_mma, "_launch", run)
    monkeypatch.setattr(kv16_mma, "decode", decode)
    problem = ap._merge_cluster_check("source", device="cpu")
    if wrong_at is None:
        assert problem == ""
        assert len(calls) == 2 * 2 * 3 * (2 * 7 + 2) * 2
        assert {(k, n) for k, n, rope in calls if not rope} == {(k, n) for k in ("shipped", "patched")
                                                              for n in range(2, 9)}
        assert {n for _, n, rope in calls if rope} == {3, 8}
    else:
        assert problem.startswith("bfloat16 d64 g4 300 keys 6 splits: relative error")
        monkeypatch.setitem(ap.CHECKS, "merge_cluster", lambda shipped: problem)
        monkeypatch.setattr(ap, "HOOKS", {})
        monkeypatch.setattr(kv16_mma, "SOURCE", kv16_mma.SOURCE)
        assert ap.main(["merge_cluster", "--depths", "1024"]) == 1
