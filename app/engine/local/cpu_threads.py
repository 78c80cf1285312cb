"""Intra-op threads for a model on the CPU (issue 12, item 6).

PyTorch's CPU kernels split each matrix product over ``torch.get_num_threads()`` threads (one per
core by default) and wait for the slowest at every op. When another program keeps one core busy,
the thread scheduled on it runs late at *every* op, and decode collapses: on a 2-core machine one
busy process dropped the default model from 19.9 to 5.7 tok/s, while a single thread held 14.0
(issue 12). So the automatic choice gives torch only the cores that other programs left idle since
the last look (`CpuLoadMeter`, Linux ``/proc/stat`` minus this process's own CPU time), at least
one; elsewhere it keeps torch's default. A setting above 0 (``GenerationSettings.cpu_threads``)
is used as is, like GPT4All's and LM Studio's "CPU threads".

No Qt, no module-level mutable state: the meter is owned by the turn runner.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

BUSY_CORE_FRACTION = 0.5
"""A core counts as busy when other programs used at least half of it since the last look."""

MIN_WINDOW_S = 0.25
"""The shortest look: /proc/stat counts in jiffies (10 ms), so a look a few milliseconds after
the last one sees no time pass (new-user trial: `--ask` asks right after the load, found "load
unknown", kept both threads beside a busy core and decoded at 1 tok/s instead of 17.8)."""


def _read_proc_stat() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat, None where there is none."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def usable_cores() -> int:
    """CPUs this process may run on (affinity), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return max(os.cpu_count() or 1, 1)


class CpuLoadMeter:
    """How many cores other programs keep busy, from the CPU time counted since the last call.

    ``busy_cores()`` -> int or None (no /proc/stat, or no time passed); a call sooner than
    MIN_WINDOW_S after the last look first waits out the rest of it. ``read_stat``,
    ``own_seconds``, ``clock_ticks``, ``clock`` and ``sleep`` are injectable for tests: (busy,
    total) jiffies, this process's user + system seconds, jiffies per second, monotonic seconds."""

    def __init__(self, read_stat: Callable[[], tuple[int, int] | None] = _read_proc_stat,
                 own_seconds: Callable[[], float] = _own_cpu_seconds, clock_ticks: int | None = None,
                 cores: int | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self._read, self._own, self._clock, self._sleep = read_stat, own_seconds, clock, sleep
        self._hz = clock_ticks or _clock_ticks()
        self._cores = cores or os.cpu_count() or 1
        self._last_time = self._clock()
        self._last = self._sample()

    def _sample(self):
        stat = self._read()
        return None if stat is None else (stat[0], stat[1], self._own())

    def busy_cores(self) -> int | None:
        short = MIN_WINDOW_S - (self._clock() - self._last_time)
        if short > 0 and self._last is not None:
            self._sleep(short)  # once, right after the load: later turns come seconds apart
        self._last_time = self._clock()
        now, last = self._sample(), self._last
        self._last = now
        if now is None or last is None or now[1] <= last[1]:
            return None
        total = (now[1] - last[1]) / self._cores  # jiffies of wall time per core
        others = (now[0] - last[0]) - (now[2] - last[2]) * self._hz
        if total <= 0:
            return None
        others_cores = max(others, 0) / total  # cores' worth of CPU time used by other programs
        return min(int(others_cores + 1 - BUSY_CORE_FRACTION), self._cores)


def _clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100


def choose_threads(setting: int, cores: int, busy_cores: int | None) -> int:
    """Intra-op threads: ``setting`` when above 0; else the cores not kept busy by other
    programs (``cores - busy_cores``, at least 1); ``cores`` when the load is unknown."""
    if setting > 0:
        return setting
    if busy_cores is None:
        return cores
    return max(cores - busy_cores, 1)


def apply_cpu_threads(setting: int, meter: CpuLoadMeter | None,
                      set_threads: Callable[[int], None] | None = None) -> int:
    """Choose the thread count for a CPU turn and set it (``torch.set_num_threads`` unless
    ``set_threads`` is given). Returns the count in force."""
    import torch

    busy = meter.busy_cores() if meter is not None else None
    threads = choose_threads(setting, usable_cores(), busy)
    if set_threads is not None:
        set_threads(threads)
    elif torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads
