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
from dataclasses import dataclass, field

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


@dataclass
class LayoutFigures:
    """One layout's samples, pooled over rounds."""

    throughputs: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)


async def run_layout(
    address: str,
    floor: Floor,
    new_call: Callable[[], Awaitable[CallSession]],
    processes: list[str],
    text: str,
    callers: int,
    seconds: float,
    figures: LayoutFigures,
) -> str:
    """Start the layout's workers, load them, stop them; the window's steal and load."""
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
        machine = window.summary()
        await end_calls(sessions)
    finally:
        await asyncio.to_thread(stop_all, workers)
    figures.throughputs.append(len(latencies) / elapsed)
    figures.latencies += latencies
    figures.floor += floor_samples
    return machine


async def scale_out(
    address: str,
    floor: Floor,
    new_call: Callable[[], Awaitable[CallSession]],
    text: str,
    *,
    callers: int,
    seconds: float,
    rounds: int,
) -> None:
    print(
        f"scale-out: {callers} callers, each saying a tool turn back to back for {seconds:.0f} s, "
        f"per worker layout; {rounds} rounds, the order reversed each round; floor pinged "
        "alongside the load:"
    )
    results = {label: LayoutFigures() for label, _ in LAYOUTS}
    for round_no in range(rounds):
        order = LAYOUTS if round_no % 2 == 0 else LAYOUTS[::-1]
        for label, processes in order:
            figures = results[label]
            machine = await run_layout(
                address, floor, new_call, processes, text, callers, seconds, figures
            )
            print(
                f"  round {round_no + 1}: {label:<36} {figures.throughputs[-1]:6.1f} turns/s   "
                f"{machine}"
            )
    print(
        f"  {'layout':<36} {'turns/s':>8} {'vs 1st':>7} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'floor p50':>9} {'p95/floor p95':>14} {'turns/floor':>11}"
    )
    first: float | None = None
    for label, figures in results.items():
        throughput = statistics.median(figures.throughputs)
        first = first or throughput
        floor50, floor95 = statistics.median(figures.floor), pct(figures.floor, 0.95)
        # Turns answered while the server answers one bare Update: a machine twice as slow
        # halves the turns/s and doubles the floor, so this moves less than either.
        per_floor = throughput * floor50 / 1000
        print(
            f"  {label:<36} {throughput:>8.1f} {throughput / first:>6.2f}x "
            f"{statistics.median(figures.latencies):>8.1f} {pct(figures.latencies, 0.95):>8.1f} "
            f"{floor50:>9.1f} {ratio(pct(figures.latencies, 0.95), floor95):>14} {per_floor:>11.2f}"
        )
