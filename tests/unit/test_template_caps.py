"""Rendered prompts, greetings and context vars are capped, rendering is bounded, and a render
error never quotes the caller's data."""

from __future__ import annotations

import pytest

from registries.errors import TemplateRenderError, TemplateTooLargeError
from registries.handoff_context import render_context_vars
from registries.prompting import render_greeting, render_system_prompt
from registries.templating import (
    MAX_CONTEXT_VAR_CHARS,
    MAX_GREETING_CHARS,
    MAX_PROMPT_CHARS,
    RENDER_BUDGET_SECONDS,
    render,
)
from tests.conftest import agent

PROFILE = {"name": "Alex Morgan", "dob": "1985-04-12", "card": "4111 1111 1111 1111"}


def test_oversized_greeting_is_refused_by_its_cap() -> None:
    # 2,400 characters: under Temporal's payload limit, far over what a caller should hear.
    greeter = agent(
        "Greeter", greeting="{% for i in range(40) %}" + "Welcome! " * 6 + "{% endfor %}"
    )
    with pytest.raises(TemplateTooLargeError) as raised:
        render_greeting(greeter, {}, is_return=False)
    assert str(raised.value) == (
        f"agent Greeter greeting: renders to more than {MAX_GREETING_CHARS:,} characters"
    )


def test_greeting_under_the_cap_renders() -> None:
    greeter = agent("Greeter", greeting="{{ 'Welcome! ' * 100 }}")
    assert len(render_greeting(greeter, {}, is_return=False)) < MAX_GREETING_CHARS


def test_oversized_prompt_is_refused_by_its_cap() -> None:
    big = agent("Big", prompt="{% for i in range(5000) %}Be brief and kind. {% endfor %}")
    with pytest.raises(
        TemplateTooLargeError,
        match=f"agent Big prompt: renders to more than {MAX_PROMPT_CHARS:,} characters",
    ):
        render_system_prompt(big, {}, {})


def test_oversized_context_var_is_refused_by_its_cap() -> None:
    templates = {"notes": "{{ session.notes }}"}
    scope = {"session": {"notes": "n" * (MAX_CONTEXT_VAR_CHARS + 1)}}
    with pytest.raises(TemplateTooLargeError) as raised:
        render_context_vars(templates, scope, where="route A -> B")
    assert str(raised.value).startswith("route A -> B context_vars.notes: renders to more than")


def test_a_render_that_would_print_gigabytes_stops_at_the_cap() -> None:
    # 10**10 characters if rendered whole; rendered piece by piece it stops after the cap.
    source = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
    with pytest.raises(TemplateTooLargeError):
        render(source, {}, what="t", limit=1000)


@pytest.mark.parametrize(
    "source",
    ["{{ 'x' * 10**9 }}", "{{ [1, 2] * 10**9 }}", "{{ 10**9 * 'ab' }}", "{{ 2 ** (10**9) }}"],
)
def test_repetition_and_power_bombs_are_refused_before_they_allocate(source: str) -> None:
    with pytest.raises(TemplateRenderError, match="is not allowed in a template"):
        render(source, {}, what="t", limit=MAX_PROMPT_CHARS)


def test_render_error_masks_the_callers_values() -> None:
    variables = {"session_profile": PROFILE, "caller_name": PROFILE["name"]}
    with pytest.raises(TemplateRenderError) as raised:
        render("{{ session_profile[caller_name] }}", variables, what="agent A greeting", limit=99)
    assert str(raised.value) == "agent A greeting: 'dict object' has no attribute '[value]'"
    assert raised.value.__cause__ is None  # the original, quoting the name, is not chained


def test_render_error_masks_values_inside_python_errors() -> None:
    # Python's own message would be "unknown encoding: 1985-04-12".
    variables = {"profile": PROFILE}
    with pytest.raises(TemplateRenderError) as raised:
        render("{{ profile.name.encode(profile.dob) }}", variables, what="t", limit=99)
    assert str(raised.value) == "t: LookupError: unknown encoding: [value]"


def test_pii_patterns_are_masked_even_when_computed() -> None:
    # A value the template built (not one of the variables) is still masked by PII pattern.
    variables = {"profile": PROFILE}
    with pytest.raises(TemplateRenderError) as raised:
        render("{{ 'x'.encode(profile.dob[:4] ~ '-04-13') }}", variables, what="t", limit=99)
    assert str(raised.value) == "t: LookupError: unknown encoding: [date]"


def test_render_error_names_the_failing_line() -> None:
    with pytest.raises(TemplateRenderError) as raised:
        render("one\ntwo\n{{ caller_name.upper() }}\n", {"caller_name": None}, what="t", limit=99)
    assert raised.value.line == 3
    assert raised.value.problem == "'None' has no attribute 'upper'"


def test_sandbox_blocks_python_internals() -> None:
    with pytest.raises(TemplateRenderError, match="access to attribute '__class__'"):
        render("{{ company.__class__ }}", {"company": "Acme"}, what="t", limit=99)


@pytest.mark.parametrize(
    "source",
    [
        # Each loop is under the sandbox's range cap; together they take 10**10 steps.
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        # A loop over a variable: no call, no operator, no output inside it.
        "{% set s = 'ab' * 16000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}",
        # A recursive loop that feeds itself the same list forever.
        "{% for x in [1] * 30000 recursive %}{{ loop([1] * 30000) if False }}"
        "{% for y in range(100000) %}{% endfor %}{% endfor %}",
    ],
)
def test_a_loop_that_prints_nothing_stops_at_the_render_budget(source: str) -> None:
    with pytest.raises(TemplateRenderError) as raised:
        render(source, {}, what="agent Greeter greeting", limit=MAX_GREETING_CHARS)
    assert raised.value.problem == (
        f"the template ran past its {RENDER_BUDGET_SECONDS:g} s render budget (a loop too large?)"
    )


def test_loops_under_the_budget_render_as_before() -> None:
    source = (
        "{% for x in items if x %}{{ loop.index }}:{{ x }} {% else %}none{% endfor %}|"
        "{% for n in [1, [2, [3]]] recursive %}{% if n is iterable %}{{ loop(n) }}"
        "{% else %}{{ n }}{% endif %}{% endfor %}"
    )
    assert render(source, {"items": ["a", "", "b"]}, what="t", limit=99) == "1:a 2:b |123"
