"""Calls that used to wait forever or loop: a model that keeps making refused tool calls, a queue
nobody serves, and a keypad flood. Each ends honestly, with a ticket where a human must step in."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from activities.chat_models.base import AgentTurnInput, TextDeltaCallback
from activities.handoff import resolve_handoff
from contracts.agent_reply import AgentTurnResult, ToolCall
from contracts.calls import Dtmf
from contracts.handoff import RENDER_START_GREETING, TEMPLATE_RENDER_ERROR, GreetingRequest
from contracts.temporal import CALLS_QUEUE
from tests.workflow.conftest import Stack, items_of, started
from workflows.call_session import CallSessionWorkflow
from workflows.policies import LIMITS


class JunkToolModel:
    """Answers every turn over HTTP just fine, always with tool calls that get refused."""

    name = "junk-tools"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(
        self, request: AgentTurnInput, *, on_text_delta: TextDeltaCallback | None = None
    ) -> AgentTurnResult:
        self.calls += 1
        junk = [
            ToolCall(id=f"c{self.calls}a", name="teleport_caller", arguments="{}"),
            ToolCall(id=f"c{self.calls}b", name="transfer_to_agent", arguments="not json"),
        ]
        return AgentTurnResult(tool_calls=junk, provider="test", model="junk")


async def test_a_model_whose_tool_calls_keep_being_refused_is_escalated(
    temporal_client: Any,
) -> None:
    stack, model = Stack(temporal_client), JunkToolModel()
    await stack.start_workers(chat_model=model)
    try:
        session = stack.call()
        await started(session)
        reply = await session.say("I need help with my card")
        assert reply.status == "escalated"
        outcome = await asyncio.wait_for(session.handle.result(), 30)
        assert outcome["status"] == "escalated" and outcome["ticket"] is not None
        reason = outcome["end_reason"]
        assert f"refused {LIMITS.max_refused_rounds} times in a row" in reason
        assert "unknown tool 'teleport_caller'" in reason  # the ticket names what went wrong
        assert model.calls == LIMITS.max_refused_rounds  # not five rounds a turn, forever
    finally:
        await stack.stop_workers()


async def test_a_queue_nobody_serves_ends_in_an_apology_and_escalation(
    temporal_client: Any,
) -> None:
    stack = Stack(temporal_client)
    await stack.start_workers(queues=["calls", "speech", "tools"])  # no llm worker anywhere
    try:
        session = stack.call()
        await started(session)
        reply = await asyncio.wait_for(session.say("What is my checking balance?"), 60)
        assert reply.status == "escalated"
        outcome = await session.handle.result()
        assert outcome["end_reason"] == "no worker served the llm queue"
        assert outcome["ticket"] is not None
        transcript = await session.transcript()
        said = [item["text"] for item in items_of(transcript, "agent_turn")]
        assert any("connecting you with a colleague" in text for text in said)
    finally:
        await stack.stop_workers()


async def test_a_keypad_flood_queues_no_more_than_the_pending_cap(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    await asyncio.gather(*(session.handle.signal("dtmf", Dtmf(digits="5")) for _ in range(60)))
    async with asyncio.timeout(60):  # the queue drains: every accepted press is answered
        while (await session.state())["pending"]:
            await asyncio.sleep(0.1)
    transcript = await session.transcript()
    presses = items_of(transcript, "dtmf")
    answered = [i for i in items_of(transcript, "user_turn") if i["text"].startswith("(keypad)")]
    assert len(presses) == 60  # every press is on the record...
    assert len(answered) <= LIMITS.max_pending + 1  # ...but at most a queue's worth answered


@activity.defn(name=RENDER_START_GREETING)
async def greeting_that_cannot_render(request: GreetingRequest) -> str:
    """Stands in for the real local activity when a template fails for this caller (the real
    one raises exactly this; see tests/unit/test_render_failures.py)."""
    raise ApplicationError(
        "agent FrontDesk greeting: 'None' has no attribute 'upper'",
        type=TEMPLATE_RENDER_ERROR,
        non_retryable=True,
    )


async def test_a_template_that_fails_at_run_time_escalates_instead_of_failing_the_call(
    temporal_client: Any,
) -> None:
    stack = Stack(temporal_client)
    await stack.start_workers(queues=["llm", "speech", "tools"])
    calls = Worker(
        temporal_client,
        task_queue=CALLS_QUEUE,
        workflows=[CallSessionWorkflow],
        activities=[greeting_that_cannot_render, resolve_handoff],
    )
    try:
        async with calls:
            session = stack.call()
            await session.start()
            outcome = await asyncio.wait_for(session.handle.result(), 30)
        assert outcome["status"] == "escalated" and outcome["ticket"] is not None
        assert "greeting could not be rendered" in outcome["end_reason"]
    finally:
        await stack.stop_workers()
