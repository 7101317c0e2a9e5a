"""The escalation ticket store: each ticket once, in a file only its owner can read."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

from activities.escalation import open_tickets, store_ticket
from contracts.escalation import EscalationTicket


def ticket() -> EscalationTicket:
    return EscalationTicket(
        ticket_id="call-1",
        call_id="1",
        scenario="banking",
        reason="caller asked for a person",
        summary="caller: my card was stolen",
        active_agent="FraudAgent",
        created_at=datetime(2026, 11, 24, tzinfo=UTC),
    )


def test_a_retried_ticket_is_stored_once_in_an_owner_only_file(tmp_path: Path) -> None:
    store = tmp_path / "dead_letter.sqlite3"
    store_ticket(ticket(), store)
    store_ticket(ticket(), store)  # an activity retry
    assert [t.ticket_id for t in open_tickets(store)] == ["call-1"]
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
