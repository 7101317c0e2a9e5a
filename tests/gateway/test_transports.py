"""Twilio Media Streams and ACS media streaming through the gateway, with frames built from each
service's public message format, plus tokens and reconnects."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from baton.call_client import CallSession
from contracts.calls import CallInput
from media_gateway.tokens import issue_token
from runtime import audio
from runtime.resampling import StreamResampler
from tests.gateway.conftest import GatewayStack, browser_caller, speech_pcm
from tests.workflow.conftest import items_of


def twilio_start(call_id: str, token: str) -> str:
    return json.dumps(
        {
            "event": "start",
            "sequenceNumber": "1",
            "streamSid": "MZ" + uuid.uuid4().hex,
            "start": {
                "streamSid": "MZ-stream",
                "accountSid": "AC123",
                "callSid": "CA" + uuid.uuid4().hex,
                "tracks": ["inbound"],
                "customParameters": {"call_id": call_id, "token": token},
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            },
        }
    )


def twilio_media(ulaw: bytes) -> str:
    payload = base64.b64encode(ulaw).decode()
    return json.dumps({"event": "media", "media": {"track": "inbound", "payload": payload}})


def telephone_frames(pcm16_16k: bytes) -> list[bytes]:
    """16 kHz audio as a phone network carries it: 8 kHz μ-law in 20 ms (160-byte) frames."""
    ulaw = audio.ulaw_encode(StreamResampler(16000, 8000).process(pcm16_16k, last=True))
    return [ulaw[i : i + 160] for i in range(0, len(ulaw), 160)]


#: 20 ms of quiet on a phone line (μ-law's zero).
LINE_QUIET = b"\xff" * 160


def session_for(stack: GatewayStack, call_id: str) -> CallSession:
    return CallSession(stack.client, CallInput(call_id=call_id))


async def collect(ws: Any, into: list[Any]) -> None:
    try:
        async for message in ws:
            into.append(json.loads(message) if isinstance(message, str) else message)
    except ConnectionClosed:
        pass


async def test_twilio_stream_authenticates_plays_clears_on_barge_in_forwards_dtmf_and_stops(
    gateway_stack: GatewayStack,
) -> None:
    call_id = f"tw-{uuid.uuid4().hex[:8]}"
    async with connect(gateway_stack.url("twilio", None, None)) as ws:
        received: list[Any] = []
        reader = asyncio.create_task(collect(ws, received))
        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await ws.send(twilio_start(call_id, gateway_stack.token(call_id)))
        for _ in range(400):
            if any(m.get("event") == "media" for m in received):
                break
            await asyncio.sleep(0.025)
        media = next(m for m in received if m.get("event") == "media")
        assert media["streamSid"] == "MZ-stream"
        assert base64.b64decode(media["media"]["payload"])  # μ-law audio, whatever its length
        speech = await speech_pcm("Hello there, I need some help with my account please.")
        for frame in telephone_frames(speech)[:40]:  # 0.8 s of caller speech over the greeting
            await ws.send(twilio_media(frame))
            await asyncio.sleep(0.02)
        assert any(m.get("event") == "clear" and m["streamSid"] == "MZ-stream" for m in received)
        await ws.send(
            json.dumps({"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": "5"}})
        )
        await ws.send(twilio_media(LINE_QUIET))
        session = session_for(gateway_stack, call_id)
        items = await session.wait_for(lambda t: bool(items_of(t, "dtmf")))
        assert items_of(items, "dtmf")[0]["digits"] == "5"
        await ws.send(json.dumps({"event": "stop", "stop": {"callSid": "CA1"}}))
        outcome = await asyncio.wait_for(session.handle.result(), 20)
        assert outcome["status"] == "hung_up"
        reader.cancel()


async def test_twilio_media_before_start_is_refused_before_any_audio_is_read(
    gateway_stack: GatewayStack,
) -> None:
    async with connect(gateway_stack.url("twilio", None, None)) as ws:
        await ws.send(twilio_media(LINE_QUIET))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_twilio_start_with_another_calls_token_is_refused(
    gateway_stack: GatewayStack,
) -> None:
    async with connect(gateway_stack.url("twilio", None, None)) as ws:
        await ws.send(twilio_start("call-a", gateway_stack.token("call-b")))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        assert "wrong_call" in closed.value.rcvd.reason


async def test_acs_stream_plays_audio_and_barge_in_sends_stop_audio(
    gateway_stack: GatewayStack,
) -> None:
    call_id = f"acs-{uuid.uuid4().hex[:8]}"
    url = gateway_stack.url("acs", call_id, gateway_stack.token(call_id))
    speech = await speech_pcm("Hello there, I need some help with my account please.")
    async with connect(url) as ws:
        received: list[Any] = []
        reader = asyncio.create_task(collect(ws, received))
        metadata = {
            "kind": "AudioMetadata",
            "audioMetadata": {
                "subscriptionId": "sub-1",
                "encoding": "PCM",
                "sampleRate": 16000,
                "channels": 1,
                "length": 640,
            },
        }
        await ws.send(json.dumps(metadata))
        for _ in range(400):
            if any(m.get("kind") == "AudioData" for m in received):
                break
            await asyncio.sleep(0.025)
        assert any(m.get("kind") == "AudioData" for m in received)
        await ws.send(json.dumps({"kind": "DtmfData", "dtmfData": {"data": "7"}}))
        for i in range(0, 640 * 40, 640):  # 0.8 s of caller speech over the greeting
            frame = base64.b64encode(speech[i : i + 640]).decode()
            await ws.send(json.dumps({"kind": "AudioData", "audioData": {"data": frame}}))
            await asyncio.sleep(0.02)
        assert any(m.get("kind") == "StopAudio" for m in received)
        session = session_for(gateway_stack, call_id)
        items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")))
        assert items_of(items, "barge_in")[0]["agent"] == "Concierge"
        reader.cancel()


@pytest.mark.parametrize(
    ("token_for", "expires_in", "status"),
    [(None, 0, 401), ("other-call", 300, 403), ("self", -60, 403)],
    ids=["missing", "other-call", "expired"],
)
async def test_browser_socket_refuses_bad_tokens_before_upgrade(
    gateway_stack: GatewayStack, token_for: str | None, expires_in: int, status: int
) -> None:
    call_id = f"b-{uuid.uuid4().hex[:8]}"
    token = None
    if token_for is not None:
        target = call_id if token_for == "self" else token_for
        token = issue_token(
            gateway_stack.secret, target, ttl_seconds=30, now=time.time() + expires_in - 30
        )
    with pytest.raises(InvalidStatus) as refused:
        await connect(gateway_stack.url("browser", call_id, token))
    assert refused.value.response.status_code == status
    assert not gateway_stack.gateway.registry.calls  # nothing was attached or started


async def test_reconnect_with_the_same_call_id_reattaches_to_the_same_session(
    gateway_stack: GatewayStack,
) -> None:
    first = await browser_caller(gateway_stack)
    await first.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    call_id = first.call_id
    session = session_for(gateway_stack, call_id)
    run_id = (await session.handle.describe()).run_id
    await first.close()  # the connection drops without a "stop": the call waits for a reconnect
    second = await browser_caller(gateway_stack, call_id)
    timeline = await second.wait_event(lambda e: e["type"] == "timeline")
    assert len(items_of(timeline["items"], "greeting")) == 1  # attached, not started again
    assert (await session.handle.describe()).run_id == run_id
    assert gateway_stack.gateway.registry.calls[call_id].peer is not None
    await second.close()


async def test_bad_frames_are_refused_and_the_call_carries_on(gateway_stack: GatewayStack) -> None:
    caller = await browser_caller(gateway_stack)
    other = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    bad_frames: list[str | bytes] = [
        "{not json",
        json.dumps({"type": "teleport"}),
        b"\x01\x02\x03",  # PCM16 with half a sample
        json.dumps([1, 2]),
    ]
    for bad in bad_frames:
        await caller.ws.send(bad)
    await caller.ws.send(json.dumps({"type": "start", "sample_rate": 8000}))  # wrong rate
    await caller.ws.send(json.dumps({"type": "ping"}))
    await caller.wait_event(lambda e: e["type"] == "pong")  # still served after five bad frames
    await other.ws.send(json.dumps({"type": "ping"}))
    await other.wait_event(lambda e: e["type"] == "pong")  # and the other call never noticed
    await caller.close()
    await other.close()


async def test_oversized_frame_closes_that_connection_cleanly_only(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    other = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    await caller.ws.send(bytes(200_000))
    with pytest.raises(ConnectionClosed) as closed:
        for _ in range(1000):
            await caller.ws.send(json.dumps({"type": "ping"}))
            await asyncio.sleep(0.01)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    await other.ws.send(json.dumps({"type": "ping"}))
    await other.wait_event(lambda e: e["type"] == "pong")
    await other.close()
