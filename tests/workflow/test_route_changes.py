"""Live route changes in real calls (dev server, every worker, the offline policy): a route a
supervisor adds is taken by the next handoff, a removed one is refused, a retargeted one leads
to its new agent, and a refused change never reaches history."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowUpdateFailedError

from baton.call_client import CallSession
from baton.temporal_server import EmbeddedTemporal
from contracts.routes import UPDATE_CHANGE_ROUTES, RouteChange, RouteChangeResult
from runtime.supervision import SupervisionError, parse_action, supervise
from tests.audit.cli import baton
from tests.workflow.conftest import Stack, items_of, started

#: At the concierge, a compliance matter: the scenario has no route for it from there.
COMPLAINT = "I want to file a regulatory complaint about insider trading"
FRAUD = "Someone used my card abroad, I think it's fraud"
TO_COMPLIANCE = RouteChange(
    action="add",
    from_agent="Concierge",
    to_agent="ComplianceDesk",
    condition="The caller has a regulatory complaint or asks about insider trading",
    reason="compliance queue is short today",
    supervisor="sam",
)


async def change_routes(session: CallSession, change: RouteChange) -> RouteChangeResult:
    result: RouteChangeResult = await session.handle.execute_update(
        UPDATE_CHANGE_ROUTES, change, result_type=RouteChangeResult
    )
    return result


def handoffs(items: list[dict[str, Any]]) -> list[tuple[str, str | None, bool]]:
    return [(h["source"], h["target"], h["success"]) for h in items_of(items, "handoff")]


async def test_an_added_route_is_taken_by_the_next_handoff(stack: Stack) -> None:
    control = stack.call()
    await started(control)
    await control.say(COMPLAINT)
    assert ("Concierge", "ComplianceDesk", True) not in handoffs(await control.transcript())
    await control.hang_up()

    session = stack.call()
    await started(session)
    result = await change_routes(session, TO_COMPLIANCE)
    assert result.changes == 1
    added = [
        r for r in result.routes if (r.from_agent, r.to_agent) == ("Concierge", "ComplianceDesk")
    ]
    assert [(r.origin, r.type) for r in added] == [("added", "announced")]
    reply = await session.say(COMPLAINT)
    assert reply.agent == "ComplianceDesk", reply
    items = await session.transcript()
    assert ("Concierge", "ComplianceDesk", True) in handoffs(items)
    (recorded,) = items_of(items, "route_change")
    assert recorded["change"]["supervisor"] == "sam"
    assert recorded["change"]["reason"] == "compliance queue is short today"
    state = await session.state()
    assert [c["to_agent"] for c in state["route_changes"]] == ["ComplianceDesk"]
    await session.hang_up()


async def test_a_removed_route_refuses_the_transfer_along_it(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    removed = parse_action({"remove_route": "Concierge:FraudAgent"}, "fraud desk closed")
    outcome = await supervise(stack.client, session.call.call_id, removed)
    assert all((r.from_agent, r.to_agent) != ("Concierge", "FraudAgent") for r in outcome.routes)
    transfer = parse_action({"transfer": "FraudAgent"}, "try anyway")
    with pytest.raises(SupervisionError, match="no route from Concierge to FraudAgent"):
        await supervise(stack.client, session.call.call_id, transfer)
    reply = await session.say(FRAUD)
    assert reply.agent != "FraudAgent"
    assert ("Concierge", "FraudAgent", True) not in handoffs(await session.transcript())
    await session.hang_up()


async def test_a_retargeted_route_leads_to_its_new_agent(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    moved = parse_action({"retarget": "Concierge:FraudAgent:ComplianceDesk"})
    outcome = await supervise(stack.client, session.call.call_id, moved)
    assert "retarget Concierge -> FraudAgent to ComplianceDesk" in outcome.message
    # The fraud route's condition now leads to the compliance desk.
    reply = await session.say(FRAUD)
    assert reply.agent == "ComplianceDesk", reply
    assert ("Concierge", "ComplianceDesk", True) in handoffs(await session.transcript())
    await session.hang_up()


async def test_a_refused_change_never_reaches_history(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    unknown = RouteChange(action="add", from_agent="Concierge", to_agent="Nobody")
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await change_routes(session, unknown)
    assert "unknown agent 'Nobody'" in str(refused.value.cause)
    missing = RouteChange(action="remove", from_agent="Concierge", to_agent="ComplianceDesk")
    with pytest.raises(WorkflowUpdateFailedError):
        await change_routes(session, missing)
    await session.hang_up()
    await session.handle.result()
    history = await session.handle.fetch_history()
    accepted = [
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert UPDATE_CHANGE_ROUTES not in accepted
    assert items_of(await session.transcript(), "route_change") == []
    with pytest.raises(SupervisionError, match="ended"):
        await supervise(
            stack.client,
            session.call.call_id,
            parse_action({"add_route": "Concierge:ComplianceDesk"}),
        )


async def test_a_supervisor_on_the_command_line_and_the_audit_of_that_call(
    stack: Stack, temporal_server: EmbeddedTemporal
) -> None:
    session = stack.call()
    await started(session)
    address = ["--address", temporal_server.address]
    call_id = session.call.call_id

    async def supervise_cli(*args: str) -> subprocess.CompletedProcess[str]:
        # In a thread: this test's workers share its event loop and must answer meanwhile.
        return await asyncio.to_thread(baton, "call", "supervise", call_id, *args, *address)

    added = await supervise_cli(
        "--add-route", "Concierge:ComplianceDesk", "--reason", "short queue"
    )
    assert added.returncode == 0, added.stderr
    assert "add Concierge -> ComplianceDesk: done" in added.stdout
    assert "  Concierge -> ComplianceDesk (announced)  [added]" in added.stdout.splitlines()
    refused = await supervise_cli("--add-route", "Concierge:Nobody")
    assert refused.returncode == 1
    assert refused.stderr.startswith("baton: refused: unknown agent 'Nobody'"), refused.stderr
    assert "Traceback" not in refused.stderr
    unknown = await asyncio.to_thread(
        baton, "call", "supervise", "no-such-call", "--hang-up", *address
    )
    assert unknown.returncode == 1 and "no call 'no-such-call'" in unknown.stderr

    reply = await session.say(COMPLAINT)
    assert reply.agent == "ComplianceDesk", reply
    moved = await supervise_cli("--transfer", "Concierge", "--reason", "caller asked for the desk")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.strip() == "transferred to Concierge"
    assert (await session.summary()).active_agent == "Concierge"
    ended = await supervise_cli("--hang-up", "--reason", "done")
    assert ended.returncode == 0 and "the call ended (hung_up)" in ended.stdout, ended.stderr

    report = baton("audit", "report", call_id, "--format", "json", *address)
    assert report.returncode == 0, report.stderr
    items = json.loads(report.stdout)["items"]
    (change,) = [i for i in items if i["kind"] == "route_change"]
    assert change["speaker"] == "supervisor"
    assert change["text"] == "add Concierge -> ComplianceDesk: short queue"
    rules = [i["handoff"]["rule"] for i in items if i["kind"] == "handoff"]
    assert "live route Concierge → ComplianceDesk (added)" in rules
    markdown = baton("audit", "report", call_id, *address)
    assert "route change: add Concierge -> ComplianceDesk: short queue" in markdown.stdout

    verified = baton("audit", "verify", call_id, *address)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "with 1 live route change" in verified.stdout
    assert verified.stdout.splitlines()[-1] == "verified: all checks passed"


async def test_a_route_change_survives_continue_as_new(stack: Stack) -> None:
    session = stack.call(max_history_events=50)
    await started(session)
    first_run = (await session.handle.describe()).run_id
    await change_routes(session, TO_COMPLIANCE)
    for n in range(4):  # keypad digits alone never choose a route: the concierge keeps the call
        await session.say(f"(keypad) {n}{n}{n}#")
    assert (await session.handle.describe()).run_id != first_run
    state = await session.state()
    assert state["runs"] >= 2 and state["active_agent"] == "Concierge"
    assert [c["to_agent"] for c in state["route_changes"]] == ["ComplianceDesk"]
    reply = await session.say(COMPLAINT)
    assert reply.agent == "ComplianceDesk", reply
    await session.hang_up()


async def test_a_call_no_worker_serves_is_refused_within_the_wait(temporal_client: Client) -> None:
    session = Stack(temporal_client).call()
    await session.start()  # no worker runs in this test: nothing will answer the call
    try:
        added = parse_action({"add_route": "Concierge:ComplianceDesk"})
        with pytest.raises(SupervisionError, match="did not answer within 1 s: are its workers"):
            await supervise(temporal_client, session.call.call_id, added, wait_seconds=1)
    finally:
        await session.handle.terminate("test over")
