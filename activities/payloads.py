"""Inputs and results of the call activities (one `...Request` / `...Result` model each).

Pure pydantic, no I/O, so the workflow can import them. New fields always get defaults so
histories recorded before a field existed still decode.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from baton.contracts import ChatMessage, HandoffRoute, ToolSchema
from registries.models import AgentConfig, HandoffResolution, ScenarioConfig, ToolSpec

# Activity names, shared by the workers that register them and the workflow that calls them
# (by name, so workflow code never imports provider SDKs).
LOAD_CALL_SNAPSHOT = "load_call_snapshot"
RESOLVE_HANDOFF = "resolve_handoff"
RENDER_START_GREETING = "render_start_greeting"
GENERATE_AGENT_REPLY = "generate_agent_reply"
RUN_BUSINESS_TOOL = "run_business_tool"
SYNTHESIZE_SPEECH = "synthesize_speech"
TRANSCRIBE_SEGMENT = "transcribe_segment"
FILE_ESCALATION_TICKET = "file_escalation_ticket"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# --- the pinned scenario -----------------------------------------------------------------


class SnapshotRequest(_Model):
    scenario: str
    registry: str | None = None


class AgentBrief(_Model):
    """One agent as a call uses it: config plus what the scenario derives for it."""

    config: AgentConfig
    #: Template vars with the scenario's values merged in (see registries.prompting).
    template_vars: dict[str, Any] = Field(default_factory=dict)
    tools: list[ToolSchema] = Field(default_factory=list)
    routes: list[HandoffRoute] = Field(default_factory=list)
    handoff_instructions: str = ""


class CallSnapshot(_Model):
    """Scenario, agents and tools pinned for the whole call, with their content hash."""

    scenario: ScenarioConfig
    agents: dict[str, AgentBrief]
    tool_specs: dict[str, ToolSpec] = Field(default_factory=dict)
    handoff_map: dict[str, str] = Field(default_factory=dict)
    content_hash: str
    registry: str | None = None

    def brief_request(self, request: AgentReplyRequest) -> AgentReplyRequest:
        """`request` with the agent's brief filled in from this snapshot."""
        brief = self.agents[request.agent_name]
        return request.model_copy(
            update={
                "agent": brief.config,
                "template_vars": brief.template_vars,
                "handoff_instructions": brief.handoff_instructions,
                "tools": brief.tools,
                "routes": brief.routes,
            }
        )

    def agent_configs(self) -> dict[str, AgentConfig]:
        return {name: brief.config for name, brief in self.agents.items()}


# --- handoffs (local activity) -----------------------------------------------------------


class HandoffRequest(_Model):
    scenario: ScenarioConfig
    agents: dict[str, AgentConfig]
    handoff_map: dict[str, str] = Field(default_factory=dict)
    source_agent: str
    tool_name: str
    #: Parsed tool arguments; None when the model sent arguments that were not a JSON object.
    tool_args: dict[str, Any] | None = None
    system_vars: dict[str, Any] = Field(default_factory=dict)
    user_last_utterance: str | None = None
    visited: list[str] = Field(default_factory=list)


class HandoffResult(_Model):
    resolution: HandoffResolution
    #: What the arriving agent says first; None for discrete handoffs and failures.
    greeting: str | None = None
    is_return: bool = False


class GreetingRequest(_Model):
    scenario: ScenarioConfig
    agent: AgentConfig
    system_vars: dict[str, Any] = Field(default_factory=dict)


# --- LLM ---------------------------------------------------------------------------------


class SpokenReply(_Model):
    """Where a voice call's model turn publishes its text while writing it: the gateway holding
    the call, under an id the turn's speech activity follows."""

    gateway_address: str
    reply_id: str


class AgentReplyRequest(_Model):
    """One model turn. Current calls name the agent and the pinned snapshot by hash (the LLM
    worker fetches the snapshot once per hash), which keeps each turn's history small; calls
    recorded before that send the agent's whole brief (`agent`, `tools`, ...) instead."""

    call_id: str
    agent_name: str = ""
    snapshot_hash: str = ""
    agent: AgentConfig | None = None
    template_vars: dict[str, Any] = Field(default_factory=dict)
    system_vars: dict[str, Any] = Field(default_factory=dict)
    handoff_instructions: str = ""
    tools: list[ToolSchema] = Field(default_factory=list)
    routes: list[HandoffRoute] = Field(default_factory=list)
    summary: str = ""
    messages: list[ChatMessage] = Field(default_factory=list)
    spoken: SpokenReply | None = None


# --- business tools ----------------------------------------------------------------------


class ToolRequest(_Model):
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: Same for every retry of this tool call: mutating tools apply their effect once.
    idempotency_key: str
    system_vars: dict[str, Any] = Field(default_factory=dict)
    registry: str | None = None


class ToolResult(_Model):
    result: dict[str, Any] = Field(default_factory=dict)
    #: Refused arguments (the model can correct them); the handler did not run.
    error: str | None = None


# --- speech ------------------------------------------------------------------------------


class SynthesisRequest(_Model):
    call_id: str
    gateway_address: str
    agent: str
    text: str
    voice: str = ""
    rate: str = "+0%"
    utterance_id: str = ""
    #: Speak the reply the LLM worker publishes under this id (see `SpokenReply`), sentence by
    #: sentence as it is written, instead of `text`.
    follow_reply_id: str = ""


class SynthesisResult(_Model):
    chars_played: int
    played_ms: int
    completed: bool
    #: The gateway stopped the reply because the caller spoke over it.
    barged_in: bool = False
    #: What was synthesized, for a followed reply (the workflow compares it with the model's).
    spoken_text: str = ""


class TranscriptionRequest(_Model):
    call_id: str
    gateway_address: str
    segment_ref: str
    locale: str = "en-US"


class TranscriptionResult(_Model):
    text: str
    confidence: float = 0.0


# --- escalation --------------------------------------------------------------------------


class HandoffStep(_Model):
    source: str
    target: str
    handoff_type: str
    reason: str
    trigger: Literal["llm", "supervisor"] = "llm"
    turn: int = 0


class EscalationTicket(_Model):
    """Everything a human needs to take the call over (seed 004's handoff context)."""

    ticket_id: str
    call_id: str
    scenario: str
    reason: str
    summary: str
    active_agent: str
    key_facts: list[str] = Field(default_factory=list)
    collected_data: dict[str, Any] = Field(default_factory=dict)
    handoff_history: list[HandoffStep] = Field(default_factory=list)
    last_utterances: list[str] = Field(default_factory=list)
    created_at: datetime
