"""`baton tickets list|show` on a real ticket store, run as a separate `baton` process."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.ticket_sinks import mark_ticket, store_ticket
from contracts.escalation import EscalationTicket
from contracts.handoff import HandoffStep
from tests.audit.cli import baton


def ticket(ticket_id: str, day: int, **fields: object) -> EscalationTicket:
    return EscalationTicket.model_validate(
        {
            "ticket_id": ticket_id,
            "call_id": ticket_id.removeprefix("call-"),
            "scenario": "banking",
            "reason": "ping-pong between FraudAgent and Concierge",
            "summary": "caller: my card was stolen\nFraudAgent: I blocked it",
            "active_agent": "FraudAgent",
            "created_at": datetime(2026, 11, day, 9, 30, tzinfo=UTC),
            **fields,
        }
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "tickets.sqlite3"
    store_ticket(ticket("call-a", 20), path)
    store_ticket(
        ticket(
            "call-b",
            22,
            reason="caller asked for a person; call back on 503-555-0142",
            key_facts=["block_card: card 8832 blocked"],
            collected_data={"client_id": "C1001"},
            handoff_history=[
                HandoffStep(
                    source="Concierge",
                    target="FraudAgent",
                    handoff_type="announced",
                    reason="stolen card",
                    turn=1,
                )
            ],
            last_utterances=["I want a person", "now please \x1b[2J"],
        ),
        path,
    )
    store_ticket(ticket("call-c", 24), path)
    mark_ticket("call-c", "transferred", path)
    store_ticket(ticket("call-d", 25), path)
    mark_ticket("call-d", "escalated", path)
    return path


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_list_shows_the_tickets_waiting_for_a_person_as_a_table(store: Path) -> None:
    done = baton("tickets", "list", "--db", str(store))
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert table[0] == ["id", "created", "(UTC)", "scenario", "reason", "agent", "status"]
    # Open and escalated (a transfer nobody took) wait for a call back; transferred does not.
    assert [row[0] for row in table[1:]] == ["call-a", "call-b", "call-d"]
    assert table[2][-2:] == ["FraudAgent", "open"]
    assert table[3][-1] == "escalated"
    assert "[phone]" in done.stdout and "555-0142" not in done.stdout  # stored redacted


def test_list_filters_by_status_time_and_count(store: Path) -> None:
    every = baton("tickets", "list", "--db", str(store), "--status", "all")
    assert [row[0] for row in rows(every.stdout)[1:]] == ["call-a", "call-b", "call-c", "call-d"]
    since = baton("tickets", "list", "--db", str(store), "--status", "all", "--since", "2026-11-21")
    assert [row[0] for row in rows(since.stdout)[1:]] == ["call-b", "call-c", "call-d"]
    newest = baton("tickets", "list", "--db", str(store), "--status", "open", "--limit", "1")
    assert [row[0] for row in rows(newest.stdout)[1:]] == ["call-b"]
    moved = baton("tickets", "list", "--db", str(store), "--status", "transferred", "--json")
    (only,) = json.loads(moved.stdout)
    assert only["ticket_id"] == "call-c" and only["status"] == "transferred"


def test_show_prints_the_whole_redacted_ticket(store: Path) -> None:
    done = baton("tickets", "show", "call-b", "--db", str(store))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("ticket call-b (open)\n")
    for expected in (
        "  reason    caller asked for a person; call back on [phone]",
        "  caller: my card was stolen",
        "  - block_card: card 8832 blocked",
        "  client_id: C1001",
        "  turn 1: Concierge → FraudAgent (announced, llm): stolen card",
        "  > I want a person",
    ):
        assert expected in text.splitlines()
    assert "\x1b" not in text  # a control character in the caller's words never reaches it
    as_json = json.loads(baton("tickets", "show", "call-b", "--db", str(store), "--json").stdout)
    assert as_json["handoff_history"][0]["target"] == "FraudAgent"
    assert as_json["status"] == "open"


def test_an_unknown_id_is_a_clear_error(store: Path) -> None:
    done = baton("tickets", "show", "call-zzz", "--db", str(store))
    assert done.returncode == 1
    assert done.stderr.strip() == f"baton: no ticket 'call-zzz' in {store}"


def test_no_store_yet_says_so_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "never.sqlite3"
    listed = baton("tickets", "list", "--db", str(missing))
    assert listed.returncode == 0
    assert listed.stdout.strip() == f"no tickets yet (file {missing})"
    shown = baton("tickets", "show", "call-a", "--db", str(missing))
    assert shown.returncode == 1
    assert shown.stderr.strip() == f"baton: no tickets yet (file {missing})"
    assert not missing.exists()


def test_bad_options_and_a_broken_store_are_one_line_errors(tmp_path: Path) -> None:
    since = baton("tickets", "list", "--since", "last tuesday")
    assert since.returncode == 2 and "not an ISO 8601 date or time" in since.stderr
    assert "Traceback" not in since.stderr
    broken = tmp_path / "broken.sqlite3"
    broken.write_text("not a database")
    done = baton("tickets", "list", "--db", str(broken))
    assert done.returncode == 1
    assert (
        done.stderr.strip() == f"baton: cannot read tickets from {broken}: file is not a database"
    )


def test_the_default_store_is_the_one_workers_write(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store_ticket(ticket("call-a", 20), data / "dead_letter.sqlite3")
    done = baton("tickets", "list", env={"BATON_DATA_DIR": str(data)})
    assert [row[0] for row in rows(done.stdout)[1:]] == ["call-a"]


def test_mark_sets_a_status_that_list_and_show_then_report(store: Path) -> None:
    done = baton("tickets", "mark", "call-b", "closed", "--db", str(store))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ticket call-b is now closed"
    waiting = baton("tickets", "list", "--db", str(store))
    assert [row[0] for row in rows(waiting.stdout)[1:]] == ["call-a", "call-d"]
    shown = baton("tickets", "show", "call-b", "--db", str(store))
    assert shown.stdout.startswith("ticket call-b (closed)\n")
    unknown = baton("tickets", "mark", "call-zzz", "closed", "--db", str(store))
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == f"baton: no ticket 'call-zzz' in {store}"
    wrong = baton("tickets", "mark", "call-b", "lost", "--db", str(store))
    assert wrong.returncode == 2 and "invalid choice: 'lost'" in wrong.stderr
