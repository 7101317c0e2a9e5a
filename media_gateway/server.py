"""`baton gateway`: the media gateway's listeners, HTTP/WebSocket (aiohttp) for callers and gRPC
for speech workers.

Routes on the HTTP port:
* ``GET /media/browser|twilio|acs``: the caller's WebSocket (a media token, see tokens.py);
* ``GET /healthz``;
* ``POST /platform/twilio/...`` and ``/platform/acs/events/...``: Twilio's and ACS's reports on
  a transfer to a person, each signed by the platform (media_gateway.platform_callbacks);
* with the softphone on (``baton dev``, or ``baton gateway --softphone``): ``GET /`` and
  ``/static/...``, the web softphone, and ``POST /api/calls``, which mints a call id and token.
  It needs the operator key (``Authorization: Bearer``) when one is set, and one must be set to
  serve it off loopback. In production the contact-center platform mints tokens itself.
  Beside it, ``GET /console``: the human-agent console, where people take browser calls
  transferred to them (media_gateway.console_routes), behind the same operator key.
  ``POST /api/calls/{call_id}/supervise``: a supervisor's transfer, route change or hang-up
  (media_gateway.supervisor_api), behind the same key.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import ssl
from dataclasses import dataclass
from importlib import resources

import grpc
import structlog
from aiohttp import web
from temporalio.client import Client

from contracts.calls import Channel
from media_gateway.admission import Admission, AdmissionRefused, SocketLimits, TokenLedger
from media_gateway.call_registry import CallRegistry, new_call_id
from media_gateway.connection import Authorize, Connection, platform_call_id_at_upgrade
from media_gateway.console_desk import ConsoleDesk
from media_gateway.console_routes import ConsoleRoutes, operator_refusal
from media_gateway.drain import HANDBACK_SECONDS, hand_back
from media_gateway.gateway_config import GatewayConfig
from media_gateway.media_plane import start_media_plane
from media_gateway.observability import watch_gateway
from media_gateway.platform_callbacks import PlatformCallbacks
from media_gateway.supervisor_api import SupervisorApi
from media_gateway.tokens import PROFILE_KEYS, TokenClaims, TokenError, issue_token, verify_token
from media_gateway.unserved import NoticeVoice

log = structlog.get_logger("baton.gateway")

CHANNELS: dict[str, Channel] = {"browser": "browser", "twilio": "twilio", "acs": "acs"}
STATIC_FILES = {
    "/": ("softphone.html", "text/html; charset=utf-8"),
    "/static/softphone.js": ("softphone.js", "text/javascript; charset=utf-8"),
    "/static/softphone.css": ("softphone.css", "text/css; charset=utf-8"),
    "/static/audio.js": ("audio.js", "text/javascript; charset=utf-8"),
    "/console": ("console.html", "text/html; charset=utf-8"),
    "/static/console.js": ("console.js", "text/javascript; charset=utf-8"),
    "/static/console.css": ("console.css", "text/css; charset=utf-8"),
}
#: Requests other than WebSockets are small: a softphone call request is a few hundred bytes.
MAX_REQUEST_BYTES = 16 * 1024
#: An HTTP connection with no request in flight is closed after this many seconds.
HTTP_IDLE_SECONDS = 15.0
#: Why a draining gateway refuses a call it does not hold (HTTP 503).
DRAINING = "this gateway is draining: dial again to reach another"


@dataclass(frozen=True)
class SoftphoneAccess:
    """Whether `/api/calls` and the page are served, and the operator key `/api/calls` needs."""

    enabled: bool = False
    operator_key: str | None = None


@dataclass
class Gateway:
    """A running gateway: stop it with `close()`."""

    registry: CallRegistry
    front: CallerFront
    runner: web.AppRunner
    media_server: grpc.aio.Server
    http_port: int

    def is_ready(self) -> bool:
        """Taking new calls (an ops server's `/readyz`); false from the start of a drain."""
        return self.front.accepting

    async def drain(self, grace_s: float) -> None:
        """Take no new calls; keep those held until they end or `grace_s` passes; hand the
        rest back (media_gateway.drain); then close."""
        self.front.accepting = False
        log.info("gateway draining", calls=len(self.registry.calls), grace_s=grace_s)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                while self.registry.calls:
                    await asyncio.sleep(0.1)
        if self.front.console is not None:
            # A call on hold or with a person is handed back like any other: the console here
            # goes with this process (its workflow waits out the hold timeout, or has ended).
            await self.front.console.close()
        await asyncio.gather(
            *(hand_back(call) for call in list(self.registry.calls.values())),
            return_exceptions=True,
        )
        # Calls that ended during the drain: their hang-up reaches the workflow before we go.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HANDBACK_SECONDS):
                await asyncio.gather(*(call.submitter for call in list(self.registry.ending)))
        await self.close()

    async def close(self) -> None:
        # Every close is bounded (write timeout, close handshake timeout): one stuck peer
        # cannot hold the shutdown.
        await asyncio.gather(
            *(c.close("gateway shutting down") for c in list(self.front.connections)),
            return_exceptions=True,
        )
        if self.front.console is not None:
            await self.front.console.close()
        for call in list(self.registry.calls.values()):
            await call.aclose()
        await self.media_server.stop(grace=1.0)
        await self.runner.cleanup()
        await self.registry.close()


def _error(status: int, message: str) -> web.Response:
    response = web.json_response({"error": message}, status=status)
    # A refused client does not get to keep an idle keep-alive socket (and its descriptor).
    response.force_close()
    return response


class CallerFront:
    """The HTTP routes: caller sockets with their admission, the softphone, health."""

    def __init__(
        self,
        registry: CallRegistry,
        secret: bytes,
        limits: SocketLimits,
        softphone: SoftphoneAccess,
        console: ConsoleDesk | None = None,
    ) -> None:
        self.registry = registry
        #: The human-agent console's queue (served with the softphone only).
        self.console = console
        self.secret = secret
        self.limits = limits
        self.softphone = softphone
        self.admission = Admission(limits)
        self.ledger = TokenLedger()
        self.connections: set[Connection] = set()
        #: False while draining: only calls already held here are let in.
        self.accepting = True

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_get("/media/{channel}", self.media)
        app.router.add_get("/healthz", self.health)
        # Twilio and ACS report transfers where they reach the media routes (each request
        # authenticates itself, so no operator key: see media_gateway.platform_callbacks).
        PlatformCallbacks(self.registry.client).add_to(app)
        if self.softphone.enabled:
            app.router.add_post("/api/calls", self.issue_call)
            SupervisorApi(self.registry.client, self.softphone.operator_key).add_to(app)
            for path in STATIC_FILES:
                app.router.add_get(path, self.static)
            if self.console is not None:
                ConsoleRoutes(self.console, self.softphone.operator_key).add_to(app)
        return app

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"ok": True, "accepting": self.accepting, "calls": len(self.registry.calls)}
        )

    async def static(self, request: web.Request) -> web.Response:
        name, content_type = STATIC_FILES[request.path]
        body = resources.files("media_gateway.static").joinpath(name).read_bytes()
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def issue_call(self, request: web.Request) -> web.Response:
        if not self.accepting:
            return _error(503, DRAINING)
        refused = operator_refusal(request, self.softphone.operator_key)
        if refused is not None:
            return refused
        try:
            body = await request.json() if request.can_read_body else {}
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        scenario = body.get("scenario") or self.registry.config.scenario
        caller = body.get("caller") or {}
        if not isinstance(scenario, str):
            return _error(400, "scenario must be a string")
        if not isinstance(caller, dict) or not set(caller) <= PROFILE_KEYS:
            return _error(400, f"caller may hold only {sorted(PROFILE_KEYS)}")
        call_id = new_call_id()
        try:
            token = issue_token(self.secret, call_id, scenario=scenario, caller=caller)
        except (TokenError, ValueError) as error:
            return _error(400, str(error))
        return web.json_response({"call_id": call_id, "token": token, "scenario": scenario})

    def admit_token(self, claims: TokenClaims) -> None:
        """One call per token, one live connection per call (raises `AdmissionRefused`)."""
        call = self.registry.get(claims.call_id)
        open_here = call is not None and not call.ended
        if not self.accepting and not (open_here and call is not None and not call.leaving):
            raise AdmissionRefused(503, DRAINING)
        if call is not None and open_here and call.peer is not None and call.peer.live:
            raise AdmissionRefused(409, "this call is already connected")
        self.ledger.use(claims, call_open_here=open_here)

    async def media(self, request: web.Request) -> web.StreamResponse:
        channel = CHANNELS.get(request.match_info["channel"])
        if channel is None:
            return _error(404, "no such media channel")
        address = request.remote or "?"
        token = request.query.get("token")
        claims: TokenClaims | None = None
        try:
            if channel != "twilio" or token is not None:
                # Before the upgrade: a refused caller never gets to send a byte of audio.
                claims = verify_token(self.secret, token or "", request.query.get("call_id"))
            self.admission.admit(address, authenticated=claims is not None)
        except TokenError as error:
            log.warning("token refused", reason=error.reason, channel=channel)
            return _error(401 if error.reason == "missing" else 403, str(error))
        except AdmissionRefused as refused:
            log.warning("connection refused", reason=refused.reason, channel=channel)
            return _error(refused.status, refused.reason)
        pending = claims is None
        try:
            if claims is not None:
                self.admit_token(claims)
            ws = web.WebSocketResponse(
                heartbeat=self.limits.heartbeat_s,
                max_msg_size=self.limits.max_message_bytes,
                timeout=self.limits.write_timeout_s,  # the close handshake's wait
                # Browsers offer permessage-deflate; deflating PCM costs CPU and saves nothing.
                compress=False,
            )
            await ws.prepare(request)
            transport = request.transport
            connection = Connection(
                ws,
                channel,
                self.registry,
                self._authorize_later(address),
                self.limits,
                claims=claims,
                abort=transport.abort if transport is not None else lambda: None,
                platform_call_id=platform_call_id_at_upgrade(channel, request.headers),
            )
            self.connections.add(connection)
            try:
                await connection.run()
            finally:
                self.connections.discard(connection)
                pending = connection.claims is None
        except AdmissionRefused as refused:
            log.warning("connection refused", reason=refused.reason, channel=channel)
            return _error(refused.status, refused.reason)
        finally:
            self.admission.release(address, pending=pending)
        return ws

    def _authorize_later(self, address: str) -> Authorize:
        """For a Twilio stream, whose token arrives in its `start` message."""

        def authorize(token: str, call_id: str) -> TokenClaims:
            claims = verify_token(self.secret, token, call_id or None)
            self.admit_token(claims)
            self.admission.authenticated(address)
            return claims

        return authorize


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def check_softphone_access(host: str, softphone: SoftphoneAccess) -> None:
    """Refuse (ValueError) to serve the token desk off loopback without an operator key."""
    if softphone.enabled and softphone.operator_key is None and not _is_loopback(host):
        raise ValueError(
            f"the softphone's /api/calls on {host} would mint tokens for anyone: "
            "set BATON_OPERATOR_KEY, or listen on 127.0.0.1"
        )


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A server TLS context (TLS 1.2 or newer) from PEM files, for `wss://` callers."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


