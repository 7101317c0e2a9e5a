"""The Temporal SDK's metrics on the process's one `/metrics`, through a `MetricBuffer`.

The SDK's core records its metrics (task latencies, slots, sticky cache, polls) and whatever
workflows record through `workflow.metric_meter()` (dropped on replay, so a replayed turn is
never counted twice) into a buffer; `SdkMetricsBridge` drains it into prometheus_client.

Why this bridge is hand-written: the SDK's alternative, `PrometheusConfig`, serves its own
HTTP endpoint on a second port with none of Baton's metrics, no token and no health paths, and
temporalio's contrib `MetricsExporter` feeds OpenTelemetry, not prometheus_client. No library
moves buffered updates into prometheus_client; it is a few dozen lines:
* counters arrive as deltas, gauges as the latest value, histograms as single observations;
* `baton_*` names go to `runtime.baton_metrics` with their declared labels only (the SDK's
  namespace/task_queue/workflow_type attributes are dropped, so a series never depends on
  which process type recorded it);
* other names keep every attribute as a label; durations (unit "s") get `_seconds`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from temporalio.runtime import (
    BUFFERED_METRIC_KIND_COUNTER,
    BUFFERED_METRIC_KIND_GAUGE,
    BufferedMetricUpdate,
    MetricBuffer,
    MetricBufferDurationFormat,
    Runtime,
    TelemetryConfig,
)

from contracts.metrics import METRICS
from runtime import baton_metrics
from runtime.logs import sdk_telemetry, use_sdk_runtime

#: Updates the buffer holds between drains. A scrape drains it, and so does a background tick
#: every `DRAIN_SECONDS` (see `runtime.ops_http`): a busy worker records a few thousand a second.
BUFFER_SIZE = 200_000
DRAIN_SECONDS = 1.0
#: SDK latencies span sub-millisecond replays to minutes-long polls.
SDK_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class SdkMetricsBridge(Collector):
    """A prometheus_client collector fed by a Temporal runtime's metric buffer."""

    def __init__(self, buffer: MetricBuffer) -> None:
        self.buffer = buffer
        self._lock = threading.Lock()
        #: One prometheus_client metric per (name, label names): the SDK may record one name
        #: with different attribute sets, which a single prometheus_client metric cannot hold.
        self._metrics: dict[tuple[str, tuple[str, ...]], MetricWrapperBase] = {}

    def drain(self) -> None:
        """Move every buffered update into Prometheus metrics."""
        with self._lock:
            for update in self.buffer.retrieve_updates():
                self._apply(update)

    def _apply(self, update: BufferedMetricUpdate) -> None:
        metric, value = update.metric, update.value
        labels = {key: _label(val) for key, val in update.attributes.items()}
        if metric.name in METRICS:
            kind = METRICS[metric.name][0]
            if kind == "counter":
                baton_metrics.count(metric.name, value, **labels)
            elif kind == "gauge":
                baton_metrics.set_gauge(metric.name, value, **labels)
            else:
                baton_metrics.observe(metric.name, value, **labels)
            return
        labels.pop("service_name", None)  # always "temporal-core-sdk": says nothing
        names = tuple(sorted(labels))
        target = self._metrics.get((metric.name, names))
        if target is None:
            target = self._metrics[(metric.name, names)] = _new_metric(
                metric.name, metric.kind, metric.unit, metric.description, names
            )
        child: Any = target.labels(*(labels[name] for name in names)) if names else target
        if metric.kind == BUFFERED_METRIC_KIND_COUNTER:
            child.inc(value)
        elif metric.kind == BUFFERED_METRIC_KIND_GAUGE:
            child.set(value)
        else:
            child.observe(value)

    def collect(self) -> Iterable[Metric]:
        self.drain()
        merged: dict[str, Metric] = {}
        with self._lock:
            families = [family for m in self._metrics.values() for family in m.collect()]
        for family in families:
            if family.name in merged:
                merged[family.name].samples.extend(family.samples)
            else:
                merged[family.name] = family
        return list(merged.values())

    def describe(self) -> Iterable[Metric]:
        return []  # the SDK's names are known only once it records them


def _label(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _new_metric(
    name: str, kind: int, unit: str | None, description: str | None, labels: Sequence[str]
) -> MetricWrapperBase:
    help_text = description or name
    if kind == BUFFERED_METRIC_KIND_COUNTER:
        return Counter(name, help_text, labels, registry=None)
    if kind == BUFFERED_METRIC_KIND_GAUGE:
        return Gauge(name, help_text, labels, registry=None)
    if unit == "s" and not name.endswith("_seconds"):
        name += "_seconds"
    return Histogram(name, help_text, labels, registry=None, buckets=SDK_BUCKETS)


def metrics_runtime(telemetry: TelemetryConfig) -> tuple[Runtime, SdkMetricsBridge]:
    """A runtime like `telemetry` that records into a buffer, and the bridge (registered in the
    process's registry) that exposes it. Clients and workers must be built on this runtime."""
    buffer = MetricBuffer(BUFFER_SIZE, MetricBufferDurationFormat.SECONDS)
    runtime = Runtime(telemetry=_with_buffer(telemetry, buffer))
    bridge = SdkMetricsBridge(buffer)
    REGISTRY.register(bridge)
    return runtime, bridge


def _with_buffer(telemetry: TelemetryConfig, buffer: MetricBuffer) -> TelemetryConfig:
    return dataclasses.replace(telemetry, metrics=buffer)


_bridge: SdkMetricsBridge | None = None


def enable_sdk_metrics() -> SdkMetricsBridge:
    """Record the SDK's metrics in this process from now on (clients and workers created after
    this call); idempotent. Without it the SDK records nothing and costs nothing."""
    global _bridge
    if _bridge is None:
        runtime, _bridge = metrics_runtime(sdk_telemetry())
        use_sdk_runtime(runtime)
    return _bridge
