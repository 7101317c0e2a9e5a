"""Fault injection with real processes: kill -9 inside the work, the replacement started at once.

Each worker kind runs in a `baton worker` process of its own, so one kind can be killed alone,
on a Temporal dev server with a SQLite file, so the server itself can be killed and restarted.
Test-only slow parts make every kill land inside the work it is meant to interrupt: a
`block_card` that lingers after blocking the card until the test lets it go
(tests/faults/slow_registry.py), and a chat model on loopback that never answers one chosen
request (tests/faults/model_server.py).

Each test asserts that the call goes on and ends as it should, that no utterance is lost or
answered twice, and that the card is blocked exactly once. The caller's silence after the kill
is printed (`pytest -s`), never asserted: the workflow's timeouts decide it
(workflows/policies.py), and tests never assert wall-clock times.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import ClassVar

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import PendingWorkflowTaskState
from temporalio.client import Client

from baton.call_client import CallSession
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from contracts.calls import CallInput, TurnReply
from registries.demo_data import default_database_path
from runtime.temporal_client import connect
from tests.faults.callers import Caller
from tests.faults.checks import (
    Transcript,
    audit_transcript,
    card_status,
    silence_line,
    tool_calls,
    tool_effects,
    tool_results,
)
from tests.faults.model_server import ScriptedModelServer
from tests.faults.processes import Fault, WorkerFleet, kill_and_restart_server
from tests.faults.slow_registry import Gate, slow_registry
from tests.workflow.conftest import PROFILE, started

FRAUD = "Someone used my card abroad, I think it's fraud"
BLOCK = "Please block my card ending in 8832"
GOODBYE = "That's all, thank you, goodbye"
#: A bound on waiting for one reply after a fault, not an expectation: today the slowest fault
#: waits out the tool's 30 s start-to-close timeout, then its retry backoff.
REPLY_TIMEOUT = 90.0
#: Bound on the setup steps (a process starting, the slow tool being entered).
STEP_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def fault_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedTemporal]:
    """This module's own dev server with a db file: one test kills it and starts it again."""
    db_file = tmp_path_factory.mktemp("fault-server") / "temporal.sqlite3"
    with EmbeddedTemporal(DevServerOptions(db_filename=db_file)) as server:
        yield server


@dataclass
class Rig(Caller):
    """The server, a fleet of worker processes (one per queue), the slow tool's gate, and the
    utterance ids the caller said."""

    server: EmbeddedTemporal
    client: Client
    fleet: WorkerFleet
    gate: Gate
    registry: Path
    reply_timeout: ClassVar[float] = REPLY_TIMEOUT

    def call(self) -> CallSession:
        call = CallInput(
            call_id=f"fault-{uuid.uuid4().hex[:10]}",
            caller_profile=PROFILE,
            registry=str(self.registry),
        )
        return CallSession(self.client, call)


@pytest_asyncio.fixture
async def rig(fault_server: EmbeddedTemporal, tmp_path: Path) -> AsyncIterator[Rig]:
    gate = Gate(tmp_path / "gate")
    registry = slow_registry(tmp_path, gate=gate)
    # BATON_REGISTRY as well as the call's own registry: every worker sees the slow copy.
    fleet = WorkerFleet(fault_server.address, tmp_path, {"BATON_REGISTRY": str(registry)})
    client = await connect(fault_server.address)
    rig = Rig(fault_server, client, fleet, gate, registry)
    try:
        yield rig
    finally:
        for turn in rig.turns:  # a failed test leaves its turn waiting
            turn.cancel()
        await asyncio.gather(*rig.turns, return_exceptions=True)
        gate.release()  # a held worker drains at once
        unclean = {name: code for name, code in (await fleet.stop()).items() if code != 0}
    assert not unclean, f"workers that did not drain on SIGTERM: {unclean}"


async def fraud_desk_call(rig: Rig) -> CallSession:
    """A call put through to the fraud desk (the turn before the one a fault interrupts)."""
    session = rig.call()
    await started(session)
    assert (await rig.say(session, FRAUD)).agent == "FraudAgent"
    return session


async def hold_block_turn(rig: Rig, session: CallSession) -> asyncio.Task[TurnReply]:
    """Ask to block the card and return once the card is blocked and the tool lingers."""
    rig.gate.hold()
    pending = rig.say_later(session, BLOCK)
    await rig.gate.entered(timeout=STEP_TIMEOUT)
    return pending


async def finish_call(
    rig: Rig, session: CallSession, label: str, fault: Fault, since: float | None = None
) -> Transcript:
    """Say goodbye, then check the whole call: completed, every utterance answered exactly
    once, the card blocked exactly once. Prints the caller's silence after `fault`."""
    farewell = await rig.say(session, GOODBYE)
    assert farewell.status == "completed", farewell
    async with asyncio.timeout(STEP_TIMEOUT):
        outcome = await session.handle.result()
    assert outcome["status"] == "completed"
    transcript = await session.transcript()
    print(silence_line(label, fault, transcript, since))

    audit = audit_transcript(transcript, rig.said)
    assert audit.clean and not audit.unanswered, audit
    assert len(tool_calls(transcript, "block_card")) == 1
    (result,) = tool_results(transcript, "block_card")
    # The first application's result: a second one would say "already blocked".
    assert result.get("blocked") is True and not result.get("already_blocked"), result
    database = default_database_path()
    assert len(tool_effects(database, "block_card")) == 1
    assert card_status(database, "8832") == "blocked"
    return transcript


