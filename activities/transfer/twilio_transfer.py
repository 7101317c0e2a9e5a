"""Transfer on Twilio: the live call is updated with TwiML that dials the human.

`POST /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json` with a `Twiml` form field
replaces what the call is doing (our `<Connect><Stream>`, so the media stream ends) with
`<Say>` and a `<Dial>` to a `<Number>`, a `<Sip>` URI or, for a queue, an `<Enqueue>` into a
TaskRouter workflow (`WW...` SID) or a named Twilio queue. A 200 with the call resource means
Twilio now owns the caller.

With `BATON_PUBLIC_URL` set, a `<Dial>` reports back (runtime.platform_callbacks): the dialled
leg's `answered` status callback settles the transfer as taken, and the `<Dial action>` reports
a desk that was busy or did not answer, whose TwiML answer tells the caller the truth. The
outcome is then `pending` until the gateway signals `transfer_settled`. Without it (and for a
queue, which holds the caller on Twilio's side) a 200 is `connected`: nothing follows the
`<Dial>`, so an unanswered desk ends the call silently.

A retry of the activity first lists the call's child calls (`GET .../Calls.json?ParentCallSid=`):
one there means an earlier attempt's update took and Twilio is already dialling (its answer was
lost), so updating again would hang up on the ringing desk and dial it afresh; the retry
answers as that attempt would have instead.

Plain aiohttp rather than the `twilio` helper library: this is one form POST with basic auth,
and the helper would add a synchronous HTTP stack and its own retries beside Temporal's.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from temporalio import activity

from activities.transfer.platform_http import (
    TransferConfigError,
    callbacks_base,
    log,
    not_configured,
    post,
    refused_or_retry,
)
from contracts.transfer import TransferOutcome, TransferRequest, TransferTarget
from runtime.platform_callbacks import twilio_answered_url, twilio_dial_action_url
from runtime.settings import settings

TWILIO_API = "https://api.twilio.com"
#: Spoken as Twilio takes the call over (the agent has already said a human is coming).
CONNECTING_SAY = "Connecting you now."
#: Seconds the dialled person's phone rings before Twilio gives up on them (unless the
#: request sets its own, under the scenario's hold timeout).
DIAL_TIMEOUT_SECONDS = 30

_ACCOUNT_SID = re.compile(r"^AC[0-9a-fA-F]{32}$")
_API_KEY_SID = re.compile(r"^SK[0-9a-fA-F]{32}$")
_CALL_SID = re.compile(r"^CA[0-9a-fA-F]{32}$")
_TASKROUTER_WORKFLOW_SID = re.compile(r"^WW[0-9a-fA-F]{32}$")
_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")


@dataclass(frozen=True)
class TwilioAccount:
    """Where and as whom the adapter calls Twilio's REST API."""

    account_sid: str
    #: Basic-auth user and password: the account SID and auth token, or an API key and secret.
    username: str
    password: str
    base_url: str = TWILIO_API

    @classmethod
    def from_settings(cls) -> TwilioAccount:
        """The account in the environment; `TransferConfigError` names what is missing."""
        config = settings()
        sid = config.twilio_account_sid
        if not sid:
            raise TransferConfigError("set TWILIO_ACCOUNT_SID (AC...) and TWILIO_AUTH_TOKEN")
        if not _ACCOUNT_SID.match(sid):
            raise TransferConfigError("TWILIO_ACCOUNT_SID must be AC followed by 32 hex digits")
        base_url = (config.twilio_base_url or TWILIO_API).rstrip("/")
        if not base_url.startswith(("https://", "http://")):
            raise TransferConfigError("BATON_TWILIO_BASE_URL must be an http(s) URL")
        if config.twilio_api_key or config.twilio_api_secret:
            key, secret = config.twilio_api_key, config.twilio_api_secret
            if not (key and secret):
                raise TransferConfigError("set both TWILIO_API_KEY and TWILIO_API_SECRET")
            if not _API_KEY_SID.match(key):
                raise TransferConfigError("TWILIO_API_KEY must be SK followed by 32 hex digits")
            return cls(sid, key, secret, base_url)
        if not config.twilio_auth_token:
            raise TransferConfigError("set TWILIO_AUTH_TOKEN (or TWILIO_API_KEY and _SECRET)")
        return cls(sid, sid, config.twilio_auth_token, base_url)

    def basic_auth(self) -> str:
        """The `Authorization` header value (aiohttp's BasicAuth helper is deprecated)."""
        pair = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode()

    def call_url(self, call_sid: str) -> str:
        return f"{self.base_url}/2010-04-01/Accounts/{self.account_sid}/Calls/{call_sid}.json"

    def children_url(self, call_sid: str) -> str:
        """The Calls list filtered to the legs a `<Dial>` on `call_sid` started."""
        calls = f"{self.base_url}/2010-04-01/Accounts/{self.account_sid}/Calls.json"
        return f"{calls}?ParentCallSid={call_sid}&PageSize=20"


class TargetError(ValueError):
    """The transfer target cannot be dialled on this platform (the message says why)."""


