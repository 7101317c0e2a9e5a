"""Rendering every template of a scenario as calls would, before any call does.

A template can compile, name only known variables and still fail on a real call:
`{{ caller_name.upper() }}` when the caller gave no name, a blocked sandbox attribute, a loop
that prints past the size cap. So `baton scenario check` (and every snapshot a call pins)
renders each agent's prompt, greeting and return greeting and each route's context_vars, through
the same functions a call uses, for two sample callers: one with every optional field present,
one with every optional field missing. Whatever fails for either is reported as a problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jinja2

from contracts.registry import AgentConfig, HandoffEdge, ScenarioConfig
from registries.errors import Problem, TemplateRenderError, TemplateTooLargeError
from registries.handoff_context import (
    build_handoff_system_vars,
    context_vars_scope,
    pick_handoff_reason,
    render_context_vars,
)
from registries.prompting import greeting_context, render_greeting, render_prompt, template_vars
from registries.registry_view import RegistryView
from registries.templating import RUNTIME_VARS, undeclared_variables

#: A caller profile with every field Baton or a platform puts there (the demo's C1001).
SAMPLE_PROFILE: dict[str, Any] = {
    "client_id": "C1001",
    "name": "Alex Morgan",
    "first_name": "Alex",
    "tier": "gold",
    "investment_tier": "growth",
    "phone": "+1-503-555-0142",
    "email": "alex.morgan@example.com",
}
_HANDOFF_REASON = "The caller reports a card charge they do not recognise"
_UTTERANCE = "Someone used my card abroad last night"


@dataclass(frozen=True)
class SampleCaller:
    """What a call knows about its caller, as its system vars hold it."""

    label: str
    #: The call's system vars before any handoff.
    session: dict[str, Any]
    #: What a handoff adds when the model gives a reason and the caller has spoken.
    handoff: dict[str, Any] = field(default_factory=dict)


SAMPLE_CALLERS: tuple[SampleCaller, ...] = (
    SampleCaller(
        "with every optional field present",
        session={
            "session_profile": SAMPLE_PROFILE,
            "client_id": SAMPLE_PROFILE["client_id"],
            "customer_intelligence": {"segment": "gold", "open_cases": 0},
            "institution_name": "Harbor Private Bank",
        },
        handoff={
            "handoff_reason": _HANDOFF_REASON,
            "handoff_context": {"card_last4": "8832", "reason": _HANDOFF_REASON},
            "user_last_utterance": _UTTERANCE,
        },
    ),
    # No profile at all, as after a handoff of an anonymous caller (an empty profile is not
    # carried), no client id, no reason, context or last words.
    SampleCaller("with every optional field missing (no profile, name or handoff details)", {}),
)

_FIX_MISSING = (
    "an optional value can be missing on a call: guard it with {% if caller_name %}...{% endif %} "
    "or give it a fallback, e.g. {{ caller_name or 'there' }}, {{ x | default('...') }}"
)
_FIX_ALWAYS = "fix the template: it fails even with every value present"


def render_problems(
    registry: RegistryView, scenario: ScenarioConfig, members: tuple[str, ...]
) -> Iterator[Problem]:
    """Every template of `scenario` that would fail to render on a call, one problem each."""
    for name in members:
        agent = registry.agents.get(name)
        if agent is not None:
            yield from _agent_problems(registry, scenario, agent, members)
    doc = registry.documents[f"scenario:{scenario.name}"]
    for index, edge in enumerate(scenario.handoffs):
        for key, source in edge.context_vars.items():
            if not _compiles(source):
                continue  # reported by the scenario check
            failure = _first_failure(partial(_render_context_var, scenario, edge, key, source))
            if failure is not None:
                loc = ("handoffs", index, "context_vars", key)
                yield doc.problem(loc, _message(scenario, *failure))


def _agent_problems(
    registry: RegistryView, scenario: ScenarioConfig, agent: AgentConfig, members: tuple[str, ...]
) -> Iterator[Problem]:
    doc = registry.documents[f"agent:{agent.name}"]
    known = RUNTIME_VARS | set(template_vars(scenario, agent))
    previous = next((m for m in members if m != agent.name), agent.name)
    for field_name in ("prompt", "greeting", "return_greeting"):
        source = getattr(agent, field_name)
        # A template that does not compile or names unknown variables is already reported.
        if not source or not _compiles(source) or undeclared_variables(source) - known:
            continue
        failure = _first_failure(
            partial(_render_agent_field, scenario, agent, field_name, previous)
        )
        if failure is None:
            continue
        where = ""
        if field_name == "prompt" and agent.prompt_file:
            line = failure[0].line
            where = f" ({agent.prompt_file}:{line})" if line else f" ({agent.prompt_file})"
        yield doc.problem((field_name,), _message(scenario, *failure, where=where))


def _render_agent_field(
    scenario: ScenarioConfig,
    agent: AgentConfig,
    field_name: str,
    previous: str,
    caller: SampleCaller,
) -> None:
    """Render the agent's prompt, greeting or return greeting as a call would."""
    system_vars = _system_vars(caller, agent.name, previous)
    if field_name == "prompt":
        render_prompt(scenario, agent, system_vars)
        return
    is_return = field_name == "return_greeting"
    context = greeting_context(scenario, agent, system_vars, is_return=is_return)
    render_greeting(agent, context, is_return=is_return)


