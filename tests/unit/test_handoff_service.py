"""HandoffService: every rule of handoff resolution, on small hand-built scenarios."""

from __future__ import annotations

from typing import Any

import pytest

from registries.errors import TemplateRenderError
from registries.handoff_service import HandoffService, build_handoff_instructions
from tests.conftest import agent, scenario

AGENTS = {
    "Alpha": agent("Alpha", description="front desk", handoff={"trigger": "handoff_alpha"}),
    "Bravo": agent(
        "Bravo",
        description="payments and refunds",
        greeting="Hi{% if caller_name %} {{ caller_name }}{% endif %}, "
        "{{ company_name }} payments.",
        return_greeting="Back at payments.",
        handoff={"trigger": "handoff_bravo"},
    ),
    "Charlie": agent("Charlie", description="disputes"),
    "Outsider": agent("Outsider", description="not in the scenario"),
}


def make(**fields: Any) -> HandoffService:
    defaults: dict[str, Any] = {
        "start_agent": "Alpha",
        "agents": ["Alpha", "Bravo", "Charlie"],
        "handoffs": [
            {"from_agent": "Alpha", "to_agent": "Bravo", "type": "announced"},
            {"from_agent": "Bravo", "to_agent": "Alpha", "type": "discrete"},
            {"from_agent": "Alpha", "to_agent": "Charlie"},
        ],
        "agent_defaults": {"company_name": "Acme"},
    }
    defaults.update(fields)
    return HandoffService(scenario(**defaults), AGENTS)


def resolve(service: HandoffService, source: str, target: str, **kw: Any) -> Any:
    args = {"target_agent": target, **kw.pop("args", {})}
    return service.resolve_handoff(source_agent=source, tool_args=args, **kw)


def test_explicit_edge_gives_its_type_and_greets_when_announced() -> None:
    result = resolve(make(), "Alpha", "Bravo")
    assert result.success and result.target_agent == "Bravo" and result.source_agent == "Alpha"
    assert result.is_announced and result.greet_on_switch
    assert result.tool_name == "handoff_to_agent"


def test_discrete_edge_does_not_greet() -> None:
    result = resolve(make(), "Bravo", "Alpha")
    assert result.success and result.is_discrete and not result.greet_on_switch


def test_edge_without_type_inherits_scenario_handoff_type() -> None:
    assert resolve(make(handoff_type="discrete"), "Alpha", "Charlie").handoff_type == "discrete"
    assert resolve(make(handoff_type="announced"), "Alpha", "Charlie").handoff_type == "announced"


def test_route_missing_from_graph_is_refused_with_valid_targets() -> None:
    result = resolve(make(), "Charlie", "Bravo")
    assert not result.success
    assert "no route from Charlie to Bravo" in result.error
    assert result.valid_targets == ()
    assert "Valid targets: none" in result.error


def test_refusal_lists_the_valid_targets_for_recovery() -> None:
    result = resolve(make(), "Alpha", "Nobody")
    assert result.valid_targets == ("Bravo", "Charlie")
    assert result.error.endswith("Valid targets: Bravo, Charlie.")


def test_self_handoff_is_refused() -> None:
    result = resolve(make(), "Alpha", "alpha")
    assert not result.success and "already handling" in result.error


def test_unknown_agent_is_refused_with_suggestion() -> None:
    result = resolve(make(), "Alpha", "Bravvo")
    assert not result.success
    assert "unknown agent 'Bravvo'" in result.error and "did you mean 'Bravo'" in result.error


def test_agent_outside_the_scenario_is_refused() -> None:
    result = resolve(make(), "Alpha", "Outsider")
    assert not result.success and "not part of scenario 'test'" in result.error


def test_source_outside_the_scenario_is_refused() -> None:
    result = resolve(make(), "Outsider", "Alpha")
    assert not result.success and "'Outsider' is not an agent of scenario" in result.error


def test_names_resolve_case_insensitively_to_registry_spelling() -> None:
    result = resolve(make(), " alpha", "BRAVO ")
    assert result.success and result.source_agent == "Alpha" and result.target_agent == "Bravo"


