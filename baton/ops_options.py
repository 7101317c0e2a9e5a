"""`--metrics-port` and `--metrics-host` for `baton worker` and `baton gateway`, and what they
start: traces (when OTEL_EXPORTER_OTLP_ENDPOINT is set), the SDK's metrics, the ops server."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from registries.errors import BatonError
from runtime.ops_http import (
    OpsConfigError,
    OpsServer,
    Readiness,
    metrics_port,
    require_token_off_loopback,
    start_ops_server,
)
from runtime.sdk_metrics import SdkMetricsBridge, enable_sdk_metrics
from runtime.tracing import configure_tracing


def add_metrics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve /metrics, /healthz and /readyz on this port (default $BATON_METRICS_PORT; "
        "off when neither is set)",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="listen host of the metrics port (off loopback, BATON_METRICS_TOKEN is required)",
    )


@dataclass(frozen=True)
class OpsPlan:
    host: str
    port: int
    bridge: SdkMetricsBridge


def prepare_observability(args: argparse.Namespace, service_name: str) -> OpsPlan | None:
    """Before any Temporal client exists (they pick up the tracing interceptor and the metrics
    runtime when they connect): turn traces on if configured, check the metrics options and
    start recording the SDK's metrics. None when no metrics port is asked for."""
    configure_tracing(service_name)
    try:
        port = metrics_port(args.metrics_port)
        if port is None:
            return None
        require_token_off_loopback(args.metrics_host)
    except OpsConfigError as error:
        raise BatonError(str(error)) from error
    return OpsPlan(args.metrics_host, port, enable_sdk_metrics())


@asynccontextmanager
async def serving_ops(plan: OpsPlan | None, ready: Readiness) -> AsyncIterator[OpsServer | None]:
    """The ops server for the block, if a metrics port was asked for."""
    if plan is None:
        yield None
        return
    try:
        server = await start_ops_server(plan.host, plan.port, ready, bridge=plan.bridge)
    except OpsConfigError as error:
        raise BatonError(str(error)) from error
    print(f"metrics and health on http://{plan.host}:{server.port}/metrics", flush=True)
    try:
        yield server
    finally:
        await server.close()
