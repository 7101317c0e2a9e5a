"""The call as an auditor reads it: what the report's JSON holds, field by field.

`SCHEMA_VERSION` changes only when a field is removed or changes meaning; new fields with
defaults keep it. docs/AUDIT.md describes every field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

Kind = Literal[
    "call_start",
    "utterance",
    "transcription",
    "greeting",
    "reply",
    "tool_call",
    "handoff",
    "barge_in",
    "backchannel",
    "dtmf",
    "supervisor_transfer",
    "gateway_move",
    "route_change",
    "loop_guard",
    "escalation",
    "transfer",
    "hang_up",
    "continue_as_new",
    "call_end",
    "failure",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallInfo(_Model):
    """One tool call the model made and what came of it."""

    call_id: str
    name: str
    #: The arguments as the model wrote them (raw text; may not be JSON).
    arguments: str
    #: "business" (a tool activity ran), "handoff" (the HandoffService decided), "refused"
    #: (the workflow refused it: unknown tool, arguments not a JSON object), "skipped" (the
    #: call moved on before it ran).
    handled_as: Literal["business", "handoff", "refused", "skipped"] = "business"
    result: Any = None
    error: str | None = None
    idempotency_key: str | None = None
    #: Attempts of the tool activity (1: ran once).
    attempts: int = 0


class HandoffInfo(_Model):
    """One handoff request and the HandoffService's decision."""

    source: str
    target: str | None
    success: bool
    handoff_type: str = ""
    reason: str = ""
    trigger: Literal["llm", "supervisor", "rule"] = "llm"
    tool: str = ""
    #: Which rule allowed it: "edge A → B" (an explicit route), "live route A → B (added)" or
    #: "(retargeted)" (a supervisor's change to this call), "generic handoff", or "" when
    #: refused (see `refusal`) or when no snapshot was pinned.
    rule: str = ""
    refusal: str | None = None
    valid_targets: list[str] = Field(default_factory=list)
    share_context: bool = True
    greeting: str | None = None
    is_return: bool = False


class TimelineItem(_Model):
    """One thing that happened in the call, in history order."""

    at: datetime
    #: Run of the continue-as-new chain (1 = first).
    run: int
    #: The caller turn it belongs to (0: before the first utterance).
    turn: int
    #: "caller", an agent's name, "supervisor" or "system".
    speaker: str
    kind: Kind
    #: What was said or done, in words.
    text: str = ""
    #: For spoken items: what the caller actually heard (None: nothing is known to differ).
    heard: str | None = None
    interrupted: bool = False
    tool: ToolCallInfo | None = None
    handoff: HandoffInfo | None = None
    #: Small extra facts of the kind (documented per kind in docs/AUDIT.md).
    details: dict[str, Any] = Field(default_factory=dict)


class TurnTiming(_Model):
    """Where one caller turn's time went, from event timestamps (milliseconds)."""

    turn: int
    run: int
    utterance_id: str = ""
    agents: list[str] = Field(default_factory=list)
    started_at: datetime | None = None
    #: From the utterance's arrival to the turn's last recorded event.
    total_ms: int = 0
    stt_ms: int = 0
    model_ms: int = 0
    tool_ms: int = 0
    tts_ms: int = 0
    handoff_ms: int = 0
    model_calls: int = 0


class AgentTokens(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0


class RunInfo(_Model):
    run_id: str
    started_at: datetime | None = None
    ended_at: datetime | None = None
    events: int = 0
    #: How the run closed: "continued_as_new", "completed", "failed", ..., or "running".
    closed_as: str = "running"


class CallInfo(_Model):
    call_id: str
    workflow_id: str
    scenario: str = ""
    channel: str = ""
    snapshot_hash: str = ""
    baton_version: str = ""
    patch_ids: list[str] = Field(default_factory=list)
    status: str = "active"
    end_reason: str = ""
    visited: list[str] = Field(default_factory=list)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    ticket_id: str | None = None


class CallTimeline(_Model):
    """The whole report."""

    schema_version: int = SCHEMA_VERSION
    call: CallInfo
    runs: list[RunInfo] = Field(default_factory=list)
    items: list[TimelineItem] = Field(default_factory=list)
    turns: list[TurnTiming] = Field(default_factory=list)
    tokens: dict[str, AgentTokens] = Field(default_factory=dict)
