"""The gateway's WebSocket server under limits, protocol violations, concurrent senders and
peers that vanish: a raw socket speaking hand-built frames is the misbehaving peer."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from media_gateway.websocket import (
    ConnectionClosed,
    WebSocket,
)
from tests.unit.websocket_peer import (
    BURST_EACH,
    BURST_SIZE,
    BURST_TASKS,
    STEP,
    Start,
    client,
    client_frame,
    closed_by_server,
    ended,
    expect_close,
    raw_exchange,
    raw_websocket,
    read_server_frame,
    upgrade_request,
)

pytestmark = pytest.mark.timeout(30)


# -- limits and protocol violations ----------------------------------------------------------


@pytest.mark.parametrize("fragmented", [False, True])
async def test_message_too_big_closes_1009(start: Start, fragmented: bool) -> None:
    app, port = await start(max_message_bytes=1000)
    async with client(port) as ws:
        await ws.send(bytes(1000))  # exactly at the limit is fine
        assert await asyncio.wait_for(ws.recv(), STEP) == bytes(1000)
        await ws.send([bytes(400)] * 3 if fragmented else bytes(1001))
        seen = await closed_by_server(ws)
        assert seen.rcvd is not None and seen.rcvd.code == 1009
    closed = await ended(app)
    assert (closed.code, closed.local) == (1009, True)


async def test_close_frame_survives_megabytes_still_in_flight(start: Start) -> None:
    app, port = await start(max_message_bytes=1000)
    reader, writer = await raw_websocket(port)
    # Refused from the header alone while most of the 8 MiB is still on its way: the server
    # must not hang up with unread input (the kernel would answer with RST and could destroy
    # the close frame before we read it).
    writer.write(client_frame(0x2, bytes(8 << 20), mask=bytes(4)))
    assert await expect_close(reader, 1009)
    writer.transport.abort()
    assert (await ended(app)).code == 1009


async def test_invalid_utf8_text_closes_1007(start: Start) -> None:
    app, port = await start()
    async with client(port) as ws:
        await ws.send(b"ok \xff\xfe", text=True)
        seen = await closed_by_server(ws)
        assert seen.rcvd is not None and seen.rcvd.code == 1007
    assert (await ended(app)).code == 1007


@pytest.mark.parametrize(
    ("frames", "code"),
    [
        ([client_frame(0x2, b"abc", masked=False)], 1002),
        ([client_frame(0x2, b"abc", rsv=0x40)], 1002),
        ([client_frame(0x9, b"ping", fin=False)], 1002),
        ([client_frame(0x9, bytes(126))], 1002),
        ([client_frame(0x3, b"?")], 1002),
        ([client_frame(0x0, b"orphan")], 1002),
        ([client_frame(0x2, b"a", fin=False), client_frame(0x2, b"b")], 1002),
        ([client_frame(0x8, b"\x03")], 1002),  # a one-byte close payload
        ([client_frame(0x8, struct.pack("!H", 1005))], 1002),  # a code that must not be sent
        ([client_frame(0x8, struct.pack("!H", 1000) + b"\xff")], 1007),
    ],
    ids=[
        "unmasked", "reserved-bit", "fragmented-control", "control-over-125", "unknown-opcode",
        "continuation-without-start", "new-message-mid-fragment", "close-1-byte",
        "close-reserved-code", "close-reason-not-utf8",
    ],
)  # fmt: skip
async def test_protocol_violations_fail_the_connection(
    start: Start, frames: list[bytes], code: int
) -> None:
    app, port = await start()
    reader, writer = await raw_websocket(port)
    writer.write(b"".join(frames))
    assert await expect_close(reader, code)  # with a reason saying why
    writer.close()
    closed = await ended(app)
    assert (closed.code, closed.local) == (code, True)


@pytest.mark.parametrize(
    ("request_bytes", "status", "reason"),
    [
        (upgrade_request(overrides={"Upgrade": None}), 400, b"Upgrade: websocket"),
        (upgrade_request(overrides={"Connection": "keep-alive"}), 400, b"Connection: Upgrade"),
        (upgrade_request(overrides={"Sec-WebSocket-Key": None}), 400, b"Sec-WebSocket-Key"),
        (upgrade_request(overrides={"Sec-WebSocket-Key": "c2hvcnQ="}), 400, b"16 bytes"),
        (upgrade_request(overrides={"Sec-WebSocket-Version": "8"}), 426, b"version"),
        (upgrade_request(path="/ws?token=wrong"), 403, b"bad token"),
        (upgrade_request().replace(b"GET ", b"PUT ", 1), 405, b"GET"),
    ],
    ids=["no-upgrade", "no-connection-upgrade", "no-key", "short-key", "version-8", "token",
         "not-get"],
)  # fmt: skip
async def test_bad_handshakes_get_an_http_refusal(
    start: Start, request_bytes: bytes, status: int, reason: bytes
) -> None:
    _, port = await start()
    got, headers, body = await raw_exchange(port, request_bytes)
    assert got == status
    assert reason in body
    assert "sec-websocket-accept" not in headers
    if status == 426:
        assert headers["sec-websocket-version"] == "13"


async def test_refused_token_is_seen_by_a_real_client(start: Start) -> None:
    _, port = await start()
    with pytest.raises(InvalidStatus) as caught:
        async with client(port, path="/ws?token=nope"):
            pass
    assert caught.value.response.status_code == 403


# -- concurrency and vanishing peers ---------------------------------------------------------


async def test_concurrent_senders_do_not_interleave_frames(start: Start) -> None:
    _, port = await start()
    # A small receive queue makes the client stop reading, so server senders hit backpressure
    # and wait in drain() while holding (and queueing for) the writer lock.
    async with client(port, max_queue=1) as ws:
        await ws.send("burst")
        await asyncio.sleep(0.2)  # let the socket buffers fill up before reading anything
        next_seq = [0] * BURST_TASKS
        for _ in range(BURST_TASKS * BURST_EACH):
            message = await asyncio.wait_for(ws.recv(), STEP)
            assert isinstance(message, bytes)
            n, seq = struct.unpack("!HH", message[:4])
            assert message[4:] == bytes([n]) * BURST_SIZE  # whole, not spliced with another
            assert seq == next_seq[n]  # each sender's messages arrive in its own order
            next_seq[n] += 1
        assert next_seq == [BURST_EACH] * BURST_TASKS


async def test_peer_vanishing_mid_frame_is_a_quiet_connection_closed(start: Start) -> None:
    app, port = await start()
    _, writer = await raw_websocket(port)
    whole = client_frame(0x2, bytes(1000))
    writer.write(whole[:40])  # header claims 1000 bytes; only a few arrive
    await writer.drain()
    writer.close()
    closed = await ended(app)
    assert (closed.code, closed.local) == (1006, False)
    # The fixture then checks nothing escaped: no unexpected exception, no loop error report.


async def test_peer_vanishing_while_the_server_sends_is_a_connection_closed(
    start: Start,
) -> None:
    app, port = await start()
    reader, writer = await raw_websocket(port)
    writer.write(client_frame(0x1, b"burst"))
    await read_server_frame(reader)  # the burst has started
    writer.transport.abort()  # vanish without a close frame, mid-stream
    closed = await ended(app)
    assert (closed.code, closed.local) == (1006, False)


# -- direct, over a socketpair: no HTTP, just the connection object --------------------------


@pytest.fixture
async def pair() -> AsyncIterator[tuple[WebSocket, asyncio.StreamReader, asyncio.StreamWriter]]:
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    peer_reader, peer_writer = await asyncio.open_connection(sock=theirs)
    yield WebSocket(reader, writer, None, 64 * 1024, 1.0), peer_reader, peer_writer
    writer.transport.abort()
    peer_writer.transport.abort()


async def test_idle_recv_timeout_leaves_the_connection_usable(pair: Any) -> None:
    ws, _, peer_writer = pair
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ws.recv(), 0.05)
    assert ws.closed is None
    peer_writer.write(client_frame(0x2, b"after the timeout"))
    assert await asyncio.wait_for(ws.recv(), STEP) == b"after the timeout"


async def test_recv_cancelled_mid_message_aborts_the_connection(pair: Any) -> None:
    ws, _, peer_writer = pair
    peer_writer.write(client_frame(0x2, b"first half", fin=False))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ws.recv(), 0.05)
    # The fragment already read cannot be put back, so the stream can no longer be parsed.
    assert ws.closed is not None and ws.closed.code == 1006
    with pytest.raises(ConnectionClosed):
        await ws.recv()


async def test_long_close_reason_is_cut_on_a_character_boundary(pair: Any) -> None:
    ws, peer_reader, peer_writer = pair
    closing = asyncio.create_task(ws.close(4002, "é" * 100))
    opcode, payload = await read_server_frame(peer_reader)
    assert opcode == 0x8 and len(payload) <= 125
    assert payload[2:].decode("utf-8") == "é" * 61  # 122 bytes: the 123rd would split a char
    peer_writer.write(client_frame(0x8, payload[:2]))
    await asyncio.wait_for(closing, STEP)
    assert ws.closed is not None and (ws.closed.code, ws.closed.local) == (4002, True)
    with pytest.raises(ConnectionClosed):
        await ws.send("too late")
