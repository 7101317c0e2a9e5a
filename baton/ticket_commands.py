"""`baton tickets list|show|mark`: the escalation tickets in the local store, as a contact
center reads them (redacted, as stored; a webhook receiver keeps its own copy).

`list` and `show` open the SQLite store read-only, so looking never creates or changes it;
`mark` sets one ticket's status (a person closing it once dealt with).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.ticket_sinks import (
    WAITING,
    StoredTicket,
    dead_letter_path,
    list_tickets,
    mark_ticket,
    ticket_by_id,
)
from baton.preflight import CommandFailedError
from contracts.escalation import TICKET_STATUSES

#: Widest reason shown in the table; `show` prints it whole.
_REASON_WIDTH = 48


def add_parser(commands: Any) -> None:
    tickets = commands.add_parser(
        "tickets", help="read escalation tickets from the local store (BATON_DEAD_LETTER_DB)"
    )
    actions = tickets.add_subparsers(dest="tickets_action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="tickets as a table, oldest first")
    listing.add_argument(
        "--status",
        choices=[WAITING, *TICKET_STATUSES, "all"],
        default=WAITING,
        help="which tickets (default: waiting, i.e. open or escalated: a person must still "
        "call back)",
    )
    listing.add_argument(
        "--since", type=_iso_time, metavar="ISO", help="created at or after (UTC unless given)"
    )
    listing.add_argument("--limit", type=_positive, metavar="N", help="only the newest N")
    listing.add_argument("--json", action="store_true", help="one JSON array on stdout")
    _add_store_option(listing)
    listing.set_defaults(handler=run_list)
    show = actions.add_parser("show", help="one ticket in full (summary, facts, history)")
    show.add_argument("ticket_id", metavar="ID")
    show.add_argument("--json", action="store_true", help="the ticket as JSON on stdout")
    _add_store_option(show)
    show.set_defaults(handler=run_show)
    mark = actions.add_parser("mark", help="set a ticket's status (e.g. closed once dealt with)")
    mark.add_argument("ticket_id", metavar="ID")
    mark.add_argument("status", choices=TICKET_STATUSES)
    _add_store_option(mark)
    mark.set_defaults(handler=run_mark)


def run_list(args: argparse.Namespace) -> int:
    store = _store(args)
    if not store.exists():
        print(f"no tickets yet (file {store})")
        return 0
    status = None if args.status == "all" else args.status
    with _reading(store):
        found = list_tickets(store, status=status, since=args.since, limit=args.limit)
    if args.json:
        print(json.dumps([_as_json(stored) for stored in found], indent=2))
        return 0
    if not found:
        print(f"no {'' if status is None else status + ' '}tickets (file {store})")
        return 0
    print(_table(found))
    return 0


def run_show(args: argparse.Namespace) -> int:
    store = _store(args)
    if not store.exists():
        raise CommandFailedError(f"no tickets yet (file {store})")
    with _reading(store):
        stored = ticket_by_id(args.ticket_id, store)
    if stored is None:
        raise CommandFailedError(f"no ticket {args.ticket_id!r} in {store}")
    if args.json:
        print(json.dumps(_as_json(stored), indent=2))
    else:
        print("\n".join(_details(stored)))
    return 0


def run_mark(args: argparse.Namespace) -> int:
    store = _store(args)
    if not store.exists():
        raise CommandFailedError(f"no tickets yet (file {store})")
    with _reading(store):
        changed = mark_ticket(args.ticket_id, args.status, store)
    if not changed:
        raise CommandFailedError(f"no ticket {args.ticket_id!r} in {store}")
    print(f"ticket {args.ticket_id} is now {args.status}")
    return 0


def _table(found: list[StoredTicket]) -> str:
    header = ("id", "created (UTC)", "scenario", "reason", "agent", "status")
    rows = [
        (
            t.ticket.ticket_id,
            t.ticket.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            t.ticket.scenario,
            _shorten(t.ticket.reason, _REASON_WIDTH),
            t.ticket.active_agent,
            t.status,
        )
        for t in found
    ]
    cells = [tuple(_printable(cell) for cell in row) for row in [header, *rows]]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def _details(stored: StoredTicket) -> Iterator[str]:
    ticket = stored.ticket
    yield f"ticket {_printable(ticket.ticket_id)} ({stored.status})"
    yield f"  call      {_printable(ticket.call_id)} · scenario {_printable(ticket.scenario)}"
    yield f"  agent     {_printable(ticket.active_agent)}"
    yield f"  created   {ticket.created_at.astimezone(UTC).isoformat(timespec='seconds')}"
    yield f"  reason    {_printable(ticket.reason)}"
    yield "summary:"
    yield from (f"  {_printable(line)}" for line in ticket.summary.splitlines() or ["(none)"])
    yield "key facts:"
    yield from (f"  - {_printable(fact)}" for fact in ticket.key_facts or ["(none)"])
    yield "collected data:"
    if not ticket.collected_data:
        yield "  (none)"
    for key, value in ticket.collected_data.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        yield f"  {_printable(key)}: {_printable(text)}"
    yield "handoff history:"
    if not ticket.handoff_history:
        yield "  (none)"
    for step in ticket.handoff_history:
        yield _printable(
            f"  turn {step.turn}: {step.source} → {step.target} ({step.handoff_type}, "
            f"{step.trigger}): {step.reason}"
        )
    yield "last utterances:"
    yield from (f"  > {_printable(line)}" for line in ticket.last_utterances or ["(none)"])


def _as_json(stored: StoredTicket) -> dict[str, Any]:
    return {**stored.ticket.model_dump(mode="json"), "status": stored.status}


@contextmanager
def _reading(store: Path) -> Iterator[None]:
    """Turns a store SQLite cannot read into one line (exit 1) instead of a traceback."""
    try:
        yield
    except sqlite3.Error as error:
        raise CommandFailedError(f"cannot read tickets from {store}: {error}") from None


def _store(args: argparse.Namespace) -> Path:
    return Path(args.db).expanduser() if args.db else dead_letter_path()


def _add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", metavar="FILE", help="ticket store (default $BATON_DEAD_LETTER_DB or data dir)"
    )


def _iso_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 date or time: {text!r} (e.g. 2026-11-25 or 2026-11-25T09:30)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def _shorten(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _printable(text: str) -> str:
    # Tickets quote callers; a control character in their words must not drive the terminal.
    return "".join(ch if ch.isprintable() else " " for ch in text)