async def start_gateway(
    client: Client,
    config: GatewayConfig,
    secret: bytes,
    *,
    host: str = "127.0.0.1",
    http_port: int = 8765,
    media_listen: str | None = None,
    softphone: SoftphoneAccess | None = None,
    limits: SocketLimits | None = None,
    tls: ssl.SSLContext | None = None,
    notice_voice: NoticeVoice | None = None,
) -> Gateway:
    """`notice_voice`: what says the service notices (media_gateway.unserved), rendered by
    this process once it listens: it cannot count on a speech worker when it needs them."""
    softphone = softphone or SoftphoneAccess()
    check_softphone_access(host, softphone)
    registry = CallRegistry(client, config)
    console = ConsoleDesk() if softphone.enabled else None
    media_server, media_port = await start_media_plane(
        registry, media_listen or config.media_address, desk=console
    )
    if config.media_address.endswith(":0"):
        # Port 0 picks a free port; calls must carry the real one.
        host_part = config.media_address.rsplit(":", 1)[0]
        registry.config = dataclasses.replace(config, media_address=f"{host_part}:{media_port}")
    front = CallerFront(registry, secret, limits or SocketLimits(), softphone, console)
    watch_gateway(
        lambda: [call.control.call.channel for call in registry.calls.values()],
        lambda: [connection.channel for connection in front.connections],
    )
    runner = web.AppRunner(
        front.app(), access_log=None, keepalive_timeout=HTTP_IDLE_SECONDS, shutdown_timeout=2.0
    )
    await runner.setup()
    site = web.TCPSite(runner, host, http_port, ssl_context=tls, backlog=1024)
    try:
        await site.start()
    except OSError:
        with contextlib.suppress(Exception):
            await media_server.stop(grace=None)
        await runner.cleanup()
        raise
    if notice_voice is not None:
        registry.render_notices(notice_voice)
    port = int(runner.addresses[0][1])
    scheme = "https" if tls is not None else "http"
    log.info(
        "gateway listening",
        http=f"{scheme}://{host}:{port}",
        media=registry.config.media_address,
        event_loop=type(asyncio.get_running_loop()).__module__.split(".")[0],
    )
    return Gateway(registry, front, runner, media_server, port)
