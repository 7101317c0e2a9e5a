"""The calls recorded from v10 on, each driving one of this version's patched paths for real
(tests/histories/record.py runs them; `python -m tests.histories.markers` shows what each holds).

* tool_result_rule: the identity desk's `verify_identity` returns `verified: true` and the
  route's `on_tool_result` rule hands the caller back to the concierge, skipping the model's
  own handoff in the same response ("tool-result-rules").
* tool_then_return: the fraud desk blocks the card and hands back in one response, and the
  caller's next question goes back to the fraud desk: progress between the hops, no loop
  ("progress-between-hops").
* ping_pong_escalation (record.py's own call, recorded again): two agents bounce the caller
  with no turn, tool or answer between two hops, and the guard still escalates.
* no_target_escalation: the banking scenario without its `escalation` block; the caller asks
  for a person and is told a colleague will call back instead of "please hold"
  ("no-target-truth").

Every call's model turns are scripted, so they record the same way whatever the offline policy
decides; every patch above is asked at each run's start, so each call holds all three markers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from activities.chat_models.scripted import ScriptedResponse
from baton.call_client import CallSession
from tests.workflow.test_model_outages import registry_copy

HANDOFF = "handoff_to_agent"
VERIFIED = {"full_name": "Alex Morgan", "dob": "1985-04-12", "ssn_last4": "4321"}


def _hand_to(target: str, reason: str) -> ScriptedResponse:
    return ScriptedResponse(calls=[(HANDOFF, {"target_agent": target, "reason": reason})])


#: Model responses of the scripted v10 calls, in order (keyed by call name).
V10_SCRIPTS: dict[str, list[ScriptedResponse]] = {
    "tool_result_rule": [
        _hand_to("AuthAgent", "verify before changes"),
        ScriptedResponse(
            calls=[
                ("verify_identity", VERIFIED),
                (HANDOFF, {"target_agent": "FraudAgent", "reason": "model's own pick"}),
            ]
        ),
        ScriptedResponse(say="Thank you, Alex, you're verified. What shall we change?"),
    ],
    "tool_then_return": [
        _hand_to("FraudAgent", "suspected fraud"),
        ScriptedResponse(
            calls=[
                ("block_card", {"last4": "8832", "reason": "card stolen"}),
                (HANDOFF, {"target_agent": "Concierge", "reason": "card blocked"}),
            ]
        ),
        ScriptedResponse(say="Your card is blocked. Anything else?"),
        _hand_to("FraudAgent", "another unknown charge"),
        ScriptedResponse(say="Tell me about that charge."),
    ],
    "no_target_escalation": [
        ScriptedResponse(calls=[("escalate_human", {"reason": "caller asked for a person"})])
    ],
}


async def _greeted(session: CallSession) -> None:
    await session.start()
    await session.wait_for(lambda items: any(i["type"] == "greeting" for i in items))


async def tool_result_rule(session: CallSession) -> None:
    await _greeted(session)
    await session.say("I want to change my mailing address, you'll need to verify me first")
    await session.say("Alex Morgan, April 12 1985, the last four are 4321")
    await session.hang_up()


async def tool_then_return(session: CallSession) -> None:
    await _greeted(session)
    await session.say("Someone used my card abroad, I think it's fraud")
    await session.say("Please block my card ending in 8832")
    await session.say("Wait, there is another charge I don't recognise")
    await session.say("It was in Lisbon yesterday")
    await session.hang_up()


async def no_target_escalation(session: CallSession) -> None:
    await _greeted(session)
    await session.say("I want to speak to a person")


def no_target_registry(root: Path) -> str:
    """The shipped registry whose banking scenario names nobody to transfer to."""

    def without_targets(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
        scenario.pop("escalation", None)

    # Relative to the recorder's working folder, so no machine path lands in the call input.
    return os.path.relpath(registry_copy(root / "no_target", without_targets, silence_bound=None))
