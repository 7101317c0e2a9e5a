"""HandoffService: decides every agent switch of a call from the scenario's handoff graph.

Pure and deterministic (no I/O, no clock), so the workflow can run it as a local activity and
an auditor can re-run any decision from history. The legacy tool map comes from the scenario,
or from the call's pinned snapshot (`handoff_map=`), so a call keeps the routes it started with.

Rules, in order:
1. The tool names the target: `handoff_to_agent(target_agent=...)`, a route's own `tool`, or
   a legacy per-target tool such as `handoff_fraud_agent` (agent `handoff.trigger`).
2. Names match case-insensitively and resolve to the registry spelling.
3. Refused: unknown agents, agents outside the scenario, handing off to oneself, and routes
   the graph does not allow. The error lists the valid targets so the LLM can recover.
4. Route settings: the edge for (source, tool), else the edge for (source, target), else the
   scenario's generic handoff (when enabled and the target is allowed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from difflib import get_close_matches
from typing import Any

from contracts.registry import (
    HANDOFF_TOOL,
    AgentConfig,
    HandoffEdge,
    HandoffResolution,
    HandoffType,
    ScenarioConfig,
)
from contracts.routes import RouteChange, changed_edges
from registries.handoff_context import (
    build_handoff_system_vars,
    context_vars_scope,
    deep_merge,
    pick_handoff_reason,
    render_context_vars,
)

__all__ = ["HandoffResolution", "HandoffService", "build_handoff_instructions", "build_handoff_map"]
from registries.prompting import greeting_context, render_greeting


def scenario_agent_names(scenario: ScenarioConfig, all_agents: Iterable[str]) -> tuple[str, ...]:
    """The scenario's agents; an empty `agents:` list means every agent in the store."""
    return tuple(scenario.agents) if scenario.agents else tuple(sorted(all_agents))


def build_handoff_map(
    scenario: ScenarioConfig, agents: Mapping[str, AgentConfig]
) -> dict[str, str]:
    """Legacy tool name -> target agent, from agents' `handoff.trigger` and edges' `tool`."""
    members = set(scenario_agent_names(scenario, agents))
    mapping = {
        agent.handoff.trigger: name
        for name, agent in agents.items()
        if agent.handoff.trigger and name in members
    }
    for edge in scenario.handoffs:
        if edge.tool != HANDOFF_TOOL:
            mapping[edge.tool] = edge.to_agent
    return mapping


def build_handoff_instructions(
    scenario: ScenarioConfig,
    agent_name: str,
    agents: Mapping[str, AgentConfig] | None = None,
    *,
    closed: Iterable[str] = (),
) -> str:
    """The prompt block telling `agent_name` when to call `handoff_to_agent`.

    One line per outbound route from its `handoff_condition`; with generic handoff enabled,
    one line per other allowed target, described by that agent's `description`, except the
    `closed` ones (a supervisor removed the route for this call).
    """
    lines: list[str] = []
    routed: set[str] = set()
    for edge in scenario.handoffs:
        if edge.from_agent != agent_name:
            continue
        routed.add(edge.to_agent)
        condition = edge.handoff_condition or f"The caller needs {edge.to_agent}"
        lines.append(_instruction(condition, edge.to_agent))
    generic = scenario.generic_handoff
    if generic.enabled and agents is not None:
        members = scenario_agent_names(scenario, agents)
        for target in generic.allowed_targets or members:
            if target in routed or target in closed or target == agent_name:
                continue
            if target not in agents:
                continue
            description = agents[target].description or f"The caller needs {target}"
            lines.append(_instruction(f"The caller needs: {description}", target))
    if not lines:
        return ""
    header = (
        "Transfers: you may hand the caller to another agent. Do it only in these cases, "
        "and do not answer questions that belong to another agent yourself."
    )
    return "\n".join([header, *lines])


def _instruction(condition: str, target: str) -> str:
    condition = condition.strip().rstrip(".")
    return (
        f"- When {condition[0].lower() + condition[1:]}: call "
        f'{HANDOFF_TOOL}(target_agent="{target}", reason="<one line why>").'
    )


