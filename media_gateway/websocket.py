"""The server side of RFC 6455 WebSockets, on the streams `media_gateway.http` already read.

    request = await read_request(reader)
    ...check the token on `request` before anything else...
    ws = await accept_websocket(request, reader, writer)
    msg = await ws.recv()            # str or bytes; raises ConnectionClosed at the end
    await ws.send(b"...")
    await ws.close(1000, "bye")

No extensions are negotiated (so RSV bits are always a protocol error); outgoing messages are
never fragmented. Every way a connection ends (closing handshake from either side, protocol
violation, oversized message, vanished peer) surfaces as `ConnectionClosed`; a refused handshake
raises `HttpError`, which the caller answers with `http.write_error`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import codecs
import hashlib
import struct
from collections.abc import Iterable
from typing import Final

from media_gateway.http import HttpError, Request, close_writer, encode_head

MAX_MESSAGE_BYTES: Final = 64 * 1024
CLOSE_TIMEOUT_SECONDS: Final = 5.0
_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT: Final = 0x0
OP_TEXT: Final = 0x1
OP_BINARY: Final = 0x2
OP_CLOSE: Final = 0x8
OP_PING: Final = 0x9
OP_PONG: Final = 0xA

CLOSE_NORMAL: Final = 1000
CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_NO_STATUS: Final = 1005  # never sent: stands for "close frame had no code"
CLOSE_ABNORMAL: Final = 1006  # never sent: stands for "TCP ended without a close frame"
CLOSE_INVALID_DATA: Final = 1007
CLOSE_TOO_BIG: Final = 1009

_MAX_CONTROL_PAYLOAD: Final = 125
_VERSION_13: Final = {"Sec-WebSocket-Version": "13"}
# Codes a peer may put on the wire (RFC 6455 §7.4 plus IANA's 1012-1014, and 3000-4999).
_SENDABLE_CODES: Final = frozenset([*range(1000, 1004), *range(1007, 1015)])


class ConnectionClosed(Exception):  # noqa: N818 - the name callers (and the brief) expect
    """The connection is over. ``local`` tells whether this side ended it (close() or a
    protocol violation it detected) rather than the peer or the network."""

    def __init__(self, code: int, reason: str = "", *, local: bool = False) -> None:
        super().__init__(f"WebSocket closed: {code} {reason}".rstrip())
        self.code = code
        self.reason = reason
        self.local = local


class _PeerError(Exception):
    """Internal: the peer broke the protocol; args are (close code, reason) to fail with."""


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a client's Sec-WebSocket-Key (RFC 6455 §4.2.2)."""
    digest = hashlib.sha1(key.encode("ascii") + _GUID, usedforsecurity=False).digest()
    return base64.b64encode(digest).decode("ascii")


