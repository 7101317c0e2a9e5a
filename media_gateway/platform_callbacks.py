"""Twilio's and ACS's reports on a transfer to a person, turned into the call's
`transfer_settled` signal (URLs and their authentication: runtime.platform_callbacks).

* `POST /platform/twilio/answered/{call_id}`: the dialled desk's `answered` status callback;
  the person picked up, so the transfer is taken.
* `POST /platform/twilio/dial/{call_id}`: the `<Dial action>`, requested when the dialled leg
  ends. `completed`/`answered` is taken (a lost `answered` callback is made good here);
  `no-answer`, `busy`, `failed` or `canceled` is not, and the TwiML answer tells the caller
  the truth and hangs up, since Twilio's stream to Baton ended with the `<Dial>`.
* `POST /platform/acs/events/{call_id}?token=...`: Call Automation's CloudEvents (a JSON
  array): CallTransferAccepted is taken, CallTransferFailed is not (its result code in the
  detail, never caller data).

Served on the gateway's public port always, not only with the operator API: the platforms
reach the gateway where they reach `/media/twilio` and `/media/acs`, and each request proves
itself (Twilio's signature with the auth token, the ACS URL's per-call token), so nothing here
needs the operator key. A refused request is answered 403 and changes nothing.
"""

from __future__ import annotations

import hmac
import xml.etree.ElementTree as ET
from typing import Any

import structlog
from aiohttp import web
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from contracts.temporal import workflow_id_for
from contracts.transfer import NOBODY_FREE, SIGNAL_TRANSFER_SETTLED, TransferSettled
from runtime.platform_callbacks import (
    ACS_EVENTS_PATH,
    TWILIO_ANSWERED_PATH,
    TWILIO_DIAL_PATH,
    CallbackConfigError,
    acs_access_key,
    acs_event_token,
    public_base_url,
    twilio_signature,
)
from runtime.settings import settings

log = structlog.get_logger("baton.gateway")

TAKEN_DIAL_STATUSES = frozenset({"completed", "answered"})
NOT_TAKEN_DIAL_STATUSES = frozenset({"no-answer", "busy", "failed", "canceled"})
ACS_ACCEPTED = "Microsoft.Communication.CallTransferAccepted"
ACS_FAILED = "Microsoft.Communication.CallTransferFailed"
MAX_CALL_ID_CHARS = 200
TWIML = "application/xml"


def _twiml(*, apologise: bool) -> web.Response:
    response = ET.Element("Response")
    if apologise:
        ET.SubElement(response, "Say").text = NOBODY_FREE
    ET.SubElement(response, "Hangup")
    text = ET.tostring(response, encoding="unicode", xml_declaration=False)
    return web.Response(text=text, content_type=TWIML)


def _forbidden(platform: str, why: str) -> web.Response:
    log.warning("platform callback refused", platform=platform, reason=why)
    return web.Response(status=403, text=f"forbidden: {why}")


