"""Activity: file an escalation ticket in the durable dead-letter store.

When a call leaves the agents (loop guard, failing model, escalate tool), the ticket is the
human agent's starting point. It is written to SQLite (by default next to the demo data) and
also returned in the workflow result, so it is never only in one place.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from temporalio import activity

from contracts.escalation import FILE_ESCALATION_TICKET, EscalationTicket
from runtime.paths import data_dir
from runtime.redaction import redact, redact_value
from runtime.settings import settings

_SCHEMA = """
CREATE TABLE IF NOT EXISTS escalation_tickets (
    ticket_id TEXT PRIMARY KEY,
    call_id TEXT NOT NULL,
    scenario TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL,
    ticket_json TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open'
)
"""


def dead_letter_path() -> Path:
    """`$BATON_DEAD_LETTER_DB`, else `dead_letter.sqlite3` in `$BATON_DATA_DIR` or ~/.baton."""
    explicit = settings().dead_letter_db
    if explicit:
        return Path(explicit).expanduser()
    return data_dir() / "dead_letter.sqlite3"


def redacted(ticket: EscalationTicket) -> EscalationTicket:
    """The ticket with PII masked in its free text (the caller's words, tool results), as the
    store keeps it: the agent who takes the call has the live call for the rest."""
    return ticket.model_copy(
        update={
            "summary": redact(ticket.summary),
            "reason": redact(ticket.reason),
            "key_facts": [redact(fact) for fact in ticket.key_facts],
            "last_utterances": [redact(line) for line in ticket.last_utterances],
            "collected_data": redact_value(ticket.collected_data),
        }
    )


def store_ticket(ticket: EscalationTicket, path: Path | None = None) -> str:
    """Insert the ticket once, redacted (a retry finds it already there); returns its id."""
    ticket = redacted(ticket)
    target = path or dead_letter_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Tickets quote the caller: the file is its owner's alone, made so before SQLite opens it.
    target.touch(mode=0o600, exist_ok=True)
    with sqlite3.connect(target, timeout=30) as db:
        db.execute(_SCHEMA)
        db.execute(
            "INSERT OR IGNORE INTO escalation_tickets "
            "(ticket_id, call_id, scenario, reason, created_at, ticket_json) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                ticket.ticket_id,
                ticket.call_id,
                ticket.scenario,
                ticket.reason,
                ticket.created_at.isoformat(),
                ticket.model_dump_json(),
            ),
        )
    return ticket.ticket_id


def open_tickets(path: Path | None = None) -> list[EscalationTicket]:
    target = path or dead_letter_path()
    if not target.exists():
        return []
    with sqlite3.connect(target, timeout=30) as db:
        db.execute(_SCHEMA)
        rows = db.execute(
            "SELECT ticket_json FROM escalation_tickets WHERE status = 'open' ORDER BY created_at"
        ).fetchall()
    return [EscalationTicket.model_validate_json(row[0]) for row in rows]


@activity.defn(name=FILE_ESCALATION_TICKET)
def file_escalation_ticket(ticket: EscalationTicket) -> str:
    return store_ticket(ticket)
