"""The shipped scenarios behave as their graphs say (the seed examples and more)."""

from __future__ import annotations

import pytest

from contracts.registry import HANDOFF_TOOL
from registries.handoff_service import HandoffService, build_handoff_instructions
from registries.loading import Registry
from registries.prompting import render_prompt
from registries.toolset import openai_tool, tools_for_agent


def service(registry: Registry, name: str) -> HandoffService:
    return HandoffService(registry.require_scenario(name), registry.agents)


def test_banking_investment_route_is_discrete(shipped: Registry) -> None:
    result = service(shipped, "banking").resolve_handoff(
        source_agent="Concierge",
        tool_args={"target_agent": "InvestmentAdvisor", "reason": "User wants investment advice"},
    )
    assert result.success and result.target_agent == "InvestmentAdvisor" and result.is_discrete


@pytest.mark.parametrize("target", ["AuthAgent", "FraudAgent"])
def test_banking_sensitive_routes_are_announced(shipped: Registry, target: str) -> None:
    result = service(shipped, "banking").resolve_handoff(
        source_agent="Concierge", tool_args={"target_agent": target}
    )
    assert result.success and result.is_announced and result.greet_on_switch


def test_banking_invalid_route_is_refused(shipped: Registry) -> None:
    result = service(shipped, "banking").resolve_handoff(
        source_agent="Concierge", tool_args={"target_agent": "NonExistentAgent", "reason": "Test"}
    )
    assert not result.success
    assert result.valid_targets == (
        "AuthAgent",
        "CardRecommendation",
        "FraudAgent",
        "InvestmentAdvisor",
    )


def test_banking_does_not_reach_healthcare_agents(shipped: Registry) -> None:
    result = service(shipped, "banking").resolve_handoff(
        source_agent="Concierge", tool_args={"target_agent": "NurseAgent"}
    )
    assert not result.success and "not part of scenario 'banking'" in str(result.error)


def test_insurance_starts_with_authentication(shipped: Registry) -> None:
    insurance = shipped.require_scenario("insurance")
    assert insurance.start_agent == "AuthAgent"
    assert (
        service(shipped, "insurance")
        .resolve_handoff(source_agent="AuthAgent", tool_args={"target_agent": "FraudAgent"})
        .is_announced
    )


def test_legacy_per_target_tools_still_resolve(shipped: Registry) -> None:
    banking = service(shipped, "banking")
    assert banking.is_handoff("handoff_fraud_agent")
    assert not banking.is_handoff("get_account_balance")
    result = banking.resolve_handoff(source_agent="Concierge", tool_name="handoff_fraud_agent")
    assert result.success and result.target_agent == "FraudAgent" and result.is_announced


def test_handoff_tool_offers_exactly_the_valid_targets(shipped: Registry) -> None:
    banking = service(shipped, "banking")
    tools = tools_for_agent(shipped.agents["Concierge"], banking, shipped.tools)
    handoff = next(t for t in tools if t.name == HANDOFF_TOOL)
    targets = handoff.parameters["properties"]["target_agent"]["enum"]
    assert targets == list(banking.valid_targets("Concierge"))
    assert "FraudAgent" in targets and "ComplianceDesk" not in targets
    assert openai_tool(handoff)["function"]["parameters"]["required"] == ["target_agent", "reason"]


def test_agent_without_routes_gets_no_handoff_tool(shipped: Registry) -> None:
    insurance = service(shipped, "insurance")
    lonely = shipped.agents["NurseAgent"]  # not in insurance: nowhere to go from there
    assert all(t.name != HANDOFF_TOOL for t in tools_for_agent(lonely, insurance, shipped.tools))


def test_legacy_handoff_tool_is_offered_when_listed(shipped: Registry) -> None:
    banking = service(shipped, "banking")
    agent = shipped.agents["Concierge"].model_copy(
        update={"tools": ("get_account_balance", "handoff_fraud_agent", "handoff_compliance_desk")}
    )
    names = [t.name for t in tools_for_agent(agent, banking, shipped.tools)]
    assert names == ["get_account_balance", HANDOFF_TOOL, "handoff_fraud_agent"]


@pytest.mark.parametrize("scenario_name", ["banking", "insurance", "healthcare", "default"])
def test_every_prompt_and_greeting_renders(shipped: Registry, scenario_name: str) -> None:
    svc = service(shipped, scenario_name)
    profile = {"session_profile": {"name": "Alex Morgan"}, "client_id": "C1001"}
    for name in sorted(svc.members):
        agent = shipped.agents[name]
        instructions = build_handoff_instructions(svc.scenario, name, shipped.agents)
        prompt = render_prompt(svc.scenario, agent, profile, handoff_instructions=instructions)
        assert prompt.endswith(instructions) and len(prompt) > len(instructions)
        for first in (True, False):
            greeting = svc.select_greeting(
                agent=name, is_first_visit=first, greet_on_switch=True, system_vars=profile
            )
            assert greeting and "{{" not in greeting
