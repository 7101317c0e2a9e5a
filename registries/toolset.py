"""The tools an agent is offered in a scenario: its business tools plus the handoff tool.

`handoff_to_agent` is injected for every agent with somewhere to go, and its `target_agent`
argument is an enum of exactly the targets the graph allows from that agent, so a well-behaved
LLM cannot even name an invalid route (and a badly behaved one is refused by the service).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contracts.registry import HANDOFF_TOOL, AgentConfig, ToolSpec
from registries.handoff_service import HandoffService


def handoff_tool_spec(targets: Sequence[str], agents: Mapping[str, AgentConfig]) -> ToolSpec:
    """`handoff_to_agent(target_agent, reason)` restricted to `targets`."""
    described = "; ".join(
        f"{name}: {agents[name].description}"
        if name in agents and agents[name].description
        else name
        for name in targets
    )
    return ToolSpec(
        name=HANDOFF_TOOL,
        description=(
            "Transfer the caller to another agent when their request belongs there. "
            f"Agents you can transfer to: {described}."
        ),
        parameters={
            "type": "object",
            "properties": {
                "target_agent": {"type": "string", "enum": list(targets)},
                "reason": {"type": "string", "description": "One line: why the transfer."},
            },
            "required": ["target_agent", "reason"],
            "additionalProperties": False,
        },
    )


def legacy_handoff_spec(tool_name: str, target: str) -> ToolSpec:
    return ToolSpec(
        name=tool_name,
        description=f"Transfer the caller to {target}.",
        parameters={
            "type": "object",
            "properties": {"reason": {"type": "string", "description": "Why the transfer."}},
            "additionalProperties": False,
        },
    )


def tools_for_agent(
    agent: AgentConfig, service: HandoffService, business_tools: Mapping[str, ToolSpec]
) -> list[ToolSpec]:
    """Business tools the agent lists (that exist), then the handoff tools it may use."""
    offered = [business_tools[name] for name in agent.tools if name in business_tools]
    targets = service.valid_targets(agent.name)
    if targets:
        offered.append(handoff_tool_spec(targets, service.agents))
    for name in agent.tools:
        if name not in business_tools and service.is_handoff(name) and name != HANDOFF_TOOL:
            target = service.get_handoff_target(agent.name, name)
            if target is not None:
                offered.append(legacy_handoff_spec(name, target))
    return offered


def openai_tool(spec: ToolSpec) -> dict[str, Any]:
    """The chat-completions `tools` entry for a spec."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }
