"""The calls recorded from v9 on, each driving one of this version's patched paths for real
(tests/histories/record.py runs them; `python -m tests.histories.markers` shows what each holds).

* route_change: a supervisor's `change_routes` Update adds Concierge -> ComplianceDesk, and the
  next handoff takes it ("route-changes").
* model_outage: the Concierge's model fails (its fallback answers), hangs past its share of the
  silence bound (the fallback answers), then fails with its fallback too (the honest apology):
  "model-fallback", "turn-silence-bound", "honest-apology".
* console_transfer: a browser call on the real gateway asks for a person, waits in the console
  queue and is taken, told by the `transfer_settled` signal ("human-transfer", "ticket-sinks").
* twilio_transfer_refused: a Twilio call (no gateway reachable, no Twilio settings) escalates;
  the platform refuses the transfer and the caller keeps the ticket ("human-transfer",
  "platform-transfer-outcome", asked on Twilio and ACS calls only).
* voice_moves: a voice call whose scenario's filler threshold is tiny hears a filler while its
  words are recognized ("slow-work-filler"), then the caller redials through another gateway
  (renewals naming it: "lease-holder", "gateway-moves"), where the next reply is lost, and
  comes back to the first gateway, which says the lost reply again ("resay-unheard").
* backchannel: the caller says "okay" over the greeting, which resumes ("backchannel-words").

Each call's model turns are scripted (or fail on purpose), so they record the same way whatever
the offline policy decides.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from activities.chat_models.base import AgentTurnInput
from activities.chat_models.scripted import ScriptedResponse
from activities.provider_errors import ProviderError
from baton.call_client import CallSession
from contracts.agent_reply import AgentTurnResult
from contracts.calls import SIGNAL_RENEW_LEASE, LeaseRenewal
from contracts.routes import UPDATE_CHANGE_ROUTES, RouteChange, RouteChangeResult
from contracts.transfer import SIGNAL_TRANSFER_SETTLED, TransferSettled
from media_gateway.server import Gateway
from tests.workflow.test_model_outages import registry_copy

PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
ESCALATE = ScriptedResponse(calls=[("escalate_human", {"reason": "caller asked for a person"})])
#: A gateway replica that never answers: the call only has to point there.
OTHER_GATEWAY = "replica-b:4242"
OTHER_ADDRESS = "127.0.0.1:1"
#: Within a call's limit and well past a tiny filler threshold.
LOUD_AND_LONG = 30.0
#: How long the outage call's model hangs before it fails anyway (a bound on the recording if
#: the silence bound did not cut it).
HANG_SECONDS = 20.0

#: Model responses of the scripted v9 calls, in order (keyed by scenario name).
V9_SCRIPTS: dict[str, list[ScriptedResponse]] = {
    "route_change": [
        ScriptedResponse(
            calls=[
                (
                    "handoff_to_agent",
                    {"target_agent": "ComplianceDesk", "reason": "regulatory complaint"},
                )
            ]
        ),
    ],
    "console_transfer": [ESCALATE],
    "twilio_transfer_refused": [ESCALATE],
    "voice_moves": [
        ScriptedResponse(say="Your checking balance is four thousand dollars."),
        ScriptedResponse(say="Your savings balance is twelve thousand dollars."),
    ],
    "backchannel": [],
}

#: What the primary model and the fallback do on each turn of the outage call.
OUTAGE_PRIMARY = ["fail", "hang", "fail"]
OUTAGE_FALLBACK = ["answer", "answer", "fail"]


class OutageModel:
    """A provider that fails or hangs as `OUTAGE_PRIMARY` says, and a fallback model behind the
    same endpoint that answers or fails as `OUTAGE_FALLBACK` says."""

    def __init__(self) -> None:
        self.primary = list(OUTAGE_PRIMARY)
        self.fallback = list(OUTAGE_FALLBACK)

    async def generate(self, request: AgentTurnInput) -> AgentTurnResult:
        plan = (self.fallback if request.fallback_model else self.primary).pop(0)
        if plan == "hang":  # the silence bound cancels the call long before this ends
            await asyncio.sleep(HANG_SECONDS)
        if plan != "answer":
            raise ProviderError("HTTP 500: the model is overloaded", retryable=False)
        return AgentTurnResult(text="Your balance is ready.")


async def _greeted(session: CallSession) -> None:
    await session.start()
    await session.until_greeted()


async def route_change(session: CallSession) -> None:
    await _greeted(session)
    change = RouteChange(
        action="add",
        from_agent="Concierge",
        to_agent="ComplianceDesk",
        condition="The caller has a regulatory complaint",
        reason="compliance queue is short today",
        supervisor="sam",
    )
    await session.handle.execute_update(UPDATE_CHANGE_ROUTES, change, result_type=RouteChangeResult)
    await session.say("I want to file a regulatory complaint")
    await session.hang_up()


async def model_outage(session: CallSession) -> None:
    await _greeted(session)
    for question in ("What's my balance?", "And my savings?", "And my credit card?"):
        await session.say(question)
    await session.hang_up()


def outage_registry(root: Path) -> str:
    """The shipped registry with a fallback model for the Concierge."""

    def with_fallback(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
        agent["model"] = {"name": "primary-model", "fallback": "backup-model"}

    return _relative(registry_copy(root / "outage", with_fallback, silence_bound=None))


def filler_registry(root: Path) -> str:
    """The shipped registry whose banking scenario says a filler after 50 ms of waiting."""

    def quick_filler(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
        scenario["filler_after_seconds"] = 0.05

    return _relative(registry_copy(root / "filler", quick_filler, silence_bound=None))


def _relative(path: str) -> str:
    """`path` as the recorder's working folder sees it (registry_copy resolves nothing)."""
    return os.path.relpath(path)


