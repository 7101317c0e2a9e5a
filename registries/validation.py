"""Cross-file checks of a loaded registry: the rules behind `baton scenario check`.

Each check returns `Problem`s phrased as a fix. Checks are independent, so one run reports
every problem instead of stopping at the first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from difflib import get_close_matches

import jinja2

from contracts.registry import HANDOFF_TOOL, AgentConfig, ScenarioConfig
from registries.errors import Problem
from registries.escalation_check import escalation_problems
from registries.handoff_service import scenario_agent_names
from registries.language_check import language_problems
from registries.prompting import template_vars
from registries.registry_view import RegistryView
from registries.render_check import render_problems
from registries.rule_check import tool_result_rule_problems
from registries.templating import RUNTIME_VARS, undeclared_variables
from registries.tool_handlers import handler_problem


def check_registry(registry: RegistryView, *, only: str | None = None) -> list[Problem]:
    """All problems of the registry, or of one scenario and what it uses."""
    problems = [p for p in registry.problems if only is None or _concerns(p, only)]
    if only is not None and only not in registry.scenarios:
        return problems
    scenarios = [registry.scenarios[only]] if only else list(registry.scenarios.values())
    agent_names = set(registry.agents)
    if only:
        agent_names &= set(scenario_agent_names(scenarios[0], registry.agents))
    tool_names = {t for name in agent_names for t in registry.agents[name].tools}
    for name in sorted(tool_names if only else registry.tools):
        if name in registry.tools:
            problems.extend(_check_tool(registry, name))
    for name in sorted(agent_names):
        problems.extend(_check_agent(registry, registry.agents[name]))
    for scenario in scenarios:
        problems.extend(check_scenario(registry, scenario))
    return problems


def _concerns(problem: Problem, scenario: str) -> bool:
    """File-level problems count for a scenario unless they sit in another scenario's file."""
    parts = problem.file.replace("\\", "/").split("/")
    if "scenariostore" in parts:
        index = parts.index("scenariostore")
        return index + 1 < len(parts) and parts[index + 1] == scenario
    return True


def _check_tool(registry: RegistryView, name: str) -> list[Problem]:
    message = handler_problem(registry, name)
    if message is None:
        return []
    doc = registry.documents[f"tool:{name}"]
    index = _tool_index(doc.data, name)
    return [doc.problem(("tools", index, "handler"), message)]


def _tool_index(data: object, name: str) -> int:
    tools = data.get("tools", []) if isinstance(data, dict) else []
    return next(
        (i for i, t in enumerate(tools) if isinstance(t, dict) and t.get("name") == name), 0
    )


def _check_agent(registry: RegistryView, agent: AgentConfig) -> list[Problem]:
    doc = registry.documents[f"agent:{agent.name}"]
    problems: list[Problem] = []
    handoff_tools = {a.handoff.trigger for a in registry.agents.values() if a.handoff.trigger}
    for index, tool in enumerate(agent.tools):
        if tool == HANDOFF_TOOL:
            problems.append(
                doc.problem(
                    ("tools", index),
                    f"{HANDOFF_TOOL} is added automatically from the scenario's routes; remove it",
                    "warning",
                )
            )
        elif tool not in registry.tools and tool not in handoff_tools:
            hint = get_close_matches(tool, list(registry.tools), n=1)
            fix = f"did you mean {hint[0]!r}?" if hint else "declare it in toolstore/*.yaml"
            problems.append(doc.problem(("tools", index), f"unknown tool {tool!r}; {fix}"))
    ends_call = [
        t
        for t in agent.tools
        if t in registry.tools
        and registry.tools[t].ends_conversation
        and not registry.tools[t].escalates
    ]
    if not ends_call:
        # Any agent may hear the caller say goodbye; without such a tool the line stays open.
        problems.append(
            doc.problem(
                ("tools",),
                f"{agent.name} can say goodbye but holds no tool that ends the call, so the "
                "caller would be left on an open line; add end_call to its tools",
                "warning",
            )
        )
    for field in ("greeting", "return_greeting", "prompt"):
        source = getattr(agent, field)
        if not source:
            continue
        try:
            undeclared_variables(source)
        except jinja2.TemplateSyntaxError as exc:
            where = f" ({agent.prompt_file}:{exc.lineno})" if field == "prompt" else ""
            problems.append(
                doc.problem(
                    (field,),
                    f"template does not compile{where}: {exc.message}; fix the Jinja2 syntax",
                )
            )
    return problems


