"""A retried speech activity following a reply that began before this gateway started (its text
went to the gateway before, killed since) is told NOT_FOUND at once, so the workflow says the
reply again instead of the caller waiting out the gateway's unpublished-reply limit. A reply this
gateway holds, or one that began after it started, is followed as before.

A real media plane on loopback serving one call (as in test_media_plane_auth).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio
from temporalio.client import Client

from contracts.proto import media_pb2
from contracts.proto.media_pb2_grpc import MediaPlaneStub
from contracts.speech import REPLY_STARTED_METADATA
from runtime.media_auth import bearer, media_secret
from tests.gateway.test_media_plane_auth import PRIVATE_REPLY, Plane, open_plane


@pytest_asyncio.fixture
async def plane(temporal_client: Client) -> AsyncIterator[Plane]:
    async with open_plane(temporal_client) as opened:
        # As once the caller's new connection has renewed the lease with the workflow.
        opened.media.lease.renewed.set()
        yield opened


async def follow(plane: Plane, reply_id: str, began: float) -> list[str]:
    metadata = (
        ("authorization", bearer(media_secret())),
        (REPLY_STARTED_METADATA, f"{began:.3f}"),
    )
    request = media_pb2.FollowRequest(call_id=plane.call_id, reply_id=reply_id)
    async with grpc.aio.insecure_channel(plane.address) as channel:
        stub = MediaPlaneStub(channel)  # type: ignore[no-untyped-call]
        return [m.piece async for m in stub.FollowReplyText(request, metadata=metadata)]


async def test_a_reply_that_began_before_the_gateway_started_is_not_found_at_once(
    plane: Plane,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await follow(plane, "reply-published-to-the-gateway-before", time.time() - 60)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    # Not the unpublished-reply limit's answer, which comes only after 10 s of waiting.
    assert "began before this gateway started" in str(raised.value.details())


async def test_a_reply_held_here_is_followed_however_old(plane: Plane) -> None:
    assert await follow(plane, "reply-1", time.time() - 60) == [PRIVATE_REPLY, ""]


async def test_a_reply_that_began_after_the_gateway_started_is_waited_for(plane: Plane) -> None:
    following = asyncio.create_task(follow(plane, "reply-2", time.time()))
    await asyncio.sleep(0.3)
    assert not following.done()  # waiting for its publisher, not refused
    plane.media.reply_texts.publish("reply-2", 0, "Your card is blocked. ")
    plane.media.reply_texts.end("reply-2")
    assert await following == ["Your card is blocked. ", ""]
