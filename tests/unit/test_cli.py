"""The `baton scenario` commands as a scenario author runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.cli import main
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_passes_on_every_shipped_scenario(capsys: Any) -> None:
    code, out, err = run(capsys, "scenario", "check")
    assert code == 0, err
    for name in ("banking", "insurance", "healthcare", "default"):
        assert f"{name}: ok" in out
    assert "0 error(s)" in out


def test_check_fails_clearly_on_a_broken_registry(
    capsys: Any, write_registry: RegistryWriter
) -> None:
    broken = {**SCENARIO, "start_agent": "FrontDsk"}
    root = write_registry(agents=AGENTS, scenarios={"demo": broken}, tools=TOOLS)
    code, out, err = run(capsys, "scenario", "check", str(root))
    assert code == 1
    assert "scenario.yaml:2: error: start_agent: 'FrontDsk' is not an agent" in err
    assert "demo: FAILED" in out and "Traceback" not in err


def test_check_of_one_scenario_folder_uses_the_registry_agents(capsys: Any, tmp_path: Path) -> None:
    folder = tmp_path / "mini"
    folder.mkdir()
    (folder / "scenario.yaml").write_text(
        "name: mini\nstart_agent: ReceptionAgent\nagents: [ReceptionAgent, NurseAgnt]\n"
    )
    code, _, err = run(capsys, "scenario", "check", str(folder))
    assert code == 1
    assert "agents[1]: no agent 'NurseAgnt' in the agent store; did you mean 'NurseAgent'?" in err


def test_check_of_unknown_scenario_name_suggests(capsys: Any) -> None:
    code, _, err = run(capsys, "scenario", "check", "bankng")
    assert code == 2 and "Did you mean 'banking'?" in err


def test_graph_mermaid_draws_types_and_conditions(capsys: Any) -> None:
    code, out, _ = run(capsys, "scenario", "graph", "banking")
    assert code == 0 and out.startswith("flowchart LR")
    assert 'Concierge(["Concierge (start)"])' in out
    assert '  Concierge -->|"announced: The caller reports a lost or stolen card' in out
    assert '  Concierge -.->|"discrete: The caller asks about investments' in out


def test_graph_dot_and_generic_routes(capsys: Any) -> None:
    code, out, _ = run(capsys, "scenario", "graph", "default", "--format", "dot")
    assert code == 0 and out.startswith('digraph "default" {')
    assert '"any agent" -> "FraudAgent" [label="announced: generic handoff_to_agent"' in out


def route(capsys: Any, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, "scenario", "route", *extra)
    return code, json.loads(out)


def test_route_announced_first_visit_gives_greeting(capsys: Any) -> None:
    code, result = route(
        capsys,
        "banking",
        "Concierge",
        "FraudAgent",
        "--reason",
        "stolen card",
        "--profile",
        '{"name": "Alex", "client_id": "C1001"}',
    )
    assert code == 0 and result["success"] is True
    assert result["handoff_type"] == "announced" and result["greet_on_switch"] is True
    assert result["system_vars"]["handoff_reason"] == "stolen card"
    assert result["system_vars"]["client_id"] == "C1001"
    assert "Alex" in result["greeting"]
    for key in ("error", "target_agent", "source_agent", "share_context"):
        assert key in result


def test_route_return_visit_uses_return_greeting(capsys: Any, shipped: Any) -> None:
    _, first = route(capsys, "banking", "Concierge", "FraudAgent")
    _, back = route(capsys, "banking", "Concierge", "FraudAgent", "--visited", "FraudAgent")
    assert first["greeting"] != back["greeting"]
    assert back["greeting"]


def test_route_discrete_has_no_greeting(capsys: Any) -> None:
    code, result = route(capsys, "banking", "Concierge", "InvestmentAdvisor")
    assert code == 0 and result["handoff_type"] == "discrete" and result["greeting"] is None
    assert result["system_vars"]["portfolio_focus"] == "standard"


def test_route_refused_lists_valid_targets(capsys: Any) -> None:
    code, result = route(capsys, "banking", "CardRecommendation", "FraudAgent")
    assert code == 1 and result["success"] is False and result["greeting"] is None
    assert "Valid targets: Concierge." in result["error"]


def test_route_bad_profile_is_a_clear_error(capsys: Any) -> None:
    code, _, err = run(
        capsys, "scenario", "route", "banking", "Concierge", "FraudAgent", "--profile", "{not json"
    )
    assert code == 2 and "--profile is not valid JSON" in err


def test_registry_option_and_environment_select_the_registry(
    capsys: Any, monkeypatch: Any, write_registry: RegistryWriter
) -> None:
    root = write_registry(agents=AGENTS, scenarios={"demo": SCENARIO}, tools=TOOLS)
    code, out, _ = run(capsys, "scenario", "list", "--registry", str(root))
    assert code == 0 and out.startswith("demo:")
    monkeypatch.setenv("BATON_REGISTRY", str(root))
    code, out, _ = run(capsys, "scenario", "graph", "demo")
    assert code == 0 and "FrontDesk -->" in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [(["scenario", "check"], "banking: ok"), (["scenario", "graph", "insurance"], "flowchart")],
)
def test_console_entry_point_runs(argv: list[str], expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "baton.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
