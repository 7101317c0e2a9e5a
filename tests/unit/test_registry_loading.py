"""Loading registry files: every bad file is reported as file:line, field and fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registries.errors import RegistryError
from registries.loading import load_registry, registry_root
from registries.validation import check_registry
from tests.conftest import RegistryWriter

TOOLS = {
    "basic": (
        {
            "tools": [
                {"name": "end_call", "description": "Hang up.", "ends_conversation": True},
                {
                    "name": "lookup",
                    "description": "Look something up.",
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                },
            ]
        },
        "def end_call(ctx):\n    return {'ended': True}\n\n"
        "def lookup(ctx, q=''):\n    return {'q': q}\n",
    )
}
AGENTS: dict[str, Any] = {
    "front": {"name": "FrontDesk", "greeting": "Hello.", "tools": ["end_call"]},
    "fraud": {"name": "FraudAgent", "tools": ["lookup", "end_call"]},
}
SCENARIO: dict[str, Any] = {
    "name": "demo",
    "start_agent": "FrontDesk",
    "agents": ["FrontDesk", "FraudAgent"],
    "handoffs": [
        {"from_agent": "FrontDesk", "to_agent": "FraudAgent", "type": "announced"},
        {"from_agent": "FraudAgent", "to_agent": "FrontDesk", "type": "discrete"},
    ],
}


def problems_of(root: Path, scenario: str | None = None) -> list[str]:
    return [str(p) for p in check_registry(load_registry(root), only=scenario)]


def test_good_registry_has_no_problems(write_registry: RegistryWriter) -> None:
    root = write_registry(agents=AGENTS, scenarios={"demo": SCENARIO}, tools=TOOLS)
    assert problems_of(root) == []


def test_yaml_syntax_error_names_file_and_line(write_registry: RegistryWriter) -> None:
    text = "name: demo\nstart_agent: FrontDesk\nagents: [FrontDesk\nhandoffs: []\n"
    root = write_registry(agents=AGENTS, scenarios={"demo": text}, tools=TOOLS)
    (problem,) = problems_of(root)
    assert "scenariostore/demo/scenario.yaml:4: error:" in problem
    assert "YAML syntax" in problem and "indentation" in problem


def test_unknown_field_suggests_the_right_name(write_registry: RegistryWriter) -> None:
    text = "name: demo\nstart_agent: FrontDesk\nhandof_type: announced\n"
    root = write_registry(agents=AGENTS, scenarios={"demo": text}, tools=TOOLS)
    (problem,) = problems_of(root)
    assert problem.endswith(
        "scenario.yaml:3: error: handof_type: unknown field 'handof_type'; "
        "did you mean 'handoff_type'?"
    )


def test_nested_field_errors_give_path_and_line(write_registry: RegistryWriter) -> None:
    bad = {
        **SCENARIO,
        "handoffs": [
            {"from_agent": "FrontDesk", "to_agent": "FraudAgent", "type": "silent"},
            {"from_agent": "FraudAgent", "to_agent": "FrontDesk", "share_context": "yes"},
            {"from_agent": "FraudAgent"},
        ],
    }
    root = write_registry(agents=AGENTS, scenarios={"demo": bad}, tools=TOOLS)
    problems = problems_of(root)
    assert any(
        ":9: error: handoffs[0].type:" in p and "'announced' or 'discrete'" in p and "'silent'" in p
        for p in problems
    ), problems
    assert any(
        "handoffs[1].share_context: Input should be a valid boolean (got 'yes')" in p
        for p in problems
    ), problems
    assert any(
        "handoffs[2].to_agent: required field 'to_agent' is missing; add it" in p for p in problems
    ), problems


def test_misspelt_agent_in_route_gets_did_you_mean(write_registry: RegistryWriter) -> None:
    bad = {
        **SCENARIO,
        "handoffs": [
            {"from_agent": "FrontDesk", "to_agent": "FraudAgnt"},
            {"from_agent": "FraudAgent", "to_agent": "FrontDesk"},
        ],
    }
    root = write_registry(agents=AGENTS, scenarios={"demo": bad}, tools=TOOLS)
    problems = problems_of(root)
    assert any(
        p.endswith(
            "scenario.yaml:8: error: handoffs[0].to_agent: 'FraudAgnt' is not an agent in this "
            "scenario; did you mean 'FraudAgent'?"
        )
        for p in problems
    ), problems


def test_file_that_is_not_a_mapping_is_reported(write_registry: RegistryWriter) -> None:
    root = write_registry(agents=AGENTS, scenarios={"demo": "- just\n- a list\n"}, tools=TOOLS)
    (problem,) = problems_of(root)
    assert "must hold a YAML mapping" in problem


def test_defaults_are_deep_merged_under_every_agent(write_registry: RegistryWriter) -> None:
    root = write_registry(agents=AGENTS, scenarios={"demo": SCENARIO}, tools=TOOLS)
    defaults = "voice: {name: en-GB-Sonia, style: calm}\ntemplate_vars: {company_name: Acme}\n"
    (root / "agentstore" / "_defaults.yaml").write_text(defaults)
    agent_yaml = root / "agentstore" / "fraud" / "agent.yaml"
    agent_yaml.write_text(agent_yaml.read_text() + "voice: {style: urgent}\n")
    registry = load_registry(root)
    fraud, front = registry.agents["FraudAgent"], registry.agents["FrontDesk"]
    assert (fraud.voice.name, fraud.voice.style) == ("en-GB-Sonia", "urgent")
    assert (front.voice.name, front.voice.style) == ("en-GB-Sonia", "calm")
    assert fraud.template_vars == {"company_name": "Acme"}


def test_legacy_top_level_handoff_trigger_is_accepted(write_registry: RegistryWriter) -> None:
    agents = {**AGENTS, "fraud": {**AGENTS["fraud"], "handoff_trigger": "handoff_fraud_agent"}}
    root = write_registry(agents=agents, scenarios={"demo": SCENARIO}, tools=TOOLS)
    assert load_registry(root).agents["FraudAgent"].handoff.trigger == "handoff_fraud_agent"


def test_prompt_file_is_read_and_a_missing_one_reported(write_registry: RegistryWriter) -> None:
    agents = {
        **AGENTS,
        "front": {**AGENTS["front"], "prompt": "prompt.jinja"},
        "fraud": {**AGENTS["fraud"], "prompt": "missing.jinja"},
    }
    root = write_registry(
        agents=agents,
        scenarios={"demo": SCENARIO},
        tools=TOOLS,
        prompts={"front": "You are the front desk."},
    )
    registry = load_registry(root)
    assert registry.agents["FrontDesk"].prompt == "You are the front desk."
    assert registry.agents["FrontDesk"].prompt_file.endswith("front/prompt.jinja")
    assert any("prompt file 'missing.jinja' not found" in str(p) for p in registry.problems)


def test_scenario_name_must_match_its_folder(write_registry: RegistryWriter) -> None:
    root = write_registry(agents=AGENTS, scenarios={"other": SCENARIO}, tools=TOOLS)
    (problem,) = problems_of(root)
    assert "name 'demo' differs from its folder 'other'" in problem


def test_duplicate_agent_names_are_reported(write_registry: RegistryWriter) -> None:
    agents = {**AGENTS, "fraud2": AGENTS["fraud"]}
    root = write_registry(agents=agents, scenarios={"demo": SCENARIO}, tools=TOOLS)
    assert any("agent 'FraudAgent' is already defined" in p for p in problems_of(root))


def test_a_broken_scenario_does_not_block_a_good_one(write_registry: RegistryWriter) -> None:
    broken = {**SCENARIO, "name": "broken", "start_agent": "Nobody"}
    root = write_registry(
        agents=AGENTS, scenarios={"demo": SCENARIO, "broken": broken}, tools=TOOLS
    )
    registry = load_registry(root)
    assert registry.require_scenario("demo").name == "demo"
    with pytest.raises(RegistryError) as caught:
        registry.require_scenario("broken")
    assert all("broken/scenario.yaml" in p.file for p in caught.value.problems)


def test_registry_root_comes_from_environment(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(tmp_path))
    assert registry_root() == tmp_path.resolve()
    assert registry_root(tmp_path / "explicit") == (tmp_path / "explicit").resolve()


def test_missing_registry_folder_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    registry = load_registry(tmp_path / "nope")
    assert "registry folder does not exist" in str(registry.problems[0])