def test_missing_target_argument_is_refused() -> None:
    service = make()
    result = service.resolve_handoff(source_agent="Alpha", tool_args={"reason": "x"})
    assert not result.success and "needs a target_agent" in str(result.error)


@pytest.mark.parametrize("bad_args", ["FraudAgent", None, 42, ["Bravo"], {"target_agent": 7}])
def test_malformed_tool_arguments_are_refused_cleanly(bad_args: Any) -> None:
    result = make().resolve_handoff(source_agent="Alpha", tool_args=bad_args)
    assert not result.success and result.error


def test_non_handoff_tool_is_refused() -> None:
    result = make().resolve_handoff(source_agent="Alpha", tool_name="get_balance", tool_args={})
    assert not result.success and "'get_balance' is not a handoff tool" in str(result.error)


def test_edge_for_source_and_tool_wins_over_edge_for_source_and_target() -> None:
    service = make(
        handoffs=[
            {"from_agent": "Alpha", "to_agent": "Bravo", "type": "announced"},
            {
                "from_agent": "Alpha",
                "to_agent": "Bravo",
                "tool": "rush_to_bravo",
                "type": "discrete",
            },
        ]
    )
    by_tool = service.resolve_handoff(source_agent="Alpha", tool_name="rush_to_bravo")
    assert by_tool.success and by_tool.is_discrete and by_tool.target_agent == "Bravo"
    by_target = resolve(service, "Alpha", "Bravo")
    assert by_target.is_announced


def test_legacy_trigger_tool_resolves_through_the_graph() -> None:
    service = make()
    assert service.is_handoff("handoff_bravo") and not service.is_handoff("get_balance")
    result = service.resolve_handoff(source_agent="Alpha", tool_name="handoff_bravo")
    assert result.success and result.target_agent == "Bravo" and result.is_announced


def test_legacy_trigger_tool_cannot_leave_the_graph() -> None:
    result = make().resolve_handoff(source_agent="Charlie", tool_name="handoff_bravo")
    assert not result.success and "no route from Charlie to Bravo" in str(result.error)


def test_generic_handoff_allows_every_scenario_agent_when_targets_empty() -> None:
    service = make(handoffs=[], generic_handoff={"enabled": True, "default_type": "discrete"})
    result = resolve(service, "Charlie", "Bravo")
    assert result.success and result.is_discrete
    assert service.valid_targets("Charlie") == ("Alpha", "Bravo")


def test_generic_handoff_is_limited_to_allowed_targets() -> None:
    service = make(handoffs=[], generic_handoff={"enabled": True, "allowed_targets": ["Alpha"]})
    assert resolve(service, "Charlie", "Alpha").success
    refused = resolve(service, "Charlie", "Bravo")
    assert not refused.success and refused.valid_targets == ("Alpha",)


def test_generic_handoff_falls_back_to_scenario_type() -> None:
    service = make(handoffs=[], handoff_type="discrete", generic_handoff={"enabled": True})
    assert resolve(service, "Alpha", "Bravo").is_discrete


def test_explicit_edge_wins_over_generic_defaults() -> None:
    service = make(
        handoffs=[
            {"from_agent": "Alpha", "to_agent": "Bravo", "type": "discrete", "share_context": False}
        ],
        generic_handoff={"enabled": True, "default_type": "announced", "share_context": True},
    )
    result = resolve(service, "Alpha", "Bravo")
    assert result.is_discrete and result.share_context is False
    generic = resolve(service, "Alpha", "Charlie")
    assert generic.is_announced and generic.share_context is True


def test_system_vars_carry_session_and_name_both_agents() -> None:
    current = {
        "session_profile": {"name": "Alex"},
        "client_id": "C1",
        "customer_intelligence": {"tier": "gold"},
        "institution_name": "Acme",
        "scratchpad": "not carried",
    }
    result = resolve(
        make(),
        "Alpha",
        "Bravo",
        current_system_vars=current,
        user_last_utterance="my payment bounced",
        args={"reason": "payment issue"},
    )
    vars_ = result.system_vars
    assert vars_["session_profile"] == {"name": "Alex"} and vars_["client_id"] == "C1"
    assert vars_["customer_intelligence"] == {"tier": "gold"}
    assert vars_["institution_name"] == "Acme"
    assert "scratchpad" not in vars_
    assert vars_["previous_agent"] == "Alpha" and vars_["active_agent"] == "Bravo"
    assert vars_["user_last_utterance"] == "my payment bounced"
    assert vars_["handoff_reason"] == "payment issue" == result.reason