def check_scenario(registry: RegistryView, scenario: ScenarioConfig) -> list[Problem]:
    """Graph and template rules of one scenario."""
    doc = registry.documents[f"scenario:{scenario.name}"]
    members = scenario_agent_names(scenario, registry.agents)
    member_set = set(members)
    problems: list[Problem] = []

    def unknown(name: str, loc: tuple[str | int, ...]) -> None:
        if name in registry.agents:
            message = f"{name!r} is not listed in this scenario's agents; add it to agents"
        else:
            hint = get_close_matches(name, members or list(registry.agents), n=1, cutoff=0.6)
            fix = f"; did you mean {hint[0]!r}?" if hint else f"; agents: {', '.join(members)}"
            message = f"{name!r} is not an agent in this scenario{fix}"
        problems.append(doc.problem(loc, message))

    for index, name in enumerate(scenario.agents):
        if name not in registry.agents:
            hint = get_close_matches(name, list(registry.agents), n=1, cutoff=0.6)
            fix = f"did you mean {hint[0]!r}?" if hint else "create agentstore/<folder>/agent.yaml"
            problems.append(
                doc.problem(("agents", index), f"no agent {name!r} in the agent store; {fix}")
            )
    if len(set(scenario.agents)) != len(scenario.agents):
        problems.append(doc.problem(("agents",), "an agent is listed twice; list each once"))
    if scenario.start_agent is None:
        problems.append(
            doc.problem(
                ("start_agent",), "start_agent is missing; name the agent that answers the call"
            )
        )
    elif scenario.start_agent not in member_set:
        unknown(scenario.start_agent, ("start_agent",))
    seen: set[tuple[str, str, str]] = set()
    for index, edge in enumerate(scenario.handoffs):
        for end in ("from_agent", "to_agent"):
            name = getattr(edge, end)
            if name not in member_set:
                unknown(name, ("handoffs", index, end))
        if edge.from_agent == edge.to_agent:
            problems.append(
                doc.problem(
                    ("handoffs", index),
                    f"route from {edge.from_agent} to itself; an agent cannot hand off to itself",
                )
            )
        key = (edge.from_agent, edge.to_agent, edge.tool)
        if key in seen:
            problems.append(
                doc.problem(
                    ("handoffs", index),
                    f"duplicate route {edge.from_agent}"
                    f" -> {edge.to_agent}; keep one and merge its settings",
                )
            )
        seen.add(key)
        for var, source in edge.context_vars.items():
            try:
                undeclared_variables(source)
            except jinja2.TemplateSyntaxError as exc:
                problems.append(
                    doc.problem(
                        ("handoffs", index, "context_vars", var),
                        f"template does not compile: {exc.message}",
                    )
                )
    for index, name in enumerate(scenario.generic_handoff.allowed_targets):
        if name not in member_set:
            unknown(name, ("generic_handoff", "allowed_targets", index))
    if scenario.start_agent in member_set:
        problems.extend(_graph_problems(registry, scenario, members))
    problems.extend(_greeting_variable_problems(registry, scenario, members))
    problems.extend(escalation_problems(doc, scenario, members))
    problems.extend(tool_result_rule_problems(doc, scenario, registry.agents, registry.tools))
    problems.extend(render_problems(registry, scenario, members))
    problems.extend(language_problems(doc, scenario, members, registry.agents))
    return problems


def _successors(scenario: ScenarioConfig, members: tuple[str, ...]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in members}
    for edge in scenario.handoffs:
        if edge.from_agent in graph and edge.to_agent in graph:
            graph[edge.from_agent].add(edge.to_agent)
    generic = scenario.generic_handoff
    if generic.enabled:
        targets = set(generic.allowed_targets or members) & set(members)
        for name in members:
            graph[name] |= targets - {name}
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in graph[queue.popleft()] - seen:
            seen.add(nxt)
            queue.append(nxt)
    return seen


def _graph_problems(
    registry: RegistryView, scenario: ScenarioConfig, members: tuple[str, ...]
) -> Iterator[Problem]:
    doc = registry.documents[f"scenario:{scenario.name}"]
    start = scenario.start_agent or ""
    graph = _successors(scenario, members)
    reached = _reachable(graph, start)
    for name in members:
        loc = ("agents", scenario.agents.index(name)) if name in scenario.agents else ("agents",)
        if name not in reached:
            yield doc.problem(
                loc,
                f"{name} cannot be reached from start agent {start}; add a "
                "handoff route to it or remove it from agents",
            )
            continue
        if name == start or start in _reachable(graph, name):
            continue
        agent = registry.agents.get(name)
        tools = agent.tools if agent else ()
        if not any(registry.tools[t].ends_conversation for t in tools if t in registry.tools):
            yield doc.problem(
                loc,
                f"{name} has no route back to {start} and no tool that ends "
                "or escalates the call; the caller would be stuck: add a handoff "
                "back or give it escalate_human or end_call",
            )


def _greeting_variable_problems(
    registry: RegistryView, scenario: ScenarioConfig, members: tuple[str, ...]
) -> Iterator[Problem]:
    doc = registry.documents[f"scenario:{scenario.name}"]
    for name in members:
        agent = registry.agents.get(name)
        if agent is None:
            continue
        known = RUNTIME_VARS | set(template_vars(scenario, agent))
        agent_doc = registry.documents[f"agent:{name}"]
        for field in ("greeting", "return_greeting", "prompt"):
            source = getattr(agent, field)
            try:
                missing = sorted(undeclared_variables(source) - known) if source else []
            except jinja2.TemplateSyntaxError:
                continue  # reported by the agent check
            if missing:
                yield agent_doc.problem(
                    (field,),
                    f"uses undefined variable(s) {', '.join(missing)} in scenario "
                    f"{scenario.name!r}; define them in the agent's template_vars or the "
                    f"scenario's agent_defaults ({doc.display})",
                )
