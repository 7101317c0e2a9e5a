"""The workflow, not the gateway's memory, owns a call's liveness: a gateway that dies mid-call
stops renewing the call's lease and the workflow hangs up on its own, saying why; the greeting
it was playing is recorded as only partly heard."""

from __future__ import annotations

import asyncio

from baton.call_client import CallSession
from contracts.calls import LEASE_LAPSE_SECONDS
from media_gateway.gateway_config import GatewayConfig
from media_gateway.server import start_gateway
from tests.gateway.conftest import GatewayStack, browser_caller
from tests.workflow.conftest import items_of


async def test_a_call_whose_gateway_dies_is_hung_up_by_its_workflow(
    gateway_stack: GatewayStack,
) -> None:
    config = GatewayConfig(media_address="127.0.0.1:0")
    doomed = await start_gateway(gateway_stack.client, config, gateway_stack.secret, http_port=0)
    stack = GatewayStack(gateway_stack.client, doomed, gateway_stack.secret, "")
    caller = await browser_caller(stack)
    await caller.heard(ms=200)  # the greeting is playing
    call = doomed.registry.calls[caller.call_id]
    session = CallSession(gateway_stack.client, call.control.call)
    # The process goes away without hanging up: no more lease renewals, no grace timer.
    await doomed.close()
    outcome = await asyncio.wait_for(session.handle.result(), LEASE_LAPSE_SECONDS + 30)
    assert outcome["status"] == "hung_up"
    assert outcome["end_reason"].startswith("media gateway lost")
    greeting = items_of(await session.transcript(), "greeting")[0]
    assert greeting["heard_text"] is not None
    assert len(greeting["heard_text"]) < len(greeting["text"])  # not recorded as fully heard
    await caller.close()


async def test_a_live_gateway_keeps_its_calls_open_past_the_lapse(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    session = CallSession(
        gateway_stack.client, gateway_stack.gateway.registry.calls[caller.call_id].control.call
    )
    await asyncio.sleep(LEASE_LAPSE_SECONDS + 5)  # the call's own clock: renewals must land
    assert (await session.summary()).status == "active"
    await caller.close()
