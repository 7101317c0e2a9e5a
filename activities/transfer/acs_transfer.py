"""Transfer on Azure Communication Services: Call Automation's "transfer call to participant".

`POST {endpoint}/calling/callConnections/{callConnectionId}:transferToParticipant` with the
target as a CommunicationIdentifier and the ticket id as `operationContext` (ACS echoes it in
the CallTransferAccepted/Failed events). A 202 means ACS has taken the transfer on; whether the
person took the call comes later. With `BATON_PUBLIC_URL` set, the request names the gateway's
events URL as `operationCallbackUri` (runtime.platform_callbacks) and the outcome is `pending`
until the gateway signals `transfer_settled` from those events; without it a 202 is `connected`.

Targets: `phone` is an E.164 number (PSTN, or a SIP trunk reached by Direct Routing). ACS has
no SIP-URI participant, so a `sip` target names the VoIP identity of the person instead: a
Communication Services user (`8:acs:...`) or a Teams user (`8:orgid:...`); a `sip:` URI is
refused with that advice. Queues belong to Job Router, which Call Automation cannot transfer
into, so a `queue` target is refused too.

Requests are signed with the resource's access key, as ACS documents for HMAC auth:
`Authorization: HMAC-SHA256 SignedHeaders=x-ms-date;host;x-ms-content-sha256&Signature=...`,
the signature an HMAC-SHA256 of `VERB\\npath?query\\ndate;host;content-sha256`. Written here
rather than with the Call Automation SDK because that SDK is synchronous-first, pulls in
azure-core's pipeline for this one POST, and cannot be pointed at a plain-HTTP loopback fake.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import hashlib
import hmac
import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

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
from runtime.platform_callbacks import acs_events_url
from runtime.settings import settings

API_VERSION = "2023-10-15"
SIGNED_HEADERS = "x-ms-date;host;x-ms-content-sha256"
QUEUE_REFUSED = "ACS queues need Job Router; set a phone or sip target"

_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")
#: Call connection ids are opaque; this keeps them to one safe path segment.
_CONNECTION_ID = re.compile(r"^[A-Za-z0-9._~-]{1,200}$")
#: The namespace of the idempotency key ACS deduplicates a retried transfer by.
_REPEATABILITY = uuid.UUID("5d7c1c4e-27a0-4f64-9f0b-6a8b1b0f2f11")


@dataclass(frozen=True)
class AcsResource:
    """The Communication Services resource: endpoint and decoded access key."""

    endpoint: str
    access_key: bytes

    @classmethod
    def parse(cls, connection_string: str | None) -> AcsResource:
        """`endpoint=https://...;accesskey=BASE64` (any order, any case of the names)."""
        if not connection_string:
            raise TransferConfigError("set ACS_CONNECTION_STRING (endpoint=...;accesskey=...)")
        parts: dict[str, str] = {}
        for part in connection_string.split(";"):
            name, sep, value = part.partition("=")
            if sep:
                parts[name.strip().lower()] = value.strip()
        endpoint = parts.get("endpoint", "").rstrip("/")
        if not endpoint.startswith(("https://", "http://")):
            raise TransferConfigError("ACS_CONNECTION_STRING needs endpoint=https://...")
        try:
            key = base64.b64decode(parts.get("accesskey", ""), validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if not key:
            raise TransferConfigError("ACS_CONNECTION_STRING needs accesskey=<base64 key>")
        return cls(endpoint, key)

    @property
    def host(self) -> str:
        """The `host` the signature covers: the endpoint's host[:port], as sent."""
        return urlsplit(self.endpoint).netloc


def content_hash(body: bytes) -> str:
    return base64.b64encode(hashlib.sha256(body).digest()).decode()


def sign(
    key: bytes, *, method: str, path_and_query: str, host: str, date: str, body_hash: str
) -> str:
    """The `Authorization` header value for one request."""
    text = f"{method.upper()}\n{path_and_query}\n{date};{host};{body_hash}"
    signature = base64.b64encode(hmac.new(key, text.encode(), hashlib.sha256).digest()).decode()
    return f"HMAC-SHA256 SignedHeaders={SIGNED_HEADERS}&Signature={signature}"


