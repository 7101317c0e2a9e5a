"""Handlers of skyline.yaml, answering from fixed sample data."""

from __future__ import annotations

from typing import Any

from registries.tool_runtime import ToolContext


def check_outage(ctx: ToolContext, *, postcode: str) -> dict[str, Any]:
    return {"message": f"There is no known outage near {postcode}."}


def run_line_test(ctx: ToolContext) -> dict[str, Any]:
    return {"message": "The line test passed; restarting the router should help."}


def reset_voicemail_pin(ctx: ToolContext) -> dict[str, Any]:
    return {"message": "A new voicemail PIN is on its way by text."}


def get_latest_bill(ctx: ToolContext) -> dict[str, Any]:
    return {"message": "Your latest bill is 42 pounds, including 12 pounds of calls abroad."}


def credit_account(ctx: ToolContext, *, amount: float, reason: str) -> dict[str, Any]:
    return {"message": f"{amount:.2f} pounds has been credited to your account."}


def porting_code(ctx: ToolContext) -> dict[str, Any]:
    return {"message": "Your number transfer code is on its way by text."}


def add_travel_pass(ctx: ToolContext, *, country: str) -> dict[str, Any]:
    return {"message": f"A travel pass for {country} is on your account from today."}
