"""Registry files are bounded before anything is built from them: alias bombs, self-referring
aliases and oversized files are refused at load, as `file:line: field: problem; fix`."""

from __future__ import annotations

from typing import Any

from registries.loading import load_registry
from registries.yaml_source import MAX_FILE_BYTES
from tests.conftest import RegistryWriter
from tests.unit.test_cli import run
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS, problems_of

#: The classic "billion laughs": ten aliases per level, nine levels, 10**9 "lol"s in all.
BILLION_LAUGHS = "name: demo\nstart_agent: FrontDesk\nlol0: &l0 lol\n" + "".join(
    f"lol{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 10)}]\n" for level in range(1, 10)
)
#: The same growth through merge keys, which PyYAML expands while building the mappings.
MERGE_BOMB = "name: demo\nm0: &m0 {a: 1, b: 2}\n" + "".join(
    f"m{level}: &m{level}\n  <<: [{', '.join([f'*m{level - 1}'] * 10)}]\n" for level in range(1, 9)
)


def test_billion_laughs_is_refused_at_load(write_registry: RegistryWriter) -> None:
    root = write_registry(agents=AGENTS, scenarios={"demo": BILLION_LAUGHS}, tools=TOOLS)
    registry = load_registry(root)
    assert "demo" not in registry.scenarios
    (problem,) = [str(p) for p in registry.problems]
    # lol6 is the first entry past the cap (4.4 million characters); its line is the one to fix.
    assert problem.endswith(
        "scenariostore/demo/scenario.yaml:9: error: lol6: grows past 1,000,000 characters once "
        "its YAML aliases are expanded (an alias bomb); write the values out or use far fewer "
        "aliases"
    ), problem


def test_billion_laughs_fails_scenario_check_without_a_traceback(
    capsys: Any, write_registry: RegistryWriter
) -> None:
    agents = {**AGENTS, "bomb": BILLION_LAUGHS.replace("name: demo", "name: Bomb")}
    root = write_registry(agents=agents, scenarios={"demo": SCENARIO}, tools=TOOLS)
    code, out, err = run(capsys, "scenario", "check", str(root))
    assert code == 1
    assert "agentstore/bomb/agent.yaml:9: error: lol6: grows past 1,000,000 characters" in err
    assert "Traceback" not in err and "1 error(s)" in out


def test_merge_key_bomb_is_refused(write_registry: RegistryWriter) -> None:
    root = write_registry(agents=AGENTS, scenarios={"demo": MERGE_BOMB}, tools=TOOLS)
    (problem,) = problems_of(root)
    assert "scenario.yaml:" in problem and "grows past 1,000,000 characters" in problem


def test_alias_that_contains_itself_is_refused(write_registry: RegistryWriter) -> None:
    text = "name: demo\nstart_agent: FrontDesk\nloop: &loop [1, *loop]\n"
    root = write_registry(agents=AGENTS, scenarios={"demo": text}, tools=TOOLS)
    (problem,) = problems_of(root)
    assert "scenario.yaml:1: error: an alias refers to a node that contains it" in problem


def test_ordinary_aliases_still_load(write_registry: RegistryWriter) -> None:
    text = (
        "name: demo\nstart_agent: FrontDesk\nagents: [FrontDesk, FraudAgent]\nhandoffs:\n"
        "  - &route {from_agent: FrontDesk, to_agent: FraudAgent, type: announced}\n"
        "  - <<: *route\n    from_agent: FraudAgent\n    to_agent: FrontDesk\n"
    )
    root = write_registry(agents=AGENTS, scenarios={"demo": text}, tools=TOOLS)
    assert problems_of(root) == []
    assert load_registry(root).scenarios["demo"].handoffs[1].type == "announced"


def test_oversized_yaml_file_is_refused_unread(write_registry: RegistryWriter) -> None:
    text = "name: demo\nstart_agent: FrontDesk\n# " + "x" * MAX_FILE_BYTES + "\n"
    root = write_registry(agents=AGENTS, scenarios={"demo": text}, tools=TOOLS)
    (problem,) = problems_of(root)
    assert problem.endswith(
        "scenariostore/demo/scenario.yaml: error: file is larger than 256 KiB; a registry file "
        "needs far less: split it or remove what does not belong in it"
    ), problem


def test_oversized_prompt_file_is_refused(write_registry: RegistryWriter) -> None:
    agents = {**AGENTS, "front": {**AGENTS["front"], "prompt": "prompt.jinja"}}
    prompts = {"front": "You are the front desk.\n" * (MAX_FILE_BYTES // 20)}
    root = write_registry(agents=agents, scenarios={"demo": SCENARIO}, tools=TOOLS, prompts=prompts)
    problems = problems_of(root)
    assert any(
        p.endswith(
            "agentstore/front/prompt.jinja: error: file is larger than 256 KiB; a registry "
            "file needs far less: split it or remove what does not belong in it"
        )
        for p in problems
    ), problems
