"""Activities: file an escalation ticket, then deliver it to the remote sinks.

When a call leaves the agents (loop guard, failing model, escalate tool), the ticket is the
human agent's starting point. `file_escalation_ticket` writes it to the local store (SQLite,
by default next to the demo data) while the call waits; `deliver_escalation_ticket` sends it
to the webhook when one is configured, retried by Temporal while the call goes on. The ticket
is also returned in the workflow result, so it is never only in one place.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.ticket_sinks import (
    TicketSink,
    TicketSinkError,
    dead_letter_path,
    local_sinks,
    mark_ticket,
    open_tickets,
    redacted,
    remote_sinks,
    store_ticket,
)
from contracts.escalation import (
    DELIVER_ESCALATION_TICKET,
    FILE_ESCALATION_TICKET,
    MARK_ESCALATION_TICKET,
    EscalationTicket,
    TicketDelivery,
    TicketMark,
)

# Kept importable from here, where callers found them before the sinks had a package.
__all__ = [
    "dead_letter_path",
    "deliver_escalation_ticket",
    "file_escalation_ticket",
    "mark_escalation_ticket",
    "open_tickets",
    "redacted",
    "store_ticket",
]


@activity.defn(name=FILE_ESCALATION_TICKET)
async def file_escalation_ticket(ticket: EscalationTicket) -> str:
    """Put the ticket in the local sinks (none when the worker sends tickets to a webhook only)."""
    for sink in _sinks(local=True):
        await sink.put(ticket)
    return ticket.ticket_id


@activity.defn(name=DELIVER_ESCALATION_TICKET)
async def deliver_escalation_ticket(ticket: EscalationTicket) -> TicketDelivery:
    """Put the ticket in the remote sinks; a failure says whether a retry can help."""
    delivered: list[str] = []
    for sink in _sinks(local=False):
        await sink.put(ticket)
        delivered.append(sink.name)
    return TicketDelivery(ticket_id=ticket.ticket_id, delivered_to=delivered)


@activity.defn(name=MARK_ESCALATION_TICKET)
async def mark_escalation_ticket(mark: TicketMark) -> bool:
    """Set the stored ticket's status; False when the local store does not keep it (a
    webhook-only worker). Remote sinks received the ticket itself, not its later status."""
    if not _sinks(local=True):
        return False
    return await asyncio.to_thread(mark_ticket, mark.ticket_id, mark.status)


def _sinks(*, local: bool) -> list[TicketSink]:
    try:
        return local_sinks() if local else remote_sinks()
    except TicketSinkError as error:
        # Workers check this at start; only a worker started some other way gets here.
        raise ApplicationError(
            f"ticket sinks misconfigured: {error}", type="TicketSinkError", non_retryable=True
        ) from None
