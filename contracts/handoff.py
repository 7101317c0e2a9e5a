"""Local activities `resolve_handoff` and `render_start_greeting`: the HandoffService's decision
on one handoff request, and the first agent's greeting."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from contracts._base import Payload
from contracts.registry import AgentConfig, HandoffResolution, ScenarioConfig
from contracts.routes import RouteChange

RESOLVE_HANDOFF = "resolve_handoff"
RENDER_START_GREETING = "render_start_greeting"
#: The `ApplicationError.type` (not retryable) of every activity whose template failed to
#: render: these two and `generate_agent_reply` (the prompt), for the workflow to escalate on.
#: The message names the agent and template and the problem, never the caller's data.
TEMPLATE_RENDER_ERROR = "TemplateRenderError"
#: Fields of a business tool's result that shape the handoff after it: notes for the next
#: agent, the reason to give, and overrides such as its greeting.
TOOL_HANDOFF_FIELDS = ("handoff_context", "handoff_summary", "session_overrides")


class HandoffRequest(Payload):
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
    #: The handoff fields (`handoff_context`, `handoff_summary`, `session_overrides`) of the
    #: business tool that ran just before this handoff in the same turn, if it returned any.
    tool_result: dict[str, Any] | None = None
    #: The call's live route changes so far (Update `change_routes`), applied in order.
    route_changes: list[RouteChange] = Field(default_factory=list)


class HandoffResult(Payload):
    resolution: HandoffResolution
    #: What the arriving agent says first; None for discrete handoffs and failures.
    greeting: str | None = None
    is_return: bool = False


class GreetingRequest(Payload):
    scenario: ScenarioConfig
    agent: AgentConfig
    system_vars: dict[str, Any] = Field(default_factory=dict)


class HandoffStep(Payload):
    """One accepted handoff, as the call's handoff history and escalation tickets list it."""

    source: str
    target: str
    handoff_type: str
    reason: str
    trigger: Literal["llm", "supervisor", "rule"] = "llm"
    turn: int = 0
