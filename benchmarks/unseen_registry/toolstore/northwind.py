"""Handlers of northwind.yaml, answering from fixed sample data."""

from __future__ import annotations

from typing import Any

from registries.tool_runtime import ToolContext

_POTS = {"easy_access": 5200.0, "fixed_rate": 12000.0, "junior_isa": 800.0}


def get_savings_balance(ctx: ToolContext, *, pot: str | None = None) -> dict[str, Any]:
    return {"balances": {pot: _POTS[pot]} if pot else _POTS}


def branch_opening_times(ctx: ToolContext, *, town: str = "") -> dict[str, Any]:
    return {"message": f"The {town or 'nearest'} branch is open nine to five, Monday to Saturday."}


def confirm_member(ctx: ToolContext, *, member_number: str, dob: str) -> dict[str, Any]:
    return {"verified": member_number == "1234567", "member_number": member_number}


def fund_performance(ctx: ToolContext, *, fund: str) -> dict[str, Any]:
    return {"message": f"The {fund} fund grew 4 percent over the last twelve months."}


def switch_fund(ctx: ToolContext, *, fund: str) -> dict[str, Any]:
    return {"message": f"Your savings will move to the {fund} fund within two working days."}


def mortgage_quote(ctx: ToolContext, *, amount: float) -> dict[str, Any]:
    return {
        "message": f"Borrowing {amount:.0f} pounds would cost about {amount / 180:.0f} a month."
    }
