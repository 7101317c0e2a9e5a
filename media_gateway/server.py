"""`baton gateway`: the media gateway's listeners, HTTP/WebSocket for callers and gRPC for workers.

Routes on the HTTP port:
* ``GET /media/browser|twilio|acs`` — the caller's WebSocket (token required, see connection.py);
* ``GET /`` and ``/static/...`` — the web softphone;
* ``POST /api/calls`` — issues a call id and token for the softphone (only with ``softphone``
  on: in production the contact-center platform issues tokens with the same secret);
* ``GET /healthz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

import grpc
import structlog
from temporalio.client import Client

from contracts.calls import Channel
from media_gateway import http
from media_gateway.calls import CallRegistry, GatewayConfig, new_call_id
from media_gateway.connection import Connection
from media_gateway.media_plane import start_media_plane
from media_gateway.tokens import TokenError, issue_token, verify_token
from media_gateway.websocket import ConnectionClosed, accept_websocket

log = structlog.get_logger("baton.gateway")

CHANNELS: dict[str, Channel] = {
    "/media/browser": "browser",
    "/media/twilio": "twilio",
    "/media/acs": "acs",
}
STATIC_FILES = {
    "/": ("softphone.html", "text/html; charset=utf-8"),
    "/static/softphone.js": ("softphone.js", "text/javascript; charset=utf-8"),
    "/static/softphone.css": ("softphone.css", "text/css; charset=utf-8"),
}
_PROFILE_QUERY = ("client_id", "name")


@dataclass
class Gateway:
    """A running gateway: stop it with `close()`."""

    registry: CallRegistry
    front: HttpFront
    http_server: asyncio.Server
    media_server: grpc.aio.Server
    http_port: int

    async def close(self) -> None:
        self.http_server.close()
        for connection in list(self.front.connections):
            await connection.close("gateway shutting down")
        for call in list(self.registry.calls.values()):
            await call.aclose()
        await self.media_server.stop(grace=1.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.http_server.wait_closed(), 2.0)


class HttpFront:
    def __init__(self, registry: CallRegistry, secret: bytes, *, softphone: bool) -> None:
        self.registry = registry
        self.secret = secret
        self.softphone = softphone
        self.connections: set[Connection] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await http.read_request(reader)
            await self._route(request, reader, writer)
        except http.HttpError as error:
            await http.write_error(writer, error, reader=reader)
        except ConnectionClosed:
            pass
        except Exception:
            log.exception("request failed")  # one broken request never takes the gateway down
            with contextlib.suppress(Exception):
                await http.write_error(writer, http.HttpError(500, "internal error"))

    async def _route(
        self, request: http.Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        channel = CHANNELS.get(request.path)
        if channel is not None:
            await self._media(channel, request, reader, writer)
        elif request.path == "/healthz":
            await http.write_json(writer, 200, {"ok": True, "calls": len(self.registry.calls)})
        elif request.path == "/api/calls" and self.softphone:
            await self._issue_call(request, reader, writer)
        elif request.path in STATIC_FILES and self.softphone and request.method == "GET":
            name, content_type = STATIC_FILES[request.path]
            body = resources.files("media_gateway.static").joinpath(name).read_bytes()
            await http.write_response(writer, 200, body, content_type=content_type)
        else:
            raise http.HttpError(404, "no such page")

    async def _issue_call(
        self, request: http.Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if request.method != "POST":
            raise http.HttpError(405, "use POST", {"Allow": "POST"})
        body = await http.read_json(request, reader)
        scenario = body.get("scenario") if isinstance(body, dict) else None
        call_id = new_call_id()
        await http.write_json(
            writer,
            200,
            {
                "call_id": call_id,
                "token": issue_token(self.secret, call_id),
                "scenario": scenario
                if isinstance(scenario, str)
                else self.registry.config.scenario,
            },
        )

    async def _media(
        self,
        channel: Channel,
        request: http.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        token, call_id = request.query_value("token"), request.query_value("call_id")
        authenticated = False
        if channel != "twilio" or token is not None:
            # Checked before the upgrade: a refused caller never gets to send a byte of audio.
            try:
                verify_token(self.secret, token or "", call_id or "")
            except TokenError as error:
                log.warning("token refused", reason=error.reason, channel=channel)
                raise http.HttpError(
                    401 if error.reason == "missing" else 403, str(error)
                ) from None
            authenticated = True
        ws = await accept_websocket(request, reader, writer)
        profile = {k: v for k in _PROFILE_QUERY if (v := request.query_value(k))}
        connection = Connection(
            ws,
            channel,
            self.registry,
            self.secret,
            call_id=call_id,
            authenticated=authenticated,
            scenario=request.query_value("scenario"),
            profile=cast(dict[str, Any], profile),
        )
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)


async def start_gateway(
    client: Client,
    config: GatewayConfig,
    secret: bytes,
    *,
    host: str = "127.0.0.1",
    http_port: int = 8765,
    media_listen: str | None = None,
    softphone: bool = True,
) -> Gateway:
    registry = CallRegistry(client, config)
    media_server, media_port = await start_media_plane(
        registry, media_listen or config.media_address
    )
    if config.media_address.endswith(":0"):
        # Port 0 picks a free port; calls must carry the real one.
        host_part = config.media_address.rsplit(":", 1)[0]
        registry.config = dataclasses.replace(config, media_address=f"{host_part}:{media_port}")
    front = HttpFront(registry, secret, softphone=softphone)
    server = await asyncio.start_server(front.handle, host, http_port, limit=2**17)
    port = server.sockets[0].getsockname()[1]
    log.info("gateway listening", http=f"{host}:{port}", media=registry.config.media_address)
    return Gateway(registry, front, server, media_server, port)
