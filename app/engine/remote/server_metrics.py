"""What a remote server says about its memory and queue, read from its Prometheus `/metrics`.

vLLM names (docs.vllm.ai "Production Metrics" and docs/design/metrics.md, V1 engine):
`vllm:kv_cache_usage_perc` (gauge, fraction 0–1 of KV-cache blocks in use; called
`vllm:gpu_cache_usage_perc` before V1), `vllm:num_requests_running` and
`vllm:num_requests_waiting` (gauges). A server that exposes none of them (e.g. `transformers
serve`, which has no `/metrics` at all) is reported as such, in words, never as zeros.
"""

import math
import time
from dataclasses import dataclass

# preferred name first; the second is what vLLM before the V1 engine exported
KV_USAGE_METRICS = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
RUNNING_METRIC = "vllm:num_requests_running"
WAITING_METRIC = "vllm:num_requests_waiting"


@dataclass(frozen=True)
class ServerMetrics:
    """One reading of the server. timestamp: `time.monotonic()` seconds.

    available: False when the server reports nothing usable; `reason` says why in one line, and
    `cause` which case it is, for the window to say in its language: "no-endpoint" (no /metrics),
    "no-figures" (no vLLM figures in it), "no-reading" (the request failed: `reason` has the error).
    kv_cache_usage: fraction 0–1 of the server's KV-cache blocks in use (the largest over its
    engines); requests_running / requests_waiting: summed over engines. None = not reported.
    kv_metric: the metric name the usage came from.
    """

    timestamp: float
    available: bool
    reason: str = ""
    kv_cache_usage: float | None = None
    requests_running: int | None = None
    requests_waiting: int | None = None
    kv_metric: str = ""
    cause: str = ""

    @classmethod
    def unavailable(cls, reason: str, cause: str) -> "ServerMetrics":
        return cls(time.monotonic(), False, reason, cause=cause)


def parse_prometheus(text: str) -> dict[str, list[float]]:
    """Sample values by metric name from Prometheus text exposition format 0.0.4
    (https://prometheus.io/docs/instrumenting/exposition_formats/): `name{labels} value [ts]`.
    Comments, blank lines and unparsable values are skipped; one list entry per label set."""
    samples: dict[str, list[float]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, _, rest = line.partition("{")
            rest = rest.rpartition("}")[2]
        else:
            name, _, rest = line.partition(" ")
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if not math.isnan(value):
            samples.setdefault(name.strip(), []).append(value)
    return samples


def metrics_from_text(text: str | None) -> ServerMetrics:
    """ServerMetrics from a `/metrics` body; None (no endpoint) or no vLLM figures → unavailable."""
    if text is None:
        return ServerMetrics.unavailable("the server reports no memory figures (it has no /metrics endpoint)",
                                         "no-endpoint")
    samples = parse_prometheus(text)
    kv_metric = next((name for name in KV_USAGE_METRICS if samples.get(name)), "")
    running, waiting = samples.get(RUNNING_METRIC), samples.get(WAITING_METRIC)
    if not kv_metric and running is None and waiting is None:
        return ServerMetrics.unavailable("the server's /metrics has no KV-cache or queue figures "
                                         "(not a vLLM server?)", "no-figures")
    return ServerMetrics(
        time.monotonic(), True,
        kv_cache_usage=min(max(max(samples[kv_metric]), 0.0), 1.0) if kv_metric else None,
        requests_running=int(sum(running)) if running is not None else None,
        requests_waiting=int(sum(waiting)) if waiting is not None else None,
        kv_metric=kv_metric)


def sample_server(client) -> ServerMetrics:
    """Read `/metrics` through an OpenAIClient; a failed request is an unavailable reading
    whose reason is the client's one-line error (never raises for RemoteError)."""
    from app.engine.remote.errors import RemoteError

    try:
        return metrics_from_text(client.metrics_text())
    except RemoteError as exc:
        return ServerMetrics.unavailable(f"no reading: {exc}", "no-reading")
