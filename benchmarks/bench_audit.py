"""Benchmark `baton audit report` on a long call; prints figures, asserts nothing.

    python -m benchmarks.bench_audit [--turns 500] [--bundle FILE] [--keep FILE]

Records one call of `--turns` caller turns on an embedded dev server with in-process workers
(the offline model: two handoffs, then tool turns with the Concierge), stops the workers and
exports its bundle (or reads `--bundle`). Then, with no worker running, measures reading the
bundle file into a finished report in each format: wall seconds, CPU seconds and turns per
second of CPU (per core), next to two baselines from the same run: reading the bundle file
(JSON), the floor of any reader, and the SDK's `WorkflowHistory.from_json` over its runs (what
a reader built on the Replayer's input pays before it reads one event).
The goal: a 500-turn call reads into a report in under 2 s on a 2-core machine.
Loopback only; the recording is bounded in time and the server stops with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from audit.bundle import CallBundle, export_call, load_call, write_bundle
from audit.report import FORMATS, Format, render
from audit.timeline import read_timeline
from baton.call_client import CallSession
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from contracts.calls import CallInput
from runtime.logs import configure_logging
from runtime.temporal_client import connect
from workers.worker import run_workers

REPEATS = 3
PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
OPENING = [
    "Someone used my card abroad, I think it's fraud",
    "Thanks, the fraud matter is handled, I have another question about my balance",
]
TOOL_TURNS = ["What's my checking balance?", "Show me my recent transactions"]
RECORDING_DEADLINE_S = 900


async def record_call(turns: int) -> CallBundle:
    """A real call of `turns` turns on a fresh embedded server, exported after its workers
    stopped (so nothing but the history is read)."""
    async with EmbeddedTemporal(DevServerOptions()) as server:
        client = await connect(server.address)
        stop = asyncio.Event()
        workers = asyncio.create_task(run_workers(client, ["calls", "llm", "tools"], stop))
        call = CallInput(call_id=f"bench-{uuid.uuid4().hex[:8]}", caller_profile=PROFILE)
        session = CallSession(client, call)
        started = time.perf_counter()
        try:
            await session.start()
            await session.until_greeted()
            for n in range(turns):
                text = OPENING[n] if n < len(OPENING) else TOOL_TURNS[n % len(TOOL_TURNS)]
                await asyncio.wait_for(session.say(text), 60)
                if time.perf_counter() - started > RECORDING_DEADLINE_S:
                    raise TimeoutError(f"recording passed {RECORDING_DEADLINE_S} s at turn {n}")
            await session.hang_up()
            await session.handle.result(follow_runs=True)
        finally:
            stop.set()
            await workers
        print(f"recorded {turns} turns in {time.perf_counter() - started:.1f} s")
        return await export_call(call.call_id, client=client)


async def best(job: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """The least wall and CPU seconds of `REPEATS` runs of `job` (the machine is shared)."""
    walls, cpus = [], []
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        await job()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


async def measure(path: Path) -> None:
    bundle = await load_call(str(path))
    timeline = await read_timeline(bundle)
    turns = len(timeline.turns)
    events = sum(len(run.history.get("events", [])) for run in bundle.runs)
    size_mb = path.stat().st_size / 1e6
    print(f"call {bundle.call_id}: {len(bundle.runs)} run(s), {events} events, {turns} turns")
    print(f"bundle {size_mb:.1f} MB, {len(timeline.items)} timeline items")

    async def read_file() -> None:
        await load_call(str(path))

    async def sdk_parse() -> None:
        (await load_call(str(path))).histories()

    file_wall, file_cpu = await best(read_file)
    print(f"{'baseline: read the bundle file':<34} {file_wall:6.2f} s wall {file_cpu:6.2f} s CPU")
    base_wall, base_cpu = await best(sdk_parse)
    print(
        f"{'baseline: SDK WorkflowHistory parse':<34} {base_wall:6.2f} s wall {base_cpu:6.2f} s CPU"
    )
    for fmt in FORMATS:

        async def report(fmt: Format = fmt) -> None:
            render(await read_timeline(await load_call(str(path))), fmt)

        wall, cpu = await best(report)
        print(
            f"{'report --format ' + fmt:<34} {wall:6.2f} s wall {cpu:6.2f} s CPU  "
            f"{turns / cpu:7.0f} turns/s per core  ×{cpu / file_cpu:.1f} the file read, "
            f"×{cpu / base_cpu:.2f} the SDK parse"
        )
    print(f"goal: under 2 s for 500 turns on 2 cores ({os.cpu_count()} here)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--bundle", type=Path, help="read this bundle instead of recording")
    parser.add_argument("--keep", type=Path, help="also write the recorded bundle here")
    args = parser.parse_args()
    configure_logging("WARNING")
    if args.bundle is not None:
        await measure(args.bundle)
        return
    recorded: CallBundle = await record_call(args.turns)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(args.keep or Path(folder) / "call.bundle.json")
        write_bundle(recorded, path)
        await measure(path)


if __name__ == "__main__":
    asyncio.run(main())
