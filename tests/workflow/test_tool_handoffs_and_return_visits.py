"""Issue 15 in real calls: a business tool's result shapes the handoff after it, and a caller
who comes back to a specialist with a new question is not taken for a ping-pong loop."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import yaml

from activities.chat_models.base import AgentTurnInput, TextDeltaCallback
from activities.chat_models.scripted import ScriptedChatModel, ScriptedResponse
from activities.escalation import open_tickets
from contracts.agent_reply import AgentTurnResult
from registries.loading import SHIPPED_REGISTRY
from tests.workflow.conftest import Stack, items_of, started

HANDOFF = "handoff_to_agent"


class PromptRecordingModel(ScriptedChatModel):
    """The scripted model, keeping the rendered system prompt of every request it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[tuple[str, str]] = []

    async def generate(
        self, request: AgentTurnInput, *, on_text_delta: TextDeltaCallback | None = None
    ) -> AgentTurnResult:
        self.prompts.append((request.agent, request.system_prompt))
        return await super().generate(request, on_text_delta=on_text_delta)


def hand_to(target: str, reason: str) -> ScriptedResponse:
    return ScriptedResponse(calls=[(HANDOFF, {"target_agent": target, "reason": reason})])


async def scripted_stack(temporal_client: Any) -> tuple[Stack, PromptRecordingModel]:
    stack, model = Stack(temporal_client), PromptRecordingModel()
    await stack.start_workers(chat_model=model)
    return stack, model


async def test_a_fraud_case_tool_result_becomes_the_next_desks_notes(temporal_client: Any) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                hand_to("FraudAgent", "suspected fraud"),
                ScriptedResponse(calls=[("create_fraud_case", {"description": "charges abroad"})]),
                hand_to("Concierge", "the caller has another request"),
                ScriptedResponse(say="Your case is open. What else can I do for you?"),
            ],
        )
        await started(session)
        await session.say("Someone used my card abroad")
        reply = await session.say("Please open a case, and then I have a balance question")
        assert reply.agent == "Concierge" and reply.status == "active"

        transcript = await session.transcript()
        results = items_of(transcript, "tool_result")
        result = next(item for item in results if item["tool"] == "create_fraud_case")
        case_id = result["content"].split('"case_id": "')[1].split('"')[0]
        back = items_of(transcript, "handoff")[-1]
        # The tool's summary outranks the model's own reason.
        assert back["target"] == "Concierge" and back["reason"] == f"fraud case {case_id} opened"
        notes = back["resolution"]["system_vars"]["handoff_context"]
        # Sanitised: the card the caller did not name is dropped as empty.
        assert notes == {"fraud_case_id": case_id, "case_status": "open"}

        concierge_prompt = model.prompts[-1]
        assert concierge_prompt[0] == "Concierge"
        assert f"Why they came back: fraud case {case_id} opened" in concierge_prompt[1]
        notes_line = next(
            line
            for line in concierge_prompt[1].splitlines()
            if line.startswith("Notes from the previous desk:")
        )
        assert case_id in notes_line and "card_last4" not in notes_line
        await session.hang_up()
    finally:
        await stack.stop_workers()


async def test_a_handoff_with_no_tool_before_it_carries_no_notes(temporal_client: Any) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                hand_to("FraudAgent", "suspected fraud"),
                ScriptedResponse(calls=[("create_fraud_case", {"description": "charges abroad"})]),
                ScriptedResponse(say="Your case is open."),
                hand_to("Concierge", "the caller has another request"),
                ScriptedResponse(say="What else can I do for you?"),
            ],
        )
        await started(session)
        await session.say("Someone used my card abroad")
        await session.say("Please open a case")
        # A turn later the case is history: the handoff gives only the model's reason.
        await session.say("Now a balance question")
        back = items_of(await session.transcript(), "handoff")[-1]
        assert back["reason"] == "the caller has another request"
        assert "handoff_context" not in back["resolution"]["system_vars"]
        assert "Notes from the previous desk" not in model.prompts[-1][1]
        await session.hang_up()
    finally:
        await stack.stop_workers()


async def test_returning_to_a_specialist_with_a_new_question_is_not_a_loop(
    temporal_client: Any,
) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                hand_to("FraudAgent", "suspected fraud"),  # turn 1
                ScriptedResponse(say="Your card ending in 8832 is blocked."),  # turn 2
                hand_to("Concierge", "another request"),  # turn 3
                ScriptedResponse(say="Your checking balance is four thousand dollars."),
                hand_to("FraudAgent", "another unknown charge"),  # turn 4
            ],
        )
        await started(session)
        await session.say("Someone used my card abroad")
        await session.say("Please block my card ending in 8832")
        await session.say("Thanks. What is my checking balance?")
        # Concierge -> Fraud -> Concierge -> Fraud within four turns, each matter answered.
        reply = await session.say("Wait, there is another charge I don't recognise")
        assert reply.status == "active" and reply.agent == "FraudAgent"
        summary = await session.summary()
        assert summary.status == "active" and summary.active_agent == "FraudAgent"
        await session.hang_up()
    finally:
        await stack.stop_workers()


