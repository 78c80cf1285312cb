"""The remote server's metrics poller (app.workers.server_monitor)."""

import httpx

from app.core.backend_settings import RemoteSettings
from app.workers.server_monitor import ServerMonitor


def test_an_unusable_url_is_not_polled_and_a_usable_one_is(qtbot):
    """New-user re-trial: "http://[::1]x:80/v1" typed in Settings passed the check, and the poller raised
    httpx.InvalidURL once a second: the error dialog filled up, at every start. A URL the check refuses
    is not polled (a send says why); a usable one is."""
    asked = []

    def server(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return httpx.Response(200, text="vllm:num_requests_running 1\n")

    monitor = ServerMonitor(api_key_lookup=lambda _url: "", interval_ms=20, transport=httpx.MockTransport(server))
    samples = []
    monitor.metrics_sampled.connect(samples.append)
    try:
        for url in ("http://[::1]x:80/v1", "http://[::1:9/v1", "http://127.0.0.1\n:9/v1", "http://999.1.1.1:80/v1"):
            monitor.watch(RemoteSettings(url, "m"))
            qtbot.wait(150)
        assert samples == [] and asked == []
        monitor.watch(RemoteSettings("http://gpu-box:8000/v1", "m"))
        qtbot.waitUntil(lambda: len(samples) >= 2, timeout=5000)
        assert asked[0] == "http://gpu-box:8000/metrics"
    finally:
        monitor.watch(None)
        monitor.shutdown()
