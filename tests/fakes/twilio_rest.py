"""Twilio's Calls REST resource on 127.0.0.1, for transfer tests: real HTTP, real auth checks.

    async with FakeTwilioRest(account_sid=SID, auth_token=TOKEN, calls=[call_sid]) as twilio:
        env = twilio.environment()   # TWILIO_* and BATON_TWILIO_BASE_URL pointing here
        ...
        assert twilio.updates[0].call_sid == call_sid

It serves `POST /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json` as Twilio documents it:
HTTP basic auth (the account SID with its auth token, or an API key SID with its secret, for
that account only), a form body whose `Twiml` must be a well-formed `<Response>` document
(or a `Url`), and answers shaped like Twilio's: 200 with the call resource (`sid`,
`account_sid`, `status`, `uri`, ...), or an error object `{"code", "message", "more_info",
"status"}` with Twilio's codes: 20003 bad credentials (401), 20404 unknown call (404), 21220
call not in progress (400), 21205 neither Twiml nor Url (400), 12100 TwiML that does not parse.

`fail_next` answers the next requests with those statuses first (503 as Twilio's error body),
`on_update` is awaited with each accepted update (a test's caller stream can end itself, as
Twilio's does once the call leaves `<Connect><Stream>`), and the server stops by itself after
`lifetime` seconds.

`GET /2010-04-01/Accounts/{AccountSid}/Calls.json?ParentCallSid=...` lists the legs an
accepted `<Dial>` started (one per such update, `ringing`), as Twilio's Calls list does;
`lists` keeps each such request (apart from `requests`, which are the updates).

`dial_outcome` plays the dialled desk once an update's `<Dial>` names callbacks, `dial_delay`
seconds after the update was answered: `"answered"` POSTs the dialled noun's `statusCallback`
(`CallStatus=in-progress`, as Twilio's `answered` event), `"no-answer"`, `"busy"`, `"failed"`,
`"canceled"` or `"completed"` POSTs the `<Dial action>` with that `DialCallStatus`. Each is a
form POST signed as Twilio signs (`X-Twilio-Signature`: base64 HMAC-SHA1 with the auth token
over the URL and the sorted parameters); `callbacks` keeps each request and the answer.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.loopback_app import LoopbackApp

API_PREFIX = "/2010-04-01/Accounts"


@dataclass(frozen=True)
class TwilioUpdate:
    """One accepted call update: which call, the TwiML parsed, and who sent it."""

    call_sid: str
    twiml: ET.Element
    username: str


@dataclass(frozen=True)
class TwilioCallback:
    """One callback this fake sent as Twilio: where, what, and the gateway's answer."""

    url: str
    params: dict[str, str]
    status: int
    answer: str


def signed_by_twilio(auth_token: str, url: str, params: dict[str, str]) -> str:
    """The `X-Twilio-Signature` Twilio's docs describe, computed on the fake's side."""
    payload = url
    for name in sorted(params):
        payload += name + params[name]
    mac = hmac.new(auth_token.encode("utf-8"), payload.encode("utf-8"), hashlib.sha1)
    return base64.b64encode(mac.digest()).decode("ascii")


def twilio_error(status: int, code: int, message: str) -> web.Response:
    body = {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }
    return web.json_response(body, status=status)


