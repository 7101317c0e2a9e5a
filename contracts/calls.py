"""The call workflow's messages: its input and result, the Update and signals that reach it,
the queries that read it, and every payload they carry."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts._base import Payload
from contracts.escalation import EscalationTicket
from contracts.transcript import TranscriptItem, TransferItem

UPDATE_SUBMIT_UTTERANCE = "submit_utterance"
SIGNAL_UTTERANCE = "utterance"
SIGNAL_BARGE_IN = "barge_in"
SIGNAL_DTMF = "dtmf"
SIGNAL_HANG_UP = "hang_up"
SIGNAL_SUPERVISOR_TRANSFER = "supervisor_transfer"
SIGNAL_RENEW_LEASE = "renew_lease"
#: The whole state (CLI `--json`, tests); the gateway reads the two small views below.
QUERY_STATE = "state"
QUERY_SUMMARY = "summary"
QUERY_TRANSCRIPT = "transcript"
QUERY_TRANSCRIPT_SINCE = "transcript_since"
QUERY_HANDOFF_HISTORY = "handoff_history"
QUERY_TOKEN_USAGE = "token_usage"

MAX_UTTERANCE_CHARS = 4000
CallStatus = Literal["active", "completed", "escalated", "transferred", "hung_up", "failed"]
Channel = Literal["text", "browser", "twilio", "acs"]


class CallInput(Payload):
    """What starts a call."""

    call_id: str = Field(min_length=1, max_length=200)
    scenario: str = "banking"
    caller_profile: dict[str, Any] = Field(default_factory=dict)
    channel: Channel = "text"
    #: gRPC address of the media gateway serving this call; None for text calls.
    gateway_address: str | None = None
    #: The platform's own id for the live call (Twilio CallSid, ACS call connection id), which
    #: a transfer to a human needs; None for browser and text calls.
    platform_call_id: str | None = Field(default=None, max_length=200)
    #: Registry folder the workers load the scenario from; None means the worker's default.
    registry: str | None = None
    #: Continue-as-new once the run's history holds this many events.
    max_history_events: int = Field(default=4000, ge=50)

    def static_summary(self) -> str:
        """The call's one line in the Temporal Web UI, set where the call is started: scenario,
        channel and the caller's client id when known. Never a name or phone number; the line
        is a payload like any other, so the codec encrypts it in history."""
        client_id = self.caller_profile.get("client_id")
        caller = f" · caller {client_id}" if isinstance(client_id, str) and client_id else ""
        return f"{self.scenario} call {self.call_id} · {self.channel}{caller}"


class CallSessionStart(Payload):
    """The workflow's start argument as clients send it (the workflow adds carried state)."""

    call: CallInput


class CallOutcome(Payload):
    """The workflow's result."""

    call_id: str
    status: CallStatus
    end_reason: str
    active_agent: str
    visited: list[str]
    ticket: EscalationTicket | None = None
    #: How the transfer to a person went, when the scenario gave the escalation a target.
    transfer: TransferItem | None = None


# --- the Update and signals -------------------------------------------------------------


class Utterance(Payload):
    """One thing the caller said (text) or an audio segment to transcribe first."""

    utterance_id: str = Field(min_length=1, max_length=200)
    text: str | None = Field(default=None, max_length=MAX_UTTERANCE_CHARS)
    #: Gateway reference of a recorded caller segment, when the gateway did not transcribe.
    segment_ref: str | None = None
    #: Recognizer confidence when the text came from speech.
    confidence: float | None = None
    #: Said over a reply, which the gateway paused and holds until the words say whether it
    #: was only a backchannel (resumed) or an interruption (cut); see contracts.words.
    paused_reply: bool = False


class BargeIn(Payload):
    """The caller spoke over the agent; the gateway already stopped playback."""

    utterance_id: str | None = None
    #: Characters of the interrupted reply the caller heard before playback stopped.
    heard_chars: int | None = None
    played_ms: int | None = None
    #: Those characters, for a reply the workflow did not yet have whole when it was cut.
    heard_text: str | None = None


class Dtmf(Payload):
    digits: str = Field(pattern=r"^[0-9*#A-D]{1,32}$")


