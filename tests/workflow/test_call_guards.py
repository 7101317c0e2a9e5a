"""Loop guards, escalation tickets, bad input, DTMF and continue-as-new."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowUpdateFailedError

from activities.escalation import open_tickets
from contracts.calls import SIGNAL_DTMF, UPDATE_SUBMIT_UTTERANCE, Dtmf
from tests.workflow.conftest import Stack, items_of, started

FRAUD = "My card was stolen, I think it's fraud"


async def test_escalate_tool_ends_the_call_as_escalated(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    reply = await session.say("I want to speak to a human agent please")
    assert reply.status == "escalated"
    assert "colleague" in reply.text
    # Workers share task queues with calls other tests left running: pick this call's ticket.
    (ticket,) = [t for t in open_tickets() if t.call_id == session.call.call_id]
    assert ticket.active_agent == "Concierge"


async def test_bad_utterances_are_refused_before_history(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    with pytest.raises(WorkflowUpdateFailedError) as empty:
        await session.say("   ")
    assert "needs text or a segment_ref" in str(empty.value.cause)
    with pytest.raises(WorkflowUpdateFailedError) as segment:
        await session.handle.execute_update(
            UPDATE_SUBMIT_UTTERANCE, {"utterance_id": "s1", "segment_ref": "seg-1"}
        )
    assert "needs a call with a media gateway" in str(segment.value.cause)
    with pytest.raises(WorkflowUpdateFailedError):  # over the size limit: refused on decode
        await session.handle.execute_update(
            UPDATE_SUBMIT_UTTERANCE, {"utterance_id": "big", "text": "x" * 5000}
        )
    history = await session.handle.fetch_history()
    accepted = [
        e
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    ]
    assert accepted == []
    ok = await session.say("What's my checking balance?")
    assert ok.status == "active" and ok.text
    await session.hang_up()


async def test_dtmf_digits_reach_the_agent(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    await session.handle.signal(SIGNAL_DTMF, Dtmf(digits="1234#"))
    items = await session.wait_for(
        lambda t: (
            any(i["type"] == "user_turn" and "(keypad) 1234#" in i["text"] for i in t)
            and len(items_of(t, "agent_turn")) >= 1
        )
    )
    assert items_of(items, "dtmf")[0]["digits"] == "1234#"
    await session.hang_up()


async def test_continue_as_new_keeps_the_call(stack: Stack) -> None:
    session = stack.call(max_history_events=50)
    await started(session)
    first_run = (await session.handle.describe()).run_id
    await session.say(FRAUD, utterance_id="before")
    for n in range(4):
        await session.say(f"Please block my card ending in 8832 ({n})")
    described = await session.handle.describe()
    assert described.run_id != first_run
    state = await session.state()
    assert state["runs"] >= 2
    assert state["active_agent"] == "FraudAgent"
    assert state["visited"] == ["Concierge", "FraudAgent"]
    assert state["usage"]["FraudAgent"]["turns"] >= 4
    again = await session.say(FRAUD, utterance_id="before")
    assert again.duplicate
    await session.hang_up()
