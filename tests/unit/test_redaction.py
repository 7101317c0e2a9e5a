"""PII never reaches a log line: cards (Luhn), SSNs, labelled last fours, birthdays, phones,
e-mail addresses; ids, amounts and timestamps survive."""

from __future__ import annotations

import json
import logging

import pytest
import structlog

from runtime.logs import configure_logging
from runtime.redaction import redact


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("card 4111 1111 1111 1111 please", "card [card] please"),
        ("card 4111-1111-1111-1111", "card [card]"),
        ("SSN 123-45-6789", "SSN [ssn]"),
        ("my ssn last four is 4321", "my ssn last four is [ssn4]"),
        ('{"ssn_last4": "4321"}', '{"ssn_last4": "[ssn4]"}'),
        ("born 1985-04-12", "born [date]"),
        ("dob 04/12/1985", "dob [date]"),
        ("call +1-503-555-0142 or (503) 555-0142", "call [phone] or [phone]"),
        ("write to alex.morgan@example.com", "write to [email]"),
    ],
)
def test_pii_is_masked(text: str, masked: str) -> None:
    assert redact(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "4111-1111-1111-1112 fails the Luhn check",  # not a card number
        "account A1001-CHK holds 482537 cents",
        "at 2026-11-24T15:00:00.123Z",
        "utterance u-1a2b3c4d5e6f took 1234 ms on 127.0.0.1:7233",
        "card ending in 8832",  # the last four of a card identify nothing alone
    ],
)
def test_ids_amounts_and_timestamps_survive(text: str) -> None:
    assert redact(text) == text


def test_baton_and_sdk_lines_are_both_json_and_both_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_LOG_FORMAT", "json")
    monkeypatch.setenv("BATON_LOG_LEVEL", "INFO")
    configure_logging()
    structlog.get_logger("baton.test").warning("caller said", text="my DOB is 1985-04-12")
    logging.getLogger("temporalio.worker").warning("payload %s", {"email": "a.b@example.com"})
    lines = [json.loads(line) for line in capsys.readouterr().err.strip().splitlines()]
    assert lines[0]["text"] == "my DOB is [date]"
    assert lines[1]["event"] == "payload {'email': '[email]'}"
    assert lines[1]["logger"] == "temporalio.worker" and lines[1]["level"] == "warning"
