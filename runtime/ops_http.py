"""The operations port of a worker or gateway process (`--metrics-port`): one aiohttp server.

* ``GET /metrics``: Prometheus text from the process's registry (Baton's metrics, the
  Temporal SDK's through `runtime.sdk_metrics`, and prometheus_client's process metrics).
  With `BATON_METRICS_TOKEN` set it needs ``Authorization: Bearer <token>``.
* ``GET /healthz``: the process is alive (the event loop answers).
* ``GET /readyz``: the owner's readiness callable says yes (a worker: connected and polling;
  a gateway: accepting calls). A draining process turns it false, so traffic moves away.

The health paths answer only "ok"/"ready"/"not ready": open to a load balancer, they reveal
nothing. Off loopback the port requires a token, as every port Baton opens authenticates.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from runtime.sdk_metrics import DRAIN_SECONDS, SdkMetricsBridge
from runtime.settings import settings

log = structlog.get_logger("baton.ops")

Readiness = Callable[[], bool]


class OpsConfigError(ValueError):
    """The metrics port cannot be served as asked (the message says what to set)."""


@dataclass
class OpsServer:
    """A running operations server; `close()` stops it."""

    runner: web.AppRunner
    port: int
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.runner.cleanup()


def metrics_port(flag: int | None) -> int | None:
    """`--metrics-port`, else `BATON_METRICS_PORT`, else None (no operations port)."""
    if flag is not None:
        return flag
    text = settings().metrics_port
    if text is None:
        return None
    try:
        port = int(text)
    except ValueError:
        raise OpsConfigError(f"BATON_METRICS_PORT must be a port number, not {text!r}") from None
    if not 0 <= port <= 65535:
        raise OpsConfigError(f"BATON_METRICS_PORT must be 0-65535, not {port}")
    return port


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def require_token_off_loopback(host: str) -> None:
    """Refuse (OpsConfigError) to serve metrics off loopback without a token."""
    if settings().metrics_token is None and not _is_loopback(host):
        raise OpsConfigError(
            f"the metrics port on {host} would be open to anyone: set BATON_METRICS_TOKEN "
            "(Prometheus sends it with its `authorization` scrape option), or use "
            "--metrics-host 127.0.0.1"
        )


class _Routes:
    def __init__(self, ready: Readiness, token: str | None, registry: CollectorRegistry) -> None:
        self.ready = ready
        self.token = token
        self.registry = registry

    async def metrics(self, request: web.Request) -> web.Response:
        if self.token is not None:
            presented = request.headers.get("Authorization", "")
            expected = f"Bearer {self.token}"
            if not hmac.compare_digest(presented.encode(), expected.encode()):
                return web.Response(
                    status=401,
                    text="a metrics token is required (Authorization: Bearer TOKEN)\n",
                    headers={"WWW-Authenticate": "Bearer"},
                )
        # Collecting drains the SDK's buffer and walks every series: off the event loop.
        body = await asyncio.to_thread(generate_latest, self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(self, request: web.Request) -> web.Response:
        try:
            ready = self.ready()
        except Exception:
            log.exception("readiness check failed")
            ready = False
        if ready:
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready\n")


async def start_ops_server(
    host: str,
    port: int,
    ready: Readiness,
    *,
    bridge: SdkMetricsBridge | None = None,
    registry: CollectorRegistry = REGISTRY,
) -> OpsServer:
    """Serve /metrics, /healthz and /readyz on `host:port` (0 picks a free port)."""
    require_token_off_loopback(host)
    routes = _Routes(ready, settings().metrics_token, registry)
    app = web.Application()
    app.router.add_get("/metrics", routes.metrics)
    app.router.add_get("/healthz", routes.healthz)
    app.router.add_get("/readyz", routes.readyz)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as error:
        await runner.cleanup()
        raise OpsConfigError(f"cannot serve metrics on {host}:{port}: {error.strerror}") from error
    server = OpsServer(runner, int(runner.addresses[0][1]))
    if bridge is not None:
        server._tasks.append(asyncio.create_task(_drain_forever(bridge)))
    log.info("metrics and health served", address=f"http://{host}:{server.port}/metrics")
    return server


async def _drain_forever(bridge: SdkMetricsBridge) -> None:
    """Keep the SDK's buffer from filling between scrapes (a full buffer drops updates)."""
    while True:
        await asyncio.sleep(DRAIN_SECONDS)
        await asyncio.to_thread(bridge.drain)
