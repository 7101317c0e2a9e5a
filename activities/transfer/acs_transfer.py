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
refused with that advice. A `queue` target names a Job Router queue: Call Automation cannot
transfer into one, so the call waits there as a job (activities.transfer.acs_jobrouter) and is
transferred to the participant of the worker who accepts it.

Requests are signed with the resource's access key, as ACS documents for HMAC auth
(activities.transfer.acs_auth). Written here rather than with the Call Automation SDK because
that SDK is synchronous-first, pulls in azure-core's pipeline for this one POST, and cannot be
pointed at a plain-HTTP loopback fake.
"""

from __future__ import annotations

import email.utils
import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.transfer.acs_auth import (
    CALL_AUTOMATION_API_VERSION,
    AcsResource,
    content_hash,
    sign,
)
from activities.transfer.acs_jobrouter import wait_for_worker
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

API_VERSION = CALL_AUTOMATION_API_VERSION
__all__ = ["API_VERSION", "AcsResource", "content_hash", "sign", "transfer_on_acs"]

_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")
#: Call connection ids are opaque; this keeps them to one safe path segment.
_CONNECTION_ID = re.compile(r"^[A-Za-z0-9._~-]{1,200}$")
#: The namespace of the idempotency key ACS deduplicates a retried transfer by.
_REPEATABILITY = uuid.UUID("5d7c1c4e-27a0-4f64-9f0b-6a8b1b0f2f11")


class TargetError(ValueError):
    """The target cannot be reached through ACS (the message says what to set instead)."""


def target_participant(target: TransferTarget) -> dict[str, Any]:
    """The target as ACS's CommunicationIdentifierModel (raises `TargetError`)."""
    address = target.address
    if target.kind == "queue":
        raise TargetError("a queue is reached through Job Router, not transferred to")
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
    configuration/target; raises (retryable) when ACS is unavailable. A `queue` target is a
    Job Router queue: the call waits there for a worker first (activities.transfer.acs_jobrouter)
    and is then transferred to the worker who accepted it."""
    connection_id = request.platform_call_id or ""
    if not _CONNECTION_ID.match(connection_id):
        return TransferOutcome(status="failed", detail="the call has no ACS call connection id")
    try:
        resource = AcsResource.parse(settings().acs_connection_string)
        base = callbacks_base("acs")
    except TransferConfigError as error:
        return not_configured("acs", error)
    target = request.target
    if target.kind == "queue":
        found = await wait_for_worker(resource, request, connection_id)
        if isinstance(found, TransferOutcome):
            return found
        target = found
    try:
        participant = target_participant(target)
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
    headers = resource.signed_headers("POST", path, body, "application/json")
    first_sent = _first_sent()
    headers["Repeatability-Request-ID"] = str(
        uuid.uuid5(_REPEATABILITY, f"{request.call_id}/{request.ticket_id}")
    )
    headers["Repeatability-First-Sent"] = (
        email.utils.format_datetime(first_sent, usegmt=True) if first_sent else headers["x-ms-date"]
    )
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