class PlatformCallbacks:
    """The routes, bound to the gateway's Temporal client."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def add_to(self, app: web.Application) -> None:
        say_what_is_checked()
        app.router.add_post(TWILIO_ANSWERED_PATH, self.twilio_answered)
        app.router.add_post(TWILIO_DIAL_PATH, self.twilio_dial)
        app.router.add_post(ACS_EVENTS_PATH, self.acs_events)

    async def twilio_answered(self, request: web.Request) -> web.Response:
        params = await self._twilio_params(request)
        if isinstance(params, web.Response):
            return params
        if params.get("CallStatus") == "in-progress":
            settled = TransferSettled(taken=True, taken_by="twilio", detail="the desk answered")
            if not await self._settle(request.match_info["call_id"], settled, "twilio"):
                return web.Response(status=503)
        return web.Response(status=204)

    async def twilio_dial(self, request: web.Request) -> web.Response:
        params = await self._twilio_params(request)
        if isinstance(params, web.Response):
            return params
        settled = dial_settled(params)
        if settled is None:
            return web.Response(status=400, text="unknown DialCallStatus")
        await self._settle(request.match_info["call_id"], settled, "twilio")
        return _twiml(apologise=not settled.taken)

    async def acs_events(self, request: web.Request) -> web.Response:
        call_id = request.match_info["call_id"]
        key = acs_access_key(settings().acs_connection_string)
        if key is None:
            return _forbidden("acs", "ACS_CONNECTION_STRING is not set on this gateway")
        token = request.query.get("token", "")
        if len(call_id) > MAX_CALL_ID_CHARS or not hmac.compare_digest(
            token.encode(), acs_event_token(key, call_id).encode()
        ):
            return _forbidden("acs", "bad token")
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="the body is not JSON")
        events = body if isinstance(body, list) else [body]
        for event in events:
            settled = _acs_settled(event)
            if settled is not None and not await self._settle(call_id, settled, "acs"):
                return web.Response(status=503)  # ACS delivers the event again
        return web.Response(status=200)

    async def _twilio_params(self, request: web.Request) -> dict[str, str] | web.Response:
        """The form parameters of a request Twilio signed, or the refusal to answer."""
        if len(request.match_info["call_id"]) > MAX_CALL_ID_CHARS:
            return _forbidden("twilio", "call id too long")
        auth_token = settings().twilio_auth_token
        try:
            base = public_base_url()
        except CallbackConfigError:
            base = None
        if auth_token is None or base is None:
            return _forbidden("twilio", "TWILIO_AUTH_TOKEN or BATON_PUBLIC_URL is not set")
        form = await request.post()
        params = {name: value for name, value in form.items() if isinstance(value, str)}
        # Twilio signs the URL it requested: the public one, which a proxy may have rewritten.
        expected = twilio_signature(auth_token, base + request.path_qs, params)
        sent = request.headers.get("X-Twilio-Signature", "")
        if not hmac.compare_digest(sent.encode(), expected.encode()):
            return _forbidden("twilio", "bad X-Twilio-Signature")
        return params

    async def _settle(self, call_id: str, settled: TransferSettled, platform: str) -> bool:
        """Signal the call; a call that has ended (or never was) needs nothing. False when
        Temporal could not be told (the platform may send the report again)."""
        handle = self.client.get_workflow_handle(workflow_id_for(call_id))
        try:
            await handle.signal(SIGNAL_TRANSFER_SETTLED, settled)
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                log.info("transfer outcome for a call that has ended", platform=platform)
                return True
            log.warning("transfer outcome not delivered", platform=platform, error=error.message)
            return False
        log.info("transfer settled by the platform", platform=platform, taken=settled.taken)
        return True


def say_what_is_checked() -> None:
    """Log at start which platforms' reports this gateway can check: a gateway without the
    secret refuses every report, and its calls then wait out the hold timeout."""
    try:
        base = public_base_url()
    except CallbackConfigError as error:
        log.error("platform transfer reports refused", reason=str(error))
        return
    if base is None:
        return  # the adapters ask for no reports either
    config = settings()
    checked = [
        name
        for name, secret in (
            ("twilio", config.twilio_auth_token),
            ("acs", acs_access_key(config.acs_connection_string)),
        )
        if secret
    ]
    if checked:
        log.info("platform transfer reports served", platforms=",".join(checked))
    else:
        log.warning(
            "platform transfer reports refused: set TWILIO_AUTH_TOKEN or ACS_CONNECTION_STRING "
            "on the gateway to check them"
        )


def dial_settled(params: dict[str, str]) -> TransferSettled | None:
    """The outcome a `<Dial action>` request reports, or None for an unknown status."""
    status = params.get("DialCallStatus", "")
    if status in TAKEN_DIAL_STATUSES:
        return TransferSettled(taken=True, taken_by="twilio", detail=f"dial {status}")
    if status not in NOT_TAKEN_DIAL_STATUSES:
        return None
    detail = f"twilio dial {status}"
    if params.get("CallStatus") == "completed":
        # The caller's own leg has ended: they hung up while the desk rang. Twilio ignores the
        # TwiML then; the ticket stays for the call back all the same.
        detail += "; the caller hung up"
    return TransferSettled(taken=False, detail=detail)


def _acs_settled(event: Any) -> TransferSettled | None:
    """The outcome one CloudEvent reports, or None for an event about something else."""
    if not isinstance(event, dict):
        return None
    kind = event.get("type")
    if kind == ACS_ACCEPTED:
        return TransferSettled(taken=True, taken_by="acs", detail="acs transfer accepted")
    if kind != ACS_FAILED:
        return None
    data = event.get("data")
    result = data.get("resultInformation") if isinstance(data, dict) else None
    detail = "acs transfer failed"
    if isinstance(result, dict):
        # Codes only: ACS's message text could quote the target.
        detail += f" (code {result.get('code')}, subcode {result.get('subCode')})"
    return TransferSettled(taken=False, detail=detail)
