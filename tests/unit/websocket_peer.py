"""The WebSocket tests' peers: a tiny app on a real asyncio server, a well-behaved client, and
a raw socket that builds frames by hand so it can break the protocol's rules."""

from __future__ import annotations

import asyncio
import base64
import os
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed as PeerSawClose

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
    accept_websocket,
)

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
