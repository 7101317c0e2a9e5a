"""The call's state: one model, carried whole through continue-as-new.

It is the workflow's own: clients read it through the typed query results in
`contracts.calls`, and its transcript items are `contracts.transcript`'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from contracts.calls import (
    AgentUsage,
    CallInput,
    CallStatus,
    LeaseHolder,
    SupervisorTransfer,
    TurnReply,
    Utterance,
)
from contracts.escalation import EscalationTicket
from contracts.handoff import HandoffStep
from contracts.routes import RouteChange
from contracts.snapshot import CallSnapshot
from contracts.transcript import TranscriptItem, TransferItem


class UnheardReply(BaseModel):
    """A reply lost with its gateway, waiting for the caller to reconnect (workflows.resay)."""

    agent: str
    text: str
    #: The caller's connection it was spoken to (`workflows.lease.holder_key`).
    holder: str


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
    #: Progress: replies that answered the caller (a model response with no tool calls) and,
    #: from patch "progress-between-hops", caller turns and business tools that succeeded; and
    #: that count at each accepted handoff (one per `handoffs` entry), for the loop guard.
    answers: int = 0
    answers_at_handoffs: list[int] = Field(default_factory=list)
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
    #: Model responses in a row whose tool calls were all refused, and why (loop guard).
    refused_rounds: list[str] = Field(default_factory=list)
    #: When the media gateway's lease on a voice call runs out (None: no lease kept).
    lease_expires_at: datetime | None = None
    #: The gateway whose renewals keep the lease (see `workflows.lease`).
    lease_holder: LeaseHolder | None = None
    #: The last reply, if it was lost with its gateway and not yet said again.
    unheard: UnheardReply | None = None
    pending: list[Utterance] = Field(default_factory=list)
    supervisor_transfers: list[SupervisorTransfer] = Field(default_factory=list)
    #: A supervisor's live changes to this call's routes, in the order accepted.
    route_changes: list[RouteChange] = Field(default_factory=list)
    #: Utterance ids already accepted, newest last (bounded), so duplicates are ignored.
    seen_utterance_ids: list[str] = Field(default_factory=list)
    recent_replies: dict[str, TurnReply] = Field(default_factory=dict)
    ticket: EscalationTicket | None = None
    #: How the transfer to a person after the escalation ended (workflows.transfer).
    transfer: TransferItem | None = None
    runs: int = 1


class CallSessionInput(BaseModel):
    """Workflow input: a new call, or the state carried over by continue-as-new."""

    call: CallInput
    carried: CallState | None = None
