"""Activities `file_escalation_ticket` and `deliver_escalation_ticket` (tools queue): hand the
call to a human queue, through the ticket sinks a worker is configured with."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from contracts._base import Payload
from contracts.handoff import HandoffStep

#: Writes the ticket to the local store (SQLite); the call waits for it, it takes milliseconds.
FILE_ESCALATION_TICKET = "file_escalation_ticket"
#: Sends the ticket to remote sinks (the webhook); the call goes on while it retries.
DELIVER_ESCALATION_TICKET = "deliver_escalation_ticket"
#: Records how the transfer to a person ended on the stored ticket (`TicketMark`).
MARK_ESCALATION_TICKET = "mark_escalation_ticket"

#: `open`: filed, no transfer tried (a person calls back). `transferred`: a person took the
#: call. `escalated`: a transfer was tried and nobody took the caller (declined, timed out,
#: failed, or the caller hung up on hold): a person calls back. `closed`: dealt with.
TicketStatus = Literal["open", "transferred", "escalated", "closed"]
TICKET_STATUSES: tuple[TicketStatus, ...] = ("open", "transferred", "escalated", "closed")


class EscalationTicket(Payload):
    """Everything a human needs to take the call over without asking the caller again."""

    ticket_id: str
    call_id: str
    scenario: str
    reason: str
    summary: str
    active_agent: str
    key_facts: list[str] = Field(default_factory=list)
    collected_data: dict[str, Any] = Field(default_factory=dict)
    handoff_history: list[HandoffStep] = Field(default_factory=list)
    last_utterances: list[str] = Field(default_factory=list)
    created_at: datetime


class TicketDelivery(Payload):
    """What `deliver_escalation_ticket` did: the remote sinks that accepted the ticket (none
    when the worker has no remote sink configured)."""

    ticket_id: str
    delivered_to: list[str] = Field(default_factory=list)


class TicketMark(Payload):
    """Input of `mark_escalation_ticket`: the ticket and the status it moves to."""

    ticket_id: str
    status: TicketStatus
