"""The escalation ticket store: each ticket once, in a file only its owner can read."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.escalation import open_tickets, store_ticket
from activities.ticket_sinks import StoredTicket, list_tickets, mark_ticket, ticket_by_id
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


def test_the_stored_ticket_keeps_no_pii_in_its_free_text(tmp_path: Path) -> None:
    spoken = ticket().model_copy(
        update={
            "summary": "caller: my date of birth is 1985-04-12 and my ssn last four is 4321",
            "last_utterances": ["call me on +1-503-555-0142"],
            "collected_data": {"session_profile": {"email": "alex.morgan@example.com"}},
        }
    )
    store = tmp_path / "dead_letter.sqlite3"
    store_ticket(spoken, store)
    (kept,) = open_tickets(store)
    assert kept.summary == "caller: my date of birth is [date] and my ssn last four is [ssn4]"
    assert kept.last_utterances == ["call me on [phone]"]
    assert kept.collected_data == {"session_profile": {"email": "[email]"}}
    raw = store.read_bytes()
    assert b"1985-04-12" not in raw and b"555-0142" not in raw and b"alex.morgan" not in raw


def test_a_marked_ticket_leaves_the_open_list_and_keeps_its_status(tmp_path: Path) -> None:
    store = tmp_path / "dead_letter.sqlite3"
    store_ticket(ticket(), store)
    assert mark_ticket("call-1", "transferred", store) is True
    assert open_tickets(store) == []
    found = ticket_by_id("call-1", store)
    assert found is not None and found.status == "transferred"
    assert mark_ticket("no-such-call", "escalated", store) is False
    with pytest.raises(ValueError, match="unknown ticket status"):
        mark_ticket("call-1", "lost", store)  # type: ignore[arg-type]


def ids(found: list[StoredTicket]) -> list[str]:
    return [stored.ticket.ticket_id for stored in found]


def test_listing_filters_by_status_and_time_and_keeps_the_newest(tmp_path: Path) -> None:
    store = tmp_path / "dead_letter.sqlite3"
    for day in (1, 2, 3):
        created = datetime(2026, 11, day, tzinfo=UTC)
        store_ticket(
            ticket().model_copy(update={"ticket_id": f"call-{day}", "created_at": created}), store
        )
    mark_ticket("call-2", "transferred", store)
    mark_ticket("call-3", "escalated", store)  # nobody took it: still waiting for a person
    assert ids(list_tickets(store)) == ["call-1", "call-3"]
    assert ids(list_tickets(store, status=None)) == ["call-1", "call-2", "call-3"]
    assert ids(list_tickets(store, status="transferred")) == ["call-2"]
    assert ids(list_tickets(store, status="open")) == ["call-1"]
    since = datetime(2026, 11, 2, tzinfo=UTC)
    assert ids(list_tickets(store, status=None, since=since)) == ["call-2", "call-3"]
    assert ids(list_tickets(store, status=None, limit=2)) == ["call-2", "call-3"]


def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    store = tmp_path / "none.sqlite3"
    assert open_tickets(store) == [] and ticket_by_id("call-1", store) is None
    assert mark_ticket("call-1", "closed", store) is False
    assert not store.exists()
