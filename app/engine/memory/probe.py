"""Memory probes: what the device holds right now, as frozen :class:`MemorySample` snapshots.

``CudaProbe`` reads the caching allocator (``torch.cuda.memory_allocated`` / ``memory_reserved``
/ ``max_memory_allocated``) and the driver (``torch.cuda.mem_get_info``: free and total, the only
honest headroom — reserved-but-unused memory is not assumed free, fragmentation: reserved is not free, dolly #79),
plus other
processes' usage from NVML (``pynvml``, package nvidia-ml-py) when importable. ``CpuProbe`` reads
process RSS and system memory through psutil. ``FakeProbe`` simulates any card for tests.
See https://pytorch.org/docs/stable/notes/cuda.html#memory-management.
"""

from __future__ import annotations

import ctypes
import gc
import os
import platform
import time
from dataclasses import replace
from typing import Protocol, runtime_checkable

import psutil
import torch

from app.engine.memory.host_memory import host_memory
from app.engine.memory.sample import MemorySample
from app.engine.memory.units import GiB


@runtime_checkable
class MemoryProbe(Protocol):
    """Reads memory. ``kind`` is "cuda" or "cpu"."""

    kind: str

    def sample(self) -> MemorySample: ...

    def reset_peak(self) -> None: ...


class CudaProbe:
    """Memory of one CUDA device (index ``device``) as this process and the driver see it."""

    kind = "cuda"

    def __init__(self, device: int = 0) -> None:
        self.device = device
        self.device_name = torch.cuda.get_device_name(device)
        self._nvml_handle = _nvml_handle(device)

    def sample(self) -> MemorySample:
        free, total = torch.cuda.mem_get_info(self.device)
        reserved = torch.cuda.memory_reserved(self.device)
        others = self._other_processes()
        overhead = (total - free) - reserved - (others or 0)
        return MemorySample(
            timestamp=time.monotonic(), kind="cuda", device_name=self.device_name,
            allocated=torch.cuda.memory_allocated(self.device), reserved=reserved,
            peak=torch.cuda.max_memory_allocated(self.device), free=free, total=total,
            other_processes=others, context_overhead=max(overhead, 0),
        )

    def reset_peak(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def _other_processes(self) -> int | None:
        """Sum of other processes' GPU memory via NVML; None when NVML is missing, fails, or our
        own PID is not listed (a PID namespace hides it, so "others" would include us)."""
        if self._nvml_handle is None:
            return None
        try:
            import pynvml

            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(self._nvml_handle)
        except Exception:  # noqa: BLE001 - NVML errors are many and all mean "unknown"
            return None
        pid = os.getpid()
        if not any(p.pid == pid for p in procs):
            return None
        return sum(p.usedGpuMemory or 0 for p in procs if p.pid != pid)


def _nvml_handle(device: int) -> object | None:
    """NVML handle of the torch device, matched by UUID (CUDA_VISIBLE_DEVICES may renumber)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        uuid = str(torch.cuda.get_device_properties(device).uuid)
        return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:  # noqa: BLE001 - ImportError, NVMLError, missing uuid: no NVML view
        return None


class CpuProbe:
    """Process RSS against system memory. Peak is the kernel's VmHWM (reset through
    /proc/self/clear_refs on Linux), else the highest RSS this probe has sampled."""

    kind = "cpu"

    def __init__(self) -> None:
        self._process = psutil.Process()
        self.device_name = f"CPU: {platform.processor() or platform.machine()}"  # the panel adds its threads
        self._seen_peak = 0
        self._hwm_valid = False  # VmHWM counts only once clear_refs has reset it

    def sample(self) -> MemorySample:
        rss = self._process.memory_info().rss
        hwm = (_vm_hwm() or 0) if self._hwm_valid else 0
        self._seen_peak = max(self._seen_peak, rss, hwm)
        host = host_memory()  # a container's limit, not the machine's RAM, is what binds
        return MemorySample(
            timestamp=time.monotonic(), kind="cpu", device_name=self.device_name,
            allocated=rss, reserved=rss, peak=self._seen_peak, free=host.available,
            total=host.total, other_processes=max(host.total - host.available - rss, 0),
        )

    def reset_peak(self) -> None:
        try:
            with open("/proc/self/clear_refs", "w") as f:  # "5" resets VmHWM (Linux ≥ 4.0)
                f.write("5")
            self._hwm_valid = True
        except OSError:
            self._hwm_valid = False
        self._seen_peak = self._process.memory_info().rss


def _vm_hwm() -> int | None:
    """Peak RSS (VmHWM) of this process in bytes, Linux only."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class FakeProbe:
    """A simulated device for tests and what-if views: a card of ``total`` bytes on which
    ``other_processes`` and ``context_overhead`` are taken, plus what this process reserves.
    ``allocate``/``release`` move ``allocated`` (reserved follows it up, never down, like the
    caching allocator until ``empty_cache``)."""

    def __init__(self, total: int = 12 * GiB, *, allocated: int = 0, reserved: int | None = None,
                 other_processes: int = 0, context_overhead: int = 500 << 20, kind: str = "cuda",
                 device_name: str | None = None, clock=time.monotonic) -> None:
        self.kind = kind
        self._clock = clock
        self._s = MemorySample(
            timestamp=0.0, kind=kind, device_name=device_name or f"Simulated {total / GiB:g} GiB",
            allocated=allocated, reserved=max(reserved or 0, allocated), peak=allocated, free=0,
            total=total, other_processes=other_processes, context_overhead=context_overhead)

    def sample(self) -> MemorySample:
        s = self._s
        used = s.reserved + (s.other_processes or 0) + s.context_overhead
        return replace(s, timestamp=self._clock(), free=max(s.total - used, 0))

    def reset_peak(self) -> None:
        self._s = replace(self._s, peak=self._s.allocated)

    def allocate(self, nbytes: int) -> None:
        allocated = self._s.allocated + nbytes
        self._s = replace(self._s, allocated=allocated, reserved=max(self._s.reserved, allocated),
                          peak=max(self._s.peak, allocated))

    def release(self, nbytes: int) -> None:
        self._s = replace(self._s, allocated=max(self._s.allocated - nbytes, 0))

    def empty_cache(self) -> None:
        self._s = replace(self._s, reserved=self._s.allocated)


