"""One caller WebSocket: authenticate, attach to the call, then pump frames both ways.

The token is checked before any audio is read: from the query string at the upgrade (browser,
ACS), or from the ``start`` message's custom parameters (Twilio cannot put a query on its
stream URL). Audio that arrives before the stream is authenticated and attached is refused.

A bad frame costs that frame, never the connection's call or anyone else's: it is logged with
its reason and the connection carries on. Outbound audio goes through a small queue so a slow
peer cannot stall playback timing, and a barge-in drops queued audio before sending ``clear``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from typing import Any

import structlog

from contracts.calls import Channel
from contracts.gateway_events import GatewayEvent, PongEvent
from media_gateway import serializers as wire
from media_gateway.calls import CallMedia, CallRegistry
from media_gateway.control import CallEndedError
from media_gateway.tokens import TokenError, verify_token
from media_gateway.websocket import ConnectionClosed, WebSocket

log = structlog.get_logger("baton.gateway")

CLOSE_POLICY = 1008
CLOSE_GOING_AWAY = 1001
#: Outbound messages held for a peer that is not reading; beyond this, audio is dropped.
MAX_OUTBOUND = 200
#: Bad frames tolerated on one connection before it is closed as broken.
MAX_BAD_FRAMES = 50
_PROFILE_KEYS = ("client_id", "name", "phone", "language")


def make_serializer(channel: Channel) -> wire.MediaSerializer:
    if channel == "twilio":
        return wire.TwilioSerializer()
    if channel == "acs":
        return wire.AcsSerializer()
    return wire.BrowserSerializer()


class Connection:
    """The gateway side of one caller WebSocket (implements `calls.Peer`)."""

    def __init__(
        self,
        ws: WebSocket,
        channel: Channel,
        registry: CallRegistry,
        secret: bytes,
        *,
        call_id: str | None = None,
        authenticated: bool = False,
        scenario: str | None = None,
        profile: dict[str, Any] | None = None,
    ) -> None:
        self.ws = ws
        self.channel = channel
        self.registry = registry
        self.secret = secret
        self.serializer = make_serializer(channel)
        self.call_id = call_id
        self.authenticated = authenticated
        self.scenario = scenario
        self.profile = profile or {}
        self.call: CallMedia | None = None
        self.bad_frames = 0
        self._outbound: deque[str | bytes] = deque()
        self._ready = asyncio.Event()
        self._closing = False
        self._hung_up = False

    # -- Peer ------------------------------------------------------------------------------

    def send_audio(self, pcm16_16k: bytes) -> None:
        if len(self._outbound) >= MAX_OUTBOUND:
            log.warning("peer not reading; audio dropped", call_id=self.call_id)
            return
        try:
            self._outbound.extend(self.serializer.audio(pcm16_16k))
        except wire.FrameError as error:
            log.warning("audio not sent", call_id=self.call_id, reason=str(error))
            return
        self._ready.set()

    def clear_audio(self) -> None:
        self._outbound.clear()  # audio not yet on the wire is simply never sent
        with contextlib.suppress(wire.FrameError):
            self._outbound.extend(self.serializer.clear())
        self._ready.set()

    def send_event(self, event: GatewayEvent) -> None:
        if self.channel == "browser":
            self._outbound.append(event.model_dump_json())
            self._ready.set()

    async def close(self, reason: str) -> None:
        self._closing = True
        self._ready.set()
        with contextlib.suppress(ConnectionClosed):  # last words first (e.g. "ended")
            while self._outbound:
                await self.ws.send(self._outbound.popleft())
        await self.ws.close(CLOSE_GOING_AWAY, reason[:120])

    # -- running ---------------------------------------------------------------------------

    async def run(self) -> None:
        writer = asyncio.create_task(self._write_out())
        try:
            if self.authenticated and self.channel != "twilio":
                await self._attach()
            while True:
                message = await self.ws.recv()
                await self._handle(message)
        except ConnectionClosed as closed:
            log.info("connection closed", call_id=self.call_id, code=closed.code)
        except CallEndedError as error:
            await self.ws.close(CLOSE_POLICY, str(error)[:120])
        finally:
            writer.cancel()
            if self.call is not None:
                self.call.disconnect(self, caller_hung_up=self._hung_up)

    async def _write_out(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            while not self._closing:
                await self._ready.wait()
                self._ready.clear()
                while self._outbound:
                    await self.ws.send(self._outbound.popleft())

    async def _handle(self, message: str | bytes) -> None:
        if not self.authenticated and not _may_open_stream(message):
            # Twilio authenticates in `start`; nothing else (audio least of all) is read first.
            await self.ws.close(CLOSE_POLICY, "start with a valid token first")
            raise ConnectionClosed(CLOSE_POLICY, "unauthenticated", local=True)
        try:
            events = self.serializer.parse(message)
        except wire.FrameError as error:
            self.bad_frames += 1
            log.warning("frame refused", call_id=self.call_id, reason=str(error))
            if self.bad_frames > MAX_BAD_FRAMES:
                await self.ws.close(CLOSE_POLICY, "too many bad frames")
            return
        for event in events:
            await self._dispatch(event)

    async def _dispatch(self, event: wire.MediaEvent) -> None:
        if isinstance(event, wire.Started):
            await self._start(event)
        elif self.call is None:
            log.warning("frame before start ignored", call_id=self.call_id)
        elif isinstance(event, wire.Audio):
            self.call.caller_audio(event.pcm16_16k)
        elif isinstance(event, wire.Dtmf):
            self.call.dtmf(event.digits)
        elif isinstance(event, wire.Stopped):
            self._hung_up = True
            await self.ws.close(1000, "stream stopped")
            raise ConnectionClosed(1000, "stream stopped", local=True)
        elif isinstance(event, wire.Control) and event.kind == "ping":
            self.send_event(PongEvent())

    async def _start(self, started: wire.Started) -> None:
        params = dict(started.custom_parameters)
        if not self.authenticated:
            call_id = params.get("call_id") or started.call_id or ""
            try:
                verify_token(self.secret, params.get("token", ""), call_id)
            except TokenError as error:
                log.warning("token refused", reason=error.reason, channel=self.channel)
                await self.ws.close(CLOSE_POLICY, f"token refused: {error.reason}")
                raise ConnectionClosed(CLOSE_POLICY, error.reason, local=True) from error
            self.authenticated, self.call_id = True, call_id
            self.scenario = params.get("scenario") or self.scenario
            self.profile.update({k: params[k] for k in _PROFILE_KEYS if k in params})
        elif started.call_id and started.call_id != self.call_id:
            log.warning("start names another call; ignored", call_id=self.call_id)
        if self.call is None:
            await self._attach()

    async def _attach(self) -> None:
        assert self.call_id is not None
        self.call = await self.registry.open(
            self.call_id, self.channel, self.profile, self.scenario
        )
        await self.call.connect(self)
        log.info("call attached", call_id=self.call_id, channel=self.channel)


def _may_open_stream(message: str | bytes) -> bool:
    """Whether an unauthenticated Twilio connection may send this: only `connected`/`start`."""
    if isinstance(message, bytes) or len(message) > 16 * 1024:
        return False
    try:
        event = json.loads(message).get("event")
    except (ValueError, AttributeError):
        return False
    return event in ("connected", "start")
