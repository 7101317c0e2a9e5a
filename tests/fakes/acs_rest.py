"""Azure Communication Services' Call Automation transfer on 127.0.0.1, for transfer tests.

    async with FakeAcsRest(connections=[connection_id]) as acs:
        env = {"ACS_CONNECTION_STRING": acs.connection_string}
        ...
        assert acs.transfers[0].target["phoneNumber"]["value"] == "+15551230000"

It serves `POST /calling/callConnections/{callConnectionId}:transferToParticipant
?api-version=2023-10-15` and checks what the real service checks:

* HMAC auth, recomputed from the request as received: `x-ms-date` (within 15 minutes),
  `x-ms-content-sha256` (the body's SHA-256, base64), and `Authorization: HMAC-SHA256
  SignedHeaders=x-ms-date;host;x-ms-content-sha256&Signature=...` over
  `VERB\\npath?query\\ndate;host;hash` with the resource's access key. Anything off: 401.
* the body: `targetParticipant` is a CommunicationIdentifierModel naming exactly one of
  `phoneNumber` (E.164 `value`), `communicationUser` (`id`) or `microsoftTeamsUser`
  (`userId`), whose `rawId`, when given, matches it; `operationContext` is a string. Else 400.
* the call connection exists (404 otherwise) and the api-version is the one served.

Answers are shaped like ACS's: 202 with `{"operationContext": ...}`, errors as
`{"error": {"code", "message"}}`. A `Repeatability-Request-ID` seen before is answered 202
again without a second transfer. `fail_next` answers the next requests with those statuses
(each after `fail_after` seconds). `on_transfer` is awaited with each accepted transfer before
its 202 is sent (a test holds the request pending, or ends the caller's stream as ACS does).

`transfer_result` (`"accepted"` or `"failed"`) plays the transfer's end: `event_delay` seconds
after a 202 for a body with `operationCallbackUri`, the fake POSTs there a CloudEvents array
with one Microsoft.Communication.CallTransferAccepted or CallTransferFailed event (its
`operationContext` the one sent, `resultInformation` code and subcode); `events_sent` keeps
each delivery and the status it was answered with.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import hashlib
import hmac
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.loopback_app import LoopbackApp

API_VERSION = "2023-10-15"
ACTION = ":transferToParticipant"
_SIGNATURE = re.compile(
    r"^HMAC-SHA256 SignedHeaders=x-ms-date;host;x-ms-content-sha256&Signature=(?P<sig>\S+)$"
)
_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")
_KINDS = {"phoneNumber": "4:", "communicationUser": "", "microsoftTeamsUser": "8:orgid:"}


@dataclass(frozen=True)
class AcsTransfer:
    """One accepted transfer: the call connection, the target identifier, the context."""

    connection_id: str
    target: dict[str, Any]
    operation_context: str
    request_id: str | None
    #: Where the transfer's events go (`operationCallbackUri`), when the request named one.
    callback_uri: str | None = None


def acs_error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


class FakeAcsRest(LoopbackApp):
    """The fake service (see the module docstring); use as `async with`."""

    def __init__(
        self,
        *,
        connections: Iterable[str] = (),
        access_key: bytes = b"fake-acs-access-key-0123456789abcdef",
        fail_next: Iterable[int] = (),
        fail_after: float = 0.0,
        transfer_result: str | None = None,
        event_delay: float = 0.5,
        lifetime: float = 120.0,
        on_transfer: Callable[[AcsTransfer], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(lifetime=lifetime)
        self.connections = set(connections)
        self.on_transfer = on_transfer
        self.access_key = access_key
        self.fail_next = list(fail_next)
        #: Seconds a scripted failure takes to arrive (a struggling service answers slowly).
        self.fail_after = fail_after
        self.transfers: list[AcsTransfer] = []
        #: Every request seen (refused ones too): (call connection id, status answered).
        self.requests: list[tuple[str, int]] = []
        #: `Repeatability-Request-ID` and `-First-Sent` of every request that reached it.
        self.request_ids: list[str | None] = []
        self.first_sent: list[str | None] = []
        self.transfer_result = transfer_result
        self.event_delay = event_delay
        #: Each events delivery: (URL, the events, the status answered).
        self.events_sent: list[tuple[str, list[dict[str, Any]], int]] = []
        self._reports: set[asyncio.Task[None]] = set()

    @property
    def connection_string(self) -> str:
        key = base64.b64encode(self.access_key).decode()
        return f"endpoint={self.base_url}/;accesskey={key}"

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/calling/callConnections/{action}", self._transfer)

    async def _transfer(self, request: web.Request) -> web.Response:
        connection_id = request.match_info["action"].removesuffix(ACTION)
        response = await self._answer(request, connection_id)
        self.requests.append((connection_id, response.status))
        return response

    async def _answer(self, request: web.Request, connection_id: str) -> web.Response:
        body = await request.read()
        refusal = self._check_auth(request, body)
        if refusal is not None:
            return acs_error(401, "Unauthorized", f"Denied by the resource provider: {refusal}.")
        if not request.match_info["action"].endswith(ACTION):
            return acs_error(404, "NotFound", "No such action.")
        if request.query.get("api-version") != API_VERSION:
            return acs_error(400, "InvalidApiVersion", "The api-version is not supported.")
        request_id = request.headers.get("Repeatability-Request-ID")
        self.request_ids.append(request_id)
        self.first_sent.append(request.headers.get("Repeatability-First-Sent"))
        if self.fail_next:
            await asyncio.sleep(self.fail_after)
            return acs_error(self.fail_next.pop(0), "ServiceUnavailable", "Try again later.")
        if connection_id not in self.connections:
            return acs_error(404, "NotFound", "Call connection not found.")
        try:
            payload = json.loads(body)
            target = _checked_target(payload["targetParticipant"])
            context = payload.get("operationContext", "")
            if not isinstance(context, str):
                raise ValueError("operationContext must be a string")
        except (ValueError, KeyError, TypeError) as error:
            return acs_error(400, "BadRequest", f"Invalid request: {error}")
        repeated = request_id is not None and any(
            t.request_id == request_id for t in self.transfers
        )
        if not repeated:
            callback = payload.get("operationCallbackUri")
            if callback is not None and not isinstance(callback, str):
                return acs_error(400, "BadRequest", "operationCallbackUri must be a string")
            transfer = AcsTransfer(connection_id, target, context, request_id, callback)
            self.transfers.append(transfer)
            if self.on_transfer is not None:
                await self.on_transfer(transfer)
            if self.transfer_result is not None and isinstance(callback, str):
                report = asyncio.create_task(self._report(callback, connection_id, context))
                self._reports.add(report)
                report.add_done_callback(self._reports.discard)
        return web.json_response({"operationContext": context}, status=202)

    async def _report(self, url: str, connection_id: str, context: str) -> None:
        await asyncio.sleep(self.event_delay)
        accepted = self.transfer_result == "accepted"
        result = (
            {"code": 202, "subCode": 0, "message": "The transfer completed successfully."}
            if accepted
            else {"code": 500, "subCode": 7000, "message": "The transfer target did not answer."}
        )
        event = {
            "id": str(uuid.uuid4()),
            "source": f"calling/callConnections/{connection_id}",
            "type": "Microsoft.Communication."
            + ("CallTransferAccepted" if accepted else "CallTransferFailed"),
            "data": {
                "callConnectionId": connection_id,
                "serverCallId": "fake-server-call",
                "correlationId": str(uuid.uuid4()),
                "operationContext": context,
                "resultInformation": result,
            },
            "time": email.utils.formatdate(usegmt=True),
            "specversion": "1.0",
            "datacontenttype": "application/json",
            "subject": f"calling/callConnections/{connection_id}",
        }
        await self.send_events(url, [event])

    async def send_events(self, url: str, events: list[dict[str, Any]]) -> int:
        """POST a CloudEvents array to `url` as Call Automation does; the answer's status."""
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
            session.post(url, json=events) as response,
        ):
            self.events_sent.append((url, events, response.status))
            return response.status

    async def stop(self) -> None:
        for report in list(self._reports):
            report.cancel()
        await super().stop()

    def _check_auth(self, request: web.Request, body: bytes) -> str | None:
        """Why the request's HMAC auth fails, or None when it holds."""
        date = request.headers.get("x-ms-date", "")
        try:
            sent = email.utils.parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError):
            return "no valid x-ms-date"
        if abs(time.time() - sent) > 15 * 60:
            return "x-ms-date too far from now"
        body_hash = base64.b64encode(hashlib.sha256(body).digest()).decode()
        if request.headers.get("x-ms-content-sha256") != body_hash:
            return "x-ms-content-sha256 is not the body's hash"
        match = _SIGNATURE.match(request.headers.get("Authorization", ""))
        if match is None:
            return "no HMAC-SHA256 authorization"
        text = f"{request.method}\n{request.raw_path}\n{date};{request.host};{body_hash}"
        digest = hmac.new(self.access_key, text.encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(base64.b64encode(digest).decode(), match["sig"]):
            return "signature mismatch"
        return None


def _checked_target(model: Any) -> dict[str, Any]:
    """The CommunicationIdentifierModel if valid, else ValueError saying what is wrong."""
    if not isinstance(model, dict):
        raise ValueError("targetParticipant must be an object")
    kinds = [kind for kind in _KINDS if kind in model]
    if len(kinds) != 1:
        raise ValueError("targetParticipant must name exactly one identifier")
    kind = kinds[0]
    inner = model[kind]
    if kind == "phoneNumber":
        value = inner.get("value", "")
        if not _E164.match(value):
            raise ValueError("phoneNumber.value must be E.164")
    else:
        value = inner.get("id" if kind == "communicationUser" else "userId", "")
        if not value:
            raise ValueError(f"{kind} needs its id")
    raw_id = model.get("rawId")
    if raw_id is not None and raw_id != _KINDS[kind] + value:
        raise ValueError("rawId does not match the identifier")
    if model.get("kind", kind) != kind:
        raise ValueError("kind does not match the identifier")
    return dict(model)
