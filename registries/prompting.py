"""Rendering an agent's words: its system prompt and its greetings.

Variables, lowest precedence first: the agent's `template_vars` (shared defaults included), the
scenario's `template_vars`, the scenario's `agent_defaults` (the deployment knows its company
name better than a reusable agent does), then the call's runtime vars (caller, handoff, ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from contracts.registry import AgentConfig, ScenarioConfig
from registries.templating import (
    MAX_GREETING_CHARS,
    MAX_PROMPT_CHARS,
    render,
    runtime_defaults,
)


def template_vars(scenario: ScenarioConfig | None, agent: AgentConfig) -> dict[str, Any]:
    """The static variables an agent's templates see in a scenario."""
    merged = dict(agent.template_vars)
    if scenario is not None:
        merged.update(scenario.template_vars)
        merged.update(scenario.agent_defaults)
    return merged


def caller_name(system_vars: Mapping[str, Any]) -> str | None:
    profile = system_vars.get("session_profile")
    if isinstance(profile, Mapping):
        name = profile.get("name") or profile.get("first_name")
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


def prompt_context(
    agent: AgentConfig,
    static_vars: Mapping[str, Any],
    system_vars: Mapping[str, Any],
    *,
    is_return: bool = False,
) -> dict[str, Any]:
    """Everything a prompt or greeting template may read, from precomputed static vars."""
    context = runtime_defaults()
    context.update(static_vars)
    context.update(system_vars)
    context["agent_name"] = agent.name
    context["active_agent"] = agent.name
    context["is_return_visit"] = is_return
    if context.get("caller_name") is None:
        context["caller_name"] = caller_name(system_vars)
    return context


def greeting_context(
    scenario: ScenarioConfig | None,
    agent: AgentConfig,
    system_vars: Mapping[str, Any],
    *,
    is_return: bool = False,
) -> dict[str, Any]:
    """Everything a prompt or greeting template of `agent` may read in `scenario`."""
    return prompt_context(agent, template_vars(scenario, agent), system_vars, is_return=is_return)


def spoken_name(agent_name: str) -> str:
    """'FraudAgent' -> 'fraud agent': how a default greeting says an agent's name."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", agent_name).lower()


def render_greeting(agent: AgentConfig, context: Mapping[str, Any], *, is_return: bool) -> str:
    """The agent's greeting (or return greeting); a plain default when it defines none."""
    template = agent.return_greeting if is_return else agent.greeting
    if is_return and not template:
        # A returning caller should not hear the first-visit introduction again.
        return f"Welcome back, you're with the {spoken_name(agent.name)} again. How can I help?"
    if not template:
        return f"Hello, you're now speaking with the {spoken_name(agent.name)}. How can I help?"
    field = "return_greeting" if is_return else "greeting"
    return render(template, context, what=f"agent {agent.name} {field}", limit=MAX_GREETING_CHARS)


def render_system_prompt(
    agent: AgentConfig,
    static_vars: Mapping[str, Any],
    system_vars: Mapping[str, Any],
    *,
    handoff_instructions: str = "",
) -> str:
    """The agent's system prompt with the handoff instructions appended."""
    context = prompt_context(agent, static_vars, system_vars)
    body = ""
    if agent.prompt:
        body = render(
            agent.prompt, context, what=f"agent {agent.name} prompt", limit=MAX_PROMPT_CHARS
        )
    parts = [body or agent.description, handoff_instructions]
    return "\n\n".join(part for part in parts if part)


def render_prompt(
    scenario: ScenarioConfig | None,
    agent: AgentConfig,
    system_vars: Mapping[str, Any],
    *,
    handoff_instructions: str = "",
) -> str:
    """`render_system_prompt` with the static vars of `agent` in `scenario`."""
    return render_system_prompt(
        agent,
        template_vars(scenario, agent),
        system_vars,
        handoff_instructions=handoff_instructions,
    )
