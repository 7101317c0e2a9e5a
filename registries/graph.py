"""Drawing a scenario's handoff graph as Mermaid or Graphviz DOT text.

Announced routes are solid arrows, discrete routes dashed; labels carry the type and the
handoff condition. Generic handoff (any agent to an allowed target) is drawn from one
"any agent" node so the picture stays readable.
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts.registry import HANDOFF_TOOL, ScenarioConfig
from registries.handoff_service import scenario_agent_names

ANY_AGENT = "any agent"


def _edges(scenario: ScenarioConfig, agents: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """(from, to, type, label) for every drawn arrow."""
    members = scenario_agent_names(scenario, agents)
    drawn: list[tuple[str, str, str, str]] = []
    for edge in scenario.handoffs:
        kind: str = scenario.type_of(edge)
        label = kind
        if edge.tool != HANDOFF_TOOL:
            label += f" via {edge.tool}"
        if edge.handoff_condition:
            label += f": {edge.handoff_condition}"
        drawn.append((edge.from_agent, edge.to_agent, kind, label))
    generic = scenario.generic_handoff
    if generic.enabled:
        kind = generic.default_type or scenario.handoff_type
        for target in generic.allowed_targets or members:
            drawn.append((ANY_AGENT, target, kind, f"{kind}: generic {HANDOFF_TOOL}"))
    return drawn


def _node_id(name: str) -> str:
    return "any_agent" if name == ANY_AGENT else name


def to_mermaid(scenario: ScenarioConfig, agents: Iterable[str]) -> str:
    names = scenario_agent_names(scenario, agents)
    lines = ["flowchart LR", f"  %% scenario {scenario.name}: {scenario.description}"]
    for name in names:
        title = f"{name} (start)" if name == scenario.start_agent else name
        shape = f'(["{title}"])' if name == scenario.start_agent else f'["{title}"]'
        lines.append(f"  {name}{shape}")
    edges = _edges(scenario, names)
    if any(src == ANY_AGENT for src, *_ in edges):
        lines.append('  any_agent(("any agent"))')
    for src, dst, kind, label in edges:
        arrow = "-->" if kind == "announced" else "-.->"
        text = label.replace('"', "#quot;")
        lines.append(f'  {_node_id(src)} {arrow}|"{text}"| {dst}')
    return "\n".join(lines) + "\n"


def to_dot(scenario: ScenarioConfig, agents: Iterable[str]) -> str:
    names = scenario_agent_names(scenario, agents)
    lines = [f'digraph "{scenario.name}" {{', "  rankdir=LR;", "  node [shape=box];"]
    for name in names:
        extra = ", peripheries=2" if name == scenario.start_agent else ""
        lines.append(f'  "{name}" [label="{name}"{extra}];')
    edges = _edges(scenario, names)
    if any(src == ANY_AGENT for src, *_ in edges):
        lines.append(f'  "{ANY_AGENT}" [shape=ellipse, style=dotted];')
    for src, dst, kind, label in edges:
        style = "solid" if kind == "announced" else "dashed"
        text = label.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'  "{src}" -> "{dst}" [label="{text}", style={style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"
