"""The call bench's scale-out step: the same closed-loop load on four worker layouts.

Each caller says a tool turn, waits for the reply, and says the next at once, for a fixed
time; throughput is turns answered per second and latency is each turn's, with the bare
Temporal floor pinged beside the load (same server, same moment) as the yardstick. Layouts:
every queue in one process, in two processes, and the `calls` queue split from the activity
queues with one and with two processes each. Text calls use no speech, so the activity
processes serve `llm,tools` (a speech worker would only load its model).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from temporalio.client import Client

from baton.call_client import CallSession
from benchmarks.floor import Floor, ratio
from benchmarks.machine import MachineWindow
from benchmarks.stats import pct
from benchmarks.worker_processes import WorkerProcess, stop_all

LAYOUTS: list[tuple[str, list[str]]] = [
    ("1 process: calls,llm,tools", ["calls,llm,tools"]),
    ("2 processes: calls,llm,tools x2", ["calls,llm,tools"] * 2),
    ("split 1+1: calls | llm,tools", ["calls", "llm,tools"]),
    ("split 2+2: calls x2 | llm,tools x2", ["calls", "calls", "llm,tools", "llm,tools"]),
]
#: A closed call reaches its worker as a last workflow task; the next layout starts clean.
CLOSE_TIMEOUT = 120.0


async def pinging(floor: Floor, until: float, samples: list[float]) -> None:
    """Floor samples one after another until `until` (monotonic)."""
    while time.monotonic() < until:
        samples.append(await floor.ping())


async def closed_loop(
    sessions: list[CallSession], text: str, seconds: float
) -> tuple[list[float], float]:
    """Every session says `text` back to back for `seconds`; (latencies ms, elapsed s)."""
    latencies: list[float] = []
    started = time.monotonic()
    deadline = started + seconds

    async def caller(session: CallSession) -> None:
        while time.monotonic() < deadline:
            begun = time.perf_counter()
            await session.say(text)
            latencies.append((time.perf_counter() - begun) * 1000)

    await asyncio.gather(*(caller(s) for s in sessions))
    return latencies, time.monotonic() - started


async def end_calls(sessions: list[CallSession]) -> None:
    """Hang up and wait until every call has closed (its worker has let it go)."""
    await asyncio.gather(*(s.hang_up() for s in sessions))
    async with asyncio.timeout(CLOSE_TIMEOUT):
        await asyncio.gather(*(s.handle.result() for s in sessions))


async def scale_out(
    address: str,
    client: Client,
    floor: Floor,
    new_call: Callable[[], Awaitable[CallSession]],
    text: str,
    callers: int,
    seconds: float,
) -> None:
    print(
        f"scale-out: {callers} callers, each saying a tool turn back to back for {seconds:.0f} s, "
        "per worker layout (floor pinged alongside):"
    )
    print(
        f"  {'layout':<36} {'turns/s':>8} {'vs 1st':>7} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'floor p95':>9} {'p95/floor p95':>14}"
    )
    first: float | None = None
    for label, processes in LAYOUTS:
        workers: list[WorkerProcess] = []
        try:
            for queues in processes:
                workers.append(await asyncio.to_thread(WorkerProcess, address, queues))
            sessions = list(await asyncio.gather(*(new_call() for _ in range(callers))))
            await closed_loop(sessions, text, 2.0)  # warm: every call cached where it lives
            window = MachineWindow()
            floor_samples: list[float] = []
            pinger = asyncio.create_task(pinging(floor, time.monotonic() + seconds, floor_samples))
            latencies, elapsed = await closed_loop(sessions, text, seconds)
            await pinger
            await end_calls(sessions)
        finally:
            await asyncio.to_thread(stop_all, workers)
        throughput = len(latencies) / elapsed
        first = first or throughput
        floor95 = pct(floor_samples, 0.95)
        print(
            f"  {label:<36} {throughput:>8.1f} {throughput / first:>6.2f}x "
            f"{statistics.median(latencies):>8.1f} {pct(latencies, 0.95):>8.1f} "
            f"{floor95:>9.1f} {ratio(pct(latencies, 0.95), floor95):>14}   {window.summary()}"
        )
