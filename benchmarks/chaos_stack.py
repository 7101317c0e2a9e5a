"""The processes the chaos soak (`benchmarks.bench_chaos`) runs its calls on, and kills.

A chat model on loopback that answers like the banking demo after a model's latency, the
embedded Temporal dev server on a SQLite file, one `baton worker` process per queue (or several
for `calls`), and, for voice calls, a `baton gateway` process; all with a registry copy whose
`block_card` takes a backend's time. Everything started here is stopped on the way out, however
the soak ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from tests.faults.processes import ChildProcess, WorkerFleet
from tests.faults.slow_registry import slow_registry
from tests.faults.voice import GatewayProcess


@dataclass
class ChaosStack:
    server: EmbeddedTemporal
    fleet: WorkerFleet
    model: ChildProcess
    registry: Path
    #: The worker queues running, one process each.
    kinds: tuple[str, ...]
    gateway: GatewayProcess | None = None


@contextlib.asynccontextmanager
async def chaos_stack(
    data: Path,
    logs: Path,
    *,
    kinds: tuple[str, ...],
    voice: bool,
    model_delay_ms: float,
    tool_delay_ms: float,
    lifetime: float,
    warnings: bool,
    calls_workers: int = 1,
) -> AsyncIterator[ChaosStack]:
    """Start it all in `data` (logs in `logs`); `lifetime` bounds the model server's life even
    if this process dies; `warnings` keeps the workers' warnings in their logs; `calls_workers`
    processes share the calls."""
    # Voices at twice the speed: a voice call plays every reply in real time.
    registry = slow_registry(data, delay=tool_delay_ms / 1000, voice_rate="+100%")
    model = ChildProcess(
        ["--delay-ms", str(model_delay_ms), "--lifetime", str(lifetime)],
        module="tests.faults.model_server",
        ready="model server on",
        log=logs / "model.log",
    )
    server = EmbeddedTemporal(
        DevServerOptions(db_filename=data / "temporal.sqlite3", log_file=logs / "temporal.log")
    )
    fleet: WorkerFleet | None = None
    gateway: GatewayProcess | None = None
    try:
        base_url = (await model.ready_async()).rsplit(" ", 1)[1]
        await server.astart()
        fleet = WorkerFleet(
            server.address,
            logs,
            {
                "BATON_REGISTRY": str(registry),
                "BATON_CHAT_PROVIDER": "openai",
                "BATON_OPENAI_BASE_URL": base_url,
                "BATON_OPENAI_API_KEY": "chaos",
                # Kept logs show the warnings too (timeouts, retries); else errors only.
                "BATON_LOG_LEVEL": "WARNING" if warnings else "ERROR",
            },
        )
        await fleet.start(*kinds)
        if calls_workers > 1 and "calls" in kinds:
            await fleet.add_replicas("calls", calls_workers - 1)
        if voice:
            gateway = GatewayProcess(server.address, logs, registry)
            await gateway.start()
        yield ChaosStack(server, fleet, model, registry, kinds, gateway)
    finally:
        if gateway is not None:
            await asyncio.to_thread(gateway.stop)
        if fleet is not None:
            await fleet.stop()
        await server.astop()
        await asyncio.to_thread(model.stop)