async def console_transfer(session: CallSession, gateway: Gateway) -> None:
    await gateway.registry.open(session.call.call_id, "browser", PROFILE, "banking")
    await session.until_greeted()
    turn = asyncio.create_task(session.say("I want to talk to a person"))
    console = gateway.front.console
    assert console is not None, "the recording gateway serves the console"
    async with asyncio.timeout(LOUD_AND_LONG):
        while session.call.call_id not in console.calls:
            await asyncio.sleep(0.05)
    taken = TransferSettled(taken=True, taken_by="op-7", detail="browser console")
    await session.handle.signal(SIGNAL_TRANSFER_SETTLED, taken)
    await turn


async def twilio_transfer_refused(session: CallSession) -> None:
    await _greeted(session)
    await session.say("I want to speak to a real person please")


def _items(items: list[dict[str, Any]], kind: str, **fields: Any) -> list[dict[str, Any]]:
    return [
        item
        for item in items
        if item["type"] == kind and all(item.get(k) == v for k, v in fields.items())
    ]


async def voice_moves(session: CallSession, gateway: Gateway, registry: str) -> None:
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
    await session.wait_for(lambda items: bool(_items(items, "agent_turn")), LOUD_AND_LONG)
    # The caller redials through another gateway: its newer connection holds the call.
    here = media.config.media_address
    moved = LeaseRenewal(
        gateway_address=OTHER_ADDRESS,
        gateway_id=OTHER_GATEWAY,
        connected_at=media.connected_at + timedelta(seconds=5),
    )
    await session.handle.signal(SIGNAL_RENEW_LEASE, moved)
    await session.say("And my savings balance?")  # spoken to the other gateway: lost
    # Back on this gateway with a newer connection: the lost reply is said again here.
    assert await media.control.renew_lease(here, datetime.now(UTC) + timedelta(seconds=10))
    await session.wait_for(
        lambda items: bool(_items(items, "agent_turn", said_again=True)), LOUD_AND_LONG
    )
    await session.hang_up()


async def backchannel(session: CallSession, gateway: Gateway) -> None:
    from media_gateway.vad import FRAME_BYTES
    from tests.gateway.conftest import speech_pcm

    media = await gateway.registry.open(session.call.call_id, "browser", PROFILE, "banking")
    while not media.playback.speaking:
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.8)  # well into the greeting
    audio = await speech_pcm("Okay.") + bytes(FRAME_BYTES * 50)
    for start in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES):
        media.caller_audio(audio[start : start + FRAME_BYTES])
        await asyncio.sleep(0.02)
    await session.wait_for(lambda items: bool(_items(items, "backchannel")), LOUD_AND_LONG)
    await session.hang_up()
