"""An agent's brief with the call's live route changes applied, for its model turn.

The pinned snapshot holds each agent's routes, handoff tool and transfer instructions as the
scenario drew them. Once a supervisor changed a route of the call (Update `change_routes`),
the model must see the routes the HandoffService will now allow, or it would never take an
added route and would keep asking for a removed one.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.routes import RouteChange, live_scenario
from contracts.snapshot import AgentBrief, CallSnapshot, HandoffRoute, ToolSchema
from registries.handoff_service import HandoffService, build_handoff_instructions
from registries.toolset import tools_for_agent


def with_route_changes(
    snapshot: CallSnapshot, agent: str, changes: Sequence[RouteChange]
) -> CallSnapshot:
    """`snapshot` with `agent`'s brief rebuilt for `changes` (the others are left as pinned)."""
    if not changes or agent not in snapshot.agents:
        return snapshot
    configs = snapshot.agent_configs()
    service = HandoffService(
        snapshot.scenario, configs, handoff_map=snapshot.handoff_map, route_changes=changes
    )
    scenario = live_scenario(snapshot.scenario, changes)
    brief = snapshot.agents[agent]
    offered = tools_for_agent(brief.config, service, snapshot.tool_specs)
    routes = [
        HandoffRoute(
            target_agent=edge.to_agent,
            condition=edge.handoff_condition,
            target_description=configs[edge.to_agent].description,
        )
        for edge in scenario.handoffs
        if edge.from_agent == agent and edge.to_agent in configs
    ]
    live = AgentBrief(
        config=brief.config,
        template_vars=brief.template_vars,
        tools=[
            ToolSchema(name=t.name, description=t.description, parameters=t.parameters)
            for t in offered
        ],
        routes=routes,
        handoff_instructions=build_handoff_instructions(
            scenario, agent, configs, closed=service.closed_targets(agent)
        ),
    )
    return snapshot.model_copy(update={"agents": {**snapshot.agents, agent: live}})
