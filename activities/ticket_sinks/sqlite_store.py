"""The SQLite ticket store (the default sink): one row per ticket, redacted, with a status a
contact center updates as the call moves on (`mark_ticket`), read by `baton tickets`.

Readers open the file read-only and never create it, so looking for tickets on a machine that
has none leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from activities.ticket_sinks.base import redacted
from contracts.escalation import TICKET_STATUSES, EscalationTicket, TicketStatus
from runtime.paths import data_dir
from runtime.settings import settings

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS escalation_tickets (
        ticket_id TEXT PRIMARY KEY,
        call_id TEXT NOT NULL,
        scenario TEXT NOT NULL,
        reason TEXT NOT NULL,
        created_at TEXT NOT NULL,
        ticket_json TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'open'
    )
    """,
    "CREATE INDEX IF NOT EXISTS escalation_tickets_by_status "
    "ON escalation_tickets (status, created_at)",
)
#: `list_tickets(status="waiting")`: the tickets a person must still act on (nobody has the
#: caller: no transfer was tried, or it failed and someone calls back).
WAITING = "waiting"
_WAITING_STATUSES = ("open", "escalated")
#: A local write waits this long for another writer's lock before the attempt fails (and
#: Temporal retries it): long enough for any write, short next to the activity's timeout.
_LOCK_WAIT_SECONDS = 5


@dataclass(frozen=True)
class StoredTicket:
    """A ticket as the store keeps it: the redacted ticket and where it stands."""

    ticket: EscalationTicket
    status: str


def dead_letter_path() -> Path:
    """`$BATON_DEAD_LETTER_DB`, else `dead_letter.sqlite3` in `$BATON_DATA_DIR` or ~/.baton."""
    explicit = settings().dead_letter_db
    if explicit:
        return Path(explicit).expanduser()
    return data_dir() / "dead_letter.sqlite3"


def store_ticket(ticket: EscalationTicket, path: Path | None = None) -> str:
    """Insert the ticket once, redacted (a retry finds it already there); returns its id."""
    ticket = redacted(ticket)
    target = path or dead_letter_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Tickets quote the caller: the file is its owner's alone, made so before SQLite opens it.
    target.touch(mode=0o600, exist_ok=True)
    with closing(sqlite3.connect(target, timeout=_LOCK_WAIT_SECONDS)) as db, db:
        for statement in _SCHEMA:
            db.execute(statement)
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


def list_tickets(
    path: Path | None = None,
    *,
    status: str | None = WAITING,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[StoredTicket]:
    """Tickets oldest first: those with `status` (`waiting`: open or escalated; None: all)
    created at or after `since` (an aware datetime); the newest `limit` when one is given."""
    clauses: list[str] = []
    values: list[str] = []
    if status == WAITING:
        clauses.append(f"status IN ({', '.join('?' for _ in _WAITING_STATUSES)})")
        values.extend(_WAITING_STATUSES)
    elif status is not None:
        clauses.append("status = ?")
        values.append(status)
    if since is not None:
        # Stored as ISO 8601 in UTC (workflow time), which sorts as text.
        clauses.append("created_at >= ?")
        values.append(since.astimezone(UTC).isoformat())
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    query = f"SELECT ticket_json, status FROM escalation_tickets {where} ORDER BY created_at DESC"
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    with _reading(path) as db:
        rows = db.execute(query, values).fetchall() if db is not None else []
    return [_stored(row) for row in reversed(rows)]


def open_tickets(path: Path | None = None) -> list[EscalationTicket]:
    """The tickets still waiting for a person (`open` or `escalated`), oldest first."""
    return [stored.ticket for stored in list_tickets(path, status=WAITING)]


def ticket_by_id(ticket_id: str, path: Path | None = None) -> StoredTicket | None:
    """The ticket with this id (the call's workflow id), or None when the store lacks it."""
    with _reading(path) as db:
        row = (
            db.execute(
                "SELECT ticket_json, status FROM escalation_tickets WHERE ticket_id = ?",
                (ticket_id,),
            ).fetchone()
            if db is not None
            else None
        )
    return _stored(row) if row is not None else None


def mark_ticket(ticket_id: str, status: TicketStatus, path: Path | None = None) -> bool:
    """Set a ticket's status (a transfer's outcome, a human closing it); False when the store
    has no such ticket (a webhook-only worker, or an id never filed)."""
    if status not in TICKET_STATUSES:
        raise ValueError(f"unknown ticket status {status!r}; use one of {TICKET_STATUSES}")
    target = path or dead_letter_path()
    if not target.exists():
        return False
    with closing(sqlite3.connect(target, timeout=_LOCK_WAIT_SECONDS)) as db, db:
        if not _has_table(db):
            return False
        changed = db.execute(
            "UPDATE escalation_tickets SET status = ? WHERE ticket_id = ?", (status, ticket_id)
        ).rowcount
    return changed == 1


class SQLiteTicketSink:
    """The `sqlite` sink: the local file, written before the call goes on."""

    name = "sqlite"

    def __init__(self, path: Path | None = None) -> None:
        self.path = path

    async def put(self, ticket: EscalationTicket) -> None:
        await asyncio.to_thread(store_ticket, ticket, self.path)


@contextmanager
def _reading(path: Path | None) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection, or None when there is no store (or no table) yet."""
    target = (path or dead_letter_path()).expanduser()
    if not target.exists():
        yield None
        return
    uri = f"{target.resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=_LOCK_WAIT_SECONDS)) as db:
        yield db if _has_table(db) else None


def _has_table(db: sqlite3.Connection) -> bool:
    found = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'escalation_tickets'"
    ).fetchone()
    return found is not None


def _stored(row: tuple[str, str]) -> StoredTicket:
    return StoredTicket(EscalationTicket.model_validate_json(row[0]), row[1])
