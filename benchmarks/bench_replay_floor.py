"""The least a replay of a call shaped like Baton's can cost; prints figures, asserts nothing.

    python -m benchmarks.bench_replay_floor [--turns 500] [--runs 3] [--request-bytes 7000]
        [--bundle FILE]

A Baton tool turn is one Update running three activities (model, tool, model), four workflow
tasks. This records `--turns` such turns in `--runs` runs on the embedded dev server, each
activity with a summary and an argument the size of Baton's (`--request-bytes` for the model's
request, the LLM window; 300 for the tool's), through Baton's data converter (pydantic,
encrypted), with a workflow that does nothing else. It then replays them with Temporal's
Replayer in the SDK's stock sandbox, in Baton's runner (workflows.runner) and with no sandbox:
what the SDK and Temporal's core cost per turn with no workflow logic at all. `--bundle FILE`
(kept by `bench_audit_verify --keep`) replays that real call too, the cases taking turns, so the
real workflow's cost over the floor is measured under the same load. CPU time, best of 3, with
the machine's load (it is shared). Loopback only, bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

with workflow.unsafe.imports_passed_through():  # this module is the sandboxed workflow's
    from audit.bundle import load_call
    from baton.temporal_server import DevServerOptions, EmbeddedTemporal
    from benchmarks.machine import MachineWindow
    from runtime.logs import configure_logging
    from runtime.temporal_client import data_converter
    from workflows.call_session import CallSessionWorkflow
    from workflows.runner import workflow_runner

REPEATS = 3
TIMEOUT = timedelta(seconds=10)


@activity.defn
async def model(request: str) -> str:
    """Stands in for `generate_agent_reply`: a large request in, a short reply out."""
    return "Certainly, one moment."


@activity.defn
async def tool(arguments: str) -> str:
    """Stands in for `run_business_tool`."""
    return '{"ok": true}'


@workflow.defn
class FloorCall:
    """Each `turn` Update runs model, tool, model; `finish` ends the call."""

    @workflow.init
    def __init__(self, request_bytes: int) -> None:
        self.finished = False
        self.request = "x" * request_bytes

    @workflow.run
    async def run(self, request_bytes: int) -> None:
        await workflow.wait_condition(lambda: self.finished and workflow.all_handlers_finished())

    @workflow.update
    async def turn(self, text: str) -> str:
        await workflow.execute_activity(
            model, self.request, start_to_close_timeout=TIMEOUT, summary="LLM"
        )
        await workflow.execute_activity(
            tool, "x" * 300, start_to_close_timeout=TIMEOUT, summary="tool"
        )
        return await workflow.execute_activity(
            model, self.request, start_to_close_timeout=TIMEOUT, summary="LLM"
        )

    @workflow.signal
    def finish(self) -> None:
        self.finished = True


async def record(turns: int, runs: int, request_bytes: int) -> list[WorkflowHistory]:
    """`runs` calls of `turns // runs` turns each: like one call's runs, as Baton continues a
    call as new every 4,000 events (a run's replay costs more per turn the longer it is)."""
    server = EmbeddedTemporal(DevServerOptions())
    await server.astart()
    try:
        client = await Client.connect(server.address, data_converter=data_converter())
        queue = f"floor-{uuid.uuid4()}"
        async with Worker(
            client,
            task_queue=queue,
            workflows=[FloorCall],
            activities=[model, tool],
            workflow_runner=workflow_runner(),
        ):
            histories = []
            for _ in range(runs):
                handle = await client.start_workflow(
                    FloorCall.run, request_bytes, id=f"floor-{uuid.uuid4()}", task_queue=queue
                )
                for n in range(turns // runs):
                    await handle.execute_update(FloorCall.turn, f"turn {n}")
                await handle.signal(FloorCall.finish)
                await handle.result()
                histories.append(await handle.fetch_history())
        return histories
    finally:
        await server.astop()


@dataclass
class Case:
    """One replay measured: these runs of this workflow in this runner."""

    label: str
    workflow: type
    runs: list[WorkflowHistory]
    runner: Callable[[], WorkflowRunner]
    times: list[float] = field(default_factory=list)

    async def replay(self) -> None:
        replayer = Replayer(
            workflows=[self.workflow],
            data_converter=data_converter(),
            workflow_runner=self.runner(),
        )
        start = time.process_time()
        for run in self.runs:
            result = await replayer.replay_workflow(run, raise_on_replay_failure=False)
            assert result.replay_failure is None, result.replay_failure
        self.times.append(time.process_time() - start)


async def measure(cases: list[Case], turns: int) -> None:
    """Each case `REPEATS` times, the cases taking turns so the machine's drift hits all."""
    window = MachineWindow()
    for _ in range(REPEATS):
        for case in cases:
            await case.replay()
    print(f"best of {REPEATS}, {turns} turns each {window.summary()}")
    for case in cases:
        best = min(case.times)
        print(f"  {case.label:<32} {best * 1000:8.0f} ms CPU   {turns / best:7.0f} turns/s/core")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--request-bytes", type=int, default=7000)
    parser.add_argument("--bundle", type=Path, help="also replay this call (bench_audit_verify's)")
    args = parser.parse_args()
    configure_logging("WARNING")
    floor = await asyncio.wait_for(record(args.turns, args.runs, args.request_bytes), 600)
    events = sum(len(run.events) for run in floor)
    print(f"floor call: {len(floor)} runs, {events} events, {args.turns} turns")
    cases = [
        Case("floor, stock sandbox", FloorCall, floor, SandboxedWorkflowRunner),
        Case("floor, Baton's runner", FloorCall, floor, workflow_runner),
        Case("floor, no sandbox", FloorCall, floor, UnsandboxedWorkflowRunner),
    ]
    if args.bundle:
        runs = (await load_call(str(args.bundle))).histories()
        cases += [
            Case("Baton's call, Baton's runner", CallSessionWorkflow, runs, workflow_runner),
            Case("Baton's call, no sandbox", CallSessionWorkflow, runs, UnsandboxedWorkflowRunner),
        ]
    await measure(cases, args.turns)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="baton-floor-") as data:
        os.environ.setdefault("BATON_DATA_DIR", data)  # the codec's key, made there
        asyncio.run(main())
