"""SIGTERM drains a `baton worker` process: it polls no more, finishes the activity it holds,
and exits 0. Real processes: the dev server, one `baton worker` per queue, and a `block_card`
that lingers after blocking the card until the test lets it go (tests/faults/slow_registry.py),
so the signal lands while the tools worker holds it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest_asyncio
from temporalio.client import Client

from baton.call_client import CallSession
from baton.temporal_server import EmbeddedTemporal
from contracts.calls import CallInput
from registries.demo_data import default_database_path
from tests.faults.callers import Caller
from tests.faults.checks import tool_effects, tool_results
from tests.faults.processes import ChildProcess, WorkerFleet
from tests.faults.slow_registry import Gate, slow_registry
from tests.workflow.conftest import PROFILE, started

FRAUD = "Someone used my card abroad, I think it's fraud"
BLOCK = "Please block my card ending in 8832"
#: Bounds on steps that take a fraction of this, not expectations.
STEP_TIMEOUT = 60.0
#: Far longer than the test holds the tool: the drain ends because the work ended.
DRAIN_SECONDS = 120


@dataclass
class DrainRig(Caller):
    client: Client
    fleet: WorkerFleet
    gate: Gate
    registry: Path
    reply_timeout: ClassVar[float] = STEP_TIMEOUT

    def call(self) -> CallSession:
        call = CallInput(
            call_id=f"drain-{uuid.uuid4().hex[:10]}",
            caller_profile=PROFILE,
            registry=str(self.registry),
        )
        return CallSession(self.client, call)


@pytest_asyncio.fixture
async def rig(
    temporal_server: EmbeddedTemporal, temporal_client: Client, tmp_path: Path
) -> AsyncIterator[DrainRig]:
    gate = Gate(tmp_path / "gate")
    registry = slow_registry(tmp_path, gate=gate)
    fleet = WorkerFleet(temporal_server.address, tmp_path, {"BATON_REGISTRY": str(registry)})
    rig = DrainRig(temporal_client, fleet, gate, registry)
    try:
        yield rig
    finally:
        for turn in rig.turns:
            turn.cancel()
        await asyncio.gather(*rig.turns, return_exceptions=True)
        gate.release()
        await fleet.stop()


async def exit_code(process: ChildProcess, timeout: float = STEP_TIMEOUT) -> int:
    async with asyncio.timeout(timeout):
        return await asyncio.to_thread(process.process.wait)


async def activity_identities(session: CallSession, name: str) -> list[str]:
    """The identity (`pid@host`) of each worker that started an attempt of activity `name`."""
    scheduled: dict[int, str] = {}
    identities: list[str] = []
    async for event in session.handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attributes.activity_type.name
        elif event.HasField("activity_task_started_event_attributes"):
            started_event = event.activity_task_started_event_attributes
            if scheduled.get(started_event.scheduled_event_id) == name:
                identities.append(started_event.identity)
    return identities


def tools_worker(rig: DrainRig, label: str, *flags: str) -> ChildProcess:
    worker = ChildProcess(
        ["worker", "--address", rig.fleet.address, "--queues", "tools", *flags],
        ready="worker serving",
        log=rig.fleet.logs / f"worker-tools-{label}.log",
        env={"BATON_REGISTRY": str(rig.registry)},
        name=f"{label} tools worker",
    )
    rig.fleet.started.append(worker)  # stopped with the fleet if the test fails
    return worker


def identity(worker: ChildProcess) -> str:
    """The SDK's default worker identity."""
    return f"{worker.pid}@{socket.gethostname()}"


async def test_sigterm_finishes_the_held_tool_polls_no_more_and_exits_0(rig: DrainRig) -> None:
    draining = tools_worker(rig, "draining", "--drain-seconds", str(DRAIN_SECONDS))
    await asyncio.gather(rig.fleet.start("calls", "llm"), draining.ready_async())
    session = rig.call()
    await started(session)
    assert (await rig.say(session, FRAUD)).agent == "FraudAgent"
    rig.gate.hold()
    pending = rig.say_later(session, BLOCK)
    await rig.gate.entered(timeout=STEP_TIMEOUT)

    os.kill(draining.pid, signal.SIGTERM)
    # A call started now needs the tools queue (its scenario snapshot): only a worker that
    # still polls may take that task, so it waits for the replacement started below.
    second = rig.call()
    await second.start()
    await asyncio.sleep(1.0)  # ample for a worker that still polled to have taken it
    assert draining.alive, "the worker left before the tool it holds had finished"
    rig.gate.release()
    assert await exit_code(draining) == 0

    # The held tool finished where it was: one attempt, one effect, its result recorded.
    reply = await pending
    assert "8832" in reply.text
    (result,) = tool_results(await session.transcript(), "block_card")
    assert result.get("blocked") is True and not result.get("already_blocked"), result
    assert len(tool_effects(default_database_path(), "block_card", session.call.call_id)) == 1
    tools_run = await activity_identities(session, "run_business_tool")
    assert tools_run and set(tools_run) == {identity(draining)}, tools_run

    replacement = tools_worker(rig, "replacement")
    await replacement.ready_async()
    await second.wait_for(lambda items: any(i["type"] == "greeting" for i in items), STEP_TIMEOUT)
    assert await activity_identities(second, "load_call_snapshot") == [identity(replacement)]
    await asyncio.gather(second.hang_up(), session.hang_up())
