"""Record the committed replay histories: `python -m tests.histories.record [--out DIR] [NAME ...]`.

Runs real calls on an embedded dev server and writes each call's history as JSON next to this
file (or into DIR). Re-record only on purpose: the replay test exists to prove that *old*
histories keep replaying after workflow code changes (guard changes with `workflow.patched`).
`python -m tests.histories.markers DIR` then lists the patch ids each recorded history holds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from activities.chat_models.base import AgentTurnInput, TextDeltaCallback
from activities.chat_models.offline.policy import OfflineChatModel
from activities.chat_models.scripted import ScriptedChatModel, ScriptedResponse
from baton.call_client import CallSession
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from contracts.agent_reply import AgentTurnResult
from contracts.calls import (
    SIGNAL_BARGE_IN,
    SIGNAL_DTMF,
    SIGNAL_SUPERVISOR_TRANSFER,
    BargeIn,
    CallInput,
    Dtmf,
    SupervisorTransfer,
)
from media_gateway.gateway_config import GatewayConfig
from media_gateway.server import Gateway, SoftphoneAccess, start_gateway
from runtime.temporal_client import connect
from tests.conftest import TEST_CODEC_KEYS
from tests.histories.v9_calls import (
    V9_SCRIPTS,
    OutageModel,
    backchannel,
    console_transfer,
    filler_registry,
    model_outage,
    outage_registry,
    route_change,
    twilio_transfer_refused,
    voice_moves,
)
from tests.histories.v10_calls import (
    V10_SCRIPTS,
    no_target_escalation,
    no_target_registry,
    speech_fallback,
    speech_fallback_registry,
    tool_result_rule,
    tool_then_return,
)
from tests.workflow.conftest import speech_in_flight
from workers.worker import run_workers

HERE = Path(__file__).parent
#: Histories are kept per workflow version: v1 sent each agent's whole brief to the model
#: activity, v2 names the pinned snapshot (patch "slim-model-requests"), v3 speaks through a
#: real media gateway (the gateway may end a reply itself on a barge-in), v4 speaks a voice
#: reply while the model writes it (patch "streamed-replies"), v5 holds encrypted payloads (the
#: tests' key, `tests.conftest.TEST_CODEC_KEYS`) from the workflow built by composition, v6
#: keeps the gateway's lease on voice calls (patch "gateway-lease") with heartbeating and
#: schedule-to-start bounds on every queued activity, v7 carries the Web UI's summaries (a
#: static summary on the call, one on every activity and local activity), v8 hands a business
#: tool's handoff fields to the handoff after it (patch "tool-handoff-context") and lets a caller
#: who was answered return to a specialist (patch "return-visits"); its tool handoff, answered
#: return and bounce are scripted, so they record the same way whatever the offline policy
#: decides. v9 adds a call for each patch of its own (tests/histories/v9_calls.py says which
#: call drives which path), and so does v10 (tests/histories/v10_calls.py). All must replay.
VERSION = "v10"
PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
FRAUD = "Someone used my card abroad, I think it's fraud"
BACK = "Thanks, the fraud matter is handled, I have another question about my balance"


async def _greeted(session: CallSession) -> None:
    await session.start()
    await session.wait_for(lambda items: any(i["type"] == "greeting" for i in items))


async def plain_turns(session: CallSession) -> None:
    await _greeted(session)
    await session.say("What's my checking balance?")
    await session.say("Show me my recent transactions")
    await session.hang_up()


async def handoffs_and_return_visit(session: CallSession) -> None:
    await _greeted(session)
    await session.say(FRAUD)
    await session.say("Please block my card ending in 8832")
    await session.say(BACK)
    await session.say("And my savings balance?")
    await session.say("What are my recent transactions?")
    await session.say("Wait, there is another charge I don't recognise, it's fraud")
    await session.hang_up()


async def barge_in(session: CallSession) -> None:
    await session.start()
    played: set[str] = set()
    await speech_in_flight(session, played)
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=10))
    turn = asyncio.create_task(session.say("What's my checking balance?"))
    await speech_in_flight(session, played)
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=20))
    await turn
    await session.hang_up()


async def supervisor_and_keypad(session: CallSession) -> None:
    await _greeted(session)
    await session.handle.signal(SIGNAL_DTMF, Dtmf(digits="42#"))
    await session.wait_for(lambda items: any(i["type"] == "dtmf" for i in items))
    await session.handle.signal(
        SIGNAL_SUPERVISOR_TRANSFER,
        SupervisorTransfer(target_agent="InvestmentAdvisor", reason="VIP", supervisor="kim"),
    )
    await session.wait_for(lambda items: any(i["type"] == "supervisor_action" for i in items))
    await session.say("How is my retirement portfolio doing?")
    await session.hang_up()


async def continue_as_new(session: CallSession) -> None:
    await _greeted(session)
    await session.say(FRAUD)
    for n in range(4):
        await session.say(f"Please block my card ending in 8832 ({n})")
    await session.hang_up()


async def voice(session: CallSession) -> None:
    """A voice call on a real gateway: the caller talks over the greeting, then is answered."""
    from media_gateway.vad import FRAME_BYTES
    from tests.gateway.conftest import speech_pcm

    assert GATEWAY is not None
    media = await GATEWAY.registry.open(session.call.call_id, "browser", PROFILE, "banking")
    while not media.playback.speaking:
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.8)
    audio = await speech_pcm("What is my checking balance?") + bytes(FRAME_BYTES * 40)
    for start in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES):
        media.caller_audio(audio[start : start + FRAME_BYTES])  # as the caller's socket would
        await asyncio.sleep(0.02)
    await session.wait_for(lambda items: any(i["type"] == "agent_turn" for i in items), 30)
    await session.hang_up()


class RecordingModel:
    """The offline policy, except for the calls a scenario scripted (`SCRIPTS`)."""

    name = "recording"

    def __init__(self) -> None:
        self.offline = OfflineChatModel()
        self.scripted = ScriptedChatModel()
        self.outage = OutageModel()
        for name, responses in SCRIPTS.items():
            self.scripted.queue(f"history-{name}", responses)

    async def generate(
        self, request: AgentTurnInput, *, on_text_delta: TextDeltaCallback | None = None
    ) -> AgentTurnResult:
        if request.call_id == "history-model_outage":
            return await self.outage.generate(request)
        if request.call_id.removeprefix("history-") in SCRIPTS:
            return await self.scripted.generate(request)
        return await self.offline.generate(request, on_text_delta=on_text_delta)


def _hand_to(target: str, reason: str) -> ScriptedResponse:
    return ScriptedResponse(
        calls=[("handoff_to_agent", {"target_agent": target, "reason": reason})]
    )


#: Model responses of the scripted calls, in order.
SCRIPTS: dict[str, list[ScriptedResponse]] = {
    "tool_handoff_context": [
        _hand_to("FraudAgent", "suspected fraud"),
        ScriptedResponse(calls=[("create_fraud_case", {"description": "charges abroad"})]),
        _hand_to("Concierge", "the caller has another request"),
        ScriptedResponse(say="Your case is open. What else can I do for you?"),
    ],
    "answered_return_visit": [
        _hand_to("FraudAgent", "suspected fraud"),
        ScriptedResponse(say="Your card ending in 8832 is blocked."),
        _hand_to("Concierge", "another request"),
        ScriptedResponse(say="Your checking balance is four thousand dollars."),
        _hand_to("FraudAgent", "another unknown charge"),
        ScriptedResponse(say="Tell me about that charge."),
    ],
    "ping_pong_escalation": [
        _hand_to("FraudAgent", "suspected fraud"),
        _hand_to("Concierge", "not mine"),
        _hand_to("FraudAgent", "not mine either"),
    ],
    **V9_SCRIPTS,
    **V10_SCRIPTS,
}


async def tool_handoff_context(session: CallSession) -> None:
    await _greeted(session)
    await session.say(FRAUD)
    await session.say("Please open a case, then I have a balance question")
    await session.hang_up()


async def answered_return_visit(session: CallSession) -> None:
    await _greeted(session)
    await session.say(FRAUD)
    await session.say("Please block my card ending in 8832")
    await session.say(BACK)
    await session.say("Wait, there is another charge I don't recognise")
    await session.say("It was in Lisbon yesterday")
    await session.hang_up()


async def ping_pong_escalation(session: CallSession) -> None:
    """Two agents hand the caller back and forth with no answer in between."""
    await _greeted(session)
    await session.say(FRAUD)
    await session.say("Hello? Can someone help?")


Scenario = Callable[[CallSession], Awaitable[None]]
SCENARIOS: dict[str, tuple[Scenario, dict[str, Any]]] = {
    "plain_turns": (plain_turns, {}),
    "handoffs_and_return_visit": (handoffs_and_return_visit, {}),
    # A call attached to no gateway: speech fails fast and the barge-in signal cuts the turn.
    "barge_in": (barge_in, {"channel": "browser", "gateway_address": "127.0.0.1:9"}),
    "ping_pong_escalation": (ping_pong_escalation, {}),
    "supervisor_and_keypad": (supervisor_and_keypad, {}),
    "continue_as_new": (continue_as_new, {"max_history_events": 50}),
    "voice": (voice, {}),
    "tool_handoff_context": (tool_handoff_context, {}),
    "answered_return_visit": (answered_return_visit, {}),
    # v9: one call per patch of this version (tests/histories/v9_calls.py).
    "route_change": (route_change, {}),
    "model_outage": (model_outage, {}),
    "console_transfer": (lambda s: console_transfer(s, _gateway()), {}),
    # A Twilio call no gateway serves: speech fails fast and no Twilio settings are set.
    "twilio_transfer_refused": (
        twilio_transfer_refused,
        {
            "channel": "twilio",
            "gateway_address": "127.0.0.1:9",
            "platform_call_id": "CA" + "0" * 32,
        },
    ),
    "voice_moves": (lambda s: voice_moves(s, _gateway(), filler_registry(_scratch())), {}),
    "backchannel": (lambda s: backchannel(s, _gateway()), {}),
    # v10: one call per patch of this version (tests/histories/v10_calls.py).
    "tool_result_rule": (tool_result_rule, {}),
    "tool_then_return": (tool_then_return, {}),
    "no_target_escalation": (no_target_escalation, {}),
    "speech_fallback": (
        lambda s: speech_fallback(s, _gateway(), speech_fallback_registry(_scratch())),
        {},
    ),
    # An ACS call no gateway serves, escalating to the scenario's queue with no ACS settings.
    "acs_queue_unconfigured": (
        twilio_transfer_refused,
        {
            "channel": "acs",
            "gateway_address": "127.0.0.1:9",
            "platform_call_id": "00000000-0000-4000-8000-000000000acd",
        },
    ),
}
GATEWAY: Gateway | None = None
#: Where this recording's edited registry copies go (inside its data folder).
SCRATCH: Path | None = None
#: The recognizer's time to words is the machine's: a loaded one takes seconds, and a backchannel
#: must be judged by its words, not by the clock.
WORD_WAIT_MS = 15_000
#: Environment prefixes of the cloud providers' settings (runtime.settings).
PROVIDER_SETTINGS = ("OPENAI_", "AZURE_", "TWILIO_", "ACS_")


def _gateway() -> Gateway:
    assert GATEWAY is not None, "record() starts the gateway first"
    return GATEWAY


def _scratch() -> Path:
    assert SCRATCH is not None, "main() sets the scratch folder first"
    return SCRATCH


def call_fields(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The call's CallInput fields; the outage call loads a registry with a fallback model."""
    if name == "model_outage":
        return {**fields, "registry": outage_registry(_scratch())}
    if name == "no_target_escalation":
        return {**fields, "registry": no_target_registry(_scratch())}
    return fields


