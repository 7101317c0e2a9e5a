"""Activity `run_business_tool` (tools queue): one business tool call."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from contracts._base import Payload

RUN_BUSINESS_TOOL = "run_business_tool"


class ToolRequest(Payload):
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: Same for every retry of this tool call: mutating tools apply their effect once.
    idempotency_key: str
    system_vars: dict[str, Any] = Field(default_factory=dict)
    registry: str | None = None


class ToolResult(Payload):
    result: dict[str, Any] = Field(default_factory=dict)
    #: Refused arguments (the model can correct them); the handler did not run.
    error: str | None = None
