"""What every ticket sink shares: the interface, the redaction, the configuration error."""

from __future__ import annotations

from typing import Protocol

from contracts.escalation import EscalationTicket
from runtime.redaction import redact, redact_value


class TicketSinkError(ValueError):
    """The ticket sink settings are wrong; the message is one line naming the variable."""


class TicketSink(Protocol):
    """A place escalation tickets go. `put` is idempotent by ticket id: an activity retry
    may hand over a ticket the sink already has."""

    #: Short name for results and logs ("sqlite", "webhook").
    name: str

    async def put(self, ticket: EscalationTicket) -> None: ...


def redacted(ticket: EscalationTicket) -> EscalationTicket:
    """The ticket with PII masked in its free text (the caller's words, tool results), as every
    sink receives it: the agent who takes the call has the live call for the rest."""
    return ticket.model_copy(
        update={
            "summary": redact(ticket.summary),
            "reason": redact(ticket.reason),
            "key_facts": [redact(fact) for fact in ticket.key_facts],
            "last_utterances": [redact(line) for line in ticket.last_utterances],
            "collected_data": redact_value(ticket.collected_data),
        }
    )