class FakeTwilioRest(LoopbackApp):
    """The fake service (see the module docstring); use as `async with`."""

    def __init__(
        self,
        *,
        account_sid: str,
        auth_token: str,
        api_key: tuple[str, str] | None = None,
        calls: Iterable[str] = (),
        fail_next: Iterable[int] = (),
        on_update: Callable[[TwilioUpdate], Awaitable[None]] | None = None,
        dial_outcome: str | None = None,
        dial_delay: float = 0.5,
        lifetime: float = 120.0,
    ) -> None:
        super().__init__(lifetime=lifetime)
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.api_key = api_key
        #: CallSid -> status ("in-progress" until updated or ended by the test).
        self.calls = dict.fromkeys(calls, "in-progress")
        self.fail_next = list(fail_next)
        self.on_update = on_update
        self.updates: list[TwilioUpdate] = []
        #: Every request seen (refused ones too): (path, status answered).
        self.requests: list[tuple[str, int]] = []
        self.dial_outcome = dial_outcome
        self.dial_delay = dial_delay
        self.callbacks: list[TwilioCallback] = []
        self._desks: set[asyncio.Task[None]] = set()
        #: Each Calls list asked for: (ParentCallSid, status answered).
        self.lists: list[tuple[str, int]] = []
        #: Parent CallSid -> the dialled legs' CallSids.
        self.children: dict[str, list[str]] = {}

    def environment(self) -> dict[str, str]:
        """The variables that point Baton's Twilio adapter at this fake."""
        return {
            "TWILIO_ACCOUNT_SID": self.account_sid,
            "TWILIO_AUTH_TOKEN": self.auth_token,
            "BATON_TWILIO_BASE_URL": self.base_url,
        }

    def routes(self, app: web.Application) -> None:
        app.router.add_post(API_PREFIX + "/{account}/Calls/{call}.json", self._update)
        app.router.add_get(API_PREFIX + "/{account}/Calls.json", self._list)

    async def _list(self, request: web.Request) -> web.Response:
        username = self._authenticated(request)
        if username is None or request.match_info["account"] != self.account_sid:
            response = twilio_error(401, 20003, "Authenticate")
        else:
            parent = request.query.get("ParentCallSid", "")
            legs = [
                {"sid": sid, "parent_call_sid": parent, "status": "ringing"}
                for sid in self.children.get(parent, [])
            ]
            response = web.json_response({"calls": legs, "page": 0, "uri": request.path_qs})
        self.lists.append((request.query.get("ParentCallSid", ""), response.status))
        return response

    async def _update(self, request: web.Request) -> web.Response:
        response = await self._answer(request)
        self.requests.append((request.path, response.status))
        return response

    async def _answer(self, request: web.Request) -> web.Response:
        username = self._authenticated(request)
        if username is None or request.match_info["account"] != self.account_sid:
            response = twilio_error(401, 20003, "Authenticate")
            response.headers["WWW-Authenticate"] = 'Basic realm="Twilio API"'
            return response
        if self.fail_next:
            status = self.fail_next.pop(0)
            return twilio_error(status, 20500, "Internal Server Error")
        call_sid = request.match_info["call"]
        if call_sid not in self.calls:
            return twilio_error(404, 20404, f"The requested resource {request.path} was not found")
        if self.calls[call_sid] != "in-progress":
            return twilio_error(400, 21220, "Call is not in-progress. Cannot redirect.")
        if request.content_type != "application/x-www-form-urlencoded":
            return twilio_error(400, 21205, "Url parameter is required.")
        form = await request.post()
        twiml = form.get("Twiml")
        if not isinstance(twiml, str):
            return twilio_error(400, 21205, "Url parameter is required.")
        try:
            document = ET.fromstring(twiml)
        except ET.ParseError:
            return twilio_error(400, 12100, "Document parse failure")
        if document.tag != "Response":
            return twilio_error(400, 12100, "Document parse failure")
        update = TwilioUpdate(call_sid, document, username)
        self.updates.append(update)
        dial = document.find("Dial")
        if dial is not None:
            self.children.setdefault(call_sid, []).append("CA" + uuid.uuid4().hex)
        if self.on_update is not None:
            await self.on_update(update)
        if self.dial_outcome is not None and dial is not None and dial.get("action"):
            desk = asyncio.create_task(self._desk_reports(call_sid, dial))
            self._desks.add(desk)
            desk.add_done_callback(self._desks.discard)
        return web.json_response(self._call_resource(call_sid))

    async def _desk_reports(self, call_sid: str, dial: ET.Element) -> None:
        """Report the dialled desk's outcome to the URLs the `<Dial>` named."""
        await asyncio.sleep(self.dial_delay)
        child_sid = self.children[call_sid][-1]
        common = {"AccountSid": self.account_sid, "ApiVersion": "2010-04-01"}
        if self.dial_outcome == "answered":
            noun = dial[0]
            params = {
                **common,
                "CallSid": child_sid,
                "ParentCallSid": call_sid,
                "CallStatus": "in-progress",
                "Direction": "outbound-dial",
                "CallbackSource": "call-progress-events",
                "SequenceNumber": "0",
            }
            await self.send_callback(noun.get("statusCallback", ""), params)
            return
        params = {
            **common,
            "CallSid": call_sid,
            "CallStatus": "in-progress",
            "Direction": "inbound",
            "DialCallStatus": self.dial_outcome or "",
            "DialCallSid": child_sid,
        }
        await self.send_callback(dial.get("action", ""), params)

    async def send_callback(
        self, url: str, params: dict[str, str], *, signature: str | None = None
    ) -> TwilioCallback:
        """POST `params` to `url` signed as Twilio would (or with the given `signature`)."""
        headers = {
            "X-Twilio-Signature": signature or signed_by_twilio(self.auth_token, url, params)
        }
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
            session.post(url, data=params, headers=headers) as response,
        ):
            callback = TwilioCallback(url, params, response.status, await response.text())
        self.callbacks.append(callback)
        return callback

    async def stop(self) -> None:
        for desk in list(self._desks):
            desk.cancel()
        await super().stop()

    def _authenticated(self, request: web.Request) -> str | None:
        """The basic-auth user when user and password match a credential, else None."""
        scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        known = [(self.account_sid, self.auth_token)]
        if self.api_key is not None:
            known.append(self.api_key)
        for name, secret in known:
            if hmac.compare_digest(user, name) and hmac.compare_digest(password, secret):
                return user
        return None

    def _call_resource(self, call_sid: str) -> dict[str, Any]:
        """The call resource as Twilio returns it (the fields a client reads; no numbers)."""
        return {
            "sid": call_sid,
            "account_sid": self.account_sid,
            "api_version": "2010-04-01",
            "status": self.calls[call_sid],
            "direction": "inbound",
            "uri": f"{API_PREFIX}/{self.account_sid}/Calls/{call_sid}.json",
        }
