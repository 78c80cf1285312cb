"""The diagnostics report: allocator summary (or RSS without CUDA), LoadReport, samples, and the
last turns' projected vs measured peaks; written readable by its owner only."""

import dataclasses
import os
import stat
from datetime import UTC, datetime

import pytest
import torch

from app.engine.events import TurnRecord
from app.engine.loading.loader import LoadReport
from app.engine.memory import diagnostics
from app.engine.memory.diagnostics import build_report, write_report
from app.engine.memory.probe import FakeProbe
from app.engine.memory.units import GiB, MiB

NOW = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)


def load_report(**overrides) -> LoadReport:
    values = dict(name="SmolLM2-135M-Instruct", source="/models/smollm2", device="cpu",
                  attention="sdpa", quantization="none", weight_dtype="float32",
                  compute_dtype="float32", weight_bytes=538_090_496, max_positions=8_192,
                  has_chat_template=True, load_seconds=0.8, fallbacks=("no CUDA: running on CPU",))
    values.update(overrides)
    return LoadReport(**{f.name: values.get(f.name) for f in dataclasses.fields(LoadReport)})


def samples(n=8):
    clock = iter(float(t) for t in range(100, 100 + n))
    probe = FakeProbe(12 * GiB, allocated=5 * GiB, other_processes=300 * MiB,
                      context_overhead=500 * MiB, clock=lambda: next(clock))
    out = []
    for _ in range(n):
        probe.allocate(100 * MiB)
        out.append(probe.sample())
    return out


def turns():
    return [
        TurnRecord(1_200, 1_200, 64, int(6.3 * GiB), 6 * GiB, "eos"),  # projected 5 % high
        TurnRecord(30_000, 0, 0, 13 * GiB, None, "refused", admitted=False),
        TurnRecord(4_000, 300, 256, 6 * GiB, int(6.25 * GiB), "length"),  # 4 % low
    ]


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_cpu_report_has_rss_load_report_and_turn_errors(no_cuda):
    text = build_report(load_report(), samples(), turns(), now=NOW)
    assert text.startswith("# Headroom diagnostics report")
    assert "- generated: 2026-11-29T09:30:00+00:00" in text
    assert "CUDA is not available" in text and "- RSS: " in text
    assert "| weight_bytes | 513 MiB (538,090,496 B) |" in text
    assert "| fallbacks | no CUDA: running on CPU |" in text
    assert "| attention | sdpa |" in text
    assert "8 samples over 7 s · cuda · Simulated 12 GiB" in text
    assert "max allocated 5.78 GiB" in text and "min free" in text
    rows = [line for line in text.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")
            or line.startswith("| 3 ")]
    assert rows == [
        "| 1 | 1,200 | 64 | 6.30 GiB | 6.00 GiB | +5.0% | yes | eos |",
        "| 2 | 30,000 | 0 | 13.00 GiB | — | — | no | refused |",
        "| 3 | 4,000 | 256 | 6.00 GiB | 6.25 GiB | -4.0% | yes | length |",
    ]
    assert "Projection error over 2 measured turns: mean 4.5%, max 5.0%" in text


def test_turn_record_error_fraction():
    assert turns()[0].error_fraction == pytest.approx(0.05, abs=1e-9)
    assert turns()[1].error_fraction is None


def test_only_the_last_n_turns_and_never_any_text(no_cuda):
    many = [TurnRecord(i, i, 1, None, None, "eos") for i in range(50)]
    text = build_report(None, [], many, max_turns=5, now=NOW)
    assert "No model loaded." in text and "No samples recorded." in text
    assert "| 5 | 49 |" in text and "| 6 |" not in text and "| 1 | 45 |" in text


def test_records_as_the_turn_runner_makes_them_count_as_admitted(no_cuda):
    # TurnRunner builds records positionally, without ``admitted``; a failed turn measured 0 bytes
    record = TurnRecord(100, 100, 20, 2 * GiB, 2 * GiB, "oom")
    failed = TurnRecord(0, 0, 0, None, 0, "failed")
    assert record.admitted and failed.error_fraction is None
    text = build_report(None, [], [record, failed], now=NOW)
    assert "| 1 | 100 | 20 | 2.00 GiB | 2.00 GiB | +0.0% | yes | oom |" in text
    assert "| 2 | 0 | 0 | — | 0 B | — | yes | failed |" in text


def test_cuda_report_embeds_memory_summary(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i: (100 * GiB, 140 * GiB))
    monkeypatch.setattr(torch.cuda, "memory_summary",
                        lambda i: "|                  PyTorch CUDA memory summary |\n")
    text = build_report(load_report(device="cuda:0"), samples(2), [], now=NOW)
    assert "### cuda:0 — NVIDIA H200" in text
    assert "driver: 100.00 GiB free of 140.00 GiB" in text
    assert "```text\n|                  PyTorch CUDA memory summary |\n```" in text
    assert "CUDA is not available" not in text and "No turns yet." in text


def test_cuda_errors_are_reported_not_swallowed(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "GPU")

    def broken(i):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(torch.cuda, "mem_get_info", broken)
    monkeypatch.setattr(torch.cuda, "memory_summary", broken)
    text = build_report(None, [], [], now=NOW)
    assert "mem_get_info failed (CUDA error: an illegal memory access" in text
    assert "memory_summary failed: CUDA error" in text


def test_write_report_is_owner_only_and_atomic(tmp_path, no_cuda):
    path = tmp_path / "headroom-report.md"
    path.write_text("old")
    os.chmod(path, 0o644)
    text = build_report(load_report(), samples(), turns(), now=NOW)
    assert write_report(path, text) == path
    assert path.read_text(encoding="utf-8") == text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["headroom-report.md"]  # no temp file left


def test_write_report_into_a_missing_folder_raises(tmp_path):
    with pytest.raises(OSError):
        write_report(tmp_path / "missing" / "r.md", "x")
    assert not (tmp_path / "missing").exists()


def test_diagnostics_never_imports_qt():
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(diagnostics))
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m.split(".")[0] for m in modules if m} & {"PySide6", "shiboken6", "qasync"}
