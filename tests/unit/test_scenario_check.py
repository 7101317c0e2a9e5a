"""`baton scenario check` rules, each shown failing on a small broken registry."""

from __future__ import annotations

import copy
from typing import Any

from registries.loading import load_registry
from registries.validation import check_registry
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS


def check(
    write_registry: RegistryWriter, *, agents: Any = None, scenario: Any = None, prompts: Any = None
) -> list[str]:
    root = write_registry(
        agents=agents or AGENTS,
        scenarios={"demo": scenario or SCENARIO},
        tools=TOOLS,
        prompts=prompts,
    )
    return [str(p) for p in check_registry(load_registry(root))]


def with_agent(folder: str, **fields: Any) -> dict[str, Any]:
    agents = copy.deepcopy(AGENTS)
    agents[folder].update(fields)
    return agents


def test_unknown_tool_is_an_error_with_suggestion(write_registry: RegistryWriter) -> None:
    problems = check(write_registry, agents=with_agent("fraud", tools=["lookpu"]))
    assert any(
        "fraud/agent.yaml:3: error: tools[0]: unknown tool 'lookpu'; did you mean 'lookup'?" in p
        for p in problems
    ), problems


def test_listing_the_handoff_tool_is_a_warning(write_registry: RegistryWriter) -> None:
    problems = check(write_registry, agents=with_agent("fraud", tools=["handoff_to_agent"]))
    assert any(
        "warning: tools[0]: handoff_to_agent is added automatically" in p for p in problems
    ), problems


def test_unknown_scenario_agent_is_an_error(write_registry: RegistryWriter) -> None:
    scenario = {**SCENARIO, "agents": ["FrontDesk", "FraudAgent", "Ghost"]}
    problems = check(write_registry, scenario=scenario)
    assert any("agents[2]: no agent 'Ghost' in the agent store" in p for p in problems)


def test_start_agent_must_be_in_the_scenario(write_registry: RegistryWriter) -> None:
    problems = check(write_registry, scenario={**SCENARIO, "start_agent": "FrontDsk"})
    assert any(
        "start_agent: 'FrontDsk' is not an agent in this scenario; did you mean 'FrontDesk'?" in p
        for p in problems
    ), problems


def test_missing_start_agent_is_an_error(write_registry: RegistryWriter) -> None:
    scenario = {k: v for k, v in SCENARIO.items() if k != "start_agent"}
    assert any("start_agent is missing" in p for p in check(write_registry, scenario=scenario))


def test_unreachable_agent_is_an_error(write_registry: RegistryWriter) -> None:
    scenario = {**SCENARIO, "handoffs": [SCENARIO["handoffs"][1]]}
    problems = check(write_registry, scenario=scenario)
    assert any("FraudAgent cannot be reached from start agent FrontDesk" in p for p in problems)


def test_dead_end_agent_without_exit_is_an_error(write_registry: RegistryWriter) -> None:
    scenario = {**SCENARIO, "handoffs": [SCENARIO["handoffs"][0]]}
    problems = check(
        write_registry, agents=with_agent("fraud", tools=["lookup"]), scenario=scenario
    )
    assert any(
        "FraudAgent has no route back to FrontDesk and no tool that ends or escalates" in p
        for p in problems
    ), problems


def test_dead_end_agent_with_an_ending_tool_is_fine(write_registry: RegistryWriter) -> None:
    scenario = {**SCENARIO, "handoffs": [SCENARIO["handoffs"][0]]}
    agents = with_agent("fraud", tools=["lookup", "end_call"])
    assert check(write_registry, agents=agents, scenario=scenario) == []


def test_an_agent_that_cannot_end_the_call_is_warned_about(
    write_registry: RegistryWriter,
) -> None:
    problems = check(write_registry, agents=with_agent("fraud", tools=["lookup"]))
    assert problems == [
        problem
        for problem in problems
        if "agentstore/fraud/agent.yaml:2: warning: tools:" in problem
    ]
    assert (
        len(problems) == 1
        and "FraudAgent can say goodbye but holds no tool that ends" in (problems[0])
    )


def test_duplicate_routes_are_an_error(write_registry: RegistryWriter) -> None:
    scenario = {**SCENARIO, "handoffs": [*SCENARIO["handoffs"], SCENARIO["handoffs"][0]]}
    problems = check(write_registry, scenario=scenario)
    assert any("handoffs[2]: duplicate route FrontDesk -> FraudAgent" in p for p in problems)


def test_route_to_itself_is_an_error(write_registry: RegistryWriter) -> None:
    loop = {"from_agent": "FrontDesk", "to_agent": "FrontDesk"}
    scenario = {**SCENARIO, "handoffs": [*SCENARIO["handoffs"], loop]}
    problems = check(write_registry, scenario=scenario)
    assert any("route from FrontDesk to itself" in p for p in problems)


def test_greeting_that_does_not_compile_is_an_error(write_registry: RegistryWriter) -> None:
    problems = check(write_registry, agents=with_agent("front", greeting="Hi {{ name"))
    assert any(
        "front/agent.yaml:2: error: greeting: template does not compile" in p for p in problems
    ), problems


def test_prompt_error_points_into_the_prompt_file(write_registry: RegistryWriter) -> None:
    agents = with_agent("front", prompt="prompt.jinja")
    problems = check(
        write_registry, agents=agents, prompts={"front": "line one\nline two {% if %}\n"}
    )
    assert any(
        "prompt: template does not compile (" in p and "prompt.jinja:2)" in p for p in problems
    ), problems


def test_greeting_with_undefined_variable_is_an_error(write_registry: RegistryWriter) -> None:
    problems = check(write_registry, agents=with_agent("front", greeting="Hi from {{ brand }}"))
    assert any(
        "greeting: uses undefined variable(s) brand in scenario 'demo'" in p for p in problems
    ), problems


def test_scenario_vars_satisfy_greeting_variables(write_registry: RegistryWriter) -> None:
    agents = with_agent("front", greeting="Hi from {{ brand }}, {{ caller_name or 'caller' }}")
    scenario = {**SCENARIO, "agent_defaults": {"brand": "Acme"}}
    assert check(write_registry, agents=agents, scenario=scenario) == []


def test_context_vars_syntax_error_is_caught_at_load(write_registry: RegistryWriter) -> None:
    edge = {**SCENARIO["handoffs"][0], "context_vars": {"tier": "{{ profile.tier "}}
    scenario = {**SCENARIO, "handoffs": [edge, SCENARIO["handoffs"][1]]}
    problems = check(write_registry, scenario=scenario)
    assert any("handoffs[0].context_vars.tier: template does not compile" in p for p in problems), (
        problems
    )


def test_tool_without_handler_is_an_error(write_registry: RegistryWriter) -> None:
    tools = {"basic": (TOOLS["basic"][0], "def end_call(ctx):\n    return {}\n")}
    root = write_registry(agents=AGENTS, scenarios={"demo": SCENARIO}, tools=tools)
    problems = [str(p) for p in check_registry(load_registry(root))]
    assert any("tools[1].handler: basic.py has no function 'lookup'" in p for p in problems)


def test_every_problem_is_reported_at_once(write_registry: RegistryWriter) -> None:
    agents = with_agent("fraud", tools=["nope"], greeting="{{ x")
    scenario = {**SCENARIO, "start_agent": "Nobody"}
    problems = check(write_registry, agents=agents, scenario=scenario)
    assert len(problems) >= 3