def transfer_twiml(
    target: TransferTarget,
    *,
    call_id: str,
    ticket_id: str,
    callbacks_base: str | None = None,
    ring_seconds: int | None = None,
) -> str:
    """The TwiML that moves the caller to `target` (raises `TargetError` for a bad address).
    With `callbacks_base`, a `<Dial>` reports its outcome to the gateway there.

    Built with ElementTree so an address or label can never break out of its element."""
    response = ET.Element("Response")
    ET.SubElement(response, "Say").text = CONNECTING_SAY
    if target.kind == "queue":
        _enqueue(response, target.address, call_id=call_id, ticket_id=ticket_id)
        return ET.tostring(response, encoding="unicode", xml_declaration=False)
    dial = ET.SubElement(response, "Dial", timeout=str(ring_seconds or DIAL_TIMEOUT_SECONDS))
    reports: dict[str, str] = {}
    if callbacks_base is not None:
        dial.set("action", twilio_dial_action_url(callbacks_base, call_id))
        dial.set("method", "POST")
        reports = {
            "statusCallback": twilio_answered_url(callbacks_base, call_id),
            "statusCallbackEvent": "answered",
            "statusCallbackMethod": "POST",
        }
    if target.kind == "phone":
        if not _E164.match(target.address):
            raise TargetError("a phone target must be an E.164 number such as +15551234567")
        ET.SubElement(dial, "Number", reports).text = target.address
    else:
        ET.SubElement(dial, "Sip", reports).text = _sip_uri(target.address, ticket_id)
    return ET.tostring(response, encoding="unicode", xml_declaration=False)


def _sip_uri(address: str, ticket_id: str) -> str:
    """The SIP URI with the ticket id as a custom `X-` header, so the desk's phone system can
    show the ticket: Twilio sends URI parameters after `?` as SIP headers."""
    if not address.lower().startswith(("sip:", "sips:")):
        raise TargetError("a sip target must be a SIP URI such as sip:desk@pbx.example.com")
    joiner = "&" if "?" in address else "?"
    return f"{address}{joiner}X-Baton-Ticket={urllib.parse.quote(ticket_id, safe='')}"


def _enqueue(response: ET.Element, address: str, *, call_id: str, ticket_id: str) -> None:
    """A TaskRouter workflow SID gets a task carrying the ticket; any other name is a Twilio
    queue of that name."""
    if _TASKROUTER_WORKFLOW_SID.match(address):
        enqueue = ET.SubElement(response, "Enqueue", workflowSid=address)
        task = {"baton_ticket_id": ticket_id, "baton_call_id": call_id}
        ET.SubElement(enqueue, "Task").text = json.dumps(task)
    else:
        ET.SubElement(response, "Enqueue").text = address


async def transfer_on_twilio(request: TransferRequest) -> TransferOutcome:
    """Update the live call with the transfer TwiML: `connected` on a 200, `failed` on a
    refusal or a bad configuration/target; raises (retryable) when Twilio is unavailable."""
    call_sid = request.platform_call_id or ""
    if not _CALL_SID.match(call_sid):
        return TransferOutcome(status="failed", detail="the call has no Twilio CallSid")
    try:
        account = TwilioAccount.from_settings()
        base = callbacks_base("twilio") if request.target.kind != "queue" else None
    except TransferConfigError as error:
        return not_configured("twilio", error)
    try:
        twiml = transfer_twiml(
            request.target,
            call_id=request.call_id,
            ticket_id=request.ticket_id,
            callbacks_base=base,
            ring_seconds=request.ring_timeout_seconds,
        )
    except TargetError as error:
        return TransferOutcome(status="failed", detail=f"twilio: {error}")
    if request.target.kind != "queue" and await _already_dialling(account, call_sid):
        log.info("transfer already dialling on twilio: not updated again", call_sid=call_sid)
        if base is not None:
            return TransferOutcome(status="pending", detail=f"twilio call {call_sid} dialling")
        return TransferOutcome(status="connected", detail=f"twilio call {call_sid} dialling")
    answer = await post(
        "twilio",
        account.call_url(call_sid),
        headers={"Authorization": account.basic_auth()},
        data={"Twiml": twiml},
    )
    if answer.status != 200:
        return refused_or_retry("twilio", answer, answer.body.get("code"))
    status = answer.body.get("status", "?")
    log.info("transfer handed to twilio", call_sid=call_sid, call_status=str(status))
    if base is not None:
        # The desk's phone is ringing: the gateway signals whether a person answered.
        return TransferOutcome(status="pending", detail=f"twilio call {call_sid} dialling")
    return TransferOutcome(status="connected", detail=f"twilio call {call_sid} updated ({status})")


async def _already_dialling(account: TwilioAccount, call_sid: str) -> bool:
    """On a retry of the activity: whether the call already has a dialled leg (an earlier
    attempt's update took). Best effort: an answer that is not a list says no."""
    if not activity.in_activity() or activity.info().attempt < 2:
        return False
    answer = await post(
        "twilio",
        account.children_url(call_sid),
        headers={"Authorization": account.basic_auth()},
        method="GET",
    )
    calls = answer.body.get("calls") if answer.status == 200 else None
    return isinstance(calls, list) and len(calls) > 0
