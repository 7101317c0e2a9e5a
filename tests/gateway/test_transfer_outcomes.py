"""Issue 15, the workflow's side of a browser call's transfer to a person, on the real stack:
workers, a real gateway holding the call (its console queue answers the transfer `pending`),
and the `transfer_settled` signal sent as the gateway sends it. Each way a pending transfer can
end: taken, declined, nobody in time, and the caller hanging up on hold."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.worker import Replayer

from activities.chat_models.scripted import ScriptedChatModel, ScriptedResponse
from activities.escalation import open_tickets
from audit.bundle import export_call
from audit.report import render
from audit.timeline import read_timeline
from baton.call_client import CallSession
from contracts.transfer import SIGNAL_TRANSFER_SETTLED, TransferSettled
from registries.loading import SHIPPED_REGISTRY
from runtime.temporal_client import data_converter
from tests.gateway.conftest import GatewayStack, call_on_gateway
from tests.workflow.conftest import items_of
from workflows.call_session import CallSessionWorkflow
from workflows.transfer import NOBODY_FREE

ESCALATE = ScriptedResponse(calls=[("escalate_human", {"reason": "caller asked for a person"})])


async def escalated_on_hold(
    stack: GatewayStack, model: ScriptedChatModel
) -> tuple[CallSession, asyncio.Task[Any]]:
    """A browser call that asked for a person and now waits in the console queue; returns its
    session and the still-running turn (its reply comes when the transfer settles)."""
    media, session = await call_on_gateway(stack, client_id="C1001")
    model.queue(session.call.call_id, [ESCALATE])
    await session.until_greeted()
    turn = asyncio.create_task(session.say("I want to talk to a person"))
    console = stack.gateway.front.console
    assert console is not None
    async with asyncio.timeout(60):
        while media.call_id not in console.calls:
            assert not turn.done(), turn.result()
            await asyncio.sleep(0.05)
    return session, turn


async def outcome_of(session: CallSession) -> dict[str, Any]:
    """The call's result, once its history also replays (a query on a call no worker holds
    in its cache replays it, so a transfer that does not replay breaks every later read)."""
    result: dict[str, Any] = await asyncio.wait_for(session.handle.result(), 60)
    history = await session.handle.fetch_history()
    replayer = Replayer(workflows=[CallSessionWorkflow], data_converter=data_converter())
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None, replayed.replay_failure
    return result


async def test_a_person_taking_the_call_ends_it_transferred(
    stack: GatewayStack, scripted: ScriptedChatModel
) -> None:
    session, turn = await escalated_on_hold(stack, scripted)
    assert (await session.summary()).status == "active"  # on hold, the call stays open
    settled = TransferSettled(taken=True, taken_by="op-7", detail="browser console")
    await session.handle.signal(SIGNAL_TRANSFER_SETTLED, settled)
    reply = await asyncio.wait_for(turn, 60)
    assert reply.status == "transferred"
    outcome = await outcome_of(session)
    assert outcome["status"] == "transferred"
    transfer = outcome["transfer"]
    assert transfer["outcome"] == "taken" and transfer["taken_by"] == "op-7"
    assert transfer["target_label"] == "Private banking desk"
    assert transfer["ticket_id"] == outcome["ticket"]["ticket_id"]
    said = [item["text"] for item in items_of(await session.transcript(), "agent_turn")]
    assert NOBODY_FREE not in said
    # The audit timeline, read from history alone, shows each step of the transfer.
    timeline = await read_timeline(await export_call(session.call.call_id, client=stack.client))
    steps = [(i.details["stage"], i.speaker) for i in timeline.items if i.kind == "transfer"]
    assert steps == [
        ("requested", "system"),
        ("platform", "system"),
        ("settled", "op-7"),
        ("outcome", "system"),
    ]
    report = render(timeline, "md")
    assert "transfer to Private banking desk (queue banking-desk)" in report
    assert "the platform answered pending" in report
    assert "transfer: transfer taken: browser console" in report


async def test_a_declined_call_is_told_the_truth_and_keeps_its_ticket(
    stack: GatewayStack, scripted: ScriptedChatModel
) -> None:
    session, turn = await escalated_on_hold(stack, scripted)
    declined = TransferSettled(taken=False, detail="declined on the console")
    await session.handle.signal(SIGNAL_TRANSFER_SETTLED, declined)
    reply = await asyncio.wait_for(turn, 60)
    assert reply.status == "escalated"
    assert reply.text.endswith(NOBODY_FREE)
    assert "didn't catch that" not in reply.text
    outcome = await outcome_of(session)
    assert outcome["transfer"]["outcome"] == "declined"
    assert outcome["transfer"]["detail"] == "declined on the console"
    assert [t.ticket_id for t in open_tickets()] == [outcome["ticket"]["ticket_id"]]


async def test_a_caller_hanging_up_on_hold_ends_the_call_with_the_ticket_kept(
    stack: GatewayStack, scripted: ScriptedChatModel
) -> None:
    session, turn = await escalated_on_hold(stack, scripted)
    await session.hang_up("caller hung up on hold")
    await asyncio.wait_for(turn, 60)
    outcome = await outcome_of(session)
    assert outcome["status"] == "hung_up"
    assert outcome["end_reason"] == "caller hung up on hold"
    assert outcome["transfer"]["outcome"] == "hung_up"
    assert outcome["ticket"] is not None
    assert [t.ticket_id for t in open_tickets()] == [outcome["ticket"]["ticket_id"]]
    said = [item["text"] for item in items_of(await session.transcript(), "agent_turn")]
    assert NOBODY_FREE not in said  # nobody is left to hear it


@pytest.fixture
def short_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> float:
    """The workers' registry: the shipped one with a one-second hold timeout for banking."""
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    path = registry / "scenariostore" / "banking" / "scenario.yaml"
    scenario = yaml.safe_load(path.read_text())
    scenario["escalation"]["hold_timeout_seconds"] = 1
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    monkeypatch.setenv("BATON_REGISTRY", str(registry))
    return 1.0


async def test_nobody_taking_the_call_in_the_hold_timeout_ends_it_escalated(
    short_hold: float, stack: GatewayStack, scripted: ScriptedChatModel
) -> None:
    session, turn = await escalated_on_hold(stack, scripted)
    reply = await asyncio.wait_for(turn, 60)  # no signal: the hold timeout decides
    assert reply.status == "escalated"
    assert reply.text.endswith(NOBODY_FREE)
    outcome = await outcome_of(session)
    assert outcome["transfer"]["outcome"] == "timeout"
    assert outcome["transfer"]["detail"] == f"nobody took it in {short_hold:g} s"
    assert outcome["ticket"] is not None
