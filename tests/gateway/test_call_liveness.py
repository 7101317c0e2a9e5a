"""The workflow, not the gateway's memory, owns a call's liveness: a gateway that dies mid-call
stops renewing the call's lease and the workflow hangs up on its own, saying why; the greeting
it was playing is recorded as only partly heard. A call that ends without the gateway (a line
typed to the workflow, a supervisor) is found at the next renewal, and its caller is told how
it ended before the line closes, as after a turn."""

from __future__ import annotations

import asyncio

import pytest

from baton.call_client import CallSession
from contracts.calls import LEASE_LAPSE_SECONDS
from media_gateway import lease_keeper
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


async def test_a_call_ended_without_the_gateway_tells_its_caller_how_before_closing(
    gateway_stack: GatewayStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gateway learns of it at its next lease renewal (every 10 s; sooner here).
    monkeypatch.setattr(lease_keeper, "LEASE_RENEW_SECONDS", 0.5)
    caller = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    call = gateway_stack.gateway.registry.calls[caller.call_id]
    session = CallSession(gateway_stack.client, call.control.call)
    # A line typed to the workflow, not said through this gateway: the model ends the call.
    await session.say("That's all, thank you, goodbye")
    assert (await session.handle.result())["status"] == "completed"
    await asyncio.wait_for(caller.read_out(), 15)
    assert {"type": "ended", "status": "completed"} in caller.events
    assert caller.ws.close_code == 1001
