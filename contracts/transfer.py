"""Transfer to a human: where the scenario sends the caller, and what the platform answered.

An escalation files a ticket, then asks the call's platform to move the caller to a person:
Twilio (the live call is updated with TwiML `<Dial>`), Azure Communication Services (Call
Automation transfer) or, for browser calls, the gateway's human-agent console. The workflow
ends `transferred` once the platform has the caller, or `escalated` (ticket kept, caller told
so) when the transfer fails or nobody takes it in time.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts._base import Payload

#: Activity (tools queue): ask the call's platform to move the caller to a human.
START_TRANSFER = "start_transfer"
#: Signal (gateway -> workflow): the browser console's human took the call, or gave it back.
SIGNAL_TRANSFER_SETTLED = "transfer_settled"

TransferKind = Literal["phone", "sip", "queue"]

#: What the caller hears when no person takes the call: the truth, and what happens next
#: (spoken by the workflow, or by Twilio from the gateway's answer to a `<Dial>` nobody took).
NOBODY_FREE = (
    "I'm sorry, nobody is free to take your call right now. Everything you told us is saved "
    "in a ticket, and a colleague will call you back as soon as possible."
)


class TransferTarget(Payload):
    """A person or team: an E.164 number, a SIP URI, or a named queue (a TaskRouter workflow
    on Twilio, a queue id on ACS, a console queue on the browser channel)."""

    kind: TransferKind
    address: str = Field(min_length=1, max_length=300)
    #: What the console and the audit timeline call this target ("Fraud desk").
    label: str = ""


class TransferRequest(Payload):
    """What the platform adapter needs; the ticket travels by id (the sink holds it)."""

    call_id: str
    channel: Literal["text", "browser", "twilio", "acs"]
    #: The platform's own id for the live call (Twilio CallSid, ACS call connection id);
    #: None on the browser channel, where the gateway holds the call.
    platform_call_id: str | None = None
    #: gRPC address of the gateway holding the caller (browser channel).
    gateway_address: str | None = None
    target: TransferTarget
    ticket_id: str
    reason: str = ""
    #: Seconds the person's phone may ring (Twilio's `<Dial timeout>`), set below the
    #: scenario's hold timeout so the platform's "no answer" arrives while the call waits;
    #: None: the adapter's default.
    ring_timeout_seconds: int | None = Field(default=None, ge=5, le=600)
    #: Seconds a call may wait in a queue the platform routes itself (an ACS Job Router job)
    #: for a person to accept it: the scenario's hold timeout. None: the workflow does not
    #: wait for one (a call recorded before patch 'acs-job-router').
    queue_wait_seconds: int | None = Field(default=None, ge=1, le=3600)


class TransferOutcome(Payload):
    """`connected`: the platform has the caller (the workflow may end `transferred`).
    `pending`: queued, a `transfer_settled` signal follows. `failed`: say so, keep the ticket."""

    status: Literal["connected", "pending", "failed"]
    #: Safe for logs: platform status codes and ids, never caller data.
    detail: str = ""
    #: With `failed`: the platform says the caller hung up while the transfer waited (an ACS
    #: call connection gone during a Job Router wait), which their stream may not say yet.
    caller_left: bool = False


class TransferSettled(Payload):
    """Signal body: how a pending transfer ended (the console's human took it or declined)."""

    taken: bool
    #: Who took it, as the console knows them (an operator id, not a caller's data).
    taken_by: str = ""
    detail: str = ""
