"""Benchmark `baton audit report` on a long call; prints figures, asserts nothing.

    python -m benchmarks.bench_audit [--turns 500] [--bundle FILE] [--keep FILE]

Records one call of `--turns` caller turns on an embedded dev server with in-process workers
(the offline model: two handoffs, then tool turns with the Concierge), stops the workers and
exports its bundle (or reads `--bundle`). Then, with no worker running, measures reading the
bundle file into a finished report in each format: wall seconds, CPU seconds and turns per
second of CPU (per core), next to two baselines from the same run: reading the bundle file
(JSON), the floor of any reader, and the SDK's `WorkflowHistory.from_json` over its runs (what
a reader built on the Replayer's input pays before it reads one event).
The goal: a 500-turn call reads into a report in under 2 s on a 2-core machine. Each figure
carries the machine's load and CPU steal while it was taken (the machine may be shared).
Loopback only; the recording is bounded in time and the server stops with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from audit.bundle import CallBundle, load_call, write_bundle
from audit.report import FORMATS, Format, render
from audit.timeline import read_timeline
from benchmarks.long_call import record_call
from benchmarks.machine import MachineWindow
from runtime.logs import configure_logging

REPEATS = 3


async def best(job: Callable[[], Awaitable[object]]) -> tuple[float, float, str]:
    """The least wall and CPU seconds of `REPEATS` runs of `job` (the machine is shared), and
    the machine's steal and load over them."""
    walls, cpus = [], []
    window = MachineWindow()
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        await job()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), window.summary()


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

    file_wall, file_cpu, load = await best(read_file)
    print(
        f"{'baseline: read the bundle file':<34} {file_wall:6.2f} s wall {file_cpu:6.2f} s CPU  "
        f"{load}"
    )
    base_wall, base_cpu, load = await best(sdk_parse)
    print(
        f"{'baseline: SDK WorkflowHistory parse':<34} {base_wall:6.2f} s wall "
        f"{base_cpu:6.2f} s CPU  {load}"
    )
    for fmt in FORMATS:

        async def report(fmt: Format = fmt) -> None:
            render(await read_timeline(await load_call(str(path))), fmt)

        wall, cpu, load = await best(report)
        print(
            f"{'report --format ' + fmt:<34} {wall:6.2f} s wall {cpu:6.2f} s CPU  "
            f"{turns / cpu:7.0f} turns/s per core  ×{cpu / file_cpu:.1f} the file read, "
            f"×{cpu / base_cpu:.2f} the SDK parse  {load}"
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
