"""A route's `on_tool_result`: a handoff taken by code when a tool returns a given result,
checked at load and by `baton scenario check`, and matched by value and type."""

from __future__ import annotations

from typing import Any

from contracts.registry import ToolResultRule
from registries.loading import load_registry
from registries.validation import check_registry
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS


def problems(write_registry: RegistryWriter, rule: Any) -> list[str]:
    back = {**SCENARIO["handoffs"][1], "on_tool_result": rule}
    scenario = {**SCENARIO, "handoffs": [SCENARIO["handoffs"][0], back]}
    root = write_registry(agents=AGENTS, scenarios={"demo": scenario}, tools=TOOLS)
    return [str(p) for p in check_registry(load_registry(root))]


def test_a_rule_on_a_tool_of_the_source_agent_has_no_problems(
    write_registry: RegistryWriter,
) -> None:
    assert problems(write_registry, {"tool": "lookup", "equals": {"found": True}}) == []


def test_a_tool_the_source_agent_lacks_is_refused_with_file_field_and_its_tools(
    write_registry: RegistryWriter,
) -> None:
    found = problems(write_registry, {"tool": "lookpu", "equals": {"found": True}})
    assert any(
        "scenariostore/demo/scenario.yaml:" in p
        and "error: handoffs[1].on_tool_result.tool: 'lookpu' is not a tool of FraudAgent, so "
        "this rule could never fire; name one of FraudAgent's tools (did you mean 'lookup'?)"
        in p
        for p in found
    ), found


def test_a_tool_that_ends_the_call_is_refused(write_registry: RegistryWriter) -> None:
    found = problems(write_registry, {"tool": "end_call", "equals": {"ended": True}})
    assert any("handoffs[1].on_tool_result.tool: 'end_call' ends the call" in p for p in found), (
        found
    )


def test_a_rule_with_nothing_to_compare_is_refused_at_load(
    write_registry: RegistryWriter,
) -> None:
    found = problems(write_registry, {"tool": "lookup", "equals": {}})
    assert any("handoffs[1].on_tool_result.equals" in p for p in found), found


def test_a_rule_matches_every_field_by_value_and_type() -> None:
    rule = ToolResultRule(tool="verify_identity", equals={"verified": True})
    assert rule.matches("verify_identity", {"verified": True, "client_id": "C1001"})
    assert not rule.matches("verify_identity", {"verified": False})
    assert not rule.matches("verify_identity", {"verified": 1})  # true is not 1
    assert not rule.matches("verify_identity", {"error": "no such caller"})
    assert not rule.matches("block_card", {"verified": True})
    assert rule.describe() == "verify_identity returned verified=true"
