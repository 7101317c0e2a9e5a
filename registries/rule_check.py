"""`scenario check` rules for a route's `on_tool_result`: the tool must be one its source agent
calls, and one after which a handoff can still happen, or the rule could never fire."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from difflib import get_close_matches

from contracts.registry import AgentConfig, ScenarioConfig, ToolSpec
from registries.errors import Problem
from registries.yaml_source import YamlDocument


def tool_result_rule_problems(
    doc: YamlDocument,
    scenario: ScenarioConfig,
    agents: Mapping[str, AgentConfig],
    tools: Mapping[str, ToolSpec],
) -> Iterator[Problem]:
    """Rules naming a tool the route's source agent does not have, or one that ends the call."""
    for index, edge in enumerate(scenario.handoffs):
        rule = edge.on_tool_result
        source = agents.get(edge.from_agent)
        if rule is None or source is None:  # an unknown agent is reported by the graph check
            continue
        loc = ("handoffs", index, "on_tool_result", "tool")
        if rule.tool not in source.tools:
            close = get_close_matches(rule.tool, list(source.tools), n=1, cutoff=0.6)
            fix = (
                f"did you mean {close[0]!r}?"
                if close
                else f"its tools: {', '.join(source.tools) or 'none'}"
            )
            yield doc.problem(
                loc,
                f"{rule.tool!r} is not a tool of {edge.from_agent}, so this rule could never "
                f"fire; name one of {edge.from_agent}'s tools ({fix})",
            )
        elif rule.tool in tools and tools[rule.tool].ends_conversation:
            yield doc.problem(
                loc,
                f"{rule.tool!r} ends the call, so no handoff can follow it; name a tool "
                "that returns a result the conversation goes on from",
            )
