"""The human-agent console, gateway side, through its real interfaces: a speech worker's
`offer_to_console` over the media plane, the console's HTTP API with the operator key, and its
audio line; the caller speaks the browser protocol. The workflow is a real call session, told
through a real signal that a person took the call.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import struct
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from websockets.asyncio.client import ClientConnection, connect

from activities.chat_models.scripted import ScriptedChatModel, ScriptedResponse
from activities.media_channels import MediaChannels
from activities.transfer.console import offer_to_console
from contracts.escalation import EscalationTicket
from contracts.handoff import HandoffStep
from contracts.temporal import workflow_id_for
from contracts.transfer import (
    SIGNAL_TRANSFER_SETTLED,
    TransferRequest,
    TransferSettled,
    TransferTarget,
)
from media_gateway.hold_audio import hold_cycle
from media_gateway.vad import BYTES_PER_MS, FRAME_BYTES
from registries.loading import SHIPPED_REGISTRY
from tests.gateway.conftest import (
    BrowserCaller,
    GatewayStack,
    browser_caller,
    open_gateway_stack,
    speech_pcm,
)
from workflows.transfer import NOBODY_FREE

#: Audio louder than this RMS (of full scale) is sound, not silence.
SOUND_RMS = 0.003
ESCALATE = ScriptedResponse(calls=[("escalate_human", {"reason": "caller asked for a person"})])
#: Long enough to hear hold audio, short enough to wait out in a test.
HOLD_SECONDS = 4


def rms(pcm: bytes | bytearray) -> float:
    samples = struct.unpack(f"<{len(pcm) // 2}h", bytes(pcm[: len(pcm) // 2 * 2]))
    return math.sqrt(sum(s * s for s in samples) / max(1, len(samples))) / 32768


def tone(hz: float, ms: int, level: float = 0.3) -> bytes:
    n = ms * BYTES_PER_MS // 2
    return struct.pack(
        f"<{n}h", *(int(level * 32767 * math.sin(2 * math.pi * hz * i / 16000)) for i in range(n))
    )


def dominant_hz(pcm: bytes | bytearray) -> float:
    """The strongest frequency in `pcm` (numpy's FFT), to tell a test tone from other audio."""
    import numpy as np

    samples = np.frombuffer(bytes(pcm[: len(pcm) // 2 * 2]), dtype="<i2").astype(float)
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / 16000)[int(np.argmax(spectrum))])


def ticket_for(call_id: str) -> EscalationTicket:
    return EscalationTicket(
        ticket_id=f"t-{call_id}",
        call_id=call_id,
        scenario="banking",
        reason="caller asked for a person",
        summary="Card stolen yesterday; wants to speak with someone about the charges.",
        active_agent="FraudAgent",
        key_facts=["card reported stolen", "two unknown charges"],
        collected_data={"client_id": "C1001", "last_four": "4321"},
        handoff_history=[
            HandoffStep(
                source="Concierge", target="FraudAgent", handoff_type="announced", reason="fraud"
            )
        ],
        last_utterances=["Someone stole my card", "Can I speak to a real person please"],
        created_at=datetime.now(UTC),
    )


async def offer(stack: GatewayStack, call_id: str) -> str:
    channels = MediaChannels()
    try:
        request = TransferRequest(
            call_id=call_id,
            channel="browser",
            gateway_address=stack.gateway.registry.config.media_address,
            target=TransferTarget(kind="queue", address="console", label="Fraud desk"),
            ticket_id=f"t-{call_id}",
        )
        outcome = await offer_to_console(request, ticket_for(call_id), channels)
    finally:
        await channels.close()
    return outcome.status


@pytest_asyncio.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def api(stack: GatewayStack, path: str) -> str:
    return f"http://{stack.base}{path}"


def key(stack: GatewayStack) -> dict[str, str]:
    return {"Authorization": f"Bearer {stack.operator_key}"}


async def waiting(http: aiohttp.ClientSession, stack: GatewayStack) -> list[dict[str, Any]]:
    async with http.get(api(stack, "/api/console/calls"), headers=key(stack)) as response:
        assert response.status == 200
        calls: list[dict[str, Any]] = (await response.json())["calls"]
        return calls


async def take(
    http: aiohttp.ClientSession, stack: GatewayStack, call_id: str, operator: str
) -> tuple[int, dict[str, Any]]:
    async with http.post(
        api(stack, f"/api/console/calls/{call_id}/take"),
        headers=key(stack),
        json={"operator": operator},
    ) as response:
        return response.status, await response.json()


async def on_hold(stack: GatewayStack) -> BrowserCaller:
    """A browser caller whose call the console holds, once hold audio is reaching it."""
    caller = await browser_caller(stack)
    # The greeting plays out first, so what follows the offer is hold audio alone.
    await caller.wait_event(lambda e: e["type"] == "speaking")
    call = stack.gateway.registry.get(caller.call_id)
    assert call is not None
    async with asyncio.timeout(20):
        while call.playback.current is not None:
            await asyncio.sleep(0.05)
    assert await offer(stack, caller.call_id) == "pending"
    heard_before = len(caller.audio)
    async with asyncio.timeout(10):
        while len(caller.audio) - heard_before < 1000 * BYTES_PER_MS:
            await asyncio.sleep(0.05)
    return caller


async def open_line(stack: GatewayStack, token: str) -> ClientConnection:
    return await connect(f"ws://{stack.base}/console/line?take={token}", max_size=2**20)


@pytest.mark.timeout(90)
async def test_a_held_caller_hears_hold_audio_until_a_person_takes_the_call(
    gateway_stack: GatewayStack,
    http: aiohttp.ClientSession,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    stack = gateway_stack
    caller = await on_hold(stack)
    # The greeting has played out; what arrives now is the hold pattern, and it is not silence.
    hold = bytes(caller.audio[-1000 * BYTES_PER_MS :])
    assert rms(hold) > SOUND_RMS
    assert hold in hold_cycle() + hold_cycle()  # the generated pattern, sample for sample

    # The console lists the call with its whole ticket, only with the operator key.
    [listed] = await waiting(http, stack)
    assert listed["call_id"] == caller.call_id and listed["state"] == "waiting"
    assert listed["target"]["label"] == "Fraud desk"
    assert listed["ticket"]["reason"] == "caller asked for a person"
    assert listed["ticket"]["collected_data"]["last_four"] == "4321"
    assert listed["ticket"]["handoff_history"][0]["target"] == "FraudAgent"
    async with http.get(api(stack, "/api/console/calls")) as response:
        assert response.status == 401
    wrong = {"Authorization": "Bearer not-the-key"}
    async with http.get(api(stack, "/api/console/calls"), headers=wrong) as response:
        assert response.status == 401
        assert "4321" not in await response.text()

    # One person takes it; a second is refused, by name of who has it.
    status, claim = await take(http, stack, caller.call_id, "agent-7")
    assert status == 200
    status, refused = await take(http, stack, caller.call_id, "agent-9")
    assert status == 409 and "agent-7" in refused["error"]
    line = await open_line(stack, claim["take"])
    assert json.loads(await line.recv()) == {"type": "bridged", "call_id": caller.call_id}

    # The workflow is told who took it.
    handle = stack.client.get_workflow_handle(workflow_id_for(caller.call_id))
    history = await handle.fetch_history()
    signals = [
        e.workflow_execution_signaled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and e.workflow_execution_signaled_event_attributes.signal_name == SIGNAL_TRANSFER_SETTLED
    ]
    assert len(signals) == 1
    settled = await stack.client.data_converter.decode(signals[0].input.payloads, [TransferSettled])
    assert settled == [TransferSettled(taken=True, taken_by="agent-7", detail="browser console")]

    # Hold audio stops: from here the caller hears the person, a 700 Hz tone.
    caller.audio.clear()
    person = tone(700, 600)
    for i in range(0, len(person), FRAME_BYTES):
        await line.send(person[i : i + FRAME_BYTES])
        await asyncio.sleep(0.02)
    async with asyncio.timeout(5):
        while len(caller.audio) < 400 * BYTES_PER_MS:
            await asyncio.sleep(0.02)
    assert abs(dominant_hz(caller.audio[-400 * BYTES_PER_MS :]) - 700) < 20

    # The caller's words reach the person: a 300 Hz tone from the caller's side.
    await caller.say(tone(300, 600), trailing_silence_ms=0)
    heard = bytearray()
    async with asyncio.timeout(5):
        while len(heard) < 500 * BYTES_PER_MS:
            message = await line.recv()
            if isinstance(message, bytes):
                heard += message
    assert abs(dominant_hz(heard[-400 * BYTES_PER_MS :]) - 300) < 20

    # The person hangs up: the caller's line closes too, and the call leaves the console.
    await line.send(json.dumps({"type": "hangup"}))
    async with asyncio.timeout(5):
        await caller.ws.wait_closed()
    assert await waiting(http, stack) == []
    await line.close()

    # The ticket reached the console and no log line.
    captured = capsys.readouterr()
    logged = captured.out + captured.err + caplog.text
    assert "call queued on the console" in logged  # the logs were captured
    ticket = ticket_for(caller.call_id)
    for secret in (ticket.summary, ticket.key_facts[0], "4321", ticket.last_utterances[0]):
        assert secret not in logged


@pytest.mark.timeout(60)
async def test_a_caller_hanging_up_on_hold_leaves_the_console_queue(
    gateway_stack: GatewayStack, http: aiohttp.ClientSession
) -> None:
    stack = gateway_stack
    caller = await on_hold(stack)
    assert [c["call_id"] for c in await waiting(http, stack)] == [caller.call_id]
    await caller.ws.send(json.dumps({"type": "stop"}))
    await caller.close()
    async with asyncio.timeout(5):
        while await waiting(http, stack):
            await asyncio.sleep(0.05)
    # Too late to take: the call is gone.
    status, refused = await take(http, stack, caller.call_id, "agent-7")
    assert status == 404 and "not waiting" in refused["error"]


@pytest.mark.timeout(60)
async def test_a_console_line_needs_a_live_take_and_closes_when_the_caller_hangs_up(
    gateway_stack: GatewayStack, http: aiohttp.ClientSession
) -> None:
    stack = gateway_stack
    caller = await on_hold(stack)
    async with http.get(api(stack, "/console/line?take=forged")) as response:
        assert response.status == 403
    status, claim = await take(http, stack, caller.call_id, "agent-7")
    assert status == 200
    async with http.post(
        api(stack, f"/api/console/calls/{caller.call_id}/take"),
        headers={"Authorization": "Bearer wrong"},
        json={"operator": "agent-8"},
    ) as response:
        assert response.status == 401
    async with http.post(
        api(stack, f"/api/console/calls/{caller.call_id}/take"),
        headers=key(stack),
        json={"operator": "<script>"},
    ) as response:
        assert response.status == 400
        assert "operator must be an id" in (await response.json())["error"]
    line = await open_line(stack, claim["take"])
    await line.recv()  # bridged
    # The take's token opened one line; a second socket with it is refused.
    async with http.get(api(stack, f"/console/line?take={claim['take']}")) as response:
        assert response.status == 403
    # The caller hangs up: the person's line says so and closes.
    await caller.ws.send(json.dumps({"type": "stop"}))
    async with asyncio.timeout(5):
        while True:
            message = await line.recv()
            if isinstance(message, str):
                break
    assert json.loads(message) == {"type": "ended", "reason": "caller hung up"}
    async with asyncio.timeout(5):
        await line.wait_closed()
    assert await waiting(http, stack) == []


@pytest.mark.timeout(30)
async def test_an_offer_for_a_call_not_here_fails(gateway_stack: GatewayStack) -> None:
    assert await offer(gateway_stack, f"g-{uuid.uuid4().hex[:10]}") == "failed"


@pytest.mark.timeout(120)
async def test_a_call_nobody_takes_closes_after_the_apology(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shipped registry with a short hold timeout, so the workflow gives up while we listen.
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    path = registry / "scenariostore" / "banking" / "scenario.yaml"
    scenario = yaml.safe_load(path.read_text())
    scenario["escalation"]["hold_timeout_seconds"] = HOLD_SECONDS
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    monkeypatch.setenv("BATON_REGISTRY", str(registry))
    model = ScriptedChatModel()
    async with open_gateway_stack(temporal_client, chat_model=model) as stack:
        call_id = f"g-{uuid.uuid4().hex[:10]}"
        model.queue(call_id, [ESCALATE])
        caller = await browser_caller(stack, call_id)
        await caller.wait_event(lambda e: e["type"] == "speaking")  # the greeting
        await caller.say(await speech_pcm("I want to talk to a person"))
        desk = stack.gateway.front.console
        assert desk is not None
        async with asyncio.timeout(45):
            while call_id not in desk.calls:
                await asyncio.sleep(0.05)
        async with asyncio.timeout(HOLD_SECONDS):  # on hold, on an open line
            while bytes(caller.audio[-500 * BYTES_PER_MS :]) not in hold_cycle() * 2:
                await asyncio.sleep(0.05)
        assert caller.ws.close_code is None
        # Nobody takes it: the caller hears the truth, then the line closes, not before.
        apology = await caller.wait_event(
            lambda e: e["type"] == "speaking" and NOBODY_FREE[:30] in e["text"], timeout=30
        )
        heard_from = len(caller.audio)
        async with asyncio.timeout(30):
            await caller.ws.wait_closed()
        ended = {"type": "ended", "status": "escalated"}
        assert caller.events.index(ended) > caller.events.index(apology)
        assert len(caller.audio) - heard_from > 3000 * BYTES_PER_MS  # the apology, whole
        assert call_id not in desk.calls
