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
* speech_fallback: a voice call on the real gateway whose Concierge names the offline speech
  fallback for both roles; every transcription and synthesis request names it
  ("speech-fallback-per-agent"; the recorder's offline providers never need it).
* acs_queue_unconfigured (record.py's own call): an ACS call whose escalation goes to the
  banking scenario's queue, now a Job Router queue on ACS: the transfer waits there with the
  hold timeout and a heartbeat ("acs-job-router"), and fails at once as the recorder has no
  ACS settings, so the caller keeps the ticket.

Every call's model turns are scripted, so they record the same way whatever the offline policy
decides; every patch above is asked at each run's start, so each call holds all the markers
there were when it was recorded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

from activities.chat_models.scripted import ScriptedResponse
from baton.call_client import CallSession
from media_gateway.server import Gateway
from tests.histories.v9_calls import LOUD_AND_LONG, PROFILE
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
    "speech_fallback": [ScriptedResponse(say="Your checking balance is four thousand dollars.")],
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


async def speech_fallback(session: CallSession, gateway: Gateway, registry: str) -> None:
    from media_gateway.vad import FRAME_BYTES
    from tests.gateway.conftest import speech_pcm

    calls = gateway.registry
    calls.config = dataclasses.replace(calls.config, registry=registry)
    try:
        media = await calls.open(session.call.call_id, "browser", PROFILE, "banking")
    finally:
        calls.config = dataclasses.replace(calls.config, registry=None)
    await session.until_greeted()
    audio = await speech_pcm("What is my checking balance?") + bytes(FRAME_BYTES * 40)
    for start in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES):
        media.caller_audio(audio[start : start + FRAME_BYTES])  # as the caller's socket would
        await asyncio.sleep(0.02)
    await session.wait_for(
        lambda items: any(i["type"] == "agent_turn" for i in items), LOUD_AND_LONG
    )
    await session.hang_up()


def speech_fallback_registry(root: Path) -> str:
    """The shipped registry whose Concierge names the offline speech fallback."""

    def offline_fallback(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
        agent["speech_fallback"] = {"recognizer": "offline", "synthesizer": "offline"}

    return os.path.relpath(
        registry_copy(root / "speech_fallback", offline_fallback, silence_bound=None)
    )
