"""A contact center's ticket webhook on loopback, written from the README's recipe only.

It checks each POST the way a receiver should: the HMAC-SHA256 of `{timestamp}.{body}` under
the shared secret (compared in constant time), a timestamp within five minutes, then keeps one
ticket per `Idempotency-Key`. `answers` are statuses to give before accepting (503s for a
receiver that is down); a bad signature gets 401.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.loopback_app import LoopbackApp

REPLAY_WINDOW_SECONDS = 300


@dataclass
class Attempt:
    idempotency_key: str
    signature_ok: bool
    answered: int


class TicketWebhookReceiver(LoopbackApp):
    def __init__(self, secret: str, *, answers: list[int] | None = None) -> None:
        super().__init__(lifetime=120.0)
        self.secret = secret
        self.answers = list(answers or [])
        #: When set, every POST gets this status (a receiver that is down, or refusing).
        self.always: int | None = None
        self.attempts: list[Attempt] = []
        self.tickets: dict[str, dict[str, Any]] = {}

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/tickets", self._receive)

    @property
    def url(self) -> str:
        return f"{self.base_url}/tickets"

    def signature_valid(self, timestamp: str, body: bytes, header: str) -> bool:
        if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > REPLAY_WINDOW_SECONDS:
            return False
        expected = hmac.new(self.secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
        return hmac.compare_digest(f"v1={expected.hexdigest()}", header)

    async def _receive(self, request: web.Request) -> web.Response:
        body = await request.read()
        key = request.headers.get("Idempotency-Key", "")
        valid = self.signature_valid(
            request.headers.get("X-Baton-Timestamp", ""),
            body,
            request.headers.get("X-Baton-Signature", ""),
        )
        if not valid:
            status = 401
        elif self.always is not None:
            status = self.always
        elif self.answers:
            status = self.answers.pop(0)
        else:
            status = 200
            self.tickets.setdefault(key, json.loads(body))
        self.attempts.append(Attempt(key, valid, status))
        return web.Response(status=status, headers={"Retry-After": "1"} if status == 503 else {})
