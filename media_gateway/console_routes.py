"""The human-agent console's HTTP routes, served beside the softphone (``baton dev``, or
``baton gateway --softphone``):

* ``GET /api/console/calls``: the calls waiting for a person, each with its ticket;
* ``POST /api/console/calls/{call_id}/take`` (``{"operator": "agent-7"}``): claim a call; the
  answer is a single-use token that opens its audio line within `CLAIM_SECONDS`; a call another
  person claimed is refused (409);
* ``GET /console/line?take=TOKEN``: the WebSocket bridging the person's microphone and the
  caller, PCM16 mono 16 kHz binary frames both ways, like the softphone's media socket.

The API needs the operator key exactly as ``/api/calls`` does (``Authorization: Bearer``, when
one is set). A WebSocket cannot carry that header from a browser, so the line is opened with the
claim's token instead, as the softphone's media socket is opened with its call token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import re
import time
from collections import deque

import structlog
from aiohttp import WSMsgType, web
from temporalio.service import RPCError

from media_gateway.console_desk import MAX_QUEUED_FRAMES, ConsoleDesk, ConsoleRefused, WaitingCall

log = structlog.get_logger("baton.gateway")

#: Who took a call, as the console's person names themself: an id, not a caller's data.
OPERATOR_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
#: The largest audio frame a console may send: 100 ms of PCM16 at 16 kHz.
MAX_FRAME_BYTES = 3200
#: Ticket data is caller data: no cache keeps a copy.
NO_STORE = {"Cache-Control": "no-store"}


def refusal(status: int, message: str) -> web.Response:
    response = web.json_response({"error": message}, status=status, headers=NO_STORE)
    response.force_close()
    return response


def operator_refusal(request: web.Request, operator_key: str | None) -> web.Response | None:
    """A 401 unless the request carries the operator key (always allowed without one set)."""
    if operator_key is None:
        return None
    presented = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if hmac.compare_digest(presented.encode(), operator_key.encode()):
        return None
    return refusal(401, "an operator key is required (Authorization: Bearer KEY)")


def describe(entry: WaitingCall, now: float) -> dict[str, object]:
    return {
        "call_id": entry.call_id,
        "waiting_s": round(now - entry.since, 1),
        "state": "taken" if entry.claimed(now) else "waiting",
        "taken_by": entry.taken_by if entry.claimed(now) else "",
        "target": entry.target.model_dump(mode="json"),
        "ticket": entry.ticket.model_dump(mode="json"),
    }


class ConsoleSocket:
    """The person's audio line (`console_desk.ConsoleLine`) over an aiohttp WebSocket: caller
    audio goes out through a bounded queue, so a console that stops reading costs only audio."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self._out: deque[bytes | str] = deque()
        self._ready = asyncio.Event()
        self._closing = False

    def send_audio(self, pcm16_16k: bytes) -> None:
        if len(self._out) < MAX_QUEUED_FRAMES:
            self._out.append(pcm16_16k)
            self._ready.set()

    def send_json(self, message: dict[str, str]) -> None:
        self._out.append(json.dumps(message))
        self._ready.set()

    async def write_out(self) -> None:
        with contextlib.suppress(ConnectionError):
            while not self._closing:
                await self._ready.wait()
                self._ready.clear()
                while self._out and not self._closing:
                    message = self._out.popleft()
                    if isinstance(message, bytes):
                        await self.ws.send_bytes(message)
                    else:
                        await self.ws.send_str(message)

    async def close(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        self._ready.set()
        with contextlib.suppress(ConnectionError):
            await self.ws.send_str(json.dumps({"type": "ended", "reason": reason}))
        await self.ws.close(code=1000, message=reason.encode()[:120])


class ConsoleRoutes:
    def __init__(self, desk: ConsoleDesk, operator_key: str | None) -> None:
        self.desk = desk
        self.operator_key = operator_key

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/console/calls", self.list_calls)
        app.router.add_post("/api/console/calls/{call_id}/take", self.take)
        app.router.add_get("/console/line", self.line)

    async def list_calls(self, request: web.Request) -> web.Response:
        refused = operator_refusal(request, self.operator_key)
        if refused is not None:
            return refused
        now = time.monotonic()
        calls = [describe(entry, now) for entry in self.desk.waiting()]
        return web.json_response({"calls": calls}, headers=NO_STORE)

    async def take(self, request: web.Request) -> web.Response:
        refused = operator_refusal(request, self.operator_key)
        if refused is not None:
            return refused
        try:
            body = await request.json()
        except ValueError:
            return refusal(400, "the body is not JSON")
        operator = body.get("operator") if isinstance(body, dict) else None
        if not isinstance(operator, str) or not OPERATOR_ID.match(operator):
            return refusal(400, "operator must be an id of 1-64 letters, digits, . _ @ or -")
        call_id = request.match_info["call_id"]
        try:
            token = self.desk.claim(call_id, operator)
        except ConsoleRefused as error:
            log.info("console take refused", call_id=call_id, why=error.reason)
            return refusal(error.status, error.reason)
        return web.json_response({"call_id": call_id, "take": token}, headers=NO_STORE)

    async def line(self, request: web.Request) -> web.StreamResponse:
        token = request.query.get("take", "")
        ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=64 * 1024, compress=False)
        socket = ConsoleSocket(ws)
        try:
            # Refused before the upgrade: a stranger never gets to send a byte of audio.
            if not token:
                raise ConsoleRefused(401, "open the line with the token a take returned")
            self.desk.claimed_by(token)
            await ws.prepare(request)
            entry = await self.desk.connect(token, socket)
        except ConsoleRefused as error:
            if not ws.prepared:
                return refusal(error.status, error.reason)
            await socket.close(error.reason)
            return ws
        except RPCError as error:  # Temporal did not take the news: the caller stays on hold
            log.warning("console take not signalled", error=str(error))
            await socket.close("the call could not be reached: take it again")
            return ws
        writer = asyncio.create_task(socket.write_out())
        socket.send_json({"type": "bridged", "call_id": entry.call_id})
        why = "the person hung up"
        try:
            async for message in ws:
                if message.type == WSMsgType.BINARY:
                    pcm: bytes = message.data
                    if len(pcm) % 2 == 0 and len(pcm) <= MAX_FRAME_BYTES:
                        self.desk.person_audio(entry, pcm)
                elif message.type == WSMsgType.TEXT and '"hangup"' in message.data:
                    break
        finally:
            writer.cancel()
            await self.desk.hang_up(entry, why)
            await socket.close(why)
        return ws
