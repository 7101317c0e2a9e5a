"""Issue 15 in real calls: an escalation with a target in the scenario is transferred to a
person after its ticket, and ends `escalated` with the ticket kept and the caller told the
truth when nobody can take the call; with no target the caller is told a colleague will call
back, never asked to hold."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import yaml

from activities.chat_models.scripted import ScriptedResponse
from activities.escalation import open_tickets
from registries.loading import SHIPPED_REGISTRY
from tests.workflow.conftest import items_of, scripted_stack, started
from workflows.call_ending import NO_TRANSFER_TARGET
from workflows.transfer import NOBODY_FREE

ESCALATE = "escalate_human"


def banking_copy(tmp_path: Path, **escalation: Any) -> str:
    """The shipped registry with the banking scenario's `escalation` block replaced (removed
    when no field is given)."""
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    path = registry / "scenariostore" / "banking" / "scenario.yaml"
    scenario = yaml.safe_load(path.read_text())
    scenario.pop("escalation", None)
    if escalation:
        scenario["escalation"] = escalation
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return str(registry)


async def activities_run(session: Any) -> list[str]:
    history = await session.handle.fetch_history()
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]


async def test_a_text_call_transferred_from_the_fraud_desk_is_told_nobody_can_take_it(
    temporal_client: Any,
) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                ScriptedResponse(
                    calls=[("handoff_to_agent", {"target_agent": "FraudAgent", "reason": "fraud"})]
                ),
                ScriptedResponse(calls=[(ESCALATE, {"reason": "caller wants a person"})]),
            ],
        )
        await started(session)
        first = await session.say("Someone used my card")
        assert first.agent == "FraudAgent" and first.status == "active"
        reply = await session.say("I want a person")
        assert reply.status == "escalated"
        outcome = await asyncio.wait_for(session.handle.result(), 30)
        # The scenario sends FraudAgent's escalations to the fraud desk; a text call has no
        # line to hand over, so the transfer fails and the ticket is what the caller keeps.
        transfer = outcome["transfer"]
        assert transfer["outcome"] == "failed"
        assert transfer["target_label"] == "Fraud desk" and transfer["target_kind"] == "queue"
        assert transfer["detail"] == "no platform to transfer a text call"
        assert transfer["ticket_id"] == outcome["ticket"]["ticket_id"]
        (ticket,) = open_tickets()
        assert ticket.ticket_id == transfer["ticket_id"]
        transcript = await session.transcript()
        (item,) = items_of(transcript, "transfer")
        assert item["outcome"] == "failed"
        said = [turn["text"] for turn in items_of(transcript, "agent_turn")]
        assert said[-1] == NOBODY_FREE  # the truth, after the hold line
        assert not any("didn't catch that" in line for line in said)
        assert items_of(transcript, "call_end")[-1]["status"] == "escalated"
        ran = await activities_run(session)
        assert ran.index("start_transfer") > ran.index("file_escalation_ticket")
    finally:
        await stack.stop_workers()


async def test_with_no_target_the_caller_is_told_a_colleague_will_call_back(
    temporal_client: Any, tmp_path: Path
) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call(registry=banking_copy(tmp_path))
        model.queue(session.call.call_id, [ScriptedResponse(calls=[(ESCALATE, {"reason": "x"})])])
        await started(session)
        reply = await session.say("I want to speak to a human agent please")
        assert reply.status == "escalated"
        # Nobody to transfer to: no "please hold" for a person who never comes.
        assert reply.text == NO_TRANSFER_TARGET
        said = [turn["text"] for turn in items_of(await session.transcript(), "agent_turn")]
        assert not any("Please hold" in line for line in said)
        outcome = await asyncio.wait_for(session.handle.result(), 30)
        assert outcome["transfer"] is None and outcome["ticket"] is not None
        assert items_of(await session.transcript(), "transfer") == []
        ran = await activities_run(session)
        assert "file_escalation_ticket" in ran and "start_transfer" not in ran
    finally:
        await stack.stop_workers()
