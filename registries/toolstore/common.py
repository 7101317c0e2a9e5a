"""Handlers of common.yaml: escalating to a human and ending the call."""

from __future__ import annotations

import sqlite3
from typing import Any

from registries.demo_data import next_id, now_iso, run_once
from registries.tool_runtime import ToolContext


def escalate_human(ctx: ToolContext, *, reason: str, summary: str = "") -> dict[str, Any]:
    """Record an escalation for the human queue (once per tool call) and end the AI's turn."""
    reason = reason.strip() or "caller asked for a person"
    customer_id = ctx.client_id

    def effect() -> dict[str, Any]:
        db: sqlite3.Connection = ctx.db
        escalation_id = next_id(db, "ESC")
        db.execute(
            "INSERT INTO escalations VALUES (?, ?, ?, ?, ?, ?)",
            (escalation_id, ctx.call_id, customer_id, reason, summary.strip(), now_iso()),
        )
        return {
            "escalated": True,
            "escalation_id": escalation_id,
            "reason": reason,
            "message": "A specialist will pick up the call shortly. Tell the caller to stay on "
            "the line; they will not need to repeat themselves.",
        }

    return run_once(ctx.db, ctx.idempotency_key, "escalate_human", effect)


def end_call(ctx: ToolContext, *, reason: str = "caller done") -> dict[str, Any]:
    """Signal the end of the call; nothing is written."""
    return {"ended": True, "reason": reason.strip() or "caller done", "call_id": ctx.call_id}
