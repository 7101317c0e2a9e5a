"""The call's state: one model, carried whole through continue-as-new.

Transcript items are a tagged union so auditors, queries and tests read the same typed items.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from activities.payloads import CallSnapshot, EscalationTicket, HandoffStep
from baton.contracts import CallInput, CallStatus, SupervisorTransfer, TurnReply, Utterance
from registries.models import HandoffResolution


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")

    at: datetime
    turn: int = 0


class UserTurn(_Item):
    type: Literal["user_turn"] = "user_turn"
    utterance_id: str
    text: str
    agent: str
    confidence: float | None = None
    answered: bool = True


class AgentTurn(_Item):
    type: Literal["agent_turn"] = "agent_turn"
    agent: str
    text: str
    interrupted: bool = False
    #: What the caller actually heard, when that differs from `text` (cut short by a barge-in,
    #: or spoken from a retried model call's first attempt).
    heard_text: str | None = None


class GreetingItem(_Item):
    type: Literal["greeting"] = "greeting"
    agent: str
    text: str
    is_return: bool = False
    interrupted: bool = False
    heard_text: str | None = None


class ToolCallItem(_Item):
    type: Literal["tool_call"] = "tool_call"
    agent: str
    tool_call_id: str
    tool: str
    arguments: str
    #: Tool calls emitted by one model response share a round, so the window can regroup them.
    round: int = 0


class ToolResultItem(_Item):
    type: Literal["tool_result"] = "tool_result"
    agent: str
    tool_call_id: str
    tool: str
    content: str


class HandoffItem(_Item):
    type: Literal["handoff"] = "handoff"
    source: str
    target: str | None
    success: bool
    handoff_type: str = ""
    reason: str = ""
    tool: str = ""
    error: str | None = None
    share_context: bool = True
    trigger: Literal["llm", "supervisor"] = "llm"
    #: The HandoffService's whole decision (system vars, greeting flag, valid targets).
    resolution: HandoffResolution | None = None
    greeting: str | None = None


class BargeInItem(_Item):
    type: Literal["barge_in"] = "barge_in"
    agent: str
    heard_text: str
    interrupted_text: str


class SupervisorItem(_Item):
    type: Literal["supervisor_action"] = "supervisor_action"
    supervisor: str
    action: str
    target: str | None = None
    reason: str = ""


class DtmfItem(_Item):
    type: Literal["dtmf"] = "dtmf"
    digits: str


class CallEndItem(_Item):
    type: Literal["call_end"] = "call_end"
    status: str
    reason: str


TranscriptItem = Annotated[
    UserTurn
    | AgentTurn
    | GreetingItem
    | ToolCallItem
    | ToolResultItem
    | HandoffItem
    | BargeInItem
    | SupervisorItem
    | DtmfItem
    | CallEndItem,
    Field(discriminator="type"),
]


class AgentUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    turns: int = 0


class CallState(BaseModel):
    """Everything the call knows; queries return it, continue-as-new carries it."""

    call: CallInput
    snapshot: CallSnapshot | None = None
    status: CallStatus = "active"
    end_reason: str = ""
    active_agent: str = ""
    visited: list[str] = Field(default_factory=list)
    system_vars: dict[str, Any] = Field(default_factory=dict)
    transcript: list[TranscriptItem] = Field(default_factory=list)
    handoffs: list[HandoffStep] = Field(default_factory=list)
    usage: dict[str, AgentUsage] = Field(default_factory=dict)
    #: Condensed conversation older than the window (see workflows.conversation).
    summary: str = ""
    #: Transcript index up to which items are folded into `summary`.
    summarized_upto: int = 0
    #: Transcript index the model's window may not reach behind (set by private handoffs).
    window_floor: int = 0
    turn: int = 0
    tool_seq: int = 0
    llm_failures: int = 0
    pending: list[Utterance] = Field(default_factory=list)
    supervisor_transfers: list[SupervisorTransfer] = Field(default_factory=list)
    #: Utterance ids already accepted, newest last (bounded), so duplicates are ignored.
    seen_utterance_ids: list[str] = Field(default_factory=list)
    recent_replies: dict[str, TurnReply] = Field(default_factory=dict)
    ticket: EscalationTicket | None = None
    runs: int = 1


class CallSessionInput(BaseModel):
    """Workflow input: a new call, or the state carried over by continue-as-new."""

    call: CallInput
    carried: CallState | None = None


class CallOutcome(BaseModel):
    call_id: str
    status: CallStatus
    end_reason: str
    active_agent: str
    visited: list[str]
    ticket: EscalationTicket | None = None
