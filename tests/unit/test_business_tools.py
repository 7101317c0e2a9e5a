"""Shipped business tools doing real work on the embedded SQLite demo dataset."""

from __future__ import annotations

import re
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registries.demo_data import default_database_path, open_demo_database
from registries.errors import ToolArgumentError
from registries.loading import Registry
from registries.tool_handlers import run_tool
from registries.tool_runtime import ToolContext


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = open_demo_database(tmp_path / "demo.sqlite3")
    yield connection
    connection.close()


def call(
    registry: Registry,
    db: sqlite3.Connection,
    tool: str,
    key: str = "k1",
    client: str | None = "C1001",
    **args: Any,
) -> dict[str, Any]:
    session = {"client_id": client} if client else {}
    ctx = ToolContext(call_id="call-1", idempotency_key=key, db=db, session=session)
    return run_tool(registry, tool, args, ctx)


def count(db: sqlite3.Connection, sql: str, *params: Any) -> int:
    return int(db.execute(sql, params).fetchone()[0])


def test_database_is_created_on_first_use_in_the_data_dir() -> None:
    path = default_database_path()
    assert not path.exists()
    connection = open_demo_database()
    assert path.exists() and count(connection, "SELECT COUNT(*) FROM customers") >= 6
    connection.close()


def test_the_database_and_its_journal_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "demo.sqlite3"
    connection = open_demo_database(path)
    files = list(tmp_path.glob("demo.sqlite3*"))  # the database, its -wal and -shm files
    assert len(files) == 3
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == {f.name: 0o600 for f in files}
    connection.close()


def test_fresh_databases_are_identical(tmp_path: Path) -> None:
    first, second = (open_demo_database(tmp_path / f"{n}.sqlite3") for n in "ab")
    query = "SELECT * FROM transactions ORDER BY id"
    assert [tuple(r) for r in first.execute(query)] == [tuple(r) for r in second.execute(query)]


def test_verify_identity_matches_the_customer_record(shipped: Registry, db: Any) -> None:
    ok = call(
        shipped,
        db,
        "verify_identity",
        client=None,
        full_name="alex morgan",
        dob="1985-04-12",
        ssn_last4="4321",
    )
    assert ok["verified"] is True and ok["client_id"] == "C1001"
    wrong = call(
        shipped,
        db,
        "verify_identity",
        client=None,
        full_name="Alex Morgan",
        dob="1985-04-12",
        ssn_last4="0000",
    )
    assert wrong["verified"] is False


def test_balance_needs_an_identified_caller(shipped: Registry, db: Any) -> None:
    assert "error" in call(shipped, db, "get_account_balance", client=None)
    result = call(shipped, db, "get_account_balance", account_type="checking")
    assert result and "error" not in result


def test_analysis_flags_the_seeded_suspicious_purchases(shipped: Registry, db: Any) -> None:
    result = call(shipped, db, "analyze_recent_transactions", days=30)
    assert "Bucharest" in str(result)


def test_block_card_applies_once_per_tool_call(shipped: Registry, db: Any) -> None:
    first = call(shipped, db, "block_card", key="call-1/act-7", last4="8832", reason="stolen")
    retry = call(shipped, db, "block_card", key="call-1/act-7", last4="8832", reason="stolen")
    assert first == retry and first["blocked"] is True
    assert count(db, "SELECT COUNT(*) FROM cards WHERE last4='8832' AND status='blocked'") == 1
    again = call(shipped, db, "block_card", key="call-1/act-9", last4="8832", reason="stolen")
    assert again["already_blocked"] is True


def test_fraud_case_is_opened_once_even_when_retried(shipped: Registry, db: Any) -> None:
    for _ in range(3):
        result = call(
            shipped,
            db,
            "create_fraud_case",
            key="call-1/act-3",
            description="two charges in Bucharest",
            last4="8832",
        )
    assert result["case_id"].startswith("FC-")
    assert count(db, "SELECT COUNT(*) FROM fraud_cases") == 1


def test_claim_and_booking_are_idempotent(shipped: Registry, db: Any) -> None:
    policy = call(shipped, db, "list_policies")["policies"][0]["policy_id"]
    claims_before = count(db, "SELECT COUNT(*) FROM claims")
    for _ in range(2):
        claim = call(
            shipped,
            db,
            "file_claim",
            key="claim-key",
            policy_id=policy,
            description="rear-ended at a light",
            amount=1200.0,
        )
    assert "error" not in claim
    assert count(db, "SELECT COUNT(*) FROM claims") == claims_before + 1
    slot = call(shipped, db, "find_available_appointments")["slots"][0]["appointment_id"]
    for _ in range(2):
        booked = call(shipped, db, "book_appointment", key="book-key", appointment_id=slot)
    assert "error" not in booked
    assert count(db, "SELECT COUNT(*) FROM appointments WHERE id=? AND status='booked'", slot) == 1


def test_escalation_is_recorded(shipped: Registry, db: Any) -> None:
    call(shipped, db, "escalate_human", key="esc", reason="caller asked for a person")
    assert count(db, "SELECT COUNT(*) FROM escalations") == 1


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("block_card", {"reason": "x"}, "block_card: missing required argument(s): last4"),
        ("block_card", {"last4": "12345"}, "last4: '12345' does not match '^[0-9]{4}$'"),
        ("get_recent_transactions", {"limit": "five"}, "limit: 'five' is not of type 'integer'"),
        ("get_recent_transactions", {"limit": True}, "limit: True is not of type 'integer'"),
        ("get_recent_transactions", {"limit": -5}, "limit: -5 is less than the minimum of 1"),
        (
            "get_recent_transactions",
            {"limit": 1000},
            "limit: 1000 is greater than the maximum of 20",
        ),
        ("file_claim", {"policy_id": "P1", "description": "d", "amount": 0}, "amount: 0 is less"),
        ("recommend_card", {"priority": "gold"}, "priority: 'gold' is not one of ['cashback'"),
        ("list_cards", {"surprise": 1}, "unknown argument(s): surprise; allowed: none"),
        ("not_a_tool", {}, "not_a_tool: no such business tool"),
    ],
)
def test_bad_arguments_are_refused_before_the_handler(
    shipped: Registry, db: Any, tool: str, args: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolArgumentError, match=re.escape(message)):
        call(shipped, db, tool, **args)


def test_the_limits_of_a_shipped_schema_still_accept_a_valid_call(
    shipped: Registry, db: Any
) -> None:
    for limit in (1, 20):
        result = call(shipped, db, "get_recent_transactions", limit=limit)
        assert "error" not in result and 1 <= len(result["transactions"]) <= limit


def test_every_shipped_tool_schema_is_valid_and_has_its_validator(shipped: Registry) -> None:
    assert shipped.problems == []
    assert set(shipped.tool_validators) == set(shipped.tools)
