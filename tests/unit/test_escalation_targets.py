"""A scenario's `escalation` block: where escalated callers are transferred, checked by
`baton scenario check` and pinned in the call's snapshot."""

from __future__ import annotations

from typing import Any

import pytest

from activities.snapshot import build_snapshot
from activities.snapshot_store import snapshot_digest
from baton.cli import main
from contracts.registry import EscalationConfig
from registries.loading import load_registry
from registries.validation import check_registry
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS

FRAUD_DESK = {"kind": "queue", "address": "fraud-desk", "label": "Fraud desk"}
FRONT_DESK = {"kind": "queue", "address": "front-desk"}


def problems(write_registry: RegistryWriter, escalation: Any) -> list[str]:
    root = write_registry(
        agents=AGENTS, scenarios={"demo": {**SCENARIO, "escalation": escalation}}, tools=TOOLS
    )
    return [str(p) for p in check_registry(load_registry(root))]


def test_a_well_formed_escalation_block_has_no_problems(write_registry: RegistryWriter) -> None:
    escalation = {
        "default_target": FRONT_DESK,
        "agent_targets": {"FraudAgent": FRAUD_DESK},
        "reason_targets": {"loop_guard": {"kind": "phone", "address": "+14155550100"}},
        "hold_timeout_seconds": 30,
    }
    assert problems(write_registry, escalation) == []


def test_an_unknown_agent_is_refused_with_file_field_and_fix(
    write_registry: RegistryWriter,
) -> None:
    found = problems(write_registry, {"agent_targets": {"FraudAgnet": FRAUD_DESK}})
    assert any(
        "scenariostore/demo/scenario.yaml:" in p
        and "error: escalation.agent_targets.FraudAgnet: 'FraudAgnet' is not an agent in this "
        "scenario; did you mean 'FraudAgent'?"
        in p
        for p in found
    ), found


def test_an_unknown_reason_is_refused_with_the_reasons_to_choose_from(
    write_registry: RegistryWriter,
) -> None:
    found = problems(write_registry, {"reason_targets": {"angry_caller": FRONT_DESK}})
    assert any(
        "error: escalation.reason_targets.angry_caller: 'angry_caller' is not an escalation "
        "reason; reasons: scenario_unavailable, render_error" in p
        for p in found
    ), found
    close = problems(write_registry, {"reason_targets": {"loop_gaurd": FRONT_DESK}})
    assert any("did you mean 'loop_guard'?" in p for p in close), close


def test_a_phone_target_must_be_an_e164_number(write_registry: RegistryWriter) -> None:
    found = problems(write_registry, {"default_target": {"kind": "phone", "address": "555-0100"}})
    assert any(
        "escalation.default_target" in p and "E.164 number such as +14155550100" in p for p in found
    ), found


def test_a_reason_target_beats_the_agents_which_beats_the_default() -> None:
    config = EscalationConfig.model_validate(
        {
            "default_target": FRONT_DESK,
            "agent_targets": {"FraudAgent": FRAUD_DESK},
            "reason_targets": {"loop_guard": {"kind": "sip", "address": "sip:lead@pbx.example"}},
        }
    )

    def address(reason: str, agent: str) -> str | None:
        target = config.target_for(reason, agent)
        return None if target is None else target.address

    assert address("loop_guard", "FraudAgent") == "sip:lead@pbx.example"
    assert address("agent_requested", "FraudAgent") == "fraud-desk"
    assert address("agent_requested", "FrontDesk") == "front-desk"
    assert EscalationConfig().target_for("agent_requested", "FrontDesk") is None
    assert EscalationConfig().hold_timeout_seconds == 120


def test_the_targets_are_pinned_in_the_snapshot_and_an_unset_block_keeps_old_hashes(
    write_registry: RegistryWriter,
) -> None:
    with_block = {**SCENARIO, "escalation": {"agent_targets": {"FraudAgent": FRAUD_DESK}}}
    root = write_registry(
        agents=AGENTS,
        scenarios={"demo": with_block, "plain": {**SCENARIO, "name": "plain"}},
        tools=TOOLS,
    )
    registry = load_registry(root)
    pinned = build_snapshot(registry, "demo")
    assert pinned.scenario.escalation.agent_targets["FraudAgent"].label == "Fraud desk"
    plain = build_snapshot(registry, "plain")
    # A call pinned before the block existed decodes with the default; its hash must not move.
    dumped = plain.model_dump(mode="json")
    del dumped["scenario"]["escalation"]
    assert snapshot_digest(type(plain).model_validate(dumped)) == plain.content_hash
    # A set block is hashed: a call pinned with targets cannot pass for one without.
    stripped = pinned.model_dump(mode="json")
    del stripped["scenario"]["escalation"]
    assert snapshot_digest(type(pinned).model_validate(stripped)) != pinned.content_hash


def test_scenario_check_prints_the_problem_and_exits_1(
    capsys: pytest.CaptureFixture[str], write_registry: RegistryWriter
) -> None:
    root = write_registry(
        agents=AGENTS,
        scenarios={"demo": {**SCENARIO, "escalation": {"agent_targets": {"Ghost": FRONT_DESK}}}},
        tools=TOOLS,
    )
    code = main(["scenario", "check", str(root)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "escalation.agent_targets.Ghost: 'Ghost' is not an agent in this scenario" in out + err
    assert "Traceback" not in out + err


def test_every_shipped_scenario_transfers_escalations_to_a_person(shipped: Any) -> None:
    # With no target a caller could only be told to wait for a call back: each shipped
    # scenario names a desk, so every agent's escalation reaches a person.
    for name, scenario in shipped.scenarios.items():
        agents = scenario.agents or tuple(shipped.agents)
        for agent in agents:
            target = scenario.escalation.target_for("agent_requested", agent)
            assert target is not None, f"{name}: {agent}'s escalations reach nobody"
