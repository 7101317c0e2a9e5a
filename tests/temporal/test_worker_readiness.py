"""A serving worker's readiness follows its Temporal server: /readyz stops saying ready when
the frontend no longer answers, though the pollers keep retrying quietly."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from runtime.temporal_client import connect
from workers import worker
from workers.tuning import WorkerTuning
from workers.worker import ServingState, run_workers


async def test_a_worker_whose_server_is_gone_is_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "SERVER_CHECK_EVERY", timedelta(milliseconds=200))
    server = EmbeddedTemporal(DevServerOptions(db_filename=tmp_path / "temporal.sqlite3"))
    await server.astart()
    stop = asyncio.Event()
    state = ServingState()
    try:
        client = await connect(server.address)
        serving = asyncio.create_task(
            run_workers(client, ["tools"], stop, tuning=WorkerTuning(drain_seconds=1), state=state)
        )
        async with asyncio.timeout(30):
            while not state.is_ready():
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # a few health checks answered: still ready
        assert state.is_ready() and state.server_reachable
        await asyncio.to_thread(server.stop)
        async with asyncio.timeout(30):
            while state.is_ready():
                await asyncio.sleep(0.05)
        assert state.running and not state.draining and not state.server_reachable
    finally:
        stop.set()
        await asyncio.to_thread(server.stop)
    async with asyncio.timeout(60):
        await serving
