"""Baton's own Prometheus metrics (contracts.metrics names them), in the process's registry.

Activities and the gateway record here directly; workflows record through the SDK's
replay-safe meter and `runtime.sdk_metrics` moves those records here, so a worker and a
gateway sharing one process (`baton dev`) expose each metric once. Recording costs a lock and
an addition, so it stays on whether or not `/metrics` is served.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from contracts.metrics import METRICS, TURN_STAGE_SECONDS, Stage

#: Turn stages run from tens of milliseconds (a tool) to seconds (a slow model): the buckets
#: are dense where the caller notices (0.2-2 s) and stop at the 45 s a voice turn may take.
STAGE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 45.0)


def _build(registry: CollectorRegistry) -> dict[str, MetricWrapperBase]:
    built: dict[str, MetricWrapperBase] = {}
    for name, (kind, labels, help_text) in METRICS.items():
        if kind == "counter":
            built[name] = Counter(name, help_text, labels, registry=registry)
        elif kind == "gauge":
            built[name] = Gauge(name, help_text, labels, registry=registry)
        else:
            built[name] = Histogram(
                name, help_text, labels, registry=registry, buckets=STAGE_BUCKETS
            )
    return built


_METRICS = _build(REGISTRY)


def label_values(name: str, labels: dict[str, str]) -> list[str]:
    """The values of `name`'s declared labels, in order; a label not given is ""."""
    return [str(labels.get(label, "")) for label in METRICS[name][1]]


def count(name: str, amount: float = 1.0, **labels: str) -> None:
    """Add to a Baton counter."""
    counter = _METRICS[name]
    assert isinstance(counter, Counter), f"{name} is not a counter"
    counter.labels(*label_values(name, labels)).inc(amount)


def gauge(name: str, **labels: str) -> Gauge:
    """One series of a Baton gauge, to `inc()`/`dec()`."""
    metric = _METRICS[name]
    assert isinstance(metric, Gauge), f"{name} is not a gauge"
    child: Gauge = metric.labels(*label_values(name, labels))
    return child


def observe(name: str, value: float, **labels: str) -> None:
    """Record one value of a Baton histogram."""
    histogram = _METRICS[name]
    assert isinstance(histogram, Histogram), f"{name} is not a histogram"
    histogram.labels(*label_values(name, labels)).observe(value)


def set_gauge(name: str, value: float, **labels: str) -> None:
    gauge(name, **labels).set(value)


def observe_stage(stage: Stage, seconds: float) -> None:
    observe(TURN_STAGE_SECONDS, seconds, stage=stage)


@contextmanager
def timed_stage(stage: Stage) -> Iterator[None]:
    """Observe how long the block took as `stage`, if it finished without an error."""
    started = time.monotonic()
    yield
    observe_stage(stage, time.monotonic() - started)
