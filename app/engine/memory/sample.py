"""One reading of device memory, as a frozen snapshot. No torch: the VRAM panel, the remote
backend and the turn events carry samples without importing the probes (app.engine.memory.probe)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class MemorySample:
    """One reading, bytes; timestamp in seconds (``time.monotonic``).

    allocated: live tensors (CUDA) or process RSS (CPU). reserved: held by the caching allocator
    (reserved − allocated is cached, possibly fragmented; equals allocated on CPU). peak: highest
    allocated since the last ``reset_peak``. free/total: driver free and card size (CPU:
    available and total system memory). other_processes: other programs' use of the device
    (None when unknown, e.g. no NVML). context_overhead: CUDA context and libraries =
    (total − free) − reserved − other_processes (includes others when those are unknown).
    """

    timestamp: float
    kind: str
    device_name: str
    allocated: int
    reserved: int
    peak: int
    free: int
    total: int
    other_processes: int | None = None
    context_overhead: int = 0

    @property
    def cached_unused(self) -> int:
        """reserved − allocated: held by the allocator but not by tensors."""
        return max(self.reserved - self.allocated, 0)
