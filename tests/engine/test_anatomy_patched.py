"""tests/benchmarks/anatomy_patched.py, kernel-source A/Bs on the app path (issue 15): every patch still
applies to its kernel's SOURCE exactly once (a kernel that moved on stops the run, not a silent base
run), changes it, and builds for sm_90 without spills where NVRTC is found."""

import pytest

from tests.benchmarks import anatomy_patched as ap
from tests.helpers.kernels import entry_report, ptxas_log

KERNELS = {"app.engine.local.kv16_mma": "kv16_rope_decode_bf16_d128", "app.engine.local.nf4_mma": "nf4_mma_pair_nested"}


@pytest.mark.parametrize("name", [n for n in ap.PATCHES if n != "base"])
def test_each_patch_applies_once_and_changes_the_source(name):
    module, source = ap.patched_source(name)
    assert source != module.SOURCE
    assert len(source) - len(module.SOURCE) == sum(len(b) - len(a) for a, b in ap.PATCHES[name][1])


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


@pytest.mark.parametrize("name", [n for n in ap.PATCHES if n != "base"])
def test_each_patched_kernel_builds_for_sm90_without_spills(name):
    module_name = ap.PATCHES[name][0]
    _, source = ap.patched_source(name)
    report = entry_report(ptxas_log(source, f"{name}.cu"), KERNELS[module_name])
    assert report["spill_stores"] == 0 and report["registers"] > 0, report
