"""The offline policy's extractors: dates, digits, names, ids, amounts and tickers."""

from __future__ import annotations

import pytest

from activities.chat_models.offline.extract import (
    find_amount,
    find_dates,
    find_full_name,
    find_id,
    find_last4,
    find_ticker,
    spoken_digits,
)

# --- extractors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("born 1985-04-12", "1985-04-12"),
        ("April 12 1985", "1985-04-12"),
        ("april 12th, 1985", "1985-04-12"),
        ("12 April 1985", "1985-04-12"),
        ("4/12/1985", "1985-04-12"),
        ("Feb 30 1990", None),
    ],
)
def test_dates(text: str, iso: str | None) -> None:
    found = find_dates(text)
    assert (found[0][0] if found else None) == iso


def test_last_four_digits_by_context() -> None:
    text = "my card ending in 8832, and my social is 4321, born 1985-04-12"
    assert find_last4(text, ssn=False) == "8832" and find_last4(text, ssn=True) == "4321"
    assert find_last4("last four 4321", ssn=True) == "4321"
    assert find_last4("block 2500 dollars", ssn=False) is None
    assert spoken_digits("ending in eight eight three two") == "ending in 8832"


def test_names_ids_amounts_and_tickers() -> None:
    assert find_full_name("hi, this is Alex Morgan calling") == "Alex Morgan"
    assert find_full_name("my name is alex morgan and I was born") == "Alex Morgan"
    assert find_full_name("I am worried") is None
    assert find_id("policy pol a 1001 please", "POL") == "POL-A-1001"
    assert find_id("invoice INV-5001", "INV") == "INV-5001"
    assert find_amount("about $1,200.50 of damage") == 1200.5
    assert find_amount("2500 dollars") == 2500.0
    assert find_ticker("can I buy shares of QNTM") == "QNTM"
    assert find_ticker("what about $btnf") == "BTNF"
