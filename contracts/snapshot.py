"""Activity `load_call_snapshot` (tools queue): the scenario, its agents and tools, pinned for
the whole call by content hash."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from contracts._base import Payload
from contracts.registry import AgentConfig, ScenarioConfig, ToolSpec

LOAD_CALL_SNAPSHOT = "load_call_snapshot"


class SnapshotRequest(Payload):
    scenario: str
    registry: str | None = None


class ToolSchema(Payload):
    """A tool offered to the model (the chat-completions `function` shape)."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=dict)


class HandoffRoute(Payload):
    """An outbound route of an agent, for policies that reason about routing."""

    target_agent: str
    condition: str = ""
    target_description: str = ""


class AgentBrief(Payload):
    """One agent as a call uses it: config plus what the scenario derives for it."""

    config: AgentConfig
    #: Template vars with the scenario's values merged in (see registries.prompting).
    template_vars: dict[str, Any] = Field(default_factory=dict)
    tools: list[ToolSchema] = Field(default_factory=list)
    routes: list[HandoffRoute] = Field(default_factory=list)
    handoff_instructions: str = ""


class CallSnapshot(Payload):
    """Scenario, agents and tools pinned for the whole call, with their content hash."""

    scenario: ScenarioConfig
    agents: dict[str, AgentBrief]
    tool_specs: dict[str, ToolSpec] = Field(default_factory=dict)
    handoff_map: dict[str, str] = Field(default_factory=dict)
    content_hash: str
    registry: str | None = None

    def agent_configs(self) -> dict[str, AgentConfig]:
        return {name: brief.config for name, brief in self.agents.items()}
