"""Every activity that renders a template turns a render failure into a non-retryable
`TemplateRenderError` naming the agent and template, never the caller's data; the workflow
escalates on it instead of failing (or retrying a payload that can never fit)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.agent_reply import AgentReplyActivity
from activities.handoff import render_start_greeting, resolve_handoff
from activities.snapshot import current_snapshot
from contracts.agent_reply import AgentReplyRequest
from contracts.handoff import TEMPLATE_RENDER_ERROR, GreetingRequest, HandoffRequest
from registries.loading import Registry, load_registry
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS

NAME = "Alexandra Montgomery-Whitfield"


def registry_with(write_registry: RegistryWriter, **fields: Any) -> tuple[Path, Registry]:
    agents = copy.deepcopy(AGENTS)
    scenario = copy.deepcopy(SCENARIO)
    agents["front"].update(fields.pop("front", {}))
    agents["fraud"].update(fields.pop("fraud", {}))
    scenario["handoffs"][0].update(fields.pop("route", {}))
    root = write_registry(agents=agents, scenarios={"demo": scenario}, tools=TOOLS)
    return root, load_registry(root)


async def failure_of(activity: Any, request: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(activity, request)
    error = raised.value
    assert error.type == TEMPLATE_RENDER_ERROR and error.non_retryable
    assert error.__cause__ is None  # nothing chained, so nothing more reaches history
    return error


async def test_start_greeting_with_a_missing_name_fails_non_retryably(
    write_registry: RegistryWriter,
) -> None:
    _, registry = registry_with(write_registry, front={"greeting": "Hi {{ caller_name.upper() }}"})
    request = GreetingRequest(
        scenario=registry.scenarios["demo"],
        agent=registry.agents["FrontDesk"],
        system_vars={"session_profile": {}, "active_agent": "FrontDesk"},
    )
    error = await failure_of(render_start_greeting, request)
    assert error.message == "agent FrontDesk greeting: 'None' has no attribute 'upper'"


async def test_start_greeting_past_its_cap_fails_without_quoting_the_caller(
    write_registry: RegistryWriter,
) -> None:
    # Fine for the check's sample caller; a platform that sends a huge name makes it too big.
    _, registry = registry_with(
        write_registry, front={"greeting": "Hi{% if caller_name %} {{ caller_name }}{% endif %}."}
    )
    request = GreetingRequest(
        scenario=registry.scenarios["demo"],
        agent=registry.agents["FrontDesk"],
        system_vars={"session_profile": {"name": NAME * 100}},
    )
    error = await failure_of(render_start_greeting, request)
    assert error.message == "agent FrontDesk greeting: renders to more than 2,000 characters"


async def test_handoff_greeting_failure_fails_the_handoff_activity(
    write_registry: RegistryWriter,
) -> None:
    greeting = "Fraud desk. {% if session_profile %}{{ session_profile.tier.upper() }}{% endif %}"
    _, registry = registry_with(write_registry, fraud={"greeting": greeting})
    request = HandoffRequest(
        scenario=registry.scenarios["demo"],
        agents=dict(registry.agents),
        source_agent="FrontDesk",
        tool_name="handoff_to_agent",
        tool_args={"target_agent": "FraudAgent", "reason": "card stolen"},
        system_vars={"session_profile": {"name": NAME, "tier": 3}},
    )
    error = await failure_of(resolve_handoff, request)
    assert error.message == "agent FraudAgent greeting: 'int object' has no attribute 'upper'"


async def test_handoff_context_var_failure_fails_the_handoff_activity(
    write_registry: RegistryWriter,
) -> None:
    context_vars = {"tier": "{{ profile.tier.upper() if profile.tier is defined else 'none' }}"}
    _, registry = registry_with(write_registry, route={"context_vars": context_vars})
    request = HandoffRequest(
        scenario=registry.scenarios["demo"],
        agents=dict(registry.agents),
        source_agent="FrontDesk",
        tool_name="handoff_to_agent",
        tool_args={"target_agent": "FraudAgent"},
        system_vars={"session_profile": {"name": NAME, "tier": 3}},
    )
    error = await failure_of(resolve_handoff, request)
    assert error.message == (
        "route FrontDesk -> FraudAgent context_vars.tier: 'int object' has no attribute 'upper'"
    )


async def test_prompt_failure_fails_the_model_turn_activity(
    write_registry: RegistryWriter,
) -> None:
    prompt = (
        "You are the front desk.\n"
        "{% if session_profile and session_profile.nickname is defined %}"
        "Call them {{ session_profile[session_profile.nickname] }}.{% endif %}\n"
    )
    root, _ = registry_with(write_registry, front={"prompt": prompt})
    # The pinned snapshot is the real one: the scenario passes `baton scenario check`.
    snapshot = current_snapshot(str(root), "demo")
    request = AgentReplyRequest(
        call_id="render-1",
        agent_name="FrontDesk",
        snapshot_hash=snapshot.content_hash,
        scenario="demo",
        registry=str(root),
        system_vars={"session_profile": {"name": NAME, "nickname": "Lexi"}},
    )
    error = await failure_of(AgentReplyActivity().generate_agent_reply, request)
    assert error.message == "agent FrontDesk prompt: 'dict object' has no attribute '[value]'"


async def test_start_greeting_past_its_render_budget_fails_non_retryably(
    write_registry: RegistryWriter,
) -> None:
    # The workflow escalates with a ticket on this error, as on any render failure.
    looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    _, registry = registry_with(write_registry, front={"greeting": looping})
    request = GreetingRequest(
        scenario=registry.scenarios["demo"],
        agent=registry.agents["FrontDesk"],
        system_vars={"session_profile": {}, "active_agent": "FrontDesk"},
    )
    error = await failure_of(render_start_greeting, request)
    assert error.message == (
        "agent FrontDesk greeting: the template ran past its 1 s render budget (a loop too large?)"
    )
