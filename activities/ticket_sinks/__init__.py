"""Where escalation tickets go: SQLite (the default), an HTTP webhook, or both.

`BATON_TICKET_SINK` chooses (see `config`). Local sinks (SQLite) are written while the call
waits, since the transfer to a human reads the ticket from there; remote sinks (the webhook)
are delivered by their own activity that retries without holding the caller up.

For the transfer and the console: `ticket_by_id` reads a stored ticket, `mark_ticket` records
its outcome (`transferred`, `escalated`, `closed`; the call's workflow marks the transfer's
outcome itself when the call ends, see workflows.ticket_filing).
"""

from __future__ import annotations

from collections.abc import Mapping

from activities.ticket_sinks.base import TicketSink, TicketSinkError, redacted
from activities.ticket_sinks.config import TicketSinkSettings, ticket_sink_settings
from activities.ticket_sinks.sqlite_store import (
    WAITING,
    SQLiteTicketSink,
    StoredTicket,
    dead_letter_path,
    list_tickets,
    mark_ticket,
    open_tickets,
    store_ticket,
    ticket_by_id,
)
from activities.ticket_sinks.webhook import WebhookTicketSink

__all__ = [
    "WAITING",
    "SQLiteTicketSink",
    "StoredTicket",
    "TicketSink",
    "TicketSinkError",
    "TicketSinkSettings",
    "WebhookTicketSink",
    "dead_letter_path",
    "list_tickets",
    "local_sinks",
    "mark_ticket",
    "open_tickets",
    "redacted",
    "remote_sinks",
    "store_ticket",
    "ticket_by_id",
    "ticket_sink_settings",
]


def local_sinks(env: Mapping[str, str] | None = None) -> list[TicketSink]:
    """The sinks the call waits for: quick and on this machine."""
    return [SQLiteTicketSink()] if ticket_sink_settings(env).sqlite else []


def remote_sinks(env: Mapping[str, str] | None = None) -> list[TicketSink]:
    """The sinks delivered in the background, retried by Temporal."""
    webhook = ticket_sink_settings(env).webhook
    return [WebhookTicketSink(webhook)] if webhook is not None else []