async def record(server: EmbeddedTemporal, out: Path, wanted: set[str]) -> None:
    global GATEWAY
    client = await connect(server.address)
    stop = asyncio.Event()
    queues = ["calls", "llm", "speech", "tools"]
    workers = asyncio.create_task(run_workers(client, queues, stop, chat_model=RecordingModel()))
    GATEWAY = await start_gateway(
        client,
        GatewayConfig(media_address="127.0.0.1:0", word_wait_ms=WORD_WAIT_MS),
        secrets.token_bytes(32),
        http_port=0,
        # The console queue answers a browser call's transfer (console_transfer).
        softphone=SoftphoneAccess(enabled=True, operator_key=secrets.token_urlsafe(16)),
    )
    try:
        for name, (script, fields) in SCENARIOS.items():
            if name not in wanted:
                continue
            call = CallInput(
                call_id=f"history-{name}",
                scenario="banking",
                caller_profile=PROFILE,
                **call_fields(name, fields),
            )
            session = CallSession(client, call)
            await script(session)
            await session.handle.result(follow_runs=True)
            query = f"WorkflowId = '{session.workflow_id}'"
            runs = sorted(
                [e async for e in client.list_workflows(query)], key=lambda e: e.start_time
            )
            for index, execution in enumerate(runs, start=1):
                history = await client.get_workflow_handle(
                    session.workflow_id, run_id=execution.run_id
                ).fetch_history()
                suffix = f".run{index}" if len(runs) > 1 else ""
                (out / f"{VERSION}-{name}{suffix}.json").write_text(history.to_json())
            print(f"recorded {name}: {len(runs)} run(s)")
    finally:
        await GATEWAY.close()
        stop.set()
        await workers


