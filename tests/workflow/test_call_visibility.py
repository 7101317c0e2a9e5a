"""Queries, search attributes and the pinned scenario snapshot."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import yaml

from activities.escalation import open_tickets
from contracts.calls import (
    QUERY_HANDOFF_HISTORY,
    QUERY_SUMMARY,
    QUERY_TOKEN_USAGE,
    QUERY_TRANSCRIPT_SINCE,
    CallSummary,
    TranscriptSlice,
)
from contracts.transcript import CallEndItem, GreetingItem, HandoffItem, UserTurn
from registries.loading import SHIPPED_REGISTRY
from tests.workflow.conftest import Stack, items_of, started

FRAUD = "Someone used my card abroad, I think it's fraud"


async def test_queries_and_search_attributes_follow_the_call(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    await session.say(FRAUD)
    history = await session.handle.query(QUERY_HANDOFF_HISTORY, result_type=list)
    assert [(h["source"], h["target"], h["handoff_type"]) for h in history] == [
        ("Concierge", "FraudAgent", "announced")
    ]
    usage = await session.handle.query(QUERY_TOKEN_USAGE, result_type=dict)
    assert usage["Concierge"]["turns"] == 1 and usage["Concierge"]["completion_tokens"] > 0

    query = (
        f"WorkflowId = '{session.workflow_id}' AND BatonActiveAgent = 'FraudAgent' "
        "AND BatonScenario = 'banking' AND BatonStatus = 'active' AND BatonVisitedCount = 2"
    )
    for _ in range(200):  # visibility is eventually consistent
        found = [w.id async for w in stack.client.list_workflows(query)]
        if found:
            break
        await asyncio.sleep(0.05)
    assert found == [session.workflow_id]
    await session.hang_up()


async def test_summary_and_transcript_slices_follow_a_call_with_a_handoff(stack: Stack) -> None:
    session = stack.call()
    await started(session)

    async def summary() -> CallSummary:
        result: CallSummary = await session.handle.query(QUERY_SUMMARY, result_type=CallSummary)
        return result

    async def since(start: int) -> TranscriptSlice:
        result: TranscriptSlice = await session.handle.query(
            QUERY_TRANSCRIPT_SINCE, start, result_type=TranscriptSlice
        )
        return result

    assert await summary() == CallSummary(
        status="active", active_agent="Concierge", visited=["Concierge"], turn=0
    )
    before = (await since(0)).total
    await session.say(FRAUD)
    assert await summary() == CallSummary(
        status="active", active_agent="FraudAgent", visited=["Concierge", "FraudAgent"], turn=1
    )

    whole = await since(0)
    assert whole.start == 0 and whole.total == len(whole.items)
    assert [item.type for item in whole.items] == [i["type"] for i in await session.transcript()]
    # What a live view that had shown the greeting fetches next: only this turn's items.
    turn = await since(before)
    assert turn.start == before and turn.total == whole.total
    assert turn.items == whole.items[before:]
    assert isinstance(turn.items[0], UserTurn) and turn.items[0].text == FRAUD
    handoffs = [item for item in turn.items if isinstance(item, HandoffItem)]
    assert [(h.source, h.target, h.success) for h in handoffs] == [
        ("Concierge", "FraudAgent", True)
    ]
    last = turn.items[-1]
    assert isinstance(last, GreetingItem) and last.agent == "FraudAgent"

    assert await since(-5) == whole  # a negative start reads from the beginning
    past_the_end = await since(whole.total + 3)
    assert past_the_end.items == [] and past_the_end.total == whole.total

    await session.hang_up("caller hung up")
    await session.handle.result()
    assert await summary() == CallSummary(
        status="hung_up",
        active_agent="FraudAgent",
        visited=["Concierge", "FraudAgent"],
        turn=1,
        end_reason="caller hung up",
    )
    (end,) = (await since(whole.total)).items
    assert isinstance(end, CallEndItem) and end.status == "hung_up"


async def test_registry_edits_change_new_calls_only(stack: Stack, tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    old = stack.call(registry=str(registry))
    await started(old)
    pinned = (await old.state())["snapshot"]

    scenario_file = registry / "scenariostore" / "banking" / "scenario.yaml"
    scenario = yaml.safe_load(scenario_file.read_text())
    for edge in scenario["handoffs"]:
        if edge["from_agent"] == "Concierge" and edge["to_agent"] == "FraudAgent":
            edge["type"] = "discrete"
    scenario_file.write_text(yaml.safe_dump(scenario, sort_keys=False))

    new = stack.call(registry=str(registry))
    await started(new)
    assert (await new.state())["snapshot"]["content_hash"] != pinned["content_hash"]
    old_reply = await old.say(FRAUD)
    new_reply = await new.say(FRAUD)
    assert old_reply.handoffs[0].startswith("Concierge -> FraudAgent (announced")
    assert new_reply.handoffs[0].startswith("Concierge -> FraudAgent (discrete")
    assert (await old.state())["snapshot"]["content_hash"] == pinned["content_hash"]
    await old.hang_up()
    await new.hang_up()


async def test_broken_scenario_escalates_the_call_with_every_problem(
    stack: Stack, tmp_path: Path
) -> None:
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    scenario_file = registry / "scenariostore" / "banking" / "scenario.yaml"
    scenario_file.write_text(
        scenario_file.read_text().replace("start_agent: Concierge", "start_agent: Concierg")
    )
    session = stack.call(registry=str(registry))
    await session.start()
    outcome = await session.handle.result()
    assert outcome["status"] == "escalated"
    assert "start_agent: 'Concierg' is not an agent in this scenario" in outcome["end_reason"]
    (ticket,) = open_tickets()
    assert ticket.reason == outcome["end_reason"]
    assert items_of(await session.transcript(), "greeting") == []
