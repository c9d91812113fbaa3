"""Layer 4 (external_api): the server's metrics in the Prometheus text format (``GET /metrics``).

- ``lean_dojo_v2_requests_total{route,status}``: requests answered;
- ``lean_dojo_v2_request_seconds{route}``: latency histogram (seconds, from the first byte of
  the request to the response);
- ``lean_dojo_v2_queue_depth{model}``: requests waiting for each model now;
- ``lean_dojo_v2_batch_size{model}``: histogram of the requests each model call served;
- ``lean_dojo_v2_model_calls_total{model}``, ``lean_dojo_v2_rejected_total{model,reason}``
  (``queue_full``, ``deadline``).

Plain counters in one process (the server is one process), no client library: updating one is
a dict lookup on the request path.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


class Histogram:
    """Cumulative-bucket histogram (Prometheus ``le`` semantics)."""

    def __init__(self, buckets: Iterable[float]) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out, running = [], 0
        sep = "," if labels else ""
        for bound, count in zip(self.buckets, self.counts, strict=False):
            running += count
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound:g}"}} {running}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.n}')
        out.append(f"{name}_sum{{{labels}}} {self.total:.6f}")
        out.append(f"{name}_count{{{labels}}} {self.n}")
        return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Everything ``/metrics`` reports. ``queue_depths`` (model → requests waiting) and
    ``rejections`` ((model, reason) → requests shed) are asked when the page is rendered."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], int] = {}
        self.latency: dict[str, Histogram] = {}
        self.batches: dict[str, Histogram] = {}
        self.calls: dict[str, int] = {}
        self.queue_depths: Callable[[], dict[str, int]] = dict
        self.rejections: Callable[[], dict[tuple[str, str], int]] = dict

    def request(self, route: str, status: int, seconds: float) -> None:
        key = (route, status)
        self.requests[key] = self.requests.get(key, 0) + 1
        hist = self.latency.get(route)
        if hist is None:
            hist = self.latency[route] = Histogram(LATENCY_BUCKETS)
        hist.observe(seconds)

    def batch(self, model: str, size: int) -> None:
        self.calls[model] = self.calls.get(model, 0) + 1
        hist = self.batches.get(model)
        if hist is None:
            hist = self.batches[model] = Histogram(BATCH_BUCKETS)
        hist.observe(size)

    def render(self) -> str:
        lines = [
            "# HELP lean_dojo_v2_requests_total Requests answered, by route and status.",
            "# TYPE lean_dojo_v2_requests_total counter",
        ]
        for (route, status), n in sorted(self.requests.items()):
            lines.append(
                f'lean_dojo_v2_requests_total{{route="{_label(route)}",status="{status}"}} {n}'
            )
        lines += [
            "# HELP lean_dojo_v2_request_seconds Request latency in seconds, by route.",
            "# TYPE lean_dojo_v2_request_seconds histogram",
        ]
        for route, hist in sorted(self.latency.items()):
            lines += hist.lines("lean_dojo_v2_request_seconds", f'route="{_label(route)}"')
        lines += [
            "# HELP lean_dojo_v2_queue_depth Requests waiting for each model.",
            "# TYPE lean_dojo_v2_queue_depth gauge",
        ]
        for model, depth in sorted(self.queue_depths().items()):
            lines.append(f'lean_dojo_v2_queue_depth{{model="{_label(model)}"}} {depth}')
        lines += [
            "# HELP lean_dojo_v2_batch_size Requests served by each model call.",
            "# TYPE lean_dojo_v2_batch_size histogram",
        ]
        for model, hist in sorted(self.batches.items()):
            lines += hist.lines("lean_dojo_v2_batch_size", f'model="{_label(model)}"')
        lines += [
            "# HELP lean_dojo_v2_model_calls_total Calls of each model.",
            "# TYPE lean_dojo_v2_model_calls_total counter",
        ]
        for model, n in sorted(self.calls.items()):
            lines.append(f'lean_dojo_v2_model_calls_total{{model="{_label(model)}"}} {n}')
        lines += [
            "# HELP lean_dojo_v2_rejected_total Requests shed before reaching a model.",
            "# TYPE lean_dojo_v2_rejected_total counter",
        ]
        for (model, reason), n in sorted(self.rejections().items()):
            lines.append(
                f'lean_dojo_v2_rejected_total{{model="{_label(model)}",reason="{reason}"}} {n}'
            )
        return "\n".join(lines) + "\n"
