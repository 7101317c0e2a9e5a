"""`baton scenario check` renders every template for a caller with every optional field and
for one with none, and reports what would fail on a call as `file:line: field: problem; fix`."""

from __future__ import annotations

import copy
from typing import Any

from registries.loading import load_registry
from registries.render_check import SAMPLE_CALLERS
from registries.validation import check_registry
from tests.conftest import RegistryWriter
from tests.unit.test_cli import run
from tests.unit.test_registry_loading import SCENARIO, TOOLS
from tests.unit.test_scenario_check import check, with_agent

MISSING = f"for a caller {SAMPLE_CALLERS[1].label}"
PRESENT = f"for a caller {SAMPLE_CALLERS[0].label}"


def test_missing_optional_field_in_a_greeting_is_reported(write_registry: RegistryWriter) -> None:
    problems = check(
        write_registry, agents=with_agent("front", greeting="Hi {{ caller_name.upper() }}")
    )
    assert (
        f"front/agent.yaml:2: error: greeting: fails to render in scenario 'demo' {MISSING}: "
        "'None' has no attribute 'upper'; an optional value can be missing on a call: guard it "
        "with {% if caller_name %}...{% endif %} or give it a fallback"
    ) in "\n".join(problems), problems


def test_missing_profile_field_in_a_return_greeting_is_reported(
    write_registry: RegistryWriter,
) -> None:
    agents = with_agent("fraud", return_greeting="Back, {{ session_profile.get('name') }}.")
    problems = check(write_registry, agents=agents)
    assert any(
        f"return_greeting: fails to render in scenario 'demo' {MISSING}:" in p for p in problems
    ), problems


def test_sandbox_blocked_attribute_is_reported(write_registry: RegistryWriter) -> None:
    agents = with_agent("front", greeting="Hi from {{ agent_name.__class__.__name__ }}")
    problems = check(write_registry, agents=agents)
    assert any(
        f"greeting: fails to render in scenario 'demo' {PRESENT}: access to attribute '__class__'"
        " of 'str' object is unsafe; fix the template" in p
        for p in problems
    ), problems


def test_prompt_failure_points_into_the_prompt_file(write_registry: RegistryWriter) -> None:
    agents = with_agent("front", prompt="prompt.jinja")
    prompt = "You are the front desk.\n\nThe caller is {{ session_profile.name.title() }}.\n"
    problems = check(write_registry, agents=agents, prompts={"front": prompt})
    assert any(
        "front/agent.yaml:" in p and "prompt: fails to render (" in p and "prompt.jinja:3) " in p
        for p in problems
    ), problems


def test_oversized_greeting_is_reported(write_registry: RegistryWriter) -> None:
    agents = with_agent("front", greeting="{{ 'Welcome to the bank. ' * 100 }}")
    problems = check(write_registry, agents=agents)
    assert any(
        "greeting: fails to render in scenario 'demo'" in p
        and "renders to more than 2,000 characters; shorten the template" in p
        for p in problems
    ), problems


def test_context_var_with_a_missing_profile_field_is_reported(
    write_registry: RegistryWriter,
) -> None:
    scenario = copy.deepcopy(SCENARIO)
    scenario["handoffs"][0]["context_vars"] = {"tier": "{{ profile.tier.upper() }}"}
    problems = check(write_registry, scenario=scenario)
    assert any(
        "scenario.yaml:" in p
        and f"handoffs[0].context_vars.tier: fails to render in scenario 'demo' {MISSING}: "
        "'dict object' has no attribute 'tier'"
        in p
        for p in problems
    ), problems


def test_guarded_templates_pass(write_registry: RegistryWriter) -> None:
    agents = with_agent(
        "front",
        greeting="Hi {{ (caller_name or 'there').upper() }}, "
        "{{ session_profile.tier | default('') }}",
        return_greeting="{% if session_profile %}{{ session_profile.get('name') }}{% endif %}",
    )
    scenario = copy.deepcopy(SCENARIO)
    scenario["handoffs"][0]["context_vars"] = {"tier": "{{ profile.tier | default('standard') }}"}
    assert check(write_registry, agents=agents, scenario=scenario) == []


def test_the_full_sample_caller_sees_every_field(write_registry: RegistryWriter) -> None:
    # Would fail only if the "present" caller lacked a field the runtime can provide.
    greeting = (
        "{{ caller_name.upper() }} {{ client_id.lower() }} {{ handoff_reason.strip() }} "
        "{{ user_last_utterance.strip() }} {{ previous_agent.lower() }} "
        "{{ session_profile.investment_tier.upper() }}"
    )
    problems = check(write_registry, agents=with_agent("fraud", greeting=greeting))
    assert not any(PRESENT in p for p in problems), problems
    assert any(MISSING in p for p in problems), problems


def test_a_scenario_with_a_failing_template_cannot_be_used_for_calls(
    write_registry: RegistryWriter,
) -> None:
    agents = with_agent("front", greeting="Hi {{ caller_name.upper() }}")
    root = write_registry(agents=agents, scenarios={"demo": SCENARIO}, tools=TOOLS)
    errors = [p for p in check_registry(load_registry(root), only="demo") if p.severity == "error"]
    assert len(errors) == 1 and "fails to render" in errors[0].message


def test_scenario_check_command_reports_render_failures(
    capsys: Any, write_registry: RegistryWriter
) -> None:
    agents = with_agent("front", greeting="Hi {{ caller_name.upper() }}")
    root = write_registry(agents=agents, scenarios={"demo": SCENARIO}, tools=TOOLS)
    code, out, err = run(capsys, "scenario", "check", str(root))
    assert code == 1
    assert "front/agent.yaml:2: error: greeting: fails to render" in err
    assert "demo: FAILED" in out and "Traceback" not in err


def test_a_greeting_that_loops_past_the_render_budget_is_reported(
    write_registry: RegistryWriter,
) -> None:
    looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}Hi"
    problems = check(write_registry, agents=with_agent("front", greeting=looping))
    assert any(
        f"front/agent.yaml:2: error: greeting: fails to render in scenario 'demo' {PRESENT}: "
        "the template ran past its 1 s render budget (a loop too large?); fix the template" in p
        for p in problems
    ), problems
