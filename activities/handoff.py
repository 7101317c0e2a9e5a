"""Local activities: handoff resolution and greetings, each its own marker in history.

The decision is pure (HandoffService), but running it as a local activity records the full
resolution in history, so an auditor reads every decision without re-running code, and a
change to the service never changes what an old call decided.
"""

from __future__ import annotations

from temporalio import activity

from contracts.handoff import (
    RENDER_START_GREETING,
    RESOLVE_HANDOFF,
    GreetingRequest,
    HandoffRequest,
    HandoffResult,
)
from contracts.registry import HandoffResolution
from registries.errors import TemplateRenderError
from registries.handoff_service import HandoffService
from registries.prompting import greeting_context, render_greeting


def decide_handoff(request: HandoffRequest) -> HandoffResult:
    """Resolve one handoff request and pick the arriving agent's greeting."""
    # Building the service is a few dict inserts; a fresh one per request keeps the session
    # tool map of one call from leaking into another.
    service = HandoffService(request.scenario, request.agents, handoff_map=request.handoff_map)
    resolution = service.resolve_handoff(
        source_agent=request.source_agent,
        tool_name=request.tool_name,
        tool_args=request.tool_args,
        current_system_vars=request.system_vars,
        user_last_utterance=request.user_last_utterance,
    )
    if not resolution.success or resolution.target_agent is None:
        return HandoffResult(resolution=resolution)
    is_return = resolution.target_agent in request.visited
    try:
        greeting = service.select_greeting(
            agent=resolution.target_agent,
            is_first_visit=not is_return,
            greet_on_switch=resolution.greet_on_switch,
            system_vars=resolution.system_vars,
        )
    except TemplateRenderError as exc:
        refused = HandoffResolution(
            success=False,
            source_agent=resolution.source_agent,
            tool_name=resolution.tool_name,
            error=f"{exc}. The transfer could not be completed.",
        )
        return HandoffResult(resolution=refused)
    return HandoffResult(resolution=resolution, greeting=greeting, is_return=is_return)


@activity.defn(name=RESOLVE_HANDOFF)
async def resolve_handoff(request: HandoffRequest) -> HandoffResult:
    return decide_handoff(request)


@activity.defn(name=RENDER_START_GREETING)
async def render_start_greeting(request: GreetingRequest) -> str:
    """The first agent's greeting when the call connects."""
    context = greeting_context(request.scenario, request.agent, request.system_vars)
    return render_greeting(request.agent, context, is_return=False)
