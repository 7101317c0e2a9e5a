"""Local activities: handoff resolution and greetings, each its own marker in history.

The decision is pure (HandoffService), but running it as a local activity records the full
resolution in history, so an auditor reads every decision without re-running code, and a
change to the service never changes what an old call decided.

Both render templates (a route's context_vars, greetings); one that fails is a non-retryable
`TemplateRenderError` activity error, for the workflow to hand the call to a person.
"""

from __future__ import annotations

from temporalio import activity

from activities.template_errors import render_failures_as_application_errors
from contracts.handoff import (
    RENDER_START_GREETING,
    RESOLVE_HANDOFF,
    GreetingRequest,
    HandoffRequest,
    HandoffResult,
)
from registries.handoff_service import HandoffService
from registries.prompting import greeting_context, render_greeting


def decide_handoff(request: HandoffRequest) -> HandoffResult:
    """Resolve one handoff request and pick the arriving agent's greeting.

    Raises `TemplateRenderError` when the route's context_vars or the greeting fail to render.
    """
    # Building the service is a few dict inserts; a fresh one per request keeps the session
    # tool map of one call from leaking into another.
    service = HandoffService(
        request.scenario,
        request.agents,
        handoff_map=request.handoff_map,
        route_changes=request.route_changes,
    )
    resolution = service.resolve_handoff(
        source_agent=request.source_agent,
        tool_name=request.tool_name,
        tool_args=request.tool_args,
        current_system_vars=request.system_vars,
        user_last_utterance=request.user_last_utterance,
        tool_result=request.tool_result,
    )
    if not resolution.success or resolution.target_agent is None:
        return HandoffResult(resolution=resolution)
    is_return = resolution.target_agent in request.visited
    greeting = service.select_greeting(
        agent=resolution.target_agent,
        is_first_visit=not is_return,
        greet_on_switch=resolution.greet_on_switch,
        system_vars=resolution.system_vars,
    )
    return HandoffResult(resolution=resolution, greeting=greeting, is_return=is_return)


@activity.defn(name=RESOLVE_HANDOFF)
async def resolve_handoff(request: HandoffRequest) -> HandoffResult:
    with render_failures_as_application_errors():
        return decide_handoff(request)


@activity.defn(name=RENDER_START_GREETING)
async def render_start_greeting(request: GreetingRequest) -> str:
    """The first agent's greeting when the call connects."""
    with render_failures_as_application_errors():
        context = greeting_context(request.scenario, request.agent, request.system_vars)
        return render_greeting(request.agent, context, is_return=False)
