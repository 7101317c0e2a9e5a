"""A raw TCP peer for the gateway's WebSocket routes: it builds frames by hand, so it can break
the protocol's rules, ignore pings, or open thousands of idle sockets cheaply."""

from __future__ import annotations

import asyncio
import base64
import os
import struct

STEP = 5.0  # seconds any single step may take before a test fails rather than hangs


def client_frame(
    opcode: int, payload: bytes, *, fin: bool = True, masked: bool = True, rsv: int = 0
) -> bytes:
    """A client frame built independently of the server's code (naive masking on purpose)."""
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
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def upgrade_request(path: str) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


async def open_raw(
    port: int, path: str, *, source: str | None = None
) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter]:
    """Send an upgrade request; returns the response status and the open streams."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, local_addr=(source, 0) if source else None
    )
    writer.write(upgrade_request(path))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), STEP)
    return int(head.split(b" ", 2)[1]), reader, writer


async def read_server_frame(
    reader: asyncio.StreamReader, timeout: float = STEP
) -> tuple[int, bytes]:
    b0, b1 = await asyncio.wait_for(reader.readexactly(2), timeout)
    assert b1 & 0x80 == 0, "server frames must not be masked"
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    return b0 & 0x0F, await reader.readexactly(n)


async def close_code(reader: asyncio.StreamReader, timeout: float = STEP) -> tuple[int, str]:
    """Read frames until the server's close frame; pings are left unanswered on purpose."""
    while True:
        opcode, payload = await read_server_frame(reader, timeout)
        if opcode == 0x8:
            return struct.unpack("!H", payload[:2])[0], payload[2:].decode()
