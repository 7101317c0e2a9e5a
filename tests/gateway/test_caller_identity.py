"""Who the caller is comes only from a signed token; the softphone's token desk needs the operator
key; a token admits one call and one live connection, reconnects excepted."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import aiohttp
import pytest
from temporalio.api.enums.v1 import EventType
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from contracts.calls import CallSessionStart
from media_gateway.gateway_config import GatewayConfig
from media_gateway.server import SoftphoneAccess, start_gateway
from media_gateway.tokens import verify_token
from tests.gateway.conftest import BrowserCaller, GatewayStack, browser_caller
from tests.gateway.test_transports import twilio_start


async def api_calls(stack: GatewayStack, body: object, key: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"http://{stack.base}/api/calls", json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


async def started_profile(stack: GatewayStack, call_id: str) -> dict[str, object]:
    """The caller profile the call's workflow was started with, read back from its history."""
    handle = stack.client.get_workflow_handle(f"call-{call_id}")
    history = await handle.fetch_history()
    started = next(
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
    )
    payloads = started.workflow_execution_started_event_attributes.input.payloads
    (start,) = await stack.client.data_converter.decode(payloads, [CallSessionStart])
    return dict(start.call.caller_profile)


async def connected(stack: GatewayStack, query: str) -> BrowserCaller:
    ws = await connect(f"ws://{stack.base}/media/browser?{query}", max_size=2**20)
    caller = BrowserCaller(ws, "")
    caller.start_reading()
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    return caller


async def answers_ping(caller: BrowserCaller) -> bool:
    pongs = sum(e["type"] == "pong" for e in caller.events)
    await caller.ws.send(json.dumps({"type": "ping"}))
    await caller.wait_event(lambda _: sum(e["type"] == "pong" for e in caller.events) > pongs)
    return True


async def test_query_parameters_never_set_who_the_caller_is(gateway_stack: GatewayStack) -> None:
    # The spoof from the issue: a token from the softphone desk plus someone else's client id.
    status, call = await api_calls(gateway_stack, {}, gateway_stack.operator_key)
    assert status == 200
    spoof = await connected(gateway_stack, f"token={call['token']}&client_id=C1001&name=Alex")
    assert await started_profile(gateway_stack, call["call_id"]) == {}
    await spoof.close()
    # A token that names the caller is what sets the profile, whatever the URL says.
    call_id = f"id-{uuid.uuid4().hex[:8]}"
    token = gateway_stack.token(call_id, client_id="C2002", name="Sam Lee")
    caller = await connected(gateway_stack, f"token={token}&client_id=C1001&scenario=insurance")
    assert await started_profile(gateway_stack, call_id) == {
        "client_id": "C2002",
        "name": "Sam Lee",
    }
    await caller.close()


async def test_the_token_desk_needs_the_operator_key(gateway_stack: GatewayStack) -> None:
    assert (await api_calls(gateway_stack, {}, None))[0] == 401
    assert (await api_calls(gateway_stack, {}, "not-the-key"))[0] == 401
    body = {"scenario": "banking", "caller": {"client_id": "C1001", "name": "Alex Morgan"}}
    status, call = await api_calls(gateway_stack, body, gateway_stack.operator_key)
    assert status == 200
    claims = verify_token(gateway_stack.secret, call["token"], call["call_id"])
    assert dict(claims.caller) == body["caller"] and claims.scenario == "banking"
    status, refused = await api_calls(
        gateway_stack, {"caller": {"client_id": "C1", "role": "admin"}}, gateway_stack.operator_key
    )
    assert status == 400 and "caller may hold only" in refused["error"]


async def test_the_token_desk_is_off_unless_asked_for_and_never_open_off_loopback(
    gateway_stack: GatewayStack,
) -> None:
    config = GatewayConfig(media_address="127.0.0.1:0")
    plain = await start_gateway(gateway_stack.client, config, gateway_stack.secret, http_port=0)
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"http://127.0.0.1:{plain.http_port}/api/calls", json={}) as response,
        ):
            assert response.status == 404
    finally:
        await plain.close()
    with pytest.raises(ValueError, match="BATON_OPERATOR_KEY"):
        await start_gateway(
            gateway_stack.client, config, gateway_stack.secret, host="0.0.0.0",
            softphone=SoftphoneAccess(enabled=True),
        )  # fmt: skip


async def test_a_live_call_keeps_its_line_against_a_replayed_token(
    gateway_stack: GatewayStack,
) -> None:
    call_id = f"rp-{uuid.uuid4().hex[:8]}"
    token = gateway_stack.token(call_id)
    first = await connected(gateway_stack, f"token={token}")
    with pytest.raises(InvalidStatus) as refused:
        await connect(f"ws://{gateway_stack.base}/media/browser?token={token}")
    assert refused.value.response.status_code == 409
    assert await answers_ping(first)  # the real caller was not disconnected
    await first.close()  # the line drops: the same token may reconnect within its life
    second = await connected(gateway_stack, f"token={token}")
    await second.ws.send(json.dumps({"type": "stop"}))  # the caller hangs up: the call ends
    await asyncio.wait_for(second.ws.wait_closed(), 10)
    await asyncio.wait_for(_until_gone(gateway_stack, call_id), 10)
    with pytest.raises(InvalidStatus) as replayed:
        await connect(f"ws://{gateway_stack.base}/media/browser?token={token}")
    assert replayed.value.response.status_code == 403


async def _until_gone(stack: GatewayStack, call_id: str) -> None:
    while call_id in stack.gateway.registry.calls:
        await asyncio.sleep(0.02)


async def test_a_second_twilio_stream_with_a_live_calls_token_is_refused(
    gateway_stack: GatewayStack,
) -> None:
    first = await browser_caller(gateway_stack)
    await first.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    token = gateway_stack.token(first.call_id)
    async with connect(gateway_stack.url("twilio", None, None)) as ws:
        await ws.send(twilio_start(first.call_id, token))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert "already connected" in closed.value.rcvd.reason
    assert await answers_ping(first)
    await first.close()
