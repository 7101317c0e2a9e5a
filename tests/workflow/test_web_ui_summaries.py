"""What the Temporal Web UI shows of a call, read back from a real call: a summary on every
activity and local activity (from its history), the call's static summary and its current
details (the SDK's metadata query, which the UI reads)."""

from __future__ import annotations

from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHistory

from activities.chat_models.scripted import ScriptedChatModel, ScriptedResponse
from runtime.codec import ENCODING
from tests.workflow.conftest import Stack, started

FRAUD = "Someone used my card abroad, I think it's fraud"
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
MARKER = EventType.EVENT_TYPE_MARKER_RECORDED
#: The SDK's built-in query behind the UI's "current details".
METADATA_QUERY = "__temporal_workflow_metadata"


def hand_to(target: str, reason: str) -> ScriptedResponse:
    return ScriptedResponse(
        calls=[("handoff_to_agent", {"target_agent": target, "reason": reason})]
    )


async def summaries_of(client: Client, history: WorkflowHistory) -> list[tuple[str, str]]:
    """(activity type, decoded summary) for each activity and local activity, in order."""
    found = []
    for event in history.events:
        if event.event_type == SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == MARKER:
            name = event.marker_recorded_event_attributes.marker_name
            if name != "core_local_activity":
                continue  # patch markers carry no summary
        else:
            continue
        payload = event.user_metadata.summary
        # Summaries are payloads like any other: the codec seals them.
        assert payload.metadata["encoding"] == ENCODING, f"{name}: summary not encrypted"
        found.append((name, await decoded(client, payload)))
    return found


async def decoded(client: Client, payload: Payload) -> str:
    (text,) = await client.data_converter.decode([payload], [str])
    assert isinstance(text, str)
    return text


async def current_details(session: Any) -> str:
    metadata: WorkflowMetadata = await session.handle.query(
        METADATA_QUERY, result_type=WorkflowMetadata
    )
    return metadata.current_details


async def test_every_activity_of_a_call_says_what_it_did(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    assert await current_details(session) == "**Concierge** · turn 0 · active"
    await session.say(FRAUD)
    await session.say("Please block my card ending in 8832")
    assert await current_details(session) == (
        "**FraudAgent** · turn 2 · active\n\nvisited: Concierge → FraudAgent"
    )
    await session.hang_up()
    await session.handle.result()

    description = await session.handle.describe()
    static = await description.static_summary()
    assert static == f"banking call {session.call.call_id} · text · caller C1001"
    assert "Alex Morgan" not in static  # the caller's name stays out of the UI's line
    rows = await summaries_of(stack.client, await session.handle.fetch_history())
    assert rows == [
        ("load_call_snapshot", "load scenario banking"),
        ("core_local_activity", "greeting · Concierge"),
        ("generate_agent_reply", "LLM · Concierge"),
        ("core_local_activity", "handoff Concierge → FraudAgent, announced"),
        ("generate_agent_reply", "LLM · FraudAgent"),
        ("run_business_tool", "tool block_card"),
        ("generate_agent_reply", "LLM · FraudAgent"),
    ]


async def test_a_ping_pong_escalation_shows_its_handoffs_and_the_ticket(
    temporal_client: Client,
) -> None:
    # A true loop, scripted: the agents bounce the caller with no turn, tool or answer between
    # two hops (a caller asking something new between hops is a return visit, not a loop).
    model, stack = ScriptedChatModel(), Stack(temporal_client)
    await stack.start_workers(chat_model=model)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                hand_to("FraudAgent", "fraud"),
                hand_to("Concierge", "not mine"),
                hand_to("FraudAgent", "not mine"),
            ],
        )
        await started(session)
        for text in (FRAUD, "Hello? Can someone help?"):
            await session.say(text)
        outcome = await session.handle.result()
        rows = await summaries_of(stack.client, await session.handle.fetch_history())
    finally:
        await stack.stop_workers()
    assert outcome["status"] == "escalated"
    handoffs = [summary for name, summary in rows if summary.startswith("handoff")]
    assert handoffs == [
        "handoff Concierge → FraudAgent, announced",
        "handoff FraudAgent → Concierge, discrete",
        "handoff Concierge → FraudAgent, announced",
    ]
    # The scenario sends the fraud desk's escalations to its people (a text call: no line to
    # hand over, so the transfer is tried and fails; see tests/workflow/test_human_transfer.py),
    # and the ticket is marked with that outcome once the call has ended.
    assert rows[-4:] == [
        ("file_escalation_ticket", "escalation ticket"),
        ("deliver_escalation_ticket", "escalation ticket delivery"),
        ("start_transfer", "transfer to Fraud desk"),
        ("mark_escalation_ticket", "escalation ticket → escalated"),
    ]