def unmask(payload: bytes, mask: bytes) -> bytes:
    """XOR ``payload`` with the repeating 4-byte ``mask``.

    Done as one big-integer XOR: CPython runs from_bytes/xor/to_bytes in C over the whole
    payload, ~25x faster than a Python loop over bytes (see benchmarks/bench_websocket.py).
    """
    n = len(payload)
    if n == 0:
        return b""
    key = (mask * ((n >> 2) + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")


def encode_frame(opcode: int, payload: bytes) -> bytes:
    """One final, unmasked (server-to-client) frame, as a single bytes object."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


def _check_handshake(request: Request) -> str:
    """Validate an upgrade request (RFC 6455 §4.2.1) and return its Sec-WebSocket-Key."""
    if request.method != "GET":
        raise HttpError(405, "WebSocket upgrade must use GET", {"Allow": "GET"})
    if request.version != "HTTP/1.1":
        raise HttpError(400, "WebSocket upgrade requires HTTP/1.1")
    if request.header("host") is None:
        raise HttpError(400, "missing Host header")
    if "websocket" not in request.header_tokens("upgrade"):
        raise HttpError(400, "expected Upgrade: websocket")
    if "upgrade" not in request.header_tokens("connection"):
        raise HttpError(400, "expected Connection: Upgrade")
    version = request.header("sec-websocket-version")
    if version != "13":  # §4.4: name the version we do speak, so the client can retry with it
        status = 400 if version is None else 426
        raise HttpError(status, "unsupported WebSocket version; use 13", _VERSION_13)
    key = request.header("sec-websocket-key")
    if key is None:
        raise HttpError(400, "missing Sec-WebSocket-Key")
    try:
        raw = base64.b64decode(key.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise HttpError(400, "Sec-WebSocket-Key must be 16 bytes, base64-encoded")
    return key.strip()


async def accept_websocket(
    request: Request,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    subprotocols: Iterable[str] = (),
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    close_timeout: float = CLOSE_TIMEOUT_SECONDS,
) -> WebSocket:
    """Complete the opening handshake and return the open connection.

    Raises `HttpError` (nothing written yet) if the request is not a valid upgrade, and
    `ConnectionClosed` if the peer vanished before the 101 response was sent. ``subprotocols``
    is the server's list in preference order; the first one the client also offered is chosen.
    """
    key = _check_handshake(request)
    offered = request.header_tokens("sec-websocket-protocol")
    chosen = next((p for p in subprotocols if p.lower() in offered), None)
    fields = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Accept", accept_key(key)),
    ]
    if chosen is not None:
        fields.append(("Sec-WebSocket-Protocol", chosen))
    try:
        writer.write(encode_head(101, fields))
        await writer.drain()
    except (ConnectionError, OSError) as exc:
        writer.transport.abort()
        raise ConnectionClosed(CLOSE_ABNORMAL, "peer left during the handshake") from exc
    return WebSocket(reader, writer, chosen, max_message_bytes, close_timeout)


class WebSocket:
    """An open server-side connection. `send` may be called from many tasks at once; `recv`
    from one task at a time (a second concurrent caller waits its turn)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        subprotocol: str | None,
        max_message_bytes: int,
        close_timeout: float,
    ) -> None:
        self.subprotocol = subprotocol
        self.max_message_bytes = max_message_bytes
        self._reader = reader
        self._writer = writer
        self._close_timeout = close_timeout
        self._write_lock = asyncio.Lock()
        self._read_lock = asyncio.Lock()
        self._close_sent = False
        self._peer_closed = asyncio.Event()
        self._closed: ConnectionClosed | None = None
        # True while no frame is half-read and no fragments are held: cancelling recv() then
        # loses nothing. Otherwise the stream position is lost and the connection must end.
        self._clean = True

    @property
    def closed(self) -> ConnectionClosed | None:
        """How the connection ended, or None while it is still open."""
        return self._closed

    async def recv(self) -> str | bytes:
        """The next whole message: str for text, bytes for binary.

        Cancelling it (e.g. an idle timeout) while waiting between messages is harmless;
        cancelling it mid-message aborts the connection, as the rest could not be parsed.
        """
        async with self._read_lock:
            if self._closed is not None:
                raise self._closed_now()
            try:
                return await self._read_message()
            except asyncio.CancelledError:
                if not self._clean:
                    self._abort("recv cancelled mid-message", local=True)
                raise
            except _PeerError as fail:
                await self._fail(*fail.args)
            except (asyncio.IncompleteReadError, ConnectionError, OSError):
                self._abort("connection lost")
            raise self._closed_now()

    async def send(self, message: str | bytes) -> None:
        """Send one message (text for str, binary for bytes), waiting out backpressure."""
        if isinstance(message, str):
            frame = encode_frame(OP_TEXT, message.encode("utf-8"))
        else:
            frame = encode_frame(OP_BINARY, bytes(message))
        await self._write(frame)

    async def ping(self, payload: bytes = b"") -> None:
        """Send a ping (a keepalive probe); the peer's pong is consumed by `recv`."""
        if len(payload) > _MAX_CONTROL_PAYLOAD:
            raise ValueError("ping payload is limited to 125 bytes")
        await self._write(encode_frame(OP_PING, payload))

    async def close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Start (or finish) the closing handshake, wait briefly for the peer's close frame,
        then drop the TCP connection. Never raises for a peer that has already gone."""
        if self._closed is not None:
            return
        if code not in _SENDABLE_CODES and not 3000 <= code <= 4999:
            raise ValueError(f"close code {code} may not be sent")
        # Recorded first: from here on recv/send report this close, as ours.
        self._closed = ConnectionClosed(code, reason, local=True)
        await self._send_close(code, reason)
        try:
            async with asyncio.timeout(self._close_timeout):
                # Whoever holds the read lock will see the peer's close frame; otherwise read
                # (and discard) until it arrives, as the peer may still be mid-message.
                if self._read_lock.locked():
                    await self._peer_closed.wait()
                else:
                    async with self._read_lock:
                        while not self._peer_closed.is_set():
                            await self._read_message()
        except (TimeoutError, ConnectionClosed, _PeerError, asyncio.IncompleteReadError, OSError):
            # Whatever the peer did instead of answering, the connection ends here all the same.
            pass
        await close_writer(self._writer, self._close_timeout)

    async def _read_message(self) -> str | bytes:
        parts: list[bytes] = []
        size = 0
        opcode: int | None = None  # opcode of the message being reassembled
        decoder: codecs.IncrementalDecoder | None = None
        while True:
            self._clean = not parts
            fin, frame_op, payload = await self._read_frame(size)
            if frame_op >= OP_CLOSE:
                await self._handle_control(frame_op, payload)
                continue
            if frame_op == OP_CONT:
                if opcode is None:
                    raise _PeerError(CLOSE_PROTOCOL_ERROR, "continuation frame without a message")
            elif opcode is not None:
                raise _PeerError(CLOSE_PROTOCOL_ERROR, "new message before the previous one ended")
            else:
                opcode = frame_op
                if opcode == OP_TEXT:
                    decoder = codecs.getincrementaldecoder("utf-8")("strict")
            size += len(payload)
            parts.append(payload)
            if decoder is not None:
                # Decoding each fragment as it arrives fails a bad stream at the first bad byte.
                try:
                    decoder.decode(payload, final=fin)
                except UnicodeDecodeError:
                    raise _PeerError(CLOSE_INVALID_DATA, "text is not valid UTF-8") from None
            if fin:
                self._clean = True
                data = b"".join(parts)
                return data.decode("utf-8") if opcode == OP_TEXT else data

    async def _read_frame(self, size_so_far: int) -> tuple[bool, int, bytes]:
        """One frame: (fin, opcode, unmasked payload). Limits are checked before the payload
        is read, so an oversized claim costs nothing to refuse."""
        b0, b1 = await self._reader.readexactly(2)
        self._clean = False
        fin, opcode, length = bool(b0 & 0x80), b0 & 0x0F, b1 & 0x7F
        if b0 & 0x70:
            raise _PeerError(CLOSE_PROTOCOL_ERROR, "reserved bits set without an extension")
        if opcode not in (OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG):
            raise _PeerError(CLOSE_PROTOCOL_ERROR, f"unknown opcode {opcode:#x}")
        if not b1 & 0x80:
            raise _PeerError(CLOSE_PROTOCOL_ERROR, "client frames must be masked")
        if opcode >= OP_CLOSE:
            if not fin:
                raise _PeerError(CLOSE_PROTOCOL_ERROR, "control frames must not be fragmented")
            if length > _MAX_CONTROL_PAYLOAD:
                raise _PeerError(CLOSE_PROTOCOL_ERROR, "control frame payload over 125 bytes")
        if length == 126:
            (length,) = struct.unpack("!H", await self._reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self._reader.readexactly(8))
            if length >> 63:
                raise _PeerError(CLOSE_PROTOCOL_ERROR, "frame length has the top bit set")
        if opcode < OP_CLOSE and size_so_far + length > self.max_message_bytes:
            raise _PeerError(CLOSE_TOO_BIG, f"message over {self.max_message_bytes} bytes")
        mask = await self._reader.readexactly(4)
        payload = await self._reader.readexactly(length) if length else b""
        return fin, opcode, unmask(payload, mask)

    async def _handle_control(self, opcode: int, payload: bytes) -> None:
        if opcode == OP_PING:
            # After our close frame nothing else may be sent (§5.5.1); the ping goes unanswered.
            if not self._close_sent:
                await self._write(encode_frame(OP_PONG, payload))
        elif opcode == OP_CLOSE:
            code, reason = _parse_close(payload)
            self._peer_closed.set()
            if self._closed is None:
                self._closed = ConnectionClosed(code, reason, local=False)
            if not self._close_sent:
                # Echo the peer's code (RFC 6455 §5.5.1); 1005 means "none", so send none back.
                await self._send_close(None if code == CLOSE_NO_STATUS else code, reason)
            # §7.1.1: the server closes the TCP connection first, so the client does not sit in
            # TIME_WAIT on our behalf.
            await close_writer(self._writer, self._close_timeout)
            raise self._closed_now()
        # Pongs answer our keepalive pings; nothing to do.

    async def _write(self, frame: bytes) -> None:
        # The lock spans write+drain so a task stalled on backpressure keeps its place in line
        # and frames from concurrent senders go out whole and in order.
        async with self._write_lock:
            if self._close_sent:
                raise self._closed_now()
            try:
                self._writer.write(frame)
                await self._writer.drain()
            except (ConnectionError, OSError):
                self._abort("connection lost")
                raise self._closed_now() from None

    async def _send_close(self, code: int | None, reason: str) -> None:
        # A close payload is at most 125 bytes; cut the reason on a character boundary so the
        # peer never sees a truncated (invalid) UTF-8 sequence.
        text = reason.encode("utf-8")[:123].decode("utf-8", "ignore").encode("utf-8")
        body = b"" if code is None else struct.pack("!H", code) + text
        async with self._write_lock:
            if self._close_sent:
                return
            self._close_sent = True
            try:
                self._writer.write(encode_frame(OP_CLOSE, body))
                await self._writer.drain()
            except (ConnectionError, OSError):
                self._writer.transport.abort()

    async def _fail(self, code: int, reason: str) -> None:
        """Fail the connection (RFC 6455 §7.1.7): say why in a close frame, then hang up."""
        if self._closed is None:
            self._closed = ConnectionClosed(code, reason, local=True)
        await self._send_close(code, reason)
        # Lingering close: the peer may still be sending the message we refused, and closing a
        # socket with unread input makes the kernel send RST, which can destroy our close frame
        # before the peer reads it. So half-close, discard input until the peer hangs up, close.
        await close_writer(self._writer, self._close_timeout, linger=self._reader)

    def _abort(self, reason: str, *, local: bool = False) -> None:
        """End without a closing handshake: the peer is gone or the stream is unusable."""
        if self._closed is None:
            self._closed = ConnectionClosed(CLOSE_ABNORMAL, reason, local=local)
        self._close_sent = True
        self._peer_closed.set()
        self._writer.transport.abort()

    def _closed_now(self) -> ConnectionClosed:
        """A fresh exception for each raise, so repeated raises don't pile up tracebacks."""
        done = self._closed or ConnectionClosed(CLOSE_ABNORMAL, "connection lost")
        return ConnectionClosed(done.code, done.reason, local=done.local)


def _parse_close(payload: bytes) -> tuple[int, str]:
    if not payload:
        return CLOSE_NO_STATUS, ""
    if len(payload) == 1:
        raise _PeerError(CLOSE_PROTOCOL_ERROR, "close frame with a 1-byte payload")
    (code,) = struct.unpack("!H", payload[:2])
    if code not in _SENDABLE_CODES and not 3000 <= code <= 4999:
        raise _PeerError(CLOSE_PROTOCOL_ERROR, f"invalid close code {code}")
    try:
        reason = payload[2:].decode("utf-8")
    except UnicodeDecodeError:
        raise _PeerError(CLOSE_INVALID_DATA, "close reason is not valid UTF-8") from None
    return code, reason