def _system_vars(caller: SampleCaller, agent: str, previous: str) -> dict[str, Any]:
    """The system vars `agent` renders with: after a handoff from `previous` when the caller
    has handoff details, else as the call's first agent."""
    system_vars = {**caller.session, "active_agent": agent}
    if caller.handoff:
        system_vars.update(caller.handoff, previous_agent=previous)
    return system_vars


def _render_context_var(
    scenario: ScenarioConfig, edge: HandoffEdge, key: str, source: str, caller: SampleCaller
) -> None:
    """One context var of `edge`, rendered from the scope `HandoffService.resolve_handoff`
    builds for it."""
    args: Mapping[str, Any] = {"reason": caller.handoff["handoff_reason"]} if caller.handoff else {}
    system_vars = build_handoff_system_vars(
        source_agent=edge.from_agent,
        target_agent=edge.to_agent,
        current_system_vars=caller.session,
        tool_args=args,
        user_last_utterance=caller.handoff.get("user_last_utterance"),
        share_context=edge.share_context,
    )
    scenario_vars = {**scenario.template_vars, **scenario.agent_defaults}
    scope = context_vars_scope(system_vars, caller.session, scenario_vars)
    scope["handoff_reason"] = pick_handoff_reason(None, args)
    render_context_vars({key: source}, scope, where=f"route {edge.from_agent} -> {edge.to_agent}")


def _first_failure(
    attempt: Callable[[SampleCaller], None],
) -> tuple[TemplateRenderError, SampleCaller] | None:
    """The error of the first sample caller for whom `attempt(caller)` fails to render."""
    for caller in SAMPLE_CALLERS:
        try:
            attempt(caller)
        except TemplateRenderError as error:
            return error, caller
    return None


def _compiles(source: str) -> bool:
    try:
        undeclared_variables(source)
    except jinja2.TemplateSyntaxError:
        return False
    return True


def _message(
    scenario: ScenarioConfig, error: TemplateRenderError, caller: SampleCaller, *, where: str = ""
) -> str:
    if isinstance(error, TemplateTooLargeError):
        fix = "shorten the template or what it prints"
    else:
        fix = _FIX_ALWAYS if caller is SAMPLE_CALLERS[0] else _FIX_MISSING
    return (
        f"fails to render{where} in scenario {scenario.name!r} for a caller {caller.label}: "
        f"{error.problem.rstrip('.')}; {fix}"
    )
