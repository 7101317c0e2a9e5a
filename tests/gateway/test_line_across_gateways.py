"""One live line per call across gateways: a token replayed at another gateway than the one
carrying the caller's live connection is refused there too, and the caller may come back once
that line has dropped. The gateway under test is real; the other one is played by this test's
client, sending the lease renewals a gateway sends (as in test_lease_holder)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from baton.call_client import CallSession
from contracts.calls import (
    SIGNAL_RENEW_LEASE,
    LeaseHolder,
    LeaseRenewal,
    line_open_elsewhere,
)
from media_gateway.control import GATEWAY_ID
from tests.gateway.conftest import GatewayStack, browser_caller
from tests.gateway.test_caller_identity import answers_ping

OTHER_GATEWAY = "replica-b:4242"
OTHER_ADDRESS = "127.0.0.1:1"  # never dialed: the call only has to point there


async def holder_matching(session: CallSession, match: Any) -> LeaseHolder:
    async with asyncio.timeout(10):
        while True:
            holder = (await session.summary()).gateway
            if holder is not None and match(holder):
                return holder
            await asyncio.sleep(0.05)


async def test_a_replayed_token_is_refused_while_the_line_is_open_at_another_gateway(
    gateway_stack: GatewayStack,
) -> None:
    first = await browser_caller(gateway_stack)
    await first.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    media = gateway_stack.gateway.registry.calls[first.call_id]
    session = CallSession(gateway_stack.client, media.control.call)
    # This gateway says at once that the caller's line is open here.
    await holder_matching(session, lambda h: h.gateway_id == GATEWAY_ID and h.line_open)

    # The caller's line moves to another gateway (this one keeps the call in its grace).
    await first.close()
    await holder_matching(session, lambda h: h.gateway_id == GATEWAY_ID and not h.line_open)
    moved_at = datetime.now(UTC)
    renewal = LeaseRenewal(
        gateway_address=OTHER_ADDRESS,
        gateway_id=OTHER_GATEWAY,
        connected_at=moved_at,
        line_open=True,
    )
    await session.handle.signal(SIGNAL_RENEW_LEASE, renewal)
    await holder_matching(session, lambda h: h.gateway_id == OTHER_GATEWAY and h.line_open)

    # A replayed token reaching this gateway is refused, and the line stays where it is.
    replayed = await browser_caller(gateway_stack, first.call_id)
    await asyncio.wait_for(replayed.ws.wait_closed(), 10)
    assert replayed.ws.close_code == 1008
    assert "open at another gateway" in (replayed.ws.close_reason or "")
    holder = (await session.summary()).gateway
    assert holder is not None and holder.gateway_id == OTHER_GATEWAY

    # The other gateway's caller drops (its renewal says so): the caller may come back here.
    dropped = renewal.model_copy(update={"line_open": False})
    await session.handle.signal(SIGNAL_RENEW_LEASE, dropped)
    await holder_matching(session, lambda h: h.gateway_id == OTHER_GATEWAY and not h.line_open)
    back = await browser_caller(gateway_stack, first.call_id)
    await holder_matching(session, lambda h: h.gateway_id == GATEWAY_ID and h.line_open)
    assert await answers_ping(back)
    await back.close()


def test_only_a_fresh_open_line_at_another_address_counts() -> None:
    now = datetime.now(UTC)
    holder = LeaseHolder(
        gateway_id=OTHER_GATEWAY,
        gateway_address=OTHER_ADDRESS,
        connected_at=now,
        since=now,
        line_open=True,
        renewed_at=now - timedelta(seconds=3),
    )
    assert line_open_elsewhere(holder, "127.0.0.1:9999", now)
    # The holder's own address: only one process binds it, so that holder is dead.
    assert not line_open_elsewhere(holder, OTHER_ADDRESS, now)
    # A holder whose renewals stopped (killed) is not trusted to have the line open.
    stale = holder.model_copy(update={"renewed_at": now - timedelta(seconds=30)})
    assert not line_open_elsewhere(stale, "127.0.0.1:9999", now)
    assert not line_open_elsewhere(
        holder.model_copy(update={"line_open": False}), "127.0.0.1:9999", now
    )
    # A workflow or gateway that never said: as before, the connection goes ahead.
    unsaid = holder.model_copy(update={"renewed_at": None})
    assert not line_open_elsewhere(unsaid, "127.0.0.1:9999", now)
    assert not line_open_elsewhere(None, "127.0.0.1:9999", now)
