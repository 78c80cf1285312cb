"""Diagnostics report: one Markdown file a user can attach to a bug report.

It holds the allocator's own account (``torch.cuda.memory_summary()``, or process RSS and system
memory without CUDA), the LoadReport of the model, the recent memory samples, and the last turns'
token lengths with projected vs measured peaks. No prompt or answer text is ever included.
Pure Python + torch, no Qt.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import torch

from app.engine.memory.host_memory import host_memory
from app.engine.memory.units import format_bytes

if TYPE_CHECKING:
    from app.engine.events import TurnRecord


def build_report(load_report, samples: Iterable, turns: Sequence[TurnRecord], *, max_turns: int = 20,
                 now: datetime | None = None) -> str:
    """The report as Markdown text.

    load_report: the engine LoadReport (None: no model loaded). samples: MemorySample objects,
    oldest first (MemoryMonitor.history()). turns: app.engine.local.turn_runner TurnRecords, oldest
    first, as the worker emitted them with each finished reply; the last ``max_turns`` are
    listed.
    """
    now = now or datetime.now(UTC)
    sections = [
        "# Headroom diagnostics report",
        _header(now),
        "## Device memory\n\n" + _device_section(),
        "## Model (LoadReport)\n\n" + _load_report_section(load_report),
        "## Memory samples\n\n" + _samples_section(list(samples)),
        f"## Last turns (up to {max_turns})\n\n" + _turns_section(list(turns)[-max_turns:]),
    ]
    return "\n\n".join(sections) + "\n"


def write_report(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` readable by its owner only (mode 0o600), atomically: a temporary
    file in the same folder (mkstemp creates it 0o600) is renamed over the target. Returns the
    path. Raises OSError when the folder cannot be written."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --------------------------------------------------------------------------- sections


def _header(now: datetime) -> str:
    from app import __version__

    alloc_conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "(unset)")
    return "\n".join([
        f"- generated: {now.isoformat(timespec='seconds')}",
        f"- Headroom {__version__} · Python {sys.version.split()[0]} · torch {torch.__version__}"
        f" · {platform.platform()}",
        f"- PYTORCH_CUDA_ALLOC_CONF: `{alloc_conf}`",
    ])


def _device_section() -> str:
    if not torch.cuda.is_available():
        return _cpu_memory()
    lines = []
    for index in range(torch.cuda.device_count()):
        name = torch.cuda.get_device_name(index)
        try:
            free, total = torch.cuda.mem_get_info(index)
            info = f"driver: {format_bytes(free)} free of {format_bytes(total)}"
        except RuntimeError as exc:
            info = f"driver: mem_get_info failed ({exc})"
        try:
            summary = torch.cuda.memory_summary(index)
        except RuntimeError as exc:
            summary = f"memory_summary failed: {exc}"
        lines.append(f"### cuda:{index} — {name}\n\n{info}\n\n```text\n{summary.rstrip()}\n```")
    return "\n\n".join(lines)


def _cpu_memory() -> str:
    rss = psutil.Process().memory_info().rss
    host = host_memory()
    limit = f" (control group {host.limited_by}'s limit)" if host.limited_by else ""
    return ("CUDA is not available: memory figures are this process's RSS against system memory "
            "(torch.cuda.memory_summary() does not apply).\n\n"
            f"- RSS: {format_bytes(rss)} ({rss:,} B)\n"
            f"- system: {format_bytes(host.available)} available of {format_bytes(host.total)}{limit}")


def _load_report_section(report) -> str:
    if report is None:
        return "No model loaded."
    rows = ["| field | value |", "|---|---|"]
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        if field.name.endswith("_bytes") and isinstance(value, int):
            text = f"{format_bytes(value)} ({value:,} B)"
        elif isinstance(value, tuple):
            text = "; ".join(map(str, value)) or "—"
        else:
            text = str(value)
        rows.append(f"| {field.name} | {text.replace('|', '/')} |")
    return "\n".join(rows)


def _samples_section(samples: list) -> str:
    if not samples:
        return "No samples recorded."
    last = samples[-1]
    span = last.timestamp - samples[0].timestamp
    other = "unknown" if last.other_processes is None else format_bytes(last.other_processes)
    return "\n".join([
        f"{len(samples)} samples over {span:.0f} s · {last.kind} · {last.device_name}",
        "",
        f"- latest: allocated {format_bytes(last.allocated)}, reserved {format_bytes(last.reserved)} "
        f"(cached {format_bytes(last.cached_unused)}), peak {format_bytes(last.peak)}, "
        f"free {format_bytes(last.free)} of {format_bytes(last.total)}, other processes {other}, "
        f"context/overhead {format_bytes(last.context_overhead)}",
        f"- over the window: max allocated {format_bytes(max(s.allocated for s in samples))}, "
        f"max reserved {format_bytes(max(s.reserved for s in samples))}, "
        f"min free {format_bytes(min(s.free for s in samples))}",
    ])


def _turns_section(turns: list[TurnRecord]) -> str:
    if not turns:
        return "No turns yet."
    rows = ["| # | prompt tokens | new tokens | projected peak | measured peak | error | admitted "
            "| outcome |", "|---:|---:|---:|---:|---:|---:|:---:|---|"]
    errors = []
    for i, t in enumerate(turns, 1):
        err = t.error_fraction
        if err is not None:
            errors.append(abs(err))
        rows.append(
            f"| {i} | {t.prompt_tokens:,} | {t.new_tokens:,} | {_bytes(t.projected_peak)} | "
            f"{_bytes(t.measured_peak)} | {'—' if err is None else f'{err:+.1%}'} | "
            f"{'yes' if t.admitted else 'no'} | {t.outcome} |")
    if errors:
        rows.append("")
        rows.append(f"Projection error over {len(errors)} measured turns: mean "
                    f"{sum(errors) / len(errors):.1%}, max {max(errors):.1%} "
                    "(error = (projected − measured) / measured).")
    return "\n".join(rows)


def _bytes(value: int | None) -> str:
    return "—" if value is None else format_bytes(value)
