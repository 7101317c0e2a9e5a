"""The bare Temporal floor inside another bench: an Update running one no-op activity, on the
same server, measured interleaved with the figures it is the yardstick for.

A Baton turn is an Update that runs activities, so nothing on that server can answer faster
than this; a figure divided by the floor measured beside it says what Baton adds, in a unit
that travels between machines better than milliseconds do (see benchmarks/bench_temporal_floor
for the floor on its own). The worker is in the bench's process and unsandboxed, as there.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

from temporalio.client import Client, WorkflowHandle
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from benchmarks.bench_temporal_floor import FloorWorkflow, noop


class Floor:
    """One floor workflow kept open for the bench's whole run; `ping` is one floor sample."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.task_queue = f"floor-{uuid.uuid4()}"
        self.worker = Worker(
            client,
            task_queue=self.task_queue,
            workflows=[FloorWorkflow],
            activities=[noop],
            workflow_runner=UnsandboxedWorkflowRunner(),
            sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
            graceful_shutdown_timeout=timedelta(seconds=1),
        )
        self._running: asyncio.Task[None] | None = None
        self._handle: WorkflowHandle[FloorWorkflow, int] | None = None

    async def start(self) -> None:
        self._running = asyncio.create_task(self.worker.run())
        self._handle = await self.client.start_workflow(
            FloorWorkflow.run, id=f"floor-{uuid.uuid4()}", task_queue=self.task_queue
        )
        for _ in range(10):  # warm: the worker has the workflow cached
            await self.ping()

    async def ping(self) -> float:
        """One Update with its no-op activity, in ms."""
        assert self._handle is not None, "start() first"
        started = time.perf_counter()
        await self._handle.execute_update(FloorWorkflow.ping)
        return (time.perf_counter() - started) * 1000

    async def sample(self, count: int) -> list[float]:
        return [await self.ping() for _ in range(count)]

    async def stop(self) -> None:
        if self._handle is not None:
            await self._handle.signal(FloorWorkflow.finish)
        await self.worker.shutdown()
        if self._running is not None:
            await self._running


def ratio(value: float, floor: float) -> str:
    """`value` as a multiple of the floor, e.g. '1.3x floor'."""
    return f"{value / floor:.2f}x floor" if floor > 0 else "n/a"


async def floor_throughput(floor: Floor, workflows: int = 8, updates: int = 25) -> float:
    """Floor Updates per second with `workflows` workflows pinged at once, `updates` each."""
    handles = [
        await floor.client.start_workflow(
            FloorWorkflow.run, id=f"floor-{uuid.uuid4()}", task_queue=floor.task_queue
        )
        for _ in range(workflows)
    ]

    async def pings(handle: WorkflowHandle[FloorWorkflow, int], count: int) -> None:
        for _ in range(count):
            await handle.execute_update(FloorWorkflow.ping)

    await asyncio.gather(*(pings(h, 1) for h in handles))  # warm every one
    started = time.perf_counter()
    await asyncio.gather(*(pings(h, updates) for h in handles))
    elapsed = time.perf_counter() - started
    for handle in handles:
        await handle.signal(FloorWorkflow.finish)
    return workflows * updates / elapsed
