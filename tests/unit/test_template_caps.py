"""Rendered prompts, greetings and context vars are capped, rendering is bounded, and a render
error never quotes the caller's data. No template operation builds a value past the render's
cap: widths, counts, fill and separator strings are checked before the operation allocates
(registries/template_bounds.py), so a template cannot take a worker's memory before the cap on
its output ever looks."""

from __future__ import annotations

import tracemalloc
from typing import Any

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
    "source", ["{{ 'x' * 10**9 }}", "{{ [1, 2] * 10**9 }}", "{{ 10**9 * 'ab' }}"]
)
def test_repetition_bombs_are_refused_before_they_allocate(source: str) -> None:
    with pytest.raises(TemplateTooLargeError, match=r"'\*' operator renders to more than 32,000"):
        render(source, {}, what="t", limit=MAX_PROMPT_CHARS)


def test_power_bomb_is_refused_before_it_computes() -> None:
    with pytest.raises(TemplateRenderError, match="exponent above 1000 is not allowed"):
        render("{{ 2 ** (10**9) }}", {}, what="t", limit=MAX_PROMPT_CHARS)


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
    # The prompt's cap: the loops' lists (32,000 items) are under it, only their steps are many.
    with pytest.raises(TemplateRenderError) as raised:
        render(source, {}, what="agent A prompt", limit=MAX_PROMPT_CHARS)
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


#: Far below what any of the bombs below would allocate without their checks (5 MB each at
#: least; kept small enough to run unchecked), well above what compiling and refusing a template
#: takes (about 150 KB).
PEAK_BYTES = 1_000_000
#: A caller's long value, under Temporal's limits: it may pass through, never grow.
LONG = "a" * 5_000

BOMBS = [
    "{{ 'x'.ljust(10**7) }}",
    "{{ 'x'.rjust(10**7) }}",
    "{{ 'x'.center(10**7) }}",
    "{{ '1'.zfill(10**7) }}",
    "{{ ('\t' * 1000).expandtabs(10**4) }}",
    "{{ long.replace('a', long) }}",
    "{{ long.join([long] * 1000) }}",
    "{{ ('a' * 1000).translate({97: long}) }}",
    "{{ '{:>10000000}'.format(1) }}",
    "{{ '{:>{w}}'.format(1, w=10**7) }}",
    "{{ '{0:.10000000f}'.format(1.0) }}",
    "{{ many_fields.format(long) }}",
    "{{ many_names.format_map({'x': long}) }}",
    "{{ '%10000000s' % 1 }}",
    "{{ '%(x)10000000s' % {'x': 1} }}",
    "{{ '%10000000s'|format(1) }}",
    "{{ 'x'|center(10**7) }}",
    "{{ 'a\nb'|indent(10**7) }}",
    "{{ ('a\n' * 999)|indent(long) }}",
    "{{ ('a ' * 999)|wordwrap(1, wrapstring=long) }}",
    "{{ long|replace('a', long) }}",
    "{{ ([long] * 1000)|join }}",
    "{{ range(1000)|join(long) }}",
    "{{ ([[1] * 1000] * 1000)|sum(start=[]) }}",
    "{{ [1]|batch(10**7, 0)|list }}",
    "{{ [1]|slice(10**5)|list }}",
    "{{ lipsum(10000) }}",
    "{{ lipsum(1, max=10**6) }}",
    "{{ (7).to_bytes(10**7, 'big') }}",
    "{{ (10 ** 1000) ** 1000 }}",
]

#: A value doubled in a loop: each step is small, together they would make tens of megabytes
#: (or gigabytes with a few more steps).
DOUBLINGS = [
    "{% set ns = namespace(s='ab') %}{% for i in range(24) %}"
    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(24) %}"
    "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(24) %}"
    "{% set ns.s %}{{ ns.s }}{{ ns.s }}{% endset %}{% endfor %}{{ ns.s|length }}",
    "{% macro twice(s) %}{{ s }}{{ s }}{% endmacro %}{% set ns = namespace(s='ab') %}"
    "{% for i in range(24) %}{% set ns.s = twice(ns.s) %}{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(n=10 ** 100) %}{% for i in range(14) %}"
    "{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n > 0 }}",
    "{% set ns = namespace(s=['ab']) %}{% for i in range(20) %}"
    "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
]


