"""Real Twilio and ACS calls that escalate to a desk hear Baton's hold audio on their own
stream from the moment the transfer is decided until the platform takes the caller: while the
platform's REST request is refused and retried, while the (fake) platform holds it pending,
and after it accepted until the platform ends the stream. Baton never closes the stream first.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from websockets.asyncio.client import connect

from tests.fakes.acs_rest import AcsTransfer, FakeAcsRest
from tests.fakes.twilio_rest import FakeTwilioRest, TwilioUpdate
from tests.gateway.conftest import open_gateway_stack, quiet_line, speech_pcm
from tests.gateway.hold_check import HOLD_LIKENESS, acs_audio, hold_likeness, twilio_audio
from tests.gateway.test_acs_transfer_call import acs_frame
from tests.gateway.test_platform_call_ids import ACS_METADATA, platform_id_of, twilio_start
from tests.gateway.test_transports import (
    LINE_QUIET,
    collect,
    session_for,
    telephone_frames,
    twilio_media,
)
from tests.gateway.test_twilio_transfer_call import ACCOUNT, registry_with_desk
from tests.workflow.conftest import items_of

ACS_FRAME_BYTES = 640  # 20 ms of PCM16 mono 16 kHz
#: Seconds of the caller's stream listened to at each step (hold audio plays in real time).
LISTEN_SECONDS = 2.0


async def listen(received: list[Any], reader: asyncio.Task[None]) -> list[Any]:
    """What the stream receives over the next `LISTEN_SECONDS`; the stream must stay open."""
    start = len(received)
    await asyncio.sleep(LISTEN_SECONDS)
    assert not reader.done(), "Baton closed the caller's stream"
    return received[start:]


async def test_a_twilio_caller_hears_hold_audio_until_twilio_takes_the_stream(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path)))
    call_id, call_sid = f"tw-{uuid.uuid4().hex[:8]}", "CA" + uuid.uuid4().hex
    pending, accept = asyncio.Event(), asyncio.Event()

    async def twilio_holds_the_request(update: TwilioUpdate) -> None:
        pending.set()
        await accept.wait()

    async with (
        FakeTwilioRest(
            account_sid=ACCOUNT,
            auth_token="token",
            calls=[call_sid],
            fail_next=[503],  # the first attempt is refused: the activity retries
            on_update=twilio_holds_the_request,
        ) as twilio,
        open_gateway_stack(temporal_client) as stack,
    ):
        for name, value in twilio.environment().items():
            monkeypatch.setenv(name, value)
        session = session_for(stack, call_id)
        parameters = {"call_id": call_id, "token": stack.token(call_id)}
        async with connect(stack.url("twilio", None, None)) as ws:
            received: list[Any] = []
            reader = asyncio.create_task(collect(ws, received))
            await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1"}))
            await ws.send(twilio_start(call_id, call_sid, parameters))
            assert await platform_id_of(stack, call_id) == call_sid
            await session.until_greeted()
            speech = await speech_pcm("I want to speak to a real person please.")
            for frame in telephone_frames(speech):
                await ws.send(twilio_media(frame))
                await asyncio.sleep(0.02)
            async with quiet_line(lambda: ws.send(twilio_media(LINE_QUIET))):
                await asyncio.wait_for(pending.wait(), 60)
            while_pending = await listen(received, reader)
            accept.set()
            outcome = await asyncio.wait_for(session.handle.result(), 30)
            # Transferred, and the stream is still Twilio's to end: hold plays on meanwhile.
            after_accept = await listen(received, reader)
            await ws.send(json.dumps({"event": "stop", "stop": {"callSid": call_sid}}))
            reader.cancel()
        items = await session.transcript()
    assert hold_likeness(twilio_audio(while_pending), 8000) >= HOLD_LIKENESS
    assert hold_likeness(twilio_audio(after_accept), 8000) >= HOLD_LIKENESS
    assert outcome["status"] == "transferred"
    assert [status for _, status in twilio.requests] == [503, 200]
    [transfer] = items_of(items, "transfer")
    assert transfer["outcome"] == "connected"


async def test_an_acs_caller_hears_hold_audio_until_acs_takes_the_stream(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path)))
    connection_id = str(uuid.uuid4())
    call_id = f"acs-{uuid.uuid4().hex[:8]}"
    pending, accept = asyncio.Event(), asyncio.Event()

    async def acs_holds_the_request(transfer: AcsTransfer) -> None:
        pending.set()
        await accept.wait()

    async with (
        FakeAcsRest(
            connections=[connection_id], fail_next=[503], on_transfer=acs_holds_the_request
        ) as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        session = session_for(stack, call_id)
        url = stack.url("acs", call_id, stack.token(call_id))
        headers = {"x-ms-call-connection-id": connection_id}
        async with connect(url, additional_headers=headers) as ws:
            received: list[Any] = []
            reader = asyncio.create_task(collect(ws, received))
            await ws.send(json.dumps(ACS_METADATA))
            assert await platform_id_of(stack, call_id) == connection_id
            await session.until_greeted()
            speech = await speech_pcm("I want to speak to a real person please.")
            for i in range(0, len(speech), ACS_FRAME_BYTES):
                await ws.send(acs_frame(speech[i : i + ACS_FRAME_BYTES]))
                await asyncio.sleep(0.02)
            quiet = acs_frame(bytes(ACS_FRAME_BYTES))
            async with quiet_line(lambda: ws.send(quiet)):
                await asyncio.wait_for(pending.wait(), 60)
            while_pending = await listen(received, reader)
            accept.set()
            outcome = await asyncio.wait_for(session.handle.result(), 30)
            after_accept = await listen(received, reader)
            reader.cancel()
        # ACS ends the media stream as it transfers the call connection (the block's close).
        items = await session.transcript()
    assert hold_likeness(acs_audio(while_pending), 16000) >= HOLD_LIKENESS
    assert hold_likeness(acs_audio(after_accept), 16000) >= HOLD_LIKENESS
    assert outcome["status"] == "transferred"
    assert [status for _, status in acs.requests] == [503, 202]
    [transfer] = items_of(items, "transfer")
    assert transfer["outcome"] == "connected"
