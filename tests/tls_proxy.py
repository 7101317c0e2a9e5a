"""A loopback TLS terminator for tests, in front of a plaintext gRPC server.

The Temporal dev server has no TLS options of its own (`temporal server start-dev --help`), so
a test that wants a client to really speak TLS to Temporal puts this proxy in front of it:
clients do a real TLS handshake with it (HTTP/2 chosen by ALPN, as gRPC requires), and it
forwards the decrypted bytes to the dev server's plaintext port. It is how TLS is usually
terminated in production too (a load balancer or an Envoy in front of the frontend).

Every connection's handshake is recorded (ALPN, SNI, the client certificate, or why it
failed, and how many bytes went on to the server), so a test can show not only that a client
was refused but why, and that nothing it sent reached Temporal.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Handshake:
    """One client connection as the proxy saw it."""

    #: None while the handshake runs or when it succeeded; the SSL error when it failed.
    error: str | None = None
    done: bool = False
    alpn: str | None = None
    #: The name the client asked for (SNI); clients send none for an IP address.
    server_name: str | None = None
    #: The verified client certificate (`SSLObject.getpeercert()`), when one was required.
    client_cert: dict[str, Any] | None = None
    #: Bytes the client sent that went on to the plaintext server.
    forwarded: int = 0

    @property
    def ok(self) -> bool:
        return self.done and self.error is None


class TlsProxy:
    """Accepts TLS on a free loopback port and forwards to `upstream` (`host:port`)."""

    def __init__(self, upstream: str, context: ssl.SSLContext) -> None:
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.context = context
        self.handshakes: list[Handshake] = []
        self._names: dict[int, str] = {}
        # The SNI callback is the only place the server sees the requested name.
        context.sni_callback = self._remember_name
        self._changed = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def address(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def start(self) -> TlsProxy:
        # No ssl= here: the handshake is done by hand in `_serve`, so a failed one is seen and
        # recorded instead of only being logged by asyncio.
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def wait_for(self, condition: Callable[[list[Handshake]], bool], timeout: float) -> None:
        """Wait until `condition(handshakes)` holds; the server side of a refused handshake
        can finish a moment after the client has already given up."""
        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: condition(self.handshakes)), timeout
            )

    def _remember_name(self, ssl_object: Any, name: str | None, _: ssl.SSLContext) -> None:
        if name is not None:
            self._names[id(ssl_object)] = name

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        record = Handshake()
        self.handshakes.append(record)
        try:
            try:
                await writer.start_tls(self.context, ssl_handshake_timeout=10)
            except (ssl.SSLError, OSError, TimeoutError) as error:
                record.error = f"{type(error).__name__}: {error}"
                return
            finally:
                record.done = True
                await self._notify()
            ssl_object = writer.get_extra_info("ssl_object")
            record.alpn = ssl_object.selected_alpn_protocol()
            record.server_name = self._names.pop(id(ssl_object), None)
            record.client_cert = ssl_object.getpeercert() or None
            await self._notify()
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            self._writers.add(up_writer)
            await asyncio.gather(
                self._pump(reader, up_writer, record), self._pump(up_reader, writer, None)
            )
        finally:
            writer.close()
            self._writers.discard(writer)
            self._tasks.discard(task)

    @staticmethod
    async def _pump(
        source: asyncio.StreamReader, sink: asyncio.StreamWriter, record: Handshake | None
    ) -> None:
        try:
            while data := await source.read(65536):
                if record is not None:
                    record.forwarded += len(data)
                sink.write(data)
                await sink.drain()
        except (OSError, ssl.SSLError):
            pass  # either side hung up; the other one is closed below
        finally:
            sink.close()


def server_context(
    cert: Any, *, client_ca: Any | None = None, alpn: tuple[str, ...] = ("h2",)
) -> ssl.SSLContext:
    """A server-side context serving trustme leaf `cert`; with `client_ca` (a trustme CA) it
    requires a client certificate that CA signed (mTLS)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    context.set_alpn_protocols(list(alpn))
    if client_ca is not None:
        client_ca.configure_trust(context)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
