"""Server telemetry for the remote backend: reads the server's Prometheus `/metrics` about once a
second in its own thread (an HTTP request may take up to its timeout; the GUI thread never
waits on it) and hands each reading to the GUI as a frozen ServerMetrics.
"""

import logging
from dataclasses import replace

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from app.core.secrets import load_api_key

log = logging.getLogger(__name__)

METRICS_TIMEOUT_S = 3.0  # a reading older than the next one is worthless: keep requests short


class _Poller(QObject):
    """Lives in the monitor's thread; owns the HTTP client and the timer."""

    sampled = Signal(object)
    watch_requested = Signal(object)
    stop_requested = Signal()

    def __init__(self, api_key_lookup, interval_ms: int, transport):
        super().__init__()
        self._lookup = api_key_lookup
        self._interval_ms = interval_ms
        self._transport = transport
        self._client = None
        self._timer: QTimer | None = None
        self.watch_requested.connect(self._on_watch_requested)
        # blocking: at shutdown the timer is stopped in its own thread before the thread ends
        self.stop_requested.connect(self._on_stop_requested, Qt.ConnectionType.BlockingQueuedConnection)

    @Slot(object)
    def _on_watch_requested(self, remote) -> None:
        from app.engine.remote.openai_client import OpenAIClient

        self._on_stop_requested()
        if remote is None:
            return
        try:  # an unusable URL: no polling (httpx raised InvalidURL once a second; a send says why)
            remote.check()
        except ValueError:  # BackendSettingsError
            return
        short = replace(remote, connect_timeout_s=min(remote.connect_timeout_s, METRICS_TIMEOUT_S),
                        read_timeout_s=METRICS_TIMEOUT_S)
        self._client = OpenAIClient(short, self._lookup(remote.base_url), self._transport)
        if self._timer is None:  # created here: a QTimer belongs to the thread that made it
            self._timer = QTimer(self)
            self._timer.setObjectName("serverMetrics")
            self._timer.timeout.connect(self._on_timeout)
        self._timer.start(self._interval_ms)
        self._on_timeout()

    @Slot()
    def _on_stop_requested(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        if self._client is not None:
            self._client.close()
            self._client = None

    @Slot()
    def _on_timeout(self) -> None:
        from app.engine.remote.server_metrics import sample_server

        if self._client is not None:
            self.sampled.emit(sample_server(self._client))


class ServerMonitor(QObject):
    """Reads a remote server's metrics while a remote conversation is open.

    Signals:
        metrics_sampled(object): a ServerMetrics, every `interval_ms` while watching (an
            unavailable reading says why: no /metrics, unreachable, …).

    `watch(remote_settings)` starts (or retargets) the polling, `watch(None)` stops it;
    `shutdown()` joins the thread (call before the application quits).
    """

    metrics_sampled = Signal(object)

    def __init__(self, api_key_lookup=load_api_key, interval_ms: int = 1000, transport=None, parent=None):
        super().__init__(parent)
        self._thread = QThread(self)  # joined by shutdown(), like the generation worker's thread
        self._thread.setObjectName("serverMetrics")
        self._poller = _Poller(api_key_lookup, interval_ms, transport)
        self._poller.moveToThread(self._thread)
        self._poller.sampled.connect(self.metrics_sampled)
        self._watching = None
        self._thread.start()

    @property
    def watching(self):
        """The RemoteSettings being polled, or None."""
        return self._watching

    def watch(self, remote) -> None:
        """Poll `remote` (RemoteSettings) from now on; None stops. Same settings: no change."""
        if remote == self._watching:
            return
        self._watching = remote
        self._poller.watch_requested.emit(remote)

    def shutdown(self) -> None:
        if self._thread.isRunning():
            self._poller.stop_requested.emit()
            self._thread.quit()
            self._thread.wait(5000)
