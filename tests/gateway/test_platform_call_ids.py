"""The gateway starts each telephony call with the platform's own id of the live call (Twilio's
CallSid from the stream's `start`, ACS's call connection id from the upgrade's headers), which
a transfer to a human needs."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from temporalio.service import RPCError
from websockets.asyncio.client import connect

from media_gateway.connection import platform_call_id_at_upgrade, usable_platform_id
from tests.gateway.conftest import GatewayStack
from tests.gateway.test_transports import session_for

ACS_METADATA = {
    "kind": "AudioMetadata",
    "audioMetadata": {"subscriptionId": "s", "encoding": "PCM", "sampleRate": 16000, "channels": 1},
}


def twilio_start(call_id: str, call_sid: str, parameters: dict[str, str]) -> str:
    start = {
        "streamSid": "MZ" + uuid.uuid4().hex,
        "accountSid": "AC" + "1" * 32,
        "callSid": call_sid,
        "tracks": ["inbound"],
        "customParameters": parameters,
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
    }
    return json.dumps({"event": "start", "sequenceNumber": "1", "start": start})


async def platform_id_of(stack: GatewayStack, call_id: str) -> Any:
    session = session_for(stack, call_id)
    async with asyncio.timeout(20):
        while True:  # the workflow is started as the stream attaches
            try:
                state = await session.state()
                return state["call"]["platform_call_id"]
            except RPCError:  # not started yet
                await asyncio.sleep(0.1)


async def test_a_twilio_call_carries_the_callsid_from_its_start_message(
    gateway_stack: GatewayStack,
) -> None:
    call_id, call_sid = f"tw-{uuid.uuid4().hex[:8]}", "CA" + uuid.uuid4().hex
    parameters = {"call_id": call_id, "token": gateway_stack.token(call_id)}
    async with connect(gateway_stack.url("twilio", None, None)) as ws:
        await ws.send(twilio_start(call_id, call_sid, parameters))
        assert await platform_id_of(gateway_stack, call_id) == call_sid
        await ws.send(json.dumps({"event": "stop", "stop": {"callSid": call_sid}}))


async def test_a_twilio_stream_with_its_token_in_the_url_attaches_at_start_with_the_callsid(
    gateway_stack: GatewayStack,
) -> None:
    call_id, call_sid = f"tw-{uuid.uuid4().hex[:8]}", "CA" + uuid.uuid4().hex
    url = gateway_stack.url("twilio", call_id, gateway_stack.token(call_id))
    async with connect(url) as ws:
        await asyncio.sleep(0.3)
        assert call_id not in gateway_stack.gateway.registry.calls  # nothing before `start`
        await ws.send(twilio_start(call_id, call_sid, {}))
        assert await platform_id_of(gateway_stack, call_id) == call_sid
        await ws.send(json.dumps({"event": "stop", "stop": {"callSid": call_sid}}))


async def test_an_acs_call_carries_the_call_connection_id_from_the_upgrade_headers(
    gateway_stack: GatewayStack,
) -> None:
    call_id, connection_id = f"acs-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    url = gateway_stack.url("acs", call_id, gateway_stack.token(call_id))
    headers = {"x-ms-call-connection-id": connection_id, "x-ms-call-correlation-id": "corr-1"}
    async with connect(url, additional_headers=headers) as ws:
        await ws.send(json.dumps(ACS_METADATA))
        assert await platform_id_of(gateway_stack, call_id) == connection_id


async def test_an_acs_call_without_the_header_has_no_platform_id(
    gateway_stack: GatewayStack,
) -> None:
    call_id = f"acs-{uuid.uuid4().hex[:8]}"
    async with connect(gateway_stack.url("acs", call_id, gateway_stack.token(call_id))) as ws:
        await ws.send(json.dumps(ACS_METADATA))
        assert await platform_id_of(gateway_stack, call_id) is None


def test_only_plausible_platform_ids_reach_the_workflow() -> None:
    connection_id = str(uuid.uuid4())
    assert platform_call_id_at_upgrade("acs", {"x-ms-call-connection-id": connection_id}) == (
        connection_id
    )
    assert platform_call_id_at_upgrade("browser", {"x-ms-call-connection-id": "x"}) is None
    assert platform_call_id_at_upgrade("acs", {}) is None
    for junk in ("x" * 201, "id\nwith a newline", "idé", ""):
        assert usable_platform_id(junk) is None
