"""A voice call's lease names the gateway holding it, and the newest connection holds: when the
caller redials through another gateway while the old one is still in its reconnect grace (and
still renewing), speech follows the new gateway and the old one's renewals move nothing. The
`summary` query shows the holder; the audit timeline shows each move.

The first gateway is real (its own lease loop renews with its connection's start); the second is
played by this test's client, sending the renewals a gateway sends."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from audit.bundle import export_call
from audit.timeline import read_timeline
from baton.call_client import CallSession
from baton.temporal_server import EmbeddedTemporal
from contracts.calls import SIGNAL_RENEW_LEASE, LeaseRenewal
from media_gateway.control import GATEWAY_ID
from tests.audit.cli import baton
from tests.gateway.conftest import GatewayStack, browser_caller

OTHER_GATEWAY = "replica-b:4242"
OTHER_ADDRESS = "127.0.0.1:1"  # never dialed: the call only has to point there


async def test_the_newest_connection_holds_the_call_and_a_stale_renewal_moves_nothing(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    media = gateway_stack.gateway.registry.calls[caller.call_id]
    session = CallSession(gateway_stack.client, media.control.call)
    here = media.config.media_address

    # The gateway's first renewal (sent as the call started) already names it.
    holder = (await session.summary()).gateway
    assert holder is not None
    assert (holder.gateway_id, holder.gateway_address) == (GATEWAY_ID, here)
    assert holder.connected_at == media.connected_at

    # The caller redials through another gateway: a newer connection takes the call over.
    redialed = media.connected_at + timedelta(seconds=5)
    await session.handle.signal(
        SIGNAL_RENEW_LEASE,
        LeaseRenewal(
            gateway_address=OTHER_ADDRESS, gateway_id=OTHER_GATEWAY, connected_at=redialed
        ),
    )
    moved = (await session.summary()).gateway
    assert moved is not None and moved.gateway_id == OTHER_GATEWAY
    assert moved.gateway_address == OTHER_ADDRESS
    assert (await session.state())["call"]["gateway_address"] == OTHER_ADDRESS

    # The first gateway, in its grace, renews again over its older connection: ignored.
    expires = (await session.state())["lease_expires_at"]
    assert await media.control.renew_lease(here, media.connected_at)
    state = await session.state()
    assert state["call"]["gateway_address"] == OTHER_ADDRESS  # speech does not flip back
    assert state["lease_holder"]["gateway_id"] == OTHER_GATEWAY
    assert state["lease_expires_at"] == expires  # nor does it keep the lease alive

    # The caller comes back to the first gateway: its connection is the newest again.
    back = datetime.now(UTC) + timedelta(seconds=10)
    assert await media.control.renew_lease(here, back)
    returned = (await session.summary()).gateway
    assert returned is not None and returned.gateway_id == GATEWAY_ID
    assert (await session.state())["call"]["gateway_address"] == here

    moves = [
        item
        for item in (
            await read_timeline(await export_call(caller.call_id, client=session.client))
        ).items
        if item.kind == "gateway_move"
    ]
    assert [(m.details["from_gateway"], m.details["gateway"]) for m in moves] == [
        (GATEWAY_ID, OTHER_GATEWAY),
        (OTHER_GATEWAY, GATEWAY_ID),
    ]
    assert moves[0].details["address"] == OTHER_ADDRESS
    await caller.close()


async def test_baton_call_status_names_the_gateway_holding_the_call(
    gateway_stack: GatewayStack, temporal_server: EmbeddedTemporal
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    media = gateway_stack.gateway.registry.calls[caller.call_id]
    address = ["--address", temporal_server.address]
    shown = await asyncio.to_thread(baton, "call", "status", caller.call_id, *address)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"call {caller.call_id}: active, agent ")
    assert lines[1].startswith(f"  gateway: {GATEWAY_ID} at {media.config.media_address}, ")
    as_json = await asyncio.to_thread(baton, "call", "status", caller.call_id, "--json", *address)
    assert json.loads(as_json.stdout)["gateway"]["gateway_id"] == GATEWAY_ID
    missing = await asyncio.to_thread(baton, "call", "status", "no-such-call", *address)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "baton: no call 'no-such-call' on this server"
    await caller.close()
