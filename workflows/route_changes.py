"""The Update `change_routes`: a supervisor adds, removes or retargets a route of this call.

The validator refuses what cannot apply (unknown agents, a route that is missing or already
there, an ended call), so a refused change never reaches history. An accepted one is kept in
the call's state (continue-as-new carries it), recorded in the transcript, and sent with every
later handoff request and model turn of this call (contracts.routes says what it means).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.routes import (
        MAX_ROUTE_CHANGES,
        UPDATE_CHANGE_ROUTES,
        RouteChange,
        RouteChangeResult,
        effective_routes,
    )
    from contracts.snapshot import CallSnapshot
    from contracts.transcript import RouteChangeItem
    from workflows.state import CallState

#: Patch id: the call accepts live route changes (marks the histories that used one).
ROUTE_CHANGES = "route-changes"


def canonical(snapshot: CallSnapshot, change: RouteChange) -> RouteChange:
    """The change with agent names in the registry's spelling (names match in any case)."""
    names = {name.lower(): name for name in snapshot.agents}

    def spelled(name: str | None) -> str | None:
        return names.get(name.strip().lower(), name) if name is not None else None

    return change.model_copy(
        update={
            "from_agent": spelled(change.from_agent),
            "to_agent": spelled(change.to_agent),
            "new_to_agent": spelled(change.new_to_agent),
        }
    )


def route_change_problem(state: CallState, change: RouteChange) -> str | None:
    """Why `change` cannot apply to this call now, or None when it can."""
    if state.status != "active":
        return f"the call has ended ({state.status})"
    snapshot = state.snapshot
    if snapshot is None:
        return "the call has not loaded its scenario yet; try again in a moment"
    if len(state.route_changes) >= MAX_ROUTE_CHANGES:
        return f"this call already has {MAX_ROUTE_CHANGES} route changes, the most it takes"
    change = canonical(snapshot, change)
    for name in (change.from_agent, change.to_agent, change.new_to_agent):
        if name is not None and name not in snapshot.agents:
            agents = ", ".join(sorted(snapshot.agents))
            return (
                f"unknown agent {name!r}: the agents of scenario {snapshot.scenario.name!r} "
                f"are {agents}"
            )
    if change.target == change.from_agent:
        return f"a route cannot lead from {change.from_agent} to itself"
    routes = effective_routes(snapshot, state.route_changes)
    targets = {r.to_agent for r in routes if r.from_agent == change.from_agent}
    listed = ", ".join(sorted(targets)) or "none"
    if change.action == "add":
        if change.to_agent in targets:
            return f"the call already has a route {change.from_agent} -> {change.to_agent}"
        return None
    if change.to_agent not in targets:
        return (
            f"the call has no route {change.from_agent} -> {change.to_agent}; "
            f"routes from {change.from_agent} lead to: {listed}"
        )
    if change.action == "retarget" and change.target in targets:
        return f"the call already has a route {change.from_agent} -> {change.target}"
    return None


def apply_route_change(state: CallState, change: RouteChange) -> RouteChangeResult:
    """Keep an accepted change (the validator ran first) and record it in the transcript."""
    snapshot = state.snapshot
    assert snapshot is not None, "the validator refuses changes before the scenario is loaded"
    change = canonical(snapshot, change)
    state.route_changes.append(change)
    state.transcript.append(RouteChangeItem(at=workflow.now(), turn=state.turn, change=change))
    return RouteChangeResult(
        change=change,
        routes=effective_routes(snapshot, state.route_changes),
        changes=len(state.route_changes),
    )


class RouteChangeUpdate:
    """Registers the Update on the running call. Registered here at the workflow's start
    rather than declared on the workflow class, which is at its size limit; a change that
    arrives with the first workflow task still finds the handler (init runs first)."""

    def __init__(self, state: CallState) -> None:
        self.state = state
        workflow.set_update_handler(
            UPDATE_CHANGE_ROUTES, self.change_routes, validator=self.validate
        )

    def validate(self, change: RouteChange) -> None:
        problem = route_change_problem(self.state, change)
        if problem is not None:
            raise ValueError(problem)

    def change_routes(self, change: RouteChange) -> RouteChangeResult:
        workflow.patched(ROUTE_CHANGES)  # marks the histories that took a live route change
        return apply_route_change(self.state, change)