class HandoffService:
    """Resolves handoff tool calls for one call session."""

    def __init__(
        self,
        scenario: ScenarioConfig,
        agents: Mapping[str, AgentConfig],
        *,
        handoff_map: Mapping[str, str] | None = None,
        route_changes: Sequence[RouteChange] = (),
    ) -> None:
        """`route_changes`: this call's live changes to the graph (contracts.routes), applied
        in order on top of the scenario's edges."""
        self.scenario = scenario
        self.agents = dict(agents)
        self.members = frozenset(scenario_agent_names(scenario, agents))
        self._canonical = {name.lower(): name for name in agents}
        self._canonical.update({name.lower(): name for name in self.members})
        self._edge_by_tool: dict[tuple[str, str], HandoffEdge] = {}
        self._edge_by_target: dict[tuple[str, str], HandoffEdge] = {}
        edges, self._closed = changed_edges(scenario, route_changes)
        for edge in edges:
            # First declaration wins; duplicates are reported by `baton scenario check`.
            self._edge_by_tool.setdefault((edge.from_agent, edge.tool), edge)
            self._edge_by_target.setdefault((edge.from_agent, edge.to_agent), edge)
        generic = scenario.generic_handoff
        self._generic_targets: frozenset[str] = (
            frozenset(self._canonical.get(t.lower(), t) for t in generic.allowed_targets)
            & self.members
            if generic.allowed_targets
            else self.members
        )
        base_map = handoff_map if handoff_map is not None else build_handoff_map(scenario, agents)
        self._handoff_map: dict[str, str] = dict(base_map)

    def closed_targets(self, source: str) -> frozenset[str]:
        """Targets a live route change closed to `source`, generic handoff included."""
        return frozenset(to for (frm, to) in self._closed if frm == source)

    # -- the session's tool map ------------------------------------------------------------

    @property
    def handoff_map(self) -> Mapping[str, str]:
        return dict(self._handoff_map)

    def is_handoff(self, tool_name: str) -> bool:
        return tool_name == HANDOFF_TOOL or tool_name in self._handoff_map

    # -- the graph -------------------------------------------------------------------------

    def canonical_name(self, name: str) -> str | None:
        return self._canonical.get(name.strip().lower()) if isinstance(name, str) else None

    def valid_targets(self, source_agent: str) -> tuple[str, ...]:
        """Every agent `source_agent` may hand off to, in a stable order."""
        source = self.canonical_name(source_agent) or source_agent
        targets = {to for (frm, to) in self._edge_by_target if frm == source}
        if self.scenario.generic_handoff.enabled:
            targets |= self._generic_targets - self.closed_targets(source)
        targets.discard(source)
        return tuple(sorted(targets & self.members))

    def route_for(self, source: str, target: str, tool_name: str) -> HandoffEdge | None:
        """The edge that governs this handoff, or None when only generic handoff allows it."""
        edge = self._edge_by_tool.get((source, tool_name))
        if edge is not None and edge.to_agent == target:
            return edge
        return self._edge_by_target.get((source, target))

    def get_handoff_target(self, source_agent: str, target_or_tool: str) -> str | None:
        """The registry name of the target if the route is allowed, else None.

        `target_or_tool` is an agent name or a legacy handoff tool name.
        """
        source = self.canonical_name(source_agent)
        requested = self._handoff_map.get(target_or_tool, target_or_tool)
        target = self.canonical_name(requested)
        if source is None or target is None:
            return None
        return target if target in self.valid_targets(source) else None

    # -- resolution ------------------------------------------------------------------------

    def resolve_handoff(
        self,
        *,
        source_agent: str,
        tool_name: str = HANDOFF_TOOL,
        tool_args: Mapping[str, Any] | None = None,
        current_system_vars: Mapping[str, Any] | None = None,
        user_last_utterance: str | None = None,
        tool_result: Mapping[str, Any] | None = None,
    ) -> HandoffResolution:
        """Decide one handoff request. Never raises for the model's bad input: failures come
        back as `success=False` with an `error` the LLM can read and act on.

        Raises `TemplateRenderError` when the route's `context_vars` fail to render: the
        registry is at fault, not the model, and no retry of the model's would fix it.
        """
        args = tool_args if isinstance(tool_args, Mapping) else {}
        source = self.canonical_name(source_agent)
        if source is None or source not in self.members:
            return self._refuse(
                source_agent,
                tool_name,
                f"{source_agent!r} is not an agent of scenario {self.scenario.name!r}",
                (),
            )
        valid = self.valid_targets(source)
        requested = self._requested_target(source, tool_name, args)
        if requested is None:
            return self._refuse(source, tool_name, self._missing_target_message(tool_name), valid)
        target = self.canonical_name(requested)
        if target is None:
            hint = get_close_matches(requested, sorted(self.members), n=1, cutoff=0.6)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            return self._refuse(
                source, tool_name, f"unknown agent {requested!r}{suggestion}", valid
            )
        if target == source:
            return self._refuse(source, tool_name, f"{source} is already handling the call", valid)
        if target not in self.members:
            return self._refuse(
                source, tool_name, f"{target} is not part of scenario {self.scenario.name!r}", valid
            )
        edge = self.route_for(source, target, tool_name)
        if edge is None and target not in valid:
            return self._refuse(
                source, tool_name, f"the scenario has no route from {source} to {target}", valid
            )
        handoff_type, share = self._route_settings(edge)
        system_vars = build_handoff_system_vars(
            source_agent=source,
            target_agent=target,
            current_system_vars=current_system_vars,
            tool_args=args,
            tool_result=tool_result,
            user_last_utterance=user_last_utterance,
            share_context=share,
        )
        reason = pick_handoff_reason(tool_result, args)
        if edge is not None and edge.context_vars:
            scope = context_vars_scope(system_vars, current_system_vars, self._scenario_vars())
            scope["handoff_reason"] = reason
            extra = render_context_vars(
                edge.context_vars, scope, where=f"route {source} -> {target}"
            )
            system_vars = deep_merge(system_vars, extra)
        return HandoffResolution(
            success=True,
            target_agent=target,
            source_agent=source,
            tool_name=tool_name,
            system_vars=system_vars,
            greet_on_switch=handoff_type == "announced",
            share_context=share,
            handoff_type=handoff_type,
            reason=reason,
        )

    def _requested_target(self, source: str, tool_name: str, args: Mapping[str, Any]) -> str | None:
        if tool_name == HANDOFF_TOOL:
            target = args.get("target_agent")
            return target.strip() if isinstance(target, str) and target.strip() else None
        edge = self._edge_by_tool.get((source, tool_name))
        if edge is not None:
            return edge.to_agent
        return self._handoff_map.get(tool_name)

    def _missing_target_message(self, tool_name: str) -> str:
        if tool_name == HANDOFF_TOOL:
            return f"{HANDOFF_TOOL} needs a target_agent argument"
        return f"{tool_name!r} is not a handoff tool in this call"

    def _route_settings(self, edge: HandoffEdge | None) -> tuple[HandoffType, bool]:
        if edge is not None:
            return self.scenario.type_of(edge), edge.share_context
        generic = self.scenario.generic_handoff
        return generic.default_type or self.scenario.handoff_type, generic.share_context

    def _scenario_vars(self) -> dict[str, Any]:
        return {**self.scenario.template_vars, **self.scenario.agent_defaults}

    def _refuse(
        self, source: str | None, tool_name: str, error: str, valid: tuple[str, ...]
    ) -> HandoffResolution:
        targets = ", ".join(valid) if valid else "none (this agent cannot hand off)"
        return HandoffResolution(
            success=False,
            source_agent=source,
            tool_name=tool_name,
            error=f"{error}. Valid targets: {targets}.",
            valid_targets=valid,
        )

    # -- greetings -------------------------------------------------------------------------

    def select_greeting(
        self,
        *,
        agent: str | AgentConfig,
        is_first_visit: bool,
        greet_on_switch: bool,
        system_vars: Mapping[str, Any] | None = None,
        override: str | None = None,
    ) -> str | None:
        """What the arriving agent says first, or None for a discrete (silent) switch.

        Priority: an explicit override (argument or `session_overrides.greeting`), then
        None when the switch is discrete, then the first-visit greeting, then the return
        greeting (a default one when the agent defines none). Raises `TemplateRenderError`
        when the greeting fails to render.
        """
        variables = dict(system_vars or {})
        overrides = variables.get("session_overrides")
        if override is None and isinstance(overrides, Mapping):
            candidate = overrides.get("greeting")
            override = candidate if isinstance(candidate, str) and candidate.strip() else None
        if override is not None:
            return override.strip()
        if not greet_on_switch:
            return None
        config = agent if isinstance(agent, AgentConfig) else self.agents[agent]
        context = greeting_context(self.scenario, config, variables, is_return=not is_first_visit)
        return render_greeting(config, context, is_return=not is_first_visit)
