"""Live route changes on the shipped scenarios' pinned snapshots: what the workflow's validator
refuses, the routes a call has after a change, and that the HandoffService, the model's brief
and the effective route list all agree on them."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from activities.handoff import decide_handoff
from activities.live_routes import with_route_changes
from activities.snapshot import build_snapshot
from contracts.calls import CallInput
from contracts.handoff import HandoffRequest
from contracts.registry import HANDOFF_TOOL
from contracts.routes import MAX_ROUTE_CHANGES, RouteChange, effective_routes
from contracts.snapshot import CallSnapshot
from registries.loading import load_registry
from runtime.supervision import SupervisionError, parse_action
from workflows.route_changes import canonical, route_change_problem
from workflows.state import CallState


@cache
def snapshot(name: str = "banking") -> CallSnapshot:
    return build_snapshot(load_registry(), name)


def state(name: str = "banking", changes: tuple[RouteChange, ...] = ()) -> CallState:
    return CallState(
        call=CallInput(call_id="c1", scenario=name),
        snapshot=snapshot(name),
        route_changes=list(changes),
    )


def change(action: str, frm: str, to: str, new_to: str | None = None) -> RouteChange:
    return RouteChange(action=action, from_agent=frm, to_agent=to, new_to_agent=new_to)


def handoff(target: str, changes: list[RouteChange], source: str = "Concierge") -> Any:
    pinned = snapshot()
    request = HandoffRequest(
        scenario=pinned.scenario,
        agents=pinned.agent_configs(),
        handoff_map=pinned.handoff_map,
        source_agent=source,
        tool_name=HANDOFF_TOOL,
        tool_args={"target_agent": target, "reason": "supervisor said so"},
        route_changes=changes,
    )
    return decide_handoff(request).resolution


def targets(
    changes: list[RouteChange], source: str = "Concierge", name: str = "banking"
) -> set[str]:
    return {r.to_agent for r in effective_routes(snapshot(name), changes) if r.from_agent == source}


def test_an_added_route_is_allowed_with_its_type_and_listed_as_added() -> None:
    assert not handoff("ComplianceDesk", []).success
    added = RouteChange(
        action="add", from_agent="Concierge", to_agent="ComplianceDesk", type="discrete"
    )
    resolution = handoff("ComplianceDesk", [added])
    assert resolution.success and resolution.handoff_type == "discrete"
    listed = {
        (r.from_agent, r.origin, r.type)
        for r in effective_routes(snapshot(), [added])
        if r.to_agent == "ComplianceDesk"
    }
    assert listed == {
        ("InvestmentAdvisor", "scenario", "announced"),
        ("Concierge", "added", "discrete"),
    }


def test_a_removed_route_is_refused_and_the_refusal_lists_what_is_left() -> None:
    removed = change("remove", "Concierge", "FraudAgent")
    resolution = handoff("FraudAgent", [removed])
    assert not resolution.success
    assert "no route from Concierge to FraudAgent" in (resolution.error or "")
    assert "FraudAgent" not in resolution.valid_targets
    assert "AuthAgent" in resolution.valid_targets
    assert "FraudAgent" not in targets([removed])


def test_a_retargeted_route_leads_to_the_new_agent_with_the_old_settings() -> None:
    moved = change("retarget", "Concierge", "CardRecommendation", "ComplianceDesk")
    assert not handoff("CardRecommendation", [moved]).success
    resolution = handoff("ComplianceDesk", [moved])
    # The card route is discrete in the scenario; the retargeted route keeps that.
    assert resolution.success and resolution.handoff_type == "discrete"
    origins = {
        r.to_agent: r.origin
        for r in effective_routes(snapshot(), [moved])
        if r.from_agent == "Concierge"
    }
    assert origins["ComplianceDesk"] == "retargeted" and "CardRecommendation" not in origins


def test_removing_a_generic_route_closes_it_and_adding_it_back_reopens_it() -> None:
    name = "default"
    agents = sorted(snapshot(name).agents)
    source, target = agents[0], agents[1]
    assert target in targets([], source, name)
    removed = change("remove", source, target)
    assert target not in targets([removed], source, name)
    assert route_change_problem(state(name, (removed,)), change("add", source, target)) is None
    again = [removed, change("add", source, target)]
    assert target in targets(again, source, name)


@pytest.mark.parametrize(
    ("proposed", "expected"),
    [
        (change("add", "Concierge", "Nobody"), "unknown agent 'Nobody'"),
        (change("add", "Concierge", "AuthAgent"), "already has a route Concierge -> AuthAgent"),
        (change("remove", "Concierge", "ComplianceDesk"), "no route Concierge -> ComplianceDesk"),
        (change("add", "Concierge", "concierge"), "cannot lead from Concierge to itself"),
        (
            change("retarget", "Concierge", "AuthAgent", "FraudAgent"),
            "already has a route Concierge -> FraudAgent",
        ),
    ],
)
def test_the_validator_refuses_what_cannot_apply(proposed: RouteChange, expected: str) -> None:
    problem = route_change_problem(state(), proposed)
    assert problem is not None and expected in problem


def test_the_validator_refuses_changes_on_an_ended_call() -> None:
    ended = state().model_copy(update={"status": "escalated"})
    assert route_change_problem(ended, change("add", "Concierge", "ComplianceDesk")) == (
        "the call has ended (escalated)"
    )


def test_names_match_in_any_case_and_are_kept_in_the_registry_spelling() -> None:
    spelled = canonical(snapshot(), change("add", "concierge", "COMPLIANCEDESK"))
    assert (spelled.from_agent, spelled.to_agent) == ("Concierge", "ComplianceDesk")
    assert route_change_problem(state(), change("add", "concierge", "compliancedesk")) is None


def test_the_model_brief_offers_an_added_route_and_drops_a_removed_one() -> None:
    changes = [
        change("add", "Concierge", "ComplianceDesk"),
        change("remove", "Concierge", "FraudAgent"),
    ]
    brief = with_route_changes(snapshot(), "Concierge", changes).agents["Concierge"]
    tool = next(t for t in brief.tools if t.name == HANDOFF_TOOL)
    enum = tool.parameters["properties"]["target_agent"]["enum"]
    assert "ComplianceDesk" in enum and "FraudAgent" not in enum
    assert [r.target_agent for r in brief.routes].count("ComplianceDesk") == 1
    assert "FraudAgent" not in [r.target_agent for r in brief.routes]
    assert 'target_agent="ComplianceDesk"' in brief.handoff_instructions
    assert 'target_agent="FraudAgent"' not in brief.handoff_instructions
    # Other agents keep the brief they were pinned with.
    assert (
        with_route_changes(snapshot(), "Concierge", changes).agents["AuthAgent"]
        == (snapshot().agents["AuthAgent"])
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "name exactly one action"),
        ({"transfer": "A", "hang_up": True}, "name exactly one action"),
        ({"add_route": "Concierge"}, "add_route takes FROM:TO"),
        ({"retarget": "A:B"}, "retarget takes FROM:OLD_TO:NEW_TO"),
        ({"hang_up": "yes"}, "hang_up takes true"),
        ({"transfer": 7}, "transfer takes text"),
        ({"remove_route": "A:B", "type": "discrete"}, "type and condition belong to an added"),
        ({"add_route": "A:B", "type": "sideways"}, "type: Input should be 'announced'"),
    ],
)
def test_malformed_supervisor_actions_are_refused_in_words(
    fields: dict[str, Any], expected: str
) -> None:
    with pytest.raises(SupervisionError, match=expected):
        parse_action(fields)


def test_an_added_route_takes_its_type_and_condition_from_the_action() -> None:
    fields = {"add_route": "Concierge:ComplianceDesk", "type": "discrete", "condition": "Audits"}
    action = parse_action(fields, "busy day", "sam")
    assert action.change == RouteChange(
        action="add",
        from_agent="Concierge",
        to_agent="ComplianceDesk",
        type="discrete",
        condition="Audits",
        reason="busy day",
        supervisor="sam",
    )


def test_a_call_takes_at_most_its_cap_of_route_changes() -> None:
    flip = [change("remove", "Concierge", "FraudAgent"), change("add", "Concierge", "FraudAgent")]
    full = state(changes=tuple(flip * (MAX_ROUTE_CHANGES // 2)))
    problem = route_change_problem(full, change("add", "Concierge", "ComplianceDesk"))
    assert problem == f"this call already has {MAX_ROUTE_CHANGES} route changes, the most it takes"
    assert route_change_problem(state(changes=tuple(flip)), flip[0]) is None
