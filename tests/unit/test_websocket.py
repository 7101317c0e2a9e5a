"""The gateway's own HTTP + WebSocket server against independent peers, on loopback only.

A tiny app (page, JSON echo, token-checked WebSocket echo) runs on a real asyncio server. The
`websockets` client library is the well-behaved peer; a raw socket speaking hand-built frames
is the misbehaving one; urllib is the plain HTTP client.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed as PeerSawClose
from websockets.exceptions import InvalidStatus

from media_gateway.http import (
    HttpError,
    read_json,
    read_request,
    write_error,
    write_json,
    write_response,
)
from media_gateway.websocket import (
    ConnectionClosed,
    WebSocket,
    accept_key,
    accept_websocket,
    encode_frame,
    unmask,
)

pytestmark = pytest.mark.timeout(30)

PAGE = b"<!doctype html><title>Baton</title><p>softphone</p>"
TOKEN = "tok/en+1"  # needs percent-encoding, so the query parser is exercised too
WS_PATH = "/ws?token=tok%2Fen%2B1"
BURST_TASKS, BURST_EACH, BURST_SIZE = 8, 25, 50_000
STEP = 5.0  # seconds any single step may take before a test fails rather than hangs


@dataclass
class App:
    """The test's server: how each connection ended lands in `ended`, surprises in `unexpected`."""

    max_message_bytes: int = 64 * 1024
    ended: asyncio.Queue[ConnectionClosed] = field(default_factory=asyncio.Queue)
    unexpected: list[BaseException] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_request(reader)
            if request.path == "/" and request.method == "GET":
                await write_response(writer, 200, PAGE, content_type="text/html; charset=utf-8")
            elif request.path == "/api/echo" and request.method == "POST":
                body = await read_json(request, reader, max_bytes=1024)
                await write_json(writer, 200, {"echo": body})
            elif request.path == "/ws":
                # The token is checked on the parsed head, before the upgrade reads any frame.
                if request.query_value("token") != TOKEN:
                    raise HttpError(403, "bad token")
                ws = await accept_websocket(
                    request,
                    reader,
                    writer,
                    subprotocols=["baton.v1"],
                    max_message_bytes=self.max_message_bytes,
                    close_timeout=2.0,
                )
                await self.echo(ws)
            else:
                raise HttpError(404, "no such page")
        except HttpError as error:
            await write_error(writer, error, reader=reader)
        except ConnectionClosed as closed:
            await self.ended.put(closed)
        except BaseException as error:  # recorded so the fixture fails the test loudly
            self.unexpected.append(error)
            raise

    async def echo(self, ws: WebSocket) -> None:
        while True:
            message = await ws.recv()
            if message == "close-me":
                await ws.close(4000, "as asked")
            elif message == "burst":
                results = await asyncio.gather(
                    *(burst(ws, n) for n in range(BURST_TASKS)), return_exceptions=True
                )
                for result in results:
                    if isinstance(result, BaseException):
                        raise result
            else:
                await ws.send(message)


async def burst(ws: WebSocket, n: int) -> None:
    for seq in range(BURST_EACH):
        await ws.send(struct.pack("!HH", n, seq) + bytes([n]) * BURST_SIZE)


Start = Callable[..., Awaitable[tuple[App, int]]]


@pytest.fixture
async def start() -> AsyncIterator[Start]:
    loop_errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: loop_errors.append(ctx))
    servers: list[tuple[App, asyncio.Server]] = []

    async def run(**options: Any) -> tuple[App, int]:
        app = App(**options)
        server = await asyncio.start_server(app.handle, "127.0.0.1", 0)
        servers.append((app, server))
        return app, server.sockets[0].getsockname()[1]

    yield run
    for app, server in servers:
        server.close()
        await asyncio.wait_for(server.wait_closed(), STEP)
        assert app.unexpected == []
    assert loop_errors == []


def client(port: int, path: str = WS_PATH, **options: Any) -> connect:
    # proxy=None: a proxy from the environment must never see loopback test traffic.
    return connect(
        f"ws://127.0.0.1:{port}{path}", proxy=None, open_timeout=STEP, close_timeout=STEP, **options
    )


async def ended(app: App) -> ConnectionClosed:
    return await asyncio.wait_for(app.ended.get(), STEP)


async def closed_by_server(ws: ClientConnection) -> PeerSawClose:
    with pytest.raises(PeerSawClose) as caught:
        await asyncio.wait_for(ws.recv(), STEP)
    return caught.value


# -- a raw peer that can break the rules ------------------------------------------------------


def client_frame(
    opcode: int,
    payload: bytes,
    *,
    fin: bool = True,
    masked: bool = True,
    rsv: int = 0,
    mask: bytes | None = None,
) -> bytes:
    """A client frame built independently of the module under test (naive masking on purpose)."""
    first = (0x80 if fin else 0) | rsv | opcode
    n = len(payload)
    if n < 126:
        head = bytes([first, (0x80 if masked else 0) | n])
    elif n < 65536:
        head = bytes([first, (0x80 if masked else 0) | 126]) + struct.pack("!H", n)
    else:
        head = bytes([first, (0x80 if masked else 0) | 127]) + struct.pack("!Q", n)
    if not masked:
        return head + payload
    mask = os.urandom(4) if mask is None else mask
    if not any(mask):  # a legal all-zero mask: skips the slow loop for megabyte payloads
        return head + mask + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def read_server_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    b0, b1 = await asyncio.wait_for(reader.readexactly(2), STEP)
    assert b1 & 0x80 == 0, "server frames must not be masked"
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    return b0 & 0x0F, await reader.readexactly(n)


async def raw_exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read until the server closes: (status, headers, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    response = await asyncio.wait_for(reader.read(), STEP)
    writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def upgrade_request(path: str = WS_PATH, overrides: dict[str, str | None] | None = None) -> bytes:
    fields: dict[str, str | None] = {
        "Host": "127.0.0.1",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
    }
    fields.update(overrides or {})
    lines = [f"GET {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in fields.items() if v is not None]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def raw_websocket(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(upgrade_request())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), STEP)
    assert head.startswith(b"HTTP/1.1 101 ")
    return reader, writer


async def expect_close(reader: asyncio.StreamReader, code: int) -> str:
    opcode, payload = await read_server_frame(reader)
    assert opcode == 0x8
    assert struct.unpack("!H", payload[:2])[0] == code
    # ...and the server hangs up after failing the connection.
    assert await asyncio.wait_for(reader.read(), STEP) == b""
    return payload[2:].decode()


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
