"""Short jobs off the GUI thread: plain functions run on a small QThreadPool, each answered by a
signal that carries its ticket, so whoever asked can tell a current answer from a stale one.

For work of milliseconds to seconds that touches no Qt object: a GGUF header and a fit plan for
the open-model dialog (the first one imports gguf and transformers' config classes: ~2 s on two
cores), a document's text. The generation worker keeps the model; nothing here may touch it.
"""

import functools
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, Signal

log = logging.getLogger(__name__)


class BackgroundJobs(QObject):
    """Runs functions on its own pool of `threads` threads; submit() returns the job's ticket.

    Signals (emitted in a pool thread; receivers in the GUI thread get them queued):
        job_finished(int ticket, object result): the function's return value.
        job_failed(int ticket, str reason): it raised; reason is one line ("ValueError: …"),
            the traceback goes to the log.
        job_progressed(int ticket, float fraction): what a job given ``progress=True`` reports
            through its ``progress(fraction)`` argument (0..1), at most every PROGRESS_INTERVAL_S.
    A receiver that is deleted stops receiving (Qt disconnects it); shutdown() before this
    object goes, so no job outlives it.
    """

    job_finished = Signal(int, object)
    job_failed = Signal(int, str)
    job_progressed = Signal(int, float)

    def __init__(self, threads: int = 1, parent=None):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max(1, threads))
        self._tickets = itertools.count(1)

    def submit(self, function: Callable[..., Any], *args, progress: bool = False, **kwargs) -> int:
        """Queue ``function(*args, **kwargs)`` and return its ticket (1, 2, …; GUI thread only).
        progress: pass ``progress=callable(fraction)`` to the function, reported on job_progressed."""
        ticket = next(self._tickets)
        if progress:
            kwargs["progress"] = _Throttled(functools.partial(self.job_progressed.emit, ticket))
        self._pool.start(functools.partial(self._run, ticket, function, args, kwargs))
        return ticket

    def _run(self, ticket: int, function: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        try:
            result = function(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure is the asker's to show, in one line
            log.exception("background job %d (%s) failed", ticket, getattr(function, "__qualname__", function))
            first = (str(exc).strip().splitlines() or [""])[0]
            self.job_failed.emit(ticket, f"{type(exc).__name__}: {first}" if first else type(exc).__name__)
            return
        self.job_finished.emit(ticket, result)

    def shutdown(self) -> None:
        """Drop the jobs not started and wait for the running ones (each is short)."""
        self._pool.clear()
        self._pool.waitForDone()



PROGRESS_INTERVAL_S = 0.1
"""The least time between two reports passed on (10 Hz): a job that reports per item (a 1,200-page
PDF, per page) queued a signal and a chip repaint per item, and the GUI thread ran them back to
back (new-user trial: the window froze 1.8 s while such a PDF was read)."""


class _Throttled:
    """Passes on the first fraction, then one at least PROGRESS_INTERVAL_S after the last passed on,
    and the end (1.0) always. Called from the job's thread."""

    def __init__(self, report: Callable[[float], None]):
        self._report, self._last_at = report, None

    def __call__(self, fraction: float) -> None:
        now = time.monotonic()
        if self._last_at is None or now - self._last_at >= PROGRESS_INTERVAL_S or fraction >= 1.0:
            self._last_at = now
            self._report(fraction)
