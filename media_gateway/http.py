"""A deliberately small HTTP/1.1 layer: read one request head, answer once, close.

The gateway serves a static page, a few JSON endpoints and the WebSocket upgrade on one port.
Every response carries ``Connection: close``, so there is no keep-alive, no pipelining and no
chunked encoding to get wrong: one request per TCP connection. Parsing is strict (RFC 9112)
because everything arriving here is untrusted, and every limit is checked before the bytes it
guards are buffered or decoded.

    request = await read_request(reader)
    if request.path == "/api/thing":
        body = await read_json(request, reader)
        await write_json(writer, 200, {"ok": True})

Failures raise `HttpError`; `write_error` turns one into a short plain-text refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import parse_qsl

MAX_HEAD_BYTES: Final = 16 * 1024
MAX_HEADERS: Final = 100
MAX_JSON_BYTES: Final = 64 * 1024
# A slow-loris client trickling a head byte by byte must not hold a task forever.
HEAD_TIMEOUT_SECONDS: Final = 10.0
# Bounds the time spent flushing a response to a peer that stopped reading.
_FLUSH_TIMEOUT_SECONDS: Final = 5.0
_LINGER_CHUNK: Final = 64 * 1024

# RFC 9110 §5.6.2 token characters: method and header names must be made of these.
_TOKEN: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Field values: visible ASCII, obs-text, space and tab; anything else (CR, LF, NUL) is refused.
_FIELD_VALUE: Final = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_REQUEST_TARGET: Final = re.compile(rb"/[\x21-\x7e]*")
_VERSION: Final = re.compile(rb"HTTP/1\.[01]")
_SAFE_OUT_VALUE: Final = re.compile(r"[\t\x20-\x7e]*")


class HttpError(Exception):
    """A request that gets an HTTP error answer instead of service.

    ``headers`` are extra response headers the refusal needs (``Sec-WebSocket-Version`` on a 426,
    ``Allow`` on a 405). ``reason`` is short, plain and safe to show the client.
    """

    def __init__(self, status: int, reason: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.headers: dict[str, str] = dict(headers or {})


@dataclass(frozen=True)
class Request:
    """One parsed request head.

    ``path`` is the target before ``?``, still percent-encoded: routing compares it verbatim, so
    ``/media%2F..`` can never alias another route. ``headers`` has lower-case names; repeated
    fields are joined with ``", "`` as RFC 9110 §5.3 allows for list-valued fields.
    """

    method: str
    target: str
    path: str
    query: tuple[tuple[str, str], ...]
    version: str
    headers: Mapping[str, str] = field(repr=False)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def header_tokens(self, name: str) -> set[str]:
        """A comma-separated header as a set of lower-case tokens (``Connection``, ``Upgrade``)."""
        value = self.headers.get(name.lower(), "")
        return {part.strip().lower() for part in value.split(",") if part.strip()}

    def query_value(self, name: str) -> str | None:
        """The single value of a query parameter, or None when absent.

        A repeated parameter is refused rather than resolved: if a proxy and the gateway picked
        different copies of ``?token=``, they would disagree about who the caller is.
        """
        values = [value for key, value in self.query if key == name]
        if len(values) > 1:
            raise HttpError(400, f"query parameter {name!r} is repeated")
        return values[0] if values else None


async def read_request(
    reader: asyncio.StreamReader,
    *,
    max_head_bytes: int = MAX_HEAD_BYTES,
    max_headers: int = MAX_HEADERS,
    timeout: float | None = HEAD_TIMEOUT_SECONDS,
) -> Request:
    """Read and parse one request head (up to the blank line); the body is left unread."""
    try:
        async with asyncio.timeout(timeout):
            lines = await _read_head_lines(reader, max_head_bytes, max_headers)
    except TimeoutError:
        raise HttpError(408, "request head not received in time") from None
    return _parse_head(lines)


async def _read_head_lines(
    reader: asyncio.StreamReader, max_head_bytes: int, max_headers: int
) -> list[bytes]:
    lines: list[bytes] = []
    total = 0
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            raise HttpError(400, "connection closed before the request head ended") from exc
        except asyncio.LimitOverrunError as exc:
            # One line longer than the reader's own buffer limit: far beyond our head limit too.
            raise HttpError(431, "request head too large") from exc
        except (ConnectionError, OSError) as exc:
            raise HttpError(400, "connection lost while reading the request") from exc
        total += len(line)
        if total > max_head_bytes:
            raise HttpError(431, "request head too large")
        if not line.endswith(b"\r\n"):
            # Bare LF line endings are a request-smuggling vector (RFC 9112 §2.2); refuse them.
            raise HttpError(400, "header lines must end with CRLF")
        line = line[:-2]
        if not line:
            if not lines:
                # RFC 9112 §2.2 lets a server skip empty lines before the request line.
                continue
            return lines
        lines.append(line)
        if len(lines) > max_headers + 1:
            raise HttpError(431, "too many header fields")


def _parse_head(lines: list[bytes]) -> Request:
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        raise HttpError(400, "malformed request line")
    method, target, version = parts
    if not _TOKEN.fullmatch(method):
        raise HttpError(400, "malformed method")
    if not _REQUEST_TARGET.fullmatch(target):
        # Only origin-form ("/path?query"): no proxying, no "*" (OPTIONS) and no absolute URLs.
        raise HttpError(400, "malformed request target")
    if not _VERSION.fullmatch(version):
        if version.startswith(b"HTTP/"):
            raise HttpError(505, "only HTTP/1.1 is supported")
        raise HttpError(400, "malformed HTTP version")

    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise HttpError(400, "obsolete header line folding is not accepted")
        name, colon, value = line.partition(b":")
        # A name must be a bare token: "Name :" is refused outright by RFC 9112 §5.1.
        if not colon or not _TOKEN.fullmatch(name):
            raise HttpError(400, "malformed header field")
        value = value.strip(b" \t")
        if not _FIELD_VALUE.fullmatch(value):
            raise HttpError(400, "malformed header value")
        key = name.decode("ascii").lower()
        text = value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    target_text = target.decode("ascii")
    path, _, query_text = target_text.partition("?")
    try:
        query = parse_qsl(
            query_text,
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=MAX_HEADERS,
            errors="strict",
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise HttpError(400, "malformed query string") from exc
    return Request(
        method=method.decode("ascii"),
        target=target_text,
        path=path,
        query=tuple(query),
        version=version.decode("ascii"),
        headers=headers,
    )


async def read_body(
    request: Request, reader: asyncio.StreamReader, *, max_bytes: int = MAX_JSON_BYTES
) -> bytes:
    """Read a request body framed by Content-Length, refusing it before reading if too big."""
    if request.header("transfer-encoding") is not None:
        raise HttpError(501, "Transfer-Encoding is not supported; send Content-Length")
    length_text = request.header("content-length")
    if length_text is None:
        raise HttpError(411, "Content-Length is required")
    # Digits only: int() would also accept "+5", " 5" or "5_0", which other parsers read otherwise.
    if not length_text.isascii() or not length_text.isdigit() or len(length_text) > 18:
        raise HttpError(400, "malformed Content-Length")
    length = int(length_text)
    if length > max_bytes:
        raise HttpError(413, f"body larger than {max_bytes} bytes")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise HttpError(400, "connection closed before the body ended") from exc
    except (ConnectionError, OSError) as exc:
        raise HttpError(400, "connection lost while reading the body") from exc


async def read_json(
    request: Request, reader: asyncio.StreamReader, *, max_bytes: int = MAX_JSON_BYTES
) -> Any:
    """Read and decode a JSON body (``Content-Type: application/json``, UTF-8, bounded)."""
    media_type = (request.header("content-type") or "").split(";")[0].strip().lower()
    # Requiring the JSON media type means a cross-site HTML form (which can only send form
    # encodings without a CORS preflight) cannot drive these endpoints.
    if media_type != "application/json":
        raise HttpError(415, "expected Content-Type: application/json")
    body = await read_body(request, reader, max_bytes=max_bytes)
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HttpError(400, "body is not valid JSON") from exc


def encode_head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    """A status line and header block, ending with the blank line.

    Names and values come from our own code, but a value may echo client input (a subprotocol,
    a reason), so CR/LF are refused here: no response splitting through this function.
    """
    lines = [f"HTTP/1.1 {status} {_phrase(status)}"]
    for name, value in headers:
        if not _TOKEN.fullmatch(name.encode("ascii", "replace")):
            raise ValueError(f"invalid header name {name!r}")
        if not _SAFE_OUT_VALUE.fullmatch(value):
            raise ValueError(f"invalid header value for {name}")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def encode_response(
    status: int,
    body: bytes = b"",
    *,
    content_type: str = "text/plain; charset=utf-8",
    headers: Mapping[str, str] | None = None,
) -> bytes:
    """A complete response: head (with Content-Length and Connection: close) plus body."""
    fields = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
    ]
    fields.extend((headers or {}).items())
    return encode_head(status, fields) + body


async def write_response(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes = b"",
    *,
    content_type: str = "text/plain; charset=utf-8",
    headers: Mapping[str, str] | None = None,
    reader: asyncio.StreamReader | None = None,
) -> None:
    """Send one response and close the connection.

    Pass ``reader`` when the request body may be unread (a refused upload), so the response
    is not lost to a TCP reset; see `close_writer`. A peer that has already gone is not an
    error worth raising: there is nobody left to tell.
    """
    data = encode_response(status, body, content_type=content_type, headers=headers)
    with contextlib.suppress(ConnectionError, OSError):
        writer.write(data)
    await close_writer(writer, linger=reader)


async def write_json(
    writer: asyncio.StreamWriter,
    status: int,
    payload: Any,
    *,
    headers: Mapping[str, str] | None = None,
) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    await write_response(writer, status, body, content_type="application/json", headers=headers)


async def write_error(
    writer: asyncio.StreamWriter, error: HttpError, *, reader: asyncio.StreamReader | None = None
) -> None:
    """Refuse a request: status, the error's extra headers, and its reason as a short text body.

    Pass ``reader`` if the client may still be sending (see `write_response`).
    """
    body = f"{error.status} {_phrase(error.status)}: {error.reason}\n".encode()
    await write_response(writer, error.status, body, headers=error.headers, reader=reader)


async def close_writer(
    writer: asyncio.StreamWriter,
    timeout: float = _FLUSH_TIMEOUT_SECONDS,
    *,
    linger: asyncio.StreamReader | None = None,
) -> None:
    """Close gracefully (flushing what is buffered), but abort a peer that will not read it.

    With ``linger`` (the connection's reader), first half-close and discard input until the peer
    hangs up: closing a socket that still has unread input makes the kernel answer with RST,
    and an RST can destroy our last bytes (a refusal, a close frame) before the peer reads them.
    """
    try:
        async with asyncio.timeout(timeout):
            if linger is not None and not writer.is_closing() and writer.can_write_eof():
                writer.write_eof()
                while await linger.read(_LINGER_CHUNK):
                    pass
            writer.close()
            await writer.wait_closed()
    except (TimeoutError, ConnectionError, OSError):
        writer.transport.abort()


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
