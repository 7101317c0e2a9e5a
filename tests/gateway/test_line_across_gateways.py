"""One live line per call across gateways: a token replayed at another gateway than the one
carrying the caller's live connection is refused there too, and the caller may come back once
that line has dropped, or once that gateway has died. The gateway under test is real; the other
one is played by this test: its client sends the lease renewals a gateway sends (as in
test_lease_holder), and a listening socket stands for its media plane while it lives."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
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


async def holder_matching(session: CallSession, match: Any) -> LeaseHolder:
    async with asyncio.timeout(10):
        while True:
            holder = (await session.summary()).gateway
            if holder is not None and match(holder):
                return holder
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def other_gateway() -> AsyncIterator[str]:
    """A live process at a media address (only connected to, never spoken to)."""
    server = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


async def line_moves_to(session: CallSession, address: str, *, line_open: bool) -> LeaseRenewal:
    renewal = LeaseRenewal(
        gateway_address=address,
        gateway_id=OTHER_GATEWAY,
        connected_at=datetime.now(UTC),
        line_open=line_open,
    )
    await session.handle.signal(SIGNAL_RENEW_LEASE, renewal)
    await holder_matching(
        session, lambda h: h.gateway_id == OTHER_GATEWAY and h.line_open == line_open
    )
    return renewal


async def call_left_here(stack: GatewayStack) -> tuple[str, CallSession]:
    """A call whose caller was connected here and dropped: this gateway keeps it in its grace."""
    caller = await browser_caller(stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    session = CallSession(stack.client, stack.gateway.registry.calls[caller.call_id].control.call)
    # This gateway says at once that the caller's line is open here, then that it dropped.
    await holder_matching(session, lambda h: h.gateway_id == GATEWAY_ID and h.line_open)
    await caller.close()
    await holder_matching(session, lambda h: h.gateway_id == GATEWAY_ID and not h.line_open)
    return caller.call_id, session


async def taken_back(stack: GatewayStack, call_id: str, session: CallSession) -> None:
    """The caller connects here again, is let in, and this gateway holds the open line."""
    back = await browser_caller(stack, call_id)
    await holder_matching(session, lambda h: h.gateway_id == GATEWAY_ID and h.line_open)
    assert await answers_ping(back)
    await back.close()


async def refused(stack: GatewayStack, call_id: str) -> bool:
    caller = await browser_caller(stack, call_id)
    await asyncio.wait_for(caller.ws.wait_closed(), 10)
    return caller.ws.close_code == 1008 and "open at another gateway" in (
        caller.ws.close_reason or ""
    )


async def test_a_replayed_token_is_refused_while_the_line_is_open_at_another_gateway(
    gateway_stack: GatewayStack,
) -> None:
    call_id, session = await call_left_here(gateway_stack)
    async with other_gateway() as elsewhere:
        # The caller's line moves to another gateway.
        renewal = await line_moves_to(session, elsewhere, line_open=True)

        # A replayed token reaching this gateway is refused, and the line stays where it is.
        assert await refused(gateway_stack, call_id)
        holder = (await session.summary()).gateway
        assert holder is not None and holder.gateway_id == OTHER_GATEWAY

        # The other gateway's caller drops (its renewal says so): the caller may come back.
        dropped = renewal.model_copy(update={"line_open": False})
        await session.handle.signal(SIGNAL_RENEW_LEASE, dropped)
        await holder_matching(session, lambda h: h.gateway_id == OTHER_GATEWAY and not h.line_open)
        await taken_back(gateway_stack, call_id, session)


async def test_a_caller_redialing_after_their_gateway_died_is_taken_at_once(
    gateway_stack: GatewayStack,
) -> None:
    call_id, session = await call_left_here(gateway_stack)
    async with other_gateway() as elsewhere:
        await line_moves_to(session, elsewhere, line_open=True)
    # That gateway died with the line open, its last renewal still fresh: nobody answers at
    # its address, so the caller redialing here is taken without waiting for the lease.
    await taken_back(gateway_stack, call_id, session)


def test_only_a_fresh_open_line_at_another_address_counts() -> None:
    now = datetime.now(UTC)
    holder = LeaseHolder(
        gateway_id=OTHER_GATEWAY,
        gateway_address="127.0.0.1:4242",
        connected_at=now,
        since=now,
        line_open=True,
        renewed_at=now - timedelta(seconds=3),
    )
    assert line_open_elsewhere(holder, "127.0.0.1:9999", now)
    # The holder's own address: only one process binds it, so that holder is dead.
    assert not line_open_elsewhere(holder, holder.gateway_address, now)
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
