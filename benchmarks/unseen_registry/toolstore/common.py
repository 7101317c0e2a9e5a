"""Leaving the automated conversation: to a person, or by hanging up (no database here)."""

from __future__ import annotations

from typing import Any

from registries.tool_runtime import ToolContext


def escalate_human(ctx: ToolContext, *, reason: str, summary: str = "") -> dict[str, Any]:
    return {"escalated": True, "reason": reason, "message": "A person will pick up shortly."}


def end_call(ctx: ToolContext, *, reason: str = "caller done") -> dict[str, Any]:
    return {"ended": True, "reason": reason}