class TargetError(ValueError):
    """The target cannot be reached through ACS (the message says what to set instead)."""


def target_participant(target: TransferTarget) -> dict[str, Any]:
    """The target as ACS's CommunicationIdentifierModel (raises `TargetError`)."""
    address = target.address
    if target.kind == "queue":
        raise TargetError(QUEUE_REFUSED)
    if target.kind == "phone":
        if not _E164.match(address):
            raise TargetError("a phone target must be an E.164 number such as +15551234567")
        return {"kind": "phoneNumber", "rawId": f"4:{address}", "phoneNumber": {"value": address}}
    if address.startswith("8:acs:"):
        return {"kind": "communicationUser", "rawId": address, "communicationUser": {"id": address}}
    if address.startswith("8:orgid:"):
        user = {"userId": address.removeprefix("8:orgid:"), "isAnonymous": False}
        return {"kind": "microsoftTeamsUser", "rawId": address, "microsoftTeamsUser": user}
    raise TargetError(
        "on ACS a sip target is a Communication Services (8:acs:...) or Teams (8:orgid:...) "
        "user; reach a SIP phone by its number through Direct Routing (a phone target)"
    )


def _first_sent() -> datetime | None:
    """When this transfer was first attempted (the activity's schedule time survives its
    retries), so ACS can tell a retry of the same request from a new one."""
    if not activity.in_activity():
        return None
    return activity.info().scheduled_time.astimezone(UTC)


async def transfer_on_acs(request: TransferRequest) -> TransferOutcome:
    """Ask ACS to transfer the call: `connected` on a 202, `failed` on a refusal or a bad
    configuration/target; raises (retryable) when ACS is unavailable."""
    connection_id = request.platform_call_id or ""
    if not _CONNECTION_ID.match(connection_id):
        return TransferOutcome(status="failed", detail="the call has no ACS call connection id")
    try:
        resource = AcsResource.parse(settings().acs_connection_string)
        base = callbacks_base("acs")
    except TransferConfigError as error:
        return not_configured("acs", error)
    try:
        participant = target_participant(request.target)
    except TargetError as error:
        return TransferOutcome(status="failed", detail=f"acs: {error}")
    payload: dict[str, Any] = {
        "targetParticipant": participant,
        "operationContext": request.ticket_id,
    }
    if base is not None:
        payload["operationCallbackUri"] = acs_events_url(base, request.call_id, resource.access_key)
    body = json.dumps(payload).encode()
    path = (
        f"/calling/callConnections/{connection_id}:transferToParticipant?api-version={API_VERSION}"
    )
    date = email.utils.formatdate(usegmt=True)
    body_hash = content_hash(body)
    first_sent = _first_sent()
    headers = {
        "Content-Type": "application/json",
        "x-ms-date": date,
        "x-ms-content-sha256": body_hash,
        "Authorization": sign(
            resource.access_key,
            method="POST",
            path_and_query=path,
            host=resource.host,
            date=date,
            body_hash=body_hash,
        ),
        "Repeatability-Request-ID": str(
            uuid.uuid5(_REPEATABILITY, f"{request.call_id}/{request.ticket_id}")
        ),
        "Repeatability-First-Sent": (
            email.utils.format_datetime(first_sent, usegmt=True) if first_sent else date
        ),
    }
    answer = await post("acs", resource.endpoint + path, headers=headers, data=body)
    if answer.status != 202:
        problem = answer.body.get("error")
        code = problem.get("code") if isinstance(problem, dict) else None
        return refused_or_retry("acs", answer, code)
    log.info("transfer handed to acs", call_connection_id=connection_id)
    if base is not None:
        # ACS has taken the request; its CallTransferAccepted/Failed event settles it.
        return TransferOutcome(
            status="pending", detail=f"acs is transferring call connection {connection_id}"
        )
    return TransferOutcome(
        status="connected", detail=f"acs accepted the transfer of call connection {connection_id}"
    )