async def test_tools_worker_killed_inside_a_business_tool(rig: Rig) -> None:
    """The card is blocked, then the tools worker dies before reporting it: the retry on the
    replacement returns the stored result and the card is not blocked a second time."""
    await rig.fleet.start("calls", "llm", "tools")
    session = await fraud_desk_call(rig)
    pending = await hold_block_turn(rig, session)
    killed = rig.fleet.kill("tools")
    rig.gate.release()  # the retry, wherever it runs, goes straight through
    fault = await rig.fleet.restart(killed)
    reply = await pending
    assert reply.agent == "FraudAgent" and "8832" in reply.text
    assert rig.gate.entries() >= 2  # it ran again on the replacement, applying nothing new
    await finish_call(rig, session, "tools worker killed inside block_card", fault)


async def test_calls_worker_killed_while_a_tool_runs(rig: Rig) -> None:
    """The workflow worker dies while its call waits on a tool: the tool's result is taken
    up by the replacement (no workflow task was running at the kill)."""
    await rig.fleet.start("calls", "llm", "tools")
    session = await fraud_desk_call(rig)
    pending = await hold_block_turn(rig, session)
    fault = await rig.fleet.replace("calls")
    released = time.time()
    rig.gate.release()
    reply = await pending
    assert reply.agent == "FraudAgent" and "8832" in reply.text
    assert rig.gate.entries() == 1  # the tool itself was never interrupted
    await finish_call(rig, session, "calls worker killed while a tool ran", fault, released)


async def test_calls_worker_killed_with_a_workflow_task_in_flight(rig: Rig) -> None:
    """The workflow worker dies holding a workflow task (the one that takes up the tool's
    result): the task times out on the server and the replacement runs it again."""
    await rig.fleet.start("calls", "llm", "tools")
    session = await fraud_desk_call(rig)
    pending = await hold_block_turn(rig, session)
    # Frozen, the worker keeps its open polls, so the server hands it the next task and
    # records it as started; killed then, the worker dies with that task in flight.
    rig.fleet["calls"].suspend()
    released = time.time()
    rig.gate.release()
    await workflow_task_started(session, after=released)
    fault = await rig.fleet.replace("calls")
    reply = await pending
    assert reply.agent == "FraudAgent" and "8832" in reply.text
    await finish_call(
        rig, session, "calls worker killed with a workflow task in flight", fault, released
    )


async def workflow_task_started(session: CallSession, after: float) -> None:
    """Until the call has a workflow task started (by a worker) since the Unix time `after`."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while time.monotonic() < deadline:
        described = await session.handle.describe()
        task = described.raw_description.pending_workflow_task
        if (
            task.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED
            and task.scheduled_time.ToDatetime(tzinfo=UTC).timestamp() >= after
        ):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError("no workflow task was handed to the frozen calls worker")


async def test_llm_worker_killed_during_the_model_call(rig: Rig) -> None:
    """The model worker dies while the model is still writing: the retry on the replacement
    asks again, and the one answer it gets is acted on once (one block_card call)."""
    with ScriptedModelServer(lifetime=300) as model:
        await rig.fleet.start("calls", "tools")
        await rig.fleet.start(
            "llm",
            env={
                "BATON_CHAT_PROVIDER": "openai",
                "BATON_OPENAI_BASE_URL": model.base_url,
                "BATON_OPENAI_API_KEY": "test",
            },
        )
        session = await fraud_desk_call(rig)
        model.hold_first(BLOCK)
        pending = rig.say_later(session, BLOCK)
        assert await asyncio.to_thread(model.held.wait, STEP_TIMEOUT), "the model was not asked"
        fault = await rig.fleet.replace("llm")
        reply = await pending
        assert reply.agent == "FraudAgent" and "8832" in reply.text
        # The held request, its retry (at least one), and the request after the tool's result.
        assert len(model.matching_requests(BLOCK)) >= 3
        await finish_call(rig, session, "llm worker killed during the model call", fault)


async def test_server_killed_mid_turn(rig: Rig) -> None:
    """kill -9 of the Temporal server while a tool runs, restarted at once on the same SQLite
    file: the tool's result, the turn and the caller's resent utterance all land once."""
    await rig.fleet.start("calls", "llm", "tools")
    session = await fraud_desk_call(rig)
    pending = await hold_block_turn(rig, session)
    fault = await kill_and_restart_server(rig.server)
    released = time.time()
    rig.gate.release()
    reply = await pending  # resent with the same utterance id while the server was away
    assert reply.agent == "FraudAgent" and "8832" in reply.text
    # The tool may have run again (an outage longer than its heartbeat timeout ends the
    # attempt); finish_call checks that it applied once all the same.
    await finish_call(rig, session, "Temporal server killed mid-turn", fault, released)
