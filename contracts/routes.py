"""Live route changes: a supervisor adds, removes or retargets a handoff route for one call.

The Update `change_routes` carries one `RouteChange`; the workflow refuses (in the Update's
validator, so nothing reaches history) unknown agents, routes that do not exist or already do,
and calls that have ended. Accepted changes stay with the call (carried over continue-as-new),
ride along with every later handoff request and model turn, and are applied in order on top of
the pinned scenario's graph by `changed_edges`, the one place that says what a change means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from contracts._base import Payload
from contracts.registry import HANDOFF_TOOL, HandoffEdge, HandoffType, ScenarioConfig
from contracts.snapshot import CallSnapshot

UPDATE_CHANGE_ROUTES = "change_routes"
#: Changes one call may accept: each rides with every later handoff and model request.
MAX_ROUTE_CHANGES = 50

RouteAction = Literal["add", "remove", "retarget"]
RouteOrigin = Literal["scenario", "generic", "added", "retargeted"]


class RouteChange(Payload):
    """`add` from -> to (with a type and condition), `remove` from -> to, or `retarget`
    from -> to so that it leads to `new_to_agent`, keeping the route's settings."""

    action: RouteAction
    from_agent: str = Field(min_length=1, max_length=100)
    to_agent: str = Field(min_length=1, max_length=100)
    new_to_agent: str | None = Field(default=None, min_length=1, max_length=100)
    #: `add` only: None takes the scenario's handoff type.
    type: HandoffType | None = None
    #: `add` only: when the agent should take the route (shown to its model).
    condition: str = Field(default="", max_length=500)
    #: Why; kept in history and the audit timeline, never logged (it may name the caller).
    reason: str = Field(default="", max_length=500)
    supervisor: str = Field(default="supervisor", min_length=1, max_length=100)

    @model_validator(mode="after")
    def _fields_fit_action(self) -> RouteChange:
        if (self.action == "retarget") != (self.new_to_agent is not None):
            raise ValueError("new_to_agent is needed by retarget, and only by retarget")
        if self.action != "add" and (self.type is not None or self.condition):
            raise ValueError("type and condition belong to an added route only")
        return self

    @property
    def target(self) -> str:
        """Where the changed route leads afterwards: `new_to_agent` for a retarget, else
        `to_agent`."""
        return self.new_to_agent or self.to_agent

    def describe(self) -> str:
        """The change in words, without its reason: "add Concierge -> ComplianceDesk"."""
        if self.action == "retarget":
            return f"retarget {self.from_agent} -> {self.to_agent} to {self.new_to_agent}"
        return f"{self.action} {self.from_agent} -> {self.to_agent}"


class EffectiveRoute(Payload):
    """One route of the call as it stands, and where it comes from."""

    from_agent: str
    to_agent: str
    type: HandoffType
    origin: RouteOrigin = "scenario"


class RouteChangeResult(Payload):
    """The Update's result: the change as accepted and every route of the call after it."""

    change: RouteChange
    routes: list[EffectiveRoute] = Field(default_factory=list)
    #: Changes this call has accepted so far, this one included.
    changes: int = 0


def changed_edges(
    scenario: ScenarioConfig, changes: Sequence[RouteChange]
) -> tuple[tuple[HandoffEdge, ...], frozenset[tuple[str, str]]]:
    """The scenario's edges with `changes` applied in order, and the (from, to) pairs that a
    change closed, which generic handoff may no longer take either.

    Names must already be the registry's spelling (the workflow's validator checks them).
    A retargeted route keeps its settings (type, tool, context, condition); a route that only
    generic handoff allowed becomes an explicit edge with the generic settings.
    """
    current = list(scenario.handoffs)
    closed: set[tuple[str, str]] = set()
    generic = scenario.generic_handoff
    for change in changes:
        pair = (change.from_agent, change.to_agent)
        kept = [e for e in current if (e.from_agent, e.to_agent) != pair]
        moved = [e for e in current if (e.from_agent, e.to_agent) == pair]
        if change.action == "add":
            closed.discard(pair)
            added = HandoffEdge(
                from_agent=change.from_agent,
                to_agent=change.to_agent,
                tool=HANDOFF_TOOL,
                type=change.type,
                handoff_condition=change.condition,
            )
            current = [*kept, added]
            continue
        closed.add(pair)
        current = kept
        if change.action == "retarget" and change.new_to_agent is not None:
            closed.discard((change.from_agent, change.new_to_agent))
            if not moved:
                moved = [
                    HandoffEdge(
                        from_agent=change.from_agent,
                        to_agent=change.to_agent,
                        type=generic.default_type,
                        share_context=generic.share_context,
                    )
                ]
            current += [e.model_copy(update={"to_agent": change.new_to_agent}) for e in moved]
    return tuple(current), frozenset(closed)


def live_scenario(scenario: ScenarioConfig, changes: Sequence[RouteChange]) -> ScenarioConfig:
    """`scenario` with its edges changed (the pairs closed to generic handoff are not in it:
    see `changed_edges`)."""
    if not changes:
        return scenario
    edges, _ = changed_edges(scenario, changes)
    return scenario.model_copy(update={"handoffs": edges})


def effective_routes(
    snapshot: CallSnapshot, changes: Sequence[RouteChange]
) -> list[EffectiveRoute]:
    """Every route of a call after `changes`, by source agent then target.

    What generic handoff allows comes from each agent's handoff tool in the snapshot (the
    targets the HandoffService allowed when the call pinned it), less its explicit edges.
    """
    scenario = snapshot.scenario
    edges, closed = changed_edges(scenario, changes)
    origin: dict[tuple[str, str], RouteOrigin] = {}
    for change in changes:
        if change.action == "add":
            origin[(change.from_agent, change.to_agent)] = "added"
        elif change.new_to_agent is not None:
            origin[(change.from_agent, change.new_to_agent)] = "retargeted"
    explicit = {(e.from_agent, e.to_agent) for e in scenario.handoffs}
    generic_type = scenario.generic_handoff.default_type or scenario.handoff_type
    routes: dict[tuple[str, str], EffectiveRoute] = {}
    for edge in edges:
        pair = (edge.from_agent, edge.to_agent)
        if edge.from_agent in snapshot.agents and edge.to_agent in snapshot.agents:
            routes[pair] = EffectiveRoute(
                from_agent=edge.from_agent,
                to_agent=edge.to_agent,
                type=scenario.type_of(edge),
                origin=origin.get(pair, "scenario"),
            )
    for source in sorted(snapshot.agents):
        for target in handoff_targets(snapshot, source):
            pair = (source, target)
            if pair not in explicit and pair not in closed:
                routes.setdefault(
                    pair,
                    EffectiveRoute(
                        from_agent=source, to_agent=target, type=generic_type, origin="generic"
                    ),
                )
    return [routes[pair] for pair in sorted(routes) if pair[0] != pair[1]]


def handoff_targets(snapshot: CallSnapshot, agent: str) -> tuple[str, ...]:
    """The targets `agent`'s handoff tool offered when the call pinned its snapshot."""
    brief = snapshot.agents.get(agent)
    tool = next((t for t in brief.tools if t.name == HANDOFF_TOOL), None) if brief else None
    if tool is None:
        return ()
    enum = tool.parameters.get("properties", {}).get("target_agent", {}).get("enum")
    return tuple(str(name) for name in enum) if isinstance(enum, list) else ()
