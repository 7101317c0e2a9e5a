"""The gateway's own HTTP + WebSocket server against independent peers, on loopback only.

A tiny app (page, JSON echo, token-checked WebSocket echo) runs on a real asyncio server. The
`websockets` client library is the well-behaved peer; urllib is the plain HTTP client. Limits,
protocol violations and vanishing peers are in `test_websocket_limits.py`.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import urllib.error
import urllib.request

import pytest
from hypothesis import given
from hypothesis import strategies as st

from media_gateway.http import (
    HttpError,
    read_request,
)
from media_gateway.websocket import (
    accept_key,
    encode_frame,
    unmask,
)
from tests.unit.websocket_peer import (
    PAGE,
    STEP,
    Start,
    client,
    client_frame,
    closed_by_server,
    ended,
    raw_exchange,
    raw_websocket,
    read_server_frame,
)

pytestmark = pytest.mark.timeout(30)


# -- pure functions ---------------------------------------------------------------------------


def test_accept_key_matches_the_rfc_6455_example() -> None:
    # RFC 6455 §1.3 and §4.2.2 give this key and this answer.
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@given(st.binary(max_size=70), st.binary(min_size=4, max_size=4))
def test_unmask_equals_bytewise_xor(payload: bytes, mask: bytes) -> None:
    assert unmask(payload, mask) == bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


@pytest.mark.parametrize(
    ("size", "head"),
    [(0, b"\x82\x00"), (125, b"\x82\x7d"), (126, b"\x82\x7e\x00\x7e"),
     (65535, b"\x82\x7e\xff\xff"), (65536, b"\x82\x7f" + struct.pack("!Q", 65536))],
)  # fmt: skip
def test_frame_length_encodings_at_their_boundaries(size: int, head: bytes) -> None:
    assert encode_frame(0x2, bytes(size)) == head + bytes(size)


async def test_request_head_parsing_query_and_headers() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b"GET /ws?token=a%2Fb&x=&x=2 HTTP/1.1\r\nHOST: h\r\nX-A: 1\r\nx-a: 2\r\n\r\n")
    request = await read_request(reader)
    assert (request.method, request.path, request.version) == ("GET", "/ws", "HTTP/1.1")
    assert request.query_value("token") == "a/b"
    assert request.query_value("missing") is None
    assert request.header("Host") == "h"
    assert request.header("x-A") == "1, 2"
    with pytest.raises(HttpError) as repeated:
        request.query_value("x")
    assert repeated.value.status == 400


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET / HTTP/1.1\r\n" + b"X-Pad: y\r\n" * 101 + b"\r\n", 431),
        (b"GET / HTTP/1.1\r\nX-Big: " + b"y" * 17_000 + b"\r\n\r\n", 431),
        (b"GET /\r\n\r\n", 400),
        (b"GET http://elsewhere/ HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400),
        (b"GET / HTTP/1.1\nHost: x\n\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\n", 400),  # the peer hung up mid-head
    ],
)
async def test_bad_request_heads_are_refused_with_a_status(head: bytes, status: int) -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(head)
    reader.feed_eof()
    with pytest.raises(HttpError) as caught:
        await read_request(reader)
    assert caught.value.status == status


# -- plain HTTP -------------------------------------------------------------------------------


def _no_proxy_open(request: urllib.request.Request) -> tuple[int, dict[str, str], bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=STEP) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


async def test_http_get_serves_the_page(start: Start) -> None:
    _, port = await start()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/")
    status, headers, body = await asyncio.to_thread(_no_proxy_open, request)
    assert (status, body) == (200, PAGE)
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Length"] == str(len(PAGE))
    assert headers["Connection"] == "close"


async def test_http_post_json_round_trip(start: Start) -> None:
    _, port = await start()
    payload = {"call": "c-1", "digits": [1, 2, 3], "note": "héllo"}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/echo",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    status, headers, body = await asyncio.to_thread(_no_proxy_open, request)
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"echo": payload}


@pytest.mark.parametrize(
    ("content_type", "body", "status"),
    [
        ("application/json", b"[" + b"1," * 5000 + b"1]", 413),
        ("application/json", b"{not json", 400),
        ("text/plain", b"{}", 415),
    ],
)
async def test_http_json_body_refusals(
    start: Start, content_type: str, body: bytes, status: int
) -> None:
    _, port = await start()
    head = (
        f"POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    got, headers, text = await raw_exchange(port, head.encode() + body)
    assert got == status
    assert headers["connection"] == "close"
    assert text.startswith(f"{status} ".encode())


# -- WebSocket happy paths --------------------------------------------------------------------


async def test_text_and_binary_messages_echo(start: Start) -> None:
    app, port = await start()
    async with client(port, subprotocols=["other", "baton.v1"]) as ws:
        assert ws.subprotocol == "baton.v1"
        await ws.send("héllo ☎")
        assert await asyncio.wait_for(ws.recv(), STEP) == "héllo ☎"
        pcm = os.urandom(640)  # one 20 ms frame of 16 kHz PCM16
        await ws.send(pcm)
        assert await asyncio.wait_for(ws.recv(), STEP) == pcm
        big = os.urandom(60_000)
        await ws.send(big)
        assert await asyncio.wait_for(ws.recv(), STEP) == big
    assert (await ended(app)).code == 1000


async def test_fragmented_messages_from_the_client_are_reassembled(start: Start) -> None:
    _, port = await start()
    async with client(port) as ws:
        data = os.urandom(48 * 1024)
        await ws.send([data[i : i + 4096] for i in range(0, len(data), 4096)])
        assert await asyncio.wait_for(ws.recv(), STEP) == data
        text = "naïve café ☎ " * 500
        await ws.send([text[i : i + 997] for i in range(0, len(text), 997)])
        assert await asyncio.wait_for(ws.recv(), STEP) == text


async def test_utf8_split_across_fragments_is_accepted(start: Start) -> None:
    _, port = await start()
    reader, writer = await raw_websocket(port)
    encoded = "a☎b".encode()  # ☎ is three bytes; cut it in the middle
    writer.write(client_frame(0x1, encoded[:2], fin=False))
    writer.write(client_frame(0x9, b"in between"))  # control frames may interleave
    writer.write(client_frame(0x0, encoded[2:]))
    assert await read_server_frame(reader) == (0xA, b"in between")
    assert await read_server_frame(reader) == (0x1, encoded)
    writer.close()


async def test_ping_is_answered_with_pong(start: Start) -> None:
    _, port = await start()
    async with client(port, ping_interval=None) as ws:
        pong = await ws.ping(b"are you there")
        latency = await asyncio.wait_for(pong, STEP)
        assert latency >= 0


async def test_client_initiated_close_carries_code_and_reason(start: Start) -> None:
    app, port = await start()
    async with client(port) as ws:
        await ws.send("hi")
        await asyncio.wait_for(ws.recv(), STEP)
        await ws.close(4001, "client bye")
        # The server echoed the client's code back (RFC 6455 §5.5.1).
        assert ws.close_code == 4001
    closed = await ended(app)
    assert (closed.code, closed.reason, closed.local) == (4001, "client bye", False)


async def test_server_initiated_close_carries_code_and_reason(start: Start) -> None:
    app, port = await start()
    async with client(port) as ws:
        await ws.send("close-me")
        seen = await closed_by_server(ws)
        assert seen.rcvd is not None
        assert (seen.rcvd.code, seen.rcvd.reason) == (4000, "as asked")
    closed = await ended(app)
    assert (closed.code, closed.reason, closed.local) == (4000, "as asked", True)
