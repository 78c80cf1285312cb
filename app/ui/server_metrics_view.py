"""The memory view of a remote backend: what the server says about its KV cache and queue
(vLLM's Prometheus /metrics), or, plainly, that it says nothing. Draws what it receives.
"""

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QProgressBar, QVBoxLayout, QWidget


class ServerMetricsView(QWidget):
    """Shows ServerMetrics readings for one server. `status_text()` is the visible text."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("serverMetrics")
        self.title = QLabel(f"<b>{self.remote_server_text()}</b>")
        self.title.setObjectName("serverTitle")
        self.title.setWordWrap(True)
        self.kv_bar = QProgressBar()
        self.kv_bar.setObjectName("serverKvBar")
        self.kv_bar.setRange(0, 1000)
        self.kv_bar.setTextVisible(False)
        self.status = QLabel(self.tr("Waiting for the server's first reading…"))
        self.status.setObjectName("serverStatus")
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # the server's reason shows literally
        self.status.setWordWrap(True)
        self.note = QLabel(self.tr("The model runs on the server; the memory figures below are this computer's."))
        self.note.setObjectName("serverNote")  # muted, from the themed stylesheet
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 6)
        layout.addWidget(self.title)
        layout.addWidget(self.kv_bar)
        layout.addWidget(self.status)
        layout.addWidget(self.note)
        self.kv_bar.setVisible(False)

    def set_server(self, display: str) -> None:
        """`display`: "model @ host:port"; resets to waiting for a reading."""
        self.title.setText(f"<b>{html.escape(self.remote_server_text())}</b> · {html.escape(display)}")
        self.kv_bar.setVisible(False)
        self.status.setText(self.tr("Waiting for the server's first reading…"))

    def show_metrics(self, metrics) -> None:
        """Draw one app.engine.remote.server_metrics.ServerMetrics."""
        if not metrics.available:
            self.kv_bar.setVisible(False)
            self.status.setText(self._unavailable_text(metrics))
            return
        parts = []
        if metrics.kv_cache_usage is not None:
            self.kv_bar.setValue(round(metrics.kv_cache_usage * 1000))
            parts.append(self.tr("KV cache {0} in use ({1})").format(f"{metrics.kv_cache_usage:.1%}",
                                                                     metrics.kv_metric))
        else:
            parts.append(self.tr("KV cache usage not reported"))
        self.kv_bar.setVisible(metrics.kv_cache_usage is not None)
        if metrics.requests_running is not None:
            parts.append(self.tr("{0} running").format(metrics.requests_running))
        if metrics.requests_waiting is not None:
            parts.append(self.tr("{0} waiting").format(metrics.requests_waiting))
        self.status.setText(" · ".join(parts))

    def _unavailable_text(self, metrics) -> str:
        """Why there is no reading, in the window's language (trial 15: English in the Korean panel);
        a failed request's error ("no-reading") stays as the client wrote it."""
        if metrics.cause == "no-endpoint":
            return self.tr("The server reports no memory figures (it has no /metrics endpoint).")
        if metrics.cause == "no-figures":
            return self.tr("The server's /metrics has no KV-cache or queue figures (not a vLLM server?).")
        reason = metrics.reason.removeprefix("no reading: ")
        return self.tr("No reading: {0}").format(reason if reason.endswith((".", "?", "!")) else reason + ".")

    def remote_server_text(self) -> str:
        return self.tr("Remote server")

    def status_text(self) -> str:
        return self.status.text()
