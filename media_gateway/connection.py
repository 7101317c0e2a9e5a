"""One caller WebSocket: authenticate, attach to the call, then pump frames both ways.

The token is checked before any audio is read: at the upgrade for the browser and ACS (the
server does it), or in the ``start`` message's custom parameters for Twilio, which cannot put a
query on its stream URL. Until then only ``connected``/``start`` may arrive, and only for
`SocketLimits.open_timeout_s`; after it, a socket silent for ``idle_timeout_s`` is closed.
Both are kept by one timer per socket that looks again only at the next deadline: a timeout on
every receive (and on every send) cost a timer per frame, ~10% of the gateway's CPU.

A bad frame costs that frame, never the connection's call or anyone else's: it is logged with
its reason and the connection carries on. Outbound audio goes through a small queue so a slow
peer cannot stall playback timing, a barge-in drops queued audio before sending ``clear``, and
a send that waits longer than ``write_timeout_s`` drops the socket (the caller may reconnect).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable, Mapping

import structlog
from aiohttp import WSMsgType, web

from contracts.calls import Channel
from contracts.gateway_events import GatewayEvent, PongEvent
from media_gateway import media_events as events
from media_gateway import serializers as wire
from media_gateway.admission import AdmissionRefused, SocketLimits
from media_gateway.call_registry import CallRegistry
from media_gateway.calls import CallMedia
from media_gateway.control import CallEndedError
from media_gateway.observability import count_bad_frame
from media_gateway.peer import LineBusyError
from media_gateway.tokens import TokenClaims, TokenError

log = structlog.get_logger("baton.gateway")

CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_POLICY = 1008
#: Outbound messages held for a peer that is not reading; beyond this, audio is dropped.
MAX_OUTBOUND = 200
#: Bad frames tolerated on one connection before it is closed as broken.
MAX_BAD_FRAMES = 50
#: The longest platform call id kept (`CallInput.platform_call_id`'s limit).
MAX_PLATFORM_ID_CHARS = 200

#: Checks a token presented after the upgrade; raises TokenError or AdmissionRefused.
Authorize = Callable[[str, str], TokenClaims]


class _StreamOver(Exception):  # noqa: N818 - control flow: this socket is done
    """The socket ended (either side, or a timeout); `code` is what it closed with."""

    def __init__(self, code: int | None, why: str) -> None:
        super().__init__(why)
        self.code = code


def make_serializer(channel: Channel) -> events.MediaSerializer:
    if channel == "twilio":
        return wire.TwilioSerializer()
    if channel == "acs":
        return wire.AcsSerializer()
    return wire.BrowserSerializer()


class Connection:
    """The gateway side of one caller WebSocket (implements `calls.Peer`)."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        channel: Channel,
        registry: CallRegistry,
        authorize: Authorize,
        limits: SocketLimits,
        *,
        claims: TokenClaims | None = None,
        abort: Callable[[], None] = lambda: None,
        platform_call_id: str | None = None,
    ) -> None:
        self.ws = ws
        self.channel = channel
        self.registry = registry
        self.authorize = authorize
        self.limits = limits
        self.claims = claims
        #: The platform's id of the live call (Twilio CallSid, ACS call connection id), which a
        #: transfer to a human needs; ACS gives it at the upgrade, Twilio in its `start`.
        self.platform_call_id = platform_call_id
        self.serializer = make_serializer(channel)
        self.call: CallMedia | None = None
        self.bad_frames = 0
        self._abort = abort
        self._outbound: deque[str | bytes] = deque()
        self._ready = asyncio.Event()
        self._closing = False
        self._hung_up = False
        self._opened_at = self._heard_at = time.monotonic()
        self._timed_out: str | None = None  # why the watchdog closed the socket
        self._watchdog: asyncio.TimerHandle | None = None
        self._closer: asyncio.Task[None] | None = None
        self._sending_since: float | None = None  # when the send under way began
        self._write_stalled = False
        self._write_check: asyncio.TimerHandle | None = None

    @property
    def call_id(self) -> str | None:
        return self.claims.call_id if self.claims is not None else None

    # -- Peer ------------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        return not (self._closing or self.ws.closed)

    def send_audio(self, pcm16_16k: bytes) -> None:
        if len(self._outbound) >= MAX_OUTBOUND:
            log.warning("peer not reading; audio dropped", call_id=self.call_id)
            return
        try:
            self._outbound.extend(self.serializer.audio(pcm16_16k))
        except wire.FrameError as error:
            log.warning("audio not sent", call_id=self.call_id, reason=str(error))
            return
        if self.call is not None:
            self.call.turns.audio_sent()
        self._ready.set()

    @property
    def playback_frame_ms(self) -> int:
        return self.serializer.playback_frame_ms

    @property
    def playback_marker(self) -> Callable[[str], None] | None:
        return self._send_mark if self.serializer.echoes_marks else None

    def _send_mark(self, name: str) -> None:
        if len(self._outbound) >= MAX_OUTBOUND:
            return  # the audio before it was dropped too
        with contextlib.suppress(wire.FrameError):
            self._outbound.extend(self.serializer.mark(name))
        self._ready.set()

    def end_audio(self) -> None:
        """A reply's audio is all sent: out with what the transport's resampler still holds."""
        with contextlib.suppress(wire.FrameError):
            self._outbound.extend(self.serializer.end_audio())
        self._ready.set()

    def clear_audio(self) -> None:
        # Audio not yet on the wire is simply never sent. The page's events still are (a reply
        # that starts as the previous one is cut says so first): on the browser channel, audio
        # alone is binary; other transports' messages are all audio or marks.
        events = [m for m in self._outbound if isinstance(m, str)]
        self._outbound.clear()
        if self.channel == "browser":
            self._outbound.extend(events)
        with contextlib.suppress(wire.FrameError):
            self._outbound.extend(self.serializer.clear())
        self._ready.set()

    def send_event(self, event: GatewayEvent) -> None:
        if self.channel == "browser":
            self._outbound.append(event.model_dump_json())
            self._ready.set()

    async def close(self, reason: str, code: int = CLOSE_GOING_AWAY) -> None:
        if self._closing:
            return
        self._closing = True
        self._ready.set()
        try:
            async with asyncio.timeout(self.limits.write_timeout_s):
                while self._outbound:  # last words first (e.g. "ended")
                    await self._send(self._outbound.popleft())
        except TimeoutError:
            self._drop_stuck_peer()
        except _StreamOver:
            pass
        # The close handshake waits at most the socket's close timeout for the peer's answer.
        await self.ws.close(code=code, message=reason.encode()[:120])

    # -- running ---------------------------------------------------------------------------

    async def run(self) -> None:
        writer = asyncio.create_task(self._write_out())
        self._watch()
        try:
            # Twilio names the CallSid only in `start`: its call is attached from there.
            if self.claims is not None and self.channel != "twilio":
                await self._attach()
            while True:
                await self._handle(await self._receive())
        except _StreamOver as over:
            log.info("connection closed", call_id=self.call_id, code=over.code, why=str(over))
        except CallEndedError as error:
            await self.close(str(error), CLOSE_POLICY)
        except LineBusyError as error:
            log.warning("second connection for a live call refused", call_id=self.call_id)
            await self.close(str(error), CLOSE_POLICY)
        finally:
            self._closing = True
            writer.cancel()
            if self._watchdog is not None:
                self._watchdog.cancel()
            if self.call is not None:
                self.call.disconnect(self, caller_hung_up=self._hung_up)

    def _watch(self) -> None:
        """Close the socket once it has gone unauthenticated past the open timeout or silent
        past the idle timeout; otherwise look again at the next deadline (the socket's only
        timer: frames just note when they came)."""
        self._watchdog = None
        if self._closing:
            return
        if self.claims is None:
            deadline, why = self._opened_at + self.limits.open_timeout_s, "no valid token in time"
        else:
            deadline, why = self._heard_at + self.limits.idle_timeout_s, "idle"
        wait = deadline - time.monotonic()
        if wait > 0:
            self._watchdog = asyncio.get_running_loop().call_later(wait, self._watch)
            return
        # The pending receive returns at once with aiohttp's closing message (see _receive).
        self._timed_out = why
        self._closer = asyncio.create_task(self.close(why, CLOSE_POLICY))

    async def _receive(self) -> str | bytes:
        message = await self.ws.receive()
        if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
            self._heard_at = time.monotonic()
            data: str | bytes = message.data
            return data
        if self._timed_out is not None:
            if self._closer is not None:
                await self._closer  # the socket is this connection's until its close completes
            raise _StreamOver(CLOSE_POLICY, self._timed_out)
        # CLOSE, CLOSED or ERROR (e.g. 1009 for an oversized message, 1002 for a broken frame):
        # the server has already answered and closed the socket.
        raise _StreamOver(self.ws.close_code, str(message.extra or message.type.name))

    async def _send(self, message: str | bytes) -> None:
        """One message out; bounded by whoever sends (the writer's check, close's deadline)."""
        try:
            if isinstance(message, bytes):
                await self.ws.send_bytes(message)
            else:
                await self.ws.send_str(message)
        except ConnectionError as error:
            raise _StreamOver(None, str(error)) from None

    def _drop_stuck_peer(self) -> None:
        log.warning("peer stopped reading; connection dropped", call_id=self.call_id)
        self._abort()

    async def _write_out(self) -> None:
        writer = asyncio.current_task()
        assert writer is not None
        self._check_writes(writer)
        try:
            while not self._closing:
                await self._ready.wait()
                self._ready.clear()
                while self._outbound and not self._closing:
                    self._sending_since = time.monotonic()
                    await self._send(self._outbound.popleft())
                    self._sending_since = None
        except _StreamOver:
            pass
        except asyncio.CancelledError:
            if not self._write_stalled:
                raise
            writer.uncancel()  # cancelled by _check_writes, not by whoever runs the writer
            self._drop_stuck_peer()
        finally:
            self._sending_since = None
            if self._write_check is not None:
                self._write_check.cancel()

    def _check_writes(self, writer: asyncio.Task[None]) -> None:
        """Every half write timeout: a send waiting longer than the timeout on a peer that does
        not read is given up (its task cancelled), so a stuck peer holds nothing up. Sends
        seldom wait at all, so one periodic look beats a timeout around each of them."""
        since = self._sending_since
        if since is not None and time.monotonic() - since >= self.limits.write_timeout_s:
            self._write_stalled = True
            writer.cancel()
            return
        self._write_check = asyncio.get_running_loop().call_later(
            self.limits.write_timeout_s / 2, self._check_writes, writer
        )

    async def _handle(self, message: str | bytes) -> None:
        if self.claims is None and not _may_open_stream(message):
            # Twilio authenticates in `start`; nothing else (audio least of all) is read first.
            await self.close("start with a valid token first", CLOSE_POLICY)
            raise _StreamOver(CLOSE_POLICY, "unauthenticated")
        try:
            events = self.serializer.parse(message)
        except wire.FrameError as error:
            await self._bad_frame(str(error))
            return
        for event in events:
            await self._dispatch(event)

    async def _bad_frame(self, reason: str) -> None:
        """A refused frame costs only itself, until there are too many of them."""
        self.bad_frames += 1
        count_bad_frame(self.channel)
        log.warning("frame refused", call_id=self.call_id, reason=reason)
        if self.bad_frames > MAX_BAD_FRAMES:
            await self.close("too many bad frames", CLOSE_POLICY)
            raise _StreamOver(CLOSE_POLICY, "too many bad frames")

    async def _dispatch(self, event: events.MediaEvent) -> None:
        if isinstance(event, events.Started):
            await self._start(event)
        elif self.call is None:
            log.warning("frame before start ignored", call_id=self.call_id)
        elif isinstance(event, events.Audio):
            self.call.caller_audio(event.pcm16_16k)
            for _ in range(self.call.take_refused_utterances()):
                await self._bad_frame("utterances faster than a person speaks")
        elif isinstance(event, events.Dtmf):
            if not self.call.dtmf(event.digits):
                await self._bad_frame("keypad faster than a person presses")
        elif isinstance(event, events.MarkPlayed) and self.serializer.echoes_marks:
            if not self.call.mark_played(event.name):
                await self._bad_frame(f"{self.channel} mark: no such mark outstanding")
        elif isinstance(event, events.Stopped):
            self._hung_up = True
            await self.close("stream stopped", CLOSE_NORMAL)
            raise _StreamOver(CLOSE_NORMAL, "stream stopped")
        elif isinstance(event, events.Control) and event.kind == "ping":
            self.send_event(PongEvent())

    async def _start(self, started: events.Started) -> None:
        if self.channel == "twilio" and self.call is None:
            self.platform_call_id = usable_platform_id(started.call_id)
        if self.claims is None:
            params = dict(started.custom_parameters)
            try:
                self.claims = self.authorize(params.get("token", ""), params.get("call_id", ""))
            except (TokenError, AdmissionRefused) as error:
                reason = error.reason
                log.warning("token refused", reason=reason, channel=self.channel)
                await self.close(f"token refused: {reason}", CLOSE_POLICY)
                raise _StreamOver(CLOSE_POLICY, reason) from error
        elif started.call_id and started.call_id != self.call_id:
            log.warning("start names another call; ignored", call_id=self.call_id)
        if self.call is None:
            await self._attach()

    async def _attach(self) -> None:
        claims = self.claims
        assert claims is not None
        call = await self.registry.open(
            claims.call_id,
            self.channel,
            dict(claims.caller),
            claims.scenario,
            platform_call_id=self.platform_call_id,
        )
        await call.connect(self)
        self.call = call
        log.info("call attached", call_id=claims.call_id, channel=self.channel)


def usable_platform_id(value: str | None) -> str | None:
    """A platform call id as sent (CallSid, ACS call connection id), or None when absent or
    not a plausible id: it travels into the workflow, so junk is dropped here, not there."""
    if value and len(value) <= MAX_PLATFORM_ID_CHARS and value.isascii() and value.isprintable():
        return value
    return None


def platform_call_id_at_upgrade(channel: Channel, headers: Mapping[str, str]) -> str | None:
    """ACS names the call connection in the upgrade's `x-ms-call-connection-id` header."""
    if channel != "acs":
        return None
    return usable_platform_id(headers.get("x-ms-call-connection-id"))


def _may_open_stream(message: str | bytes) -> bool:
    """Whether an unauthenticated Twilio connection may send this: only `connected`/`start`."""
    if isinstance(message, bytes) or len(message) > 16 * 1024:
        return False
    try:
        event = json.loads(message).get("event")
    except (ValueError, AttributeError):
        return False
    return event in ("connected", "start")
