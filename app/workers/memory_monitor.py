"""Memory telemetry: a GUI-thread timer that samples a memory probe ≈4 times a second.

Sampling is cheap (torch.cuda allocator counters and ``mem_get_info``, NVML, or psutil on CPU:
well under a millisecond), so it runs on a QTimer in the GUI thread rather than in a worker.
The monitor keeps the last few minutes of samples for the timeline and the diagnostics report.
"""

import logging
import math
from collections import deque

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot

log = logging.getLogger(__name__)


class MemoryMonitor(QObject):
    """Samples an injected probe (``app.engine.memory.probe.MemoryProbe``) on a timer.

    Signals:
        sample_taken(object): a MemorySample, every ``interval_ms`` while started.
        sampling_failed(str): the probe raised; the timer stops (``start()`` resumes).

    ``history()`` holds the samples of the last ``history_s`` seconds, oldest first.
    """

    sample_taken = Signal(object)
    sampling_failed = Signal(str)

    def __init__(self, probe, interval_ms: int = 250, history_s: float = 300.0, parent=None):
        super().__init__(parent)
        self._probe = probe
        self.history_s = history_s
        # a bound in count too, so a burst of sample_now() calls cannot grow it without limit
        self._history: deque = deque(maxlen=2 * math.ceil(history_s * 1000 / max(interval_ms, 1)) + 16)
        self._timer = QTimer(self)
        self._timer.setObjectName("memorySampling")
        self._timer.setInterval(interval_ms)
        self._timer.setTimerType(Qt.TimerType.CoarseTimer)
        self._timer.timeout.connect(self._on_timeout)

    @property
    def probe(self):
        return self._probe

    def set_probe(self, probe) -> None:
        """Sample another device from now on (the history is kept: it is one timeline)."""
        self._probe = probe

    @property
    def interval_ms(self) -> int:
        return self._timer.interval()

    def start(self) -> None:
        """Sample now and then every interval_ms."""
        self._timer.start()
        self.sample_now()

    def stop(self) -> None:
        self._timer.stop()

    def is_active(self) -> bool:
        return self._timer.isActive()

    def sample_now(self):
        """Take one sample at once: record it, emit ``sample_taken`` and return it (None when the
        probe raised; then ``sampling_failed`` was emitted and the timer stopped)."""
        try:
            sample = self._probe.sample()
        except Exception as exc:  # noqa: BLE001 - any probe error ends sampling, reported once
            log.exception("memory probe failed")
            self._timer.stop()
            self.sampling_failed.emit(f"{type(exc).__name__}: {exc}")
            return None
        self._record(sample)
        self.sample_taken.emit(sample)
        return sample

    def reset_peak(self) -> None:
        """Reset the probe's peak (before a turn, so its peak is that turn's)."""
        self._probe.reset_peak()

    def history(self) -> tuple:
        return tuple(self._history)

    def latest(self):
        """The most recent MemorySample, or None before the first."""
        return self._history[-1] if self._history else None

    def _record(self, sample) -> None:
        self._history.append(sample)
        oldest = sample.timestamp - self.history_s
        while self._history and self._history[0].timestamp < oldest:
            self._history.popleft()

    @Slot()
    def _on_timeout(self) -> None:
        self.sample_now()