def pick_probe(device: int = 0) -> MemoryProbe:
    """CudaProbe for ``device`` when CUDA is available, else CpuProbe."""
    return CudaProbe(device) if torch.cuda.is_available() else CpuProbe()


def probe_for(device: str) -> MemoryProbe:
    """The probe for the memory a model on ``device`` uses: a torch device string as a
    LoadReport gives it ("cuda:1", "cuda", "cpu"), or a device preference before any model is
    loaded ("auto": CUDA device 0 when CUDA is available, as the loader places models; "cpu").
    A CUDA device on a machine without CUDA gives the CpuProbe."""
    if device == "auto":
        return pick_probe()
    if device.startswith("cuda") and torch.cuda.is_available():
        _, _, index = device.partition(":")
        return CudaProbe(int(index) if index else 0)
    return CpuProbe()


def release_memory() -> int:
    """Drop unreachable objects and hand cached memory back: gc.collect(), then
    torch.cuda.empty_cache() where CUDA is initialised, and glibc malloc_trim(0) so RSS falls
    (after an OOM, an unload, a stop: an OOM not recovered, pytorch #27600; VRAM kept after unload, bitsandbytes
    #1611). Returns bytes of CUDA reserved memory
    given back to the driver (0 on CPU)."""
    gc.collect()
    given_back = 0
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        before = torch.cuda.memory_reserved()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        given_back = max(before - torch.cuda.memory_reserved(), 0)
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return given_back
