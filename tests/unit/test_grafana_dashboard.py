"""The Grafana dashboard compose provisions: it queries metrics Baton really exposes, through
the datasource the provisioning file defines, with the panels an on-call opens first."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from contracts.metrics import METRICS

GRAFANA = Path(__file__).resolve().parents[2] / "deploy" / "grafana"
#: The SDK's metrics the dashboard relies on (seen on a worker's /metrics in
#: tests/workflow/test_metrics_endpoint.py and in the SDK's core).
SDK_METRICS = {
    "temporal_sticky_cache_size",
    "temporal_activity_execution_failed",
    "temporal_workflow_task_execution_failed",
    "temporal_activity_schedule_to_start_latency_seconds",
    "temporal_workflow_task_schedule_to_start_latency_seconds",
    "temporal_worker_task_slots_used",
}
SUFFIXES = re.compile(r"_(total|bucket|count|sum)$")


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((GRAFANA / "dashboards" / "baton.json").read_text())
    return loaded


def queries() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]


def test_every_metric_queried_is_one_baton_or_the_sdk_exposes() -> None:
    names = {
        SUFFIXES.sub("", name)
        for expr in queries()
        for name in re.findall(r"\b((?:baton|temporal)_[a-z_]+)", expr)
    }
    assert names, "the dashboard queries nothing"
    assert names - set(METRICS) - SDK_METRICS == set()


def test_the_panels_an_on_call_opens_first_are_there() -> None:
    exprs = " ".join(queries())
    assert "baton_active_calls" in exprs
    assert "histogram_quantile(0.5, sum by (le, stage) (rate(baton_turn_stage_seconds" in exprs
    assert "histogram_quantile(0.95, sum by (le, stage) (rate(baton_turn_stage_seconds" in exprs
    assert "sum by (outcome) (rate(baton_handoffs_total" in exprs
    assert "baton_provider_errors_total" in exprs
    assert "by (le, task_queue) (rate(temporal_activity_schedule_to_start_latency" in exprs


def test_panels_use_the_provisioned_datasource() -> None:
    provisioned = yaml.safe_load(
        (GRAFANA / "provisioning" / "datasources" / "prometheus.yaml").read_text()
    )
    uid = provisioned["datasources"][0]["uid"]
    for panel in dashboard()["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == uid, panel["title"]
    providers = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "baton.yaml").read_text())
    assert providers["providers"][0]["options"]["path"]