def main(argv: list[str] | None = None) -> int:
    global SCRATCH
    parser = argparse.ArgumentParser(description="Record replay histories from real calls.")
    parser.add_argument(
        "names", nargs="*", help=f"calls to record (default: all): {', '.join(SCENARIOS)}"
    )
    parser.add_argument("--out", type=Path, default=HERE, help="folder for the JSON files")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(SCENARIOS))
    if unknown:
        print(
            f"unknown call(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}", file=sys.stderr
        )
        return 2
    args.out = args.out.resolve()  # before the recorder moves to its scratch folder
    args.out.mkdir(parents=True, exist_ok=True)
    # Offline and on loopback whatever the shell holds: no cloud model, recognizer or transfer
    # platform is configured, and every call loads the shipped registry unless it says another.
    for name in list(os.environ):
        if name.startswith(PROVIDER_SETTINGS) or name in ("BATON_PUBLIC_URL", "BATON_REGISTRY"):
            del os.environ[name]
    with tempfile.TemporaryDirectory() as data, contextlib.chdir(data):
        os.environ["BATON_DATA_DIR"] = data
        # Edited registries are named relative to this folder, so no path of the recording
        # machine lands in a committed call input.
        SCRATCH = Path(".")
        # Recorded payloads are encrypted with the tests' key, so the replay tests can read them.
        os.environ["BATON_CODEC_KEYS"] = TEST_CODEC_KEYS
        with EmbeddedTemporal(DevServerOptions()) as server:
            asyncio.run(record(server, args.out, set(args.names) or set(SCENARIOS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