async def test_a_specialist_that_finishes_with_a_tool_and_hands_back_is_no_loop(
    temporal_client: Any,
) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                hand_to("FraudAgent", "suspected fraud"),  # turn 1
                # Turn 2: the fraud desk blocks the card and hands back in one response; the
                # concierge answers the same utterance (a discrete route).
                ScriptedResponse(
                    calls=[
                        ("block_card", {"last4": "8832", "reason": "card stolen"}),
                        (HANDOFF, {"target_agent": "Concierge", "reason": "card blocked"}),
                    ]
                ),
                ScriptedResponse(say="Your card is blocked. Anything else?"),
                hand_to("FraudAgent", "another unknown charge"),  # turn 3
            ],
        )
        await started(session)
        await session.say("Someone used my card abroad")
        back = await session.say("Please block my card ending in 8832")
        assert back.agent == "Concierge" and back.status == "active"
        # Concierge -> Fraud -> Concierge -> Fraud within three turns; between the hops the
        # card was blocked (a tool that succeeded) and the caller asked something new.
        reply = await session.say("Wait, there is another charge I don't recognise")
        assert reply.status == "active" and reply.agent == "FraudAgent"
        hops = [(h["source"], h["target"]) for h in items_of(await session.transcript(), "handoff")]
        assert hops == [
            ("Concierge", "FraudAgent"),
            ("FraudAgent", "Concierge"),
            ("Concierge", "FraudAgent"),
        ]
        await session.hang_up()
    finally:
        await stack.stop_workers()


async def test_agents_bouncing_the_caller_with_no_answer_still_escalate(
    temporal_client: Any,
) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                hand_to("FraudAgent", "suspected fraud"),  # turn 1
                hand_to("Concierge", "not mine"),  # turn 2: no answer, straight back...
                hand_to("FraudAgent", "not mine either"),  # ...and straight over again
            ],
        )
        await started(session)
        await session.say("Someone used my card abroad")
        reply = await session.say("Hello? Can someone help?")
        assert reply.status == "escalated"
        outcome = await asyncio.wait_for(session.handle.result(), 30)
        assert "ping-pong between Concierge and FraudAgent" in outcome["end_reason"]
        (ticket,) = open_tickets()
        assert ticket.call_id == session.call.call_id and "ping-pong" in ticket.reason
        assert [(h.source, h.target) for h in ticket.handoff_history] == [
            ("Concierge", "FraudAgent"),
            ("FraudAgent", "Concierge"),
            ("Concierge", "FraudAgent"),
        ]
        assert ticket.collected_data["client_id"] == "C1001"
        assert "Hello? Can someone help?" in ticket.last_utterances and ticket.summary
        assert outcome["ticket"]["ticket_id"] == ticket.ticket_id
    finally:
        await stack.stop_workers()


TRIAGE_TOOLS = """
tools:
  - name: triage_card_report
    description: Note what the caller reports about a card before the fraud desk takes over.
    parameters:
      type: object
      properties: {}
      additionalProperties: false
    mutates: false
"""
TRIAGE_HANDLER = """
def triage_card_report(ctx):
    return {
        "handoff_summary": "card 8832 reported stolen",
        "handoff_context": {
            "card_last4": "8832",
            "target_agent": "ComplianceDesk",
            "success": True,
            "message": "steer me",
            "seen_abroad": "",
        },
        "session_overrides": {"greeting": "I have your report on card 8832 in front of me."},
    }
"""


async def test_a_tools_greeting_override_is_spoken_and_its_control_flags_are_dropped(
    temporal_client: Any, tmp_path: Path
) -> None:
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    (registry / "toolstore" / "triage.yaml").write_text(TRIAGE_TOOLS)
    (registry / "toolstore" / "triage.py").write_text(TRIAGE_HANDLER)
    concierge = registry / "agentstore" / "concierge" / "agent.yaml"
    config = yaml.safe_load(concierge.read_text())
    config["tools"].append("triage_card_report")
    concierge.write_text(yaml.safe_dump(config, sort_keys=False))

    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call(registry=str(registry))
        model.queue(
            session.call.call_id,
            [
                ScriptedResponse(calls=[("triage_card_report", {})]),
                hand_to("FraudAgent", "suspected fraud"),  # announced: the target greets
            ],
        )
        await started(session)
        reply = await session.say("My card ending in 8832 was stolen")
        assert reply.agent == "FraudAgent"
        assert reply.text == "I have your report on card 8832 in front of me."
        handoff = items_of(await session.transcript(), "handoff")[-1]
        assert handoff["target"] == "FraudAgent"  # the result's target_agent steers nothing
        assert handoff["reason"] == "card 8832 reported stolen"
        assert handoff["resolution"]["system_vars"]["handoff_context"] == {"card_last4": "8832"}
        await session.hang_up()
    finally:
        await stack.stop_workers()