def test_share_context_false_carries_no_conversation() -> None:
    service = make(handoffs=[{"from_agent": "Alpha", "to_agent": "Bravo", "share_context": False}])
    result = resolve(
        service,
        "Alpha",
        "Bravo",
        args={"reason": "refund"},
        current_system_vars={"client_id": "C1"},
        user_last_utterance="refund please",
        tool_result={"handoff_context": {"order": "42"}},
    )
    assert result.success and not result.share_context
    assert result.system_vars == {
        "client_id": "C1",
        "previous_agent": "Alpha",
        "active_agent": "Bravo",
    }
    assert result.reason == "refund"  # kept for the audit trail, not shown to the target


def test_context_vars_render_from_session_with_dotted_keys() -> None:
    service = make(
        handoffs=[
            {
                "from_agent": "Alpha",
                "to_agent": "Bravo",
                "context_vars": {
                    "tier": "{{ session.profile.tier }}",
                    "customer.name": "{{ profile.name | upper }}",
                    "why": "{{ handoff_reason }} at {{ company_name }}",
                },
            }
        ]
    )
    result = resolve(
        service,
        "Alpha",
        "Bravo",
        args={"reason": "refund"},
        current_system_vars={"session_profile": {"tier": "gold", "name": "alex"}},
    )
    assert result.success
    assert result.system_vars["tier"] == "gold"
    assert result.system_vars["customer"] == {"name": "ALEX"}
    assert result.system_vars["why"] == "refund at Acme"


def test_context_vars_missing_variable_is_a_clear_error() -> None:
    """The registry's fault, not the model's: raised, for the activity to escalate, instead of
    a refusal the model would retry in vain."""
    service = make(
        handoffs=[
            {
                "from_agent": "Alpha",
                "to_agent": "Bravo",
                "context_vars": {"tier": "{{ session.profile.tier }}"},
            }
        ]
    )
    with pytest.raises(TemplateRenderError) as raised:
        resolve(service, "Alpha", "Bravo", current_system_vars={"session_profile": {}})
    assert str(raised.value) == (
        "route Alpha -> Bravo context_vars.tier: 'dict object' has no attribute 'tier'"
    )


def test_get_handoff_target_accepts_agent_or_legacy_tool() -> None:
    service = make()
    assert service.get_handoff_target("alpha", "bravo") == "Bravo"
    assert service.get_handoff_target("Alpha", "handoff_bravo") == "Bravo"
    assert service.get_handoff_target("Charlie", "Bravo") is None
    assert service.get_handoff_target("Alpha", "Nobody") is None


def test_handoff_instructions_list_each_outbound_condition() -> None:
    base = scenario(
        agents=["Alpha", "Bravo", "Charlie"],
        handoffs=[
            {
                "from_agent": "Alpha",
                "to_agent": "Bravo",
                "handoff_condition": "Caller asks about a payment.",
            },
            {"from_agent": "Bravo", "to_agent": "Alpha", "handoff_condition": "Done"},
        ],
    )
    text = build_handoff_instructions(base, "Alpha")
    assert 'When caller asks about a payment: call handoff_to_agent(target_agent="Bravo"' in text
    assert "Done" not in text
    assert build_handoff_instructions(base, "Charlie") == ""


def test_handoff_instructions_cover_generic_targets_by_description() -> None:
    base = scenario(agents=["Alpha", "Bravo", "Charlie"], generic_handoff={"enabled": True})
    text = build_handoff_instructions(base, "Alpha", AGENTS)
    assert 'payments and refunds: call handoff_to_agent(target_agent="Bravo"' in text
    assert 'target_agent="Charlie"' in text and 'target_agent="Alpha"' not in text