def _peak_of_render(source: str, variables: dict[str, Any], limit: int) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(TemplateTooLargeError) as raised:
            render(source, variables, what="agent A greeting", limit=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(raised.value).startswith("agent A greeting: ")
    assert f"renders to more than {limit:,} characters" in str(raised.value)
    assert LONG not in str(raised.value)
    return peak


@pytest.mark.parametrize("source", BOMBS)
def test_an_operation_that_would_grow_past_the_cap_is_refused_before_it_allocates(
    source: str,
) -> None:
    variables = {"long": LONG, "many_fields": "{0}" * 1000, "many_names": "{x}" * 1000}
    peak = _peak_of_render(source, variables, MAX_GREETING_CHARS)
    assert peak < PEAK_BYTES, f"{peak:,} bytes allocated before the refusal"


@pytest.mark.parametrize("source", DOUBLINGS)
def test_a_value_doubled_in_a_loop_stops_at_the_cap(source: str) -> None:
    peak = _peak_of_render(source, {}, MAX_GREETING_CHARS)
    assert peak < PEAK_BYTES, f"{peak:,} bytes allocated before the refusal"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ 'x'.ljust(5, '.') }}|{{ '7'.zfill(3) }}|{{ 'ab'|center(6) }}", "x....|007|  ab"),
        ("{{ '{0:>6}|{name}|{0:.2f}'.format(3.14159, name='Bo') }}", "3.14159|Bo|3.14"),
        (
            "{{ '%s/%05.1f' % ('a', 2.25) }}|{{ '%(x)s=%(y)03d' % {'x': 'n', 'y': 7} }}",
            "a/002.2|n=007",
        ),
        ("{{ '%-4s|'|format('ab') }}{{ 'a b c'|wordwrap(3) }}", "ab  |a b\nc"),
        ("{{ 'one\ntwo'|indent(2) }}|{{ range(5)|join(', ') }}", "one\n  two|0, 1, 2, 3, 4"),
        ("{{ 'tea for two'.replace('t', 'T') }}|{{ '-'.join(['a', 'b']) }}", "Tea for Two|a-b"),
        (
            "{{ {'a': [1, 2]}|tojson }}|{{ lipsum(1, false, 5, 10)|length > 0 }}",
            '{"a": [1, 2]}|True',
        ),
    ],
)
def test_templates_within_the_cap_render_as_before(source: str, expected: str) -> None:
    assert render(source, {}, what="t", limit=MAX_GREETING_CHARS) == expected


def test_a_long_value_of_the_caller_may_pass_through_but_not_grow() -> None:
    # Longer than the greeting's cap, but the operation does not grow it: not refused here
    # (the cap on the output still applies when it is printed whole).
    notes = "line one\n" * 400
    source = "{{ notes.replace('\\n', ' ')|truncate(40) }}"
    assert render(source, {"notes": notes}, what="t", limit=MAX_GREETING_CHARS).startswith("line")
    with pytest.raises(TemplateTooLargeError, match="replace"):
        render(
            "{{ notes.replace(' ', '  ') }}", {"notes": notes}, what="t", limit=MAX_GREETING_CHARS
        )


def test_the_prompt_cap_bounds_a_prompt() -> None:
    at_the_cap = "{{ 'x'.ljust(32000) }}"
    assert len(render(at_the_cap, {}, what="t", limit=MAX_PROMPT_CHARS)) == 1  # stripped
    with pytest.raises(TemplateTooLargeError, match=r"ljust\(\) renders to more than 32,000"):
        render("{{ 'x'.ljust(32001) }}", {}, what="t", limit=MAX_PROMPT_CHARS)
