"""The typed items of a call's conversation: a tagged union on `type`.

Queries return them, the CLI and the softphone show them, auditors and tests read them. Items
are mutable because the workflow completes one in place (a reply cut short by a barge-in).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.registry import HandoffResolution
from contracts.routes import RouteChange


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
    #: Lost with its gateway, then said again once the caller reconnected (workflows.resay);
    #: `heard_text` says what was heard of that second time.
    said_again: bool = False


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
    #: Who asked: the model, a supervisor, or a route's `on_tool_result` rule (code, no model).
    trigger: Literal["llm", "supervisor", "rule"] = "llm"
    #: The HandoffService's whole decision (system vars, greeting flag, valid targets).
    resolution: HandoffResolution | None = None
    greeting: str | None = None


class BargeInItem(_Item):
    type: Literal["barge_in"] = "barge_in"
    agent: str
    heard_text: str
    interrupted_text: str


class BackchannelItem(_Item):
    """The caller said "mm-hmm", "okay"... over a reply, which carried on: not a turn, and no
    model call (see contracts.words)."""

    type: Literal["backchannel"] = "backchannel"
    utterance_id: str
    text: str
    #: The agent whose reply carried on.
    agent: str


class SupervisorItem(_Item):
    type: Literal["supervisor_action"] = "supervisor_action"
    supervisor: str
    action: str
    target: str | None = None
    reason: str = ""


class RouteChangeItem(_Item):
    """A supervisor changed this call's routes (Update `change_routes`); later handoffs follow."""

    type: Literal["route_change"] = "route_change"
    change: RouteChange


class DtmfItem(_Item):
    type: Literal["dtmf"] = "dtmf"
    digits: str


class FillerItem(_Item):
    """A short filler ("One moment, please.") spoken while the model, a tool round or the
    recognizer was slow, so the record shows what filled the caller's wait."""

    type: Literal["filler"] = "filler"
    agent: str
    text: str
    #: What was slow: "model", "tools" or "speech" (the recognizer).
    waiting_for: str = "model"


class ModelFallbackItem(_Item):
    """The agent's model failed for this turn and the turn was tried once on its fallback."""

    type: Literal["model_fallback"] = "model_fallback"
    agent: str
    #: The fallback model (deployment or name), or "offline": a person takes the call.
    fallback: str
    #: Why the primary gave up (provider error, timeout); no caller data.
    reason: str
    #: The model that answered (empty when the fallback failed too).
    answered_by: str = ""


class TransferItem(_Item):
    """How the transfer to a person after an escalation ended: `connected` (the platform has
    the caller), `taken` (a console's human took the call), or the caller stayed with us:
    `declined`, `timeout` (nobody took it within the hold timeout), `failed`, `hung_up`."""

    type: Literal["transfer"] = "transfer"
    target_kind: str
    target_label: str = ""
    ticket_id: str
    outcome: Literal["connected", "taken", "declined", "timeout", "failed", "hung_up"]
    #: The platform's status or the console's note: codes and ids, never caller data.
    detail: str = ""
    taken_by: str = ""


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
    | BackchannelItem
    | SupervisorItem
    | RouteChangeItem
    | DtmfItem
    | TransferItem
    | FillerItem
    | ModelFallbackItem
    | CallEndItem,
    Field(discriminator="type"),
]
