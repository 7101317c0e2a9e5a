"""Measure the Temporal floor under every caller turn; prints figures, asserts nothing.

    python -m benchmarks.bench_temporal_floor [--latency-updates N] [--workflows W]
        [--updates-per-workflow K] [--rounds R]

A caller turn is an Update that runs activities, so the least any turn can cost is an Update
running one no-op activity. This runs that on the embedded dev server twice, stock (`plain`)
and with Baton's tuning (`tuned`), both with a db file: p50/p95 of sequential Updates on one
workflow, and Updates per second with several workflows at once. Rounds alternate the two
servers so drift of the machine hits both alike. The worker is in-process and unsandboxed:
what is measured is the server and the SDK round trip, not workflow code.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from baton.temporal_server import DevServerOptions, EmbeddedTemporal

WARMUP_UPDATES = 20
ROUND_TIMEOUT_S = 60.0


@activity.defn
async def noop() -> None:
    """The cheapest activity there is."""


@workflow.defn(sandboxed=False)
class FloorWorkflow:
    """Answers each `ping` Update after one no-op activity; ends on `finish`."""

    def __init__(self) -> None:
        self.pings = 0
        self.finished = False

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: self.finished and workflow.all_handlers_finished())
        return self.pings

    @workflow.update
    async def ping(self) -> int:
        await workflow.execute_activity(noop, start_to_close_timeout=timedelta(seconds=10))
        self.pings += 1
        return self.pings

    @workflow.signal
    def finish(self) -> None:
        self.finished = True


@dataclass
class Figures:
    """What one server configuration measured, pooled over rounds."""

    latencies_ms: list[float] = field(default_factory=list)
    throughputs: list[float] = field(default_factory=list)
    startups_s: list[float] = field(default_factory=list)

    def percentile(self, q: int) -> float:
        """The q-th percentile of the Update latencies, in ms."""
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[q - 1]


async def ping_many(handle: WorkflowHandle[FloorWorkflow, int], count: int) -> list[float]:
    """Send `count` Updates one after the other; the latency of each, in ms."""
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await handle.execute_update(FloorWorkflow.ping)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def measure_round(tuned: bool, args: argparse.Namespace, figures: Figures) -> None:
    """Start a server, measure latency then throughput on it, stop it."""
    with tempfile.TemporaryDirectory(prefix="baton-bench-") as folder:
        server = EmbeddedTemporal(
            DevServerOptions(db_filename=Path(folder) / "temporal.sqlite3", tuned=tuned)
        )
        started = time.perf_counter()
        await server.astart()
        figures.startups_s.append(time.perf_counter() - started)
        try:
            client = await Client.connect(server.address)
            await asyncio.wait_for(run_load(client, args, figures), ROUND_TIMEOUT_S)
        finally:
            await server.astop()


async def run_load(client: Client, args: argparse.Namespace, figures: Figures) -> None:
    """Sequential Updates on one workflow, then concurrent Updates on several."""
    task_queue = f"bench-{uuid.uuid4()}"
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[FloorWorkflow],
        activities=[noop],
        workflow_runner=UnsandboxedWorkflowRunner(),
        max_cached_workflows=max(100, args.workflows * 2),
        # A worker that died leaves its sticky queue; fall back to any worker after 1 s.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        graceful_shutdown_timeout=timedelta(seconds=1),
    )
    async with worker:
        handles = []
        for _ in range(1 + args.workflows):
            handles.append(
                await client.start_workflow(
                    FloorWorkflow.run, id=f"floor-{uuid.uuid4()}", task_queue=task_queue
                )
            )
        first, rest = handles[0], handles[1:]
        await ping_many(first, WARMUP_UPDATES)
        figures.latencies_ms += await ping_many(first, args.latency_updates)

        await asyncio.gather(*(ping_many(handle, 1) for handle in rest))  # warm every one
        started = time.perf_counter()
        await asyncio.gather(*(ping_many(h, args.updates_per_workflow) for h in rest))
        elapsed = time.perf_counter() - started
        figures.throughputs.append(args.workflows * args.updates_per_workflow / elapsed)

        for handle in handles:
            await handle.signal(FloorWorkflow.finish)
        await asyncio.gather(*(handle.result() for handle in handles))


async def main_async(args: argparse.Namespace) -> dict[str, Figures]:
    """Alternate plain and tuned servers for `rounds` rounds."""
    results = {"plain": Figures(), "tuned": Figures()}
    for round_no in range(args.rounds):
        order = ["plain", "tuned"] if round_no % 2 == 0 else ["tuned", "plain"]
        for name in order:
            print(f"round {round_no + 1}/{args.rounds}: {name} ...", file=sys.stderr, flush=True)
            await measure_round(name == "tuned", args, results[name])
    return results


def report(results: dict[str, Figures], args: argparse.Namespace) -> None:
    """Print the table and the tuned/plain ratios."""
    print(
        f"Update + 1 no-op activity, dev server with db file; {args.latency_updates} sequential "
        f"Updates x {args.rounds} round(s); throughput {args.workflows} workflows x "
        f"{args.updates_per_workflow} Updates; {os.cpu_count()} CPUs"
    )
    print(f"{'server':<8} {'p50 ms':>8} {'p95 ms':>8} {'updates/s':>10} {'start s':>8}")
    for name, fig in results.items():
        print(
            f"{name:<8} {fig.percentile(50):>8.2f} {fig.percentile(95):>8.2f} "
            f"{statistics.mean(fig.throughputs):>10.1f} {statistics.mean(fig.startups_s):>8.2f}"
        )
    plain, tuned = results["plain"], results["tuned"]
    print(
        f"tuned/plain: p50 {tuned.percentile(50) / plain.percentile(50):.2f}x, "
        f"p95 {tuned.percentile(95) / plain.percentile(95):.2f}x, throughput "
        f"{statistics.mean(tuned.throughputs) / statistics.mean(plain.throughputs):.2f}x"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--latency-updates", type=int, default=200)
    parser.add_argument("--workflows", type=int, default=8)
    parser.add_argument("--updates-per-workflow", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    report(asyncio.run(main_async(args)), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
