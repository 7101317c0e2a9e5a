"""The operations port on its own: readiness follows its owner, a bad port setting or an open
port without a token is refused with a sentence, never a traceback."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from runtime.ops_http import OpsConfigError, metrics_port, start_ops_server


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def text_of(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


async def test_readyz_follows_the_owner_and_metrics_serve_the_registry(monkeypatch: Any) -> None:
    monkeypatch.delenv("BATON_METRICS_TOKEN", raising=False)
    registry = CollectorRegistry()
    Counter("ops_test_things", "things", registry=registry).inc(3)
    ready = {"now": False}
    server = await start_ops_server("127.0.0.1", 0, lambda: ready["now"], registry=registry)
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert await asyncio.to_thread(status_of, f"{base}/readyz") == 503
        ready["now"] = True
        assert await asyncio.to_thread(status_of, f"{base}/readyz") == 200
        assert await asyncio.to_thread(status_of, f"{base}/healthz") == 200
        assert "ops_test_things_total 3.0" in await asyncio.to_thread(text_of, f"{base}/metrics")
    finally:
        await server.close()


async def test_a_port_off_loopback_needs_a_token(monkeypatch: Any) -> None:
    monkeypatch.delenv("BATON_METRICS_TOKEN", raising=False)
    with pytest.raises(OpsConfigError, match="BATON_METRICS_TOKEN"):
        await start_ops_server("0.0.0.0", 0, lambda: True)


def test_the_port_setting_is_checked(monkeypatch: Any) -> None:
    monkeypatch.setenv("BATON_METRICS_PORT", "nine")
    with pytest.raises(OpsConfigError, match="must be a port number"):
        metrics_port(None)
    monkeypatch.setenv("BATON_METRICS_PORT", "9464")
    assert metrics_port(None) == 9464
    assert metrics_port(9100) == 9100  # the flag wins
    monkeypatch.delenv("BATON_METRICS_PORT")
    assert metrics_port(None) is None
