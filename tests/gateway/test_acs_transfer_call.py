"""Real calls over the ACS transport that escalate: the workers ask Call Automation (a loopback
fake that checks each request's HMAC signature) to transfer the call connection named in the
stream's upgrade headers. A phone desk takes the call (`transferred`). Queue targets, which
ACS reaches through Job Router, are tested in test_acs_jobrouter_call."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from websockets.asyncio.client import connect

from tests.fakes.acs_rest import FakeAcsRest
from tests.gateway.conftest import (
    GatewayStack,
    call_result,
    open_gateway_stack,
    quiet_line,
    speech_pcm,
)
from tests.gateway.test_platform_call_ids import ACS_METADATA, platform_id_of
from tests.gateway.test_transports import collect, session_for
from tests.gateway.test_twilio_transfer_call import DESK, registry_with_desk
from tests.workflow.conftest import items_of

FRAME_BYTES = 640  # 20 ms of PCM16 mono 16 kHz, as ACS sends it


def acs_frame(pcm: bytes) -> str:
    """One ACS `AudioData` message carrying `pcm` (PCM16 mono 16 kHz)."""
    return json.dumps({"kind": "AudioData", "audioData": {"data": base64.b64encode(pcm).decode()}})


async def escalating_acs_call(stack: GatewayStack, connection_id: str) -> dict[str, Any]:
    """An ACS caller asks for a person; returns the workflow's result and its transcript."""
    call_id = f"acs-{uuid.uuid4().hex[:8]}"
    url = stack.url("acs", call_id, stack.token(call_id))
    session = session_for(stack, call_id)
    headers = {"x-ms-call-connection-id": connection_id}
    async with connect(url, additional_headers=headers) as ws:
        # What the gateway sends is read (a socket nobody reads stops answering pings).
        reader = asyncio.create_task(collect(ws, []))
        await ws.send(json.dumps(ACS_METADATA))
        assert await platform_id_of(stack, call_id) == connection_id
        await session.until_greeted()
        speech = await speech_pcm("I want to speak to a real person please.")
        for i in range(0, len(speech), FRAME_BYTES):
            await ws.send(acs_frame(speech[i : i + FRAME_BYTES]))
            await asyncio.sleep(0.02)
        async with quiet_line(lambda: ws.send(acs_frame(bytes(FRAME_BYTES)))):
            outcome: dict[str, Any] = await call_result(session, 60)
        reader.cancel()
    return {"outcome": outcome, "items": await session.transcript()}


async def test_an_escalated_acs_call_is_transferred_to_the_phone_desk(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path)))
    connection_id = str(uuid.uuid4())
    async with (
        FakeAcsRest(connections=[connection_id]) as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        call = await escalating_acs_call(stack, connection_id)
    assert call["outcome"]["status"] == "transferred"
    [transfer] = acs.transfers
    assert transfer.connection_id == connection_id
    assert transfer.target["phoneNumber"] == {"value": DESK}
    ticket_id = call["outcome"]["ticket"]["ticket_id"]
    assert transfer.operation_context == ticket_id  # ACS's events will name the ticket
    [item] = items_of(call["items"], "transfer")
    assert item["outcome"] == "connected" and item["ticket_id"] == ticket_id