class SupervisorTransfer(Payload):
    """A supervisor (code, not the LLM) moves the call to another agent."""

    target_agent: str = Field(min_length=1)
    reason: str = ""
    supervisor: str = "supervisor"


#: The gateway holding a voice call renews the call's lease this often...
LEASE_RENEW_SECONDS = 10.0
#: ...and the workflow hangs up by itself once no renewal came for this long (a dead gateway
#: process must not leave a call open; a live one hangs up after its 15 s reconnect grace).
LEASE_LAPSE_SECONDS = 30.0


class LeaseRenewal(Payload):
    """The gateway at `gateway_address` still holds the call (connected, or in its grace)."""

    gateway_address: str = ""
    #: Which gateway process renews (a restarted gateway on the same address is another one).
    gateway_id: str = ""
    #: When the caller's connection to that gateway began (its clock). Two gateways may renew
    #: at once (the old one in its reconnect grace, the new one the caller redialed): the one
    #: with the newest connection holds the call, and the other's renewals are stale.
    connected_at: datetime | None = None
    #: Whether the caller's connection to that gateway is up (False: in its reconnect grace).
    #: None from a gateway that does not say.
    line_open: bool | None = None


class LeaseHolder(Payload):
    """The gateway holding a voice call, as the workflow's lease records it."""

    gateway_id: str
    gateway_address: str
    connected_at: datetime
    #: When (workflow time) this gateway became the holder.
    since: datetime
    #: What the holder's latest renewal said of the caller's line, and when (workflow time) it
    #: came: no time (and no open line) from a workflow or gateway that did not record them.
    line_open: bool = False
    renewed_at: datetime | None = None


#: A holder that has not renewed for this long may be dead: its line is no longer trusted open.
LINE_OPEN_TRUSTED_SECONDS = LEASE_RENEW_SECONDS + 5.0


def line_open_elsewhere(holder: LeaseHolder | None, media_address: str, now: datetime) -> bool:
    """True when another gateway holds the call with the caller's line open there, as its
    last renewal (recent enough to trust) said: a second connection with the same token must
    then be refused, wherever it lands, so a replayed token never takes a live call over.

    The holder at `media_address` itself is never "elsewhere": only one process binds an
    address, so a holder there that is not this gateway is its dead predecessor."""
    return (
        holder is not None
        and holder.line_open
        and holder.renewed_at is not None
        and holder.gateway_address != media_address
        and (now - holder.renewed_at).total_seconds() < LINE_OPEN_TRUSTED_SECONDS
    )


def stale_renewal(renewal: LeaseRenewal, holder: LeaseHolder | None) -> bool:
    """True when `renewal` comes from another gateway than `holder` over an older (or the
    same) connection of the caller: the old gateway of a caller who redialed, still in its
    reconnect grace. The workflow ignores it and an audit reads it the same way."""
    return (
        holder is not None
        and renewal.connected_at is not None
        and holder.gateway_id != renewal.gateway_id
        and renewal.connected_at <= holder.connected_at
    )


class HangUp(Payload):
    reason: str = "caller hung up"


class SpokenLine(Payload):
    agent: str
    text: str
    kind: Literal["greeting", "reply"] = "reply"


class TurnReply(Payload):
    """What the caller hears back for one utterance (the Update's result)."""

    utterance_id: str
    agent: str
    text: str
    #: Greetings and replies in the order they were spoken this turn.
    spoken: list[SpokenLine] = Field(default_factory=list)
    handoffs: list[str] = Field(default_factory=list)
    status: CallStatus = "active"
    duplicate: bool = False


# --- query results ----------------------------------------------------------------------


class CallSummary(Payload):
    """Where a call stands, without its transcript or scenario (`summary` query)."""

    status: CallStatus
    active_agent: str
    visited: list[str]
    turn: int
    end_reason: str = ""
    #: The gateway holding a voice call (None: no lease, or no renewal that names it yet).
    gateway: LeaseHolder | None = None


class TranscriptSlice(Payload):
    """Transcript items from index `start` on (`transcript_since` query), so a live view
    fetches only what it has not shown. `total` counts every item this run holds."""

    start: int
    items: list[TranscriptItem]
    total: int


class AgentUsage(BaseModel):
    """One agent's model use in a call (`token_usage` query); the workflow adds to it."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    turns: int = 0
