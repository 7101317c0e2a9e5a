"""Issue 15 in real calls: a route's `on_tool_result` rule hands the caller on by code once a
business tool returns the result it names (banking: AuthAgent -> Concierge when
`verify_identity` returns `verified: true`), with no model decision, and the transcript and
the audit timeline say it was the rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from activities.chat_models.scripted import ScriptedResponse
from audit.bundle import load_call
from audit.describe import describe
from audit.timeline import read_timeline
from tests.workflow.conftest import items_of, scripted_stack, started

HANDOFF = "handoff_to_agent"
TO_THE_IDENTITY_DESK = ScriptedResponse(
    calls=[(HANDOFF, {"target_agent": "AuthAgent", "reason": "verify before changes"})]
)
RIGHT = {"full_name": "Alex Morgan", "dob": "1985-04-12", "ssn_last4": "4321"}
WRONG = {**RIGHT, "ssn_last4": "9999"}


async def test_a_verified_caller_is_handed_back_by_the_rule_with_no_model_decision(
    temporal_client: Any, tmp_path: Path
) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                TO_THE_IDENTITY_DESK,
                # The identity desk's model only checks the identity, and in the same response
                # asks for the fraud desk: the rule decides first and that call never runs.
                ScriptedResponse(
                    calls=[
                        ("verify_identity", RIGHT),
                        (HANDOFF, {"target_agent": "FraudAgent", "reason": "model's own pick"}),
                    ]
                ),
                # The concierge (a discrete route) answers the same utterance.
                ScriptedResponse(say="Thank you, Alex, you're verified. What shall we change?"),
            ],
        )
        await started(session)
        await session.say("I want to change my address, you'll need to verify me")
        reply = await session.say("Alex Morgan, April 12 1985, last four 4321")
        assert reply.agent == "Concierge" and reply.status == "active"
        assert reply.text == "Thank you, Alex, you're verified. What shall we change?"

        transcript = await session.transcript()
        back = items_of(transcript, "handoff")[-1]
        assert (back["source"], back["target"], back["success"]) == ("AuthAgent", "Concierge", True)
        assert back["trigger"] == "rule" and back["handoff_type"] == "discrete"
        assert back["reason"] == "verify_identity returned verified=true"
        skipped = items_of(transcript, "tool_result")[-1]
        assert skipped["tool"] == HANDOFF and "skipped" in skipped["content"]
        assert [h["trigger"] for h in (await session.state())["handoffs"]] == ["llm", "rule"]

        await session.hang_up()
        history = tmp_path / "call.json"
        history.write_text((await session.handle.fetch_history()).to_json())
        timeline = await read_timeline(await load_call(str(history)))
        lines = [describe(item) for item in timeline.items if item.handoff is not None]
        assert lines[-1] == (
            "handoff AuthAgent → Concierge, discrete (rule, tool-result rule on AuthAgent → "
            "Concierge: verify_identity returned verified=true): verify_identity returned "
            "verified=true"
        )
        skipped_item = next(
            item
            for item in timeline.items
            if item.tool is not None
            and item.tool.name == HANDOFF
            and "FraudAgent" in item.tool.arguments
        )
        assert skipped_item.tool is not None and skipped_item.tool.handled_as == "skipped"
    finally:
        await stack.stop_workers()


async def test_a_failed_identity_check_leaves_the_caller_with_the_identity_desk(
    temporal_client: Any,
) -> None:
    stack, model = await scripted_stack(temporal_client)
    try:
        session = stack.call()
        model.queue(
            session.call.call_id,
            [
                TO_THE_IDENTITY_DESK,
                ScriptedResponse(calls=[("verify_identity", WRONG)]),
                ScriptedResponse(say="Those details don't match. Could you repeat them?"),
            ],
        )
        await started(session)
        await session.say("I want to change my address, you'll need to verify me")
        reply = await session.say("Alex Morgan, April 12 1985, last four 9999")
        assert reply.agent == "AuthAgent"
        assert reply.text == "Those details don't match. Could you repeat them?"
        handoffs = items_of(await session.transcript(), "handoff")
        assert [(h["target"], h["trigger"]) for h in handoffs] == [("AuthAgent", "llm")]
        await session.hang_up()
    finally:
        await stack.stop_workers()
