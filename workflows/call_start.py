"""How a call starts: pin the scenario (an activity), choose the first agent, greet."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.handoff import RENDER_START_GREETING, GreetingRequest
    from contracts.metrics import EscalationReason
    from contracts.snapshot import LOAD_CALL_SNAPSHOT, CallSnapshot, SnapshotRequest
    from contracts.temporal import TOOLS_QUEUE
    from runtime.snapshot_cache import shared_snapshot
    from workflows import policies, summaries
    from workflows.failures import render_failure
    from workflows.live_call import LiveCall
    from workflows.speech import Speaker


async def start_call(
    call: LiveCall,
    speaker: Speaker,
    escalate: Callable[[str, EscalationReason], Awaitable[None]],
) -> None:
    """Load and pin the scenario, make its start agent active and let it greet; a scenario that
    cannot be loaded sends the caller to a person, with a ticket that says what to fix."""
    state = call.state
    try:
        snapshot: CallSnapshot = await workflow.execute_activity(
            LOAD_CALL_SNAPSHOT,
            SnapshotRequest(scenario=state.call.scenario, registry=state.call.registry),
            result_type=CallSnapshot,
            task_queue=TOOLS_QUEUE,
            start_to_close_timeout=policies.SNAPSHOT.start_to_close,
            retry_policy=policies.SNAPSHOT.retry,
            summary=summaries.load_snapshot(state.call.scenario),
        )
    except ActivityError as error:
        await escalate(
            f"scenario {state.call.scenario!r} could not be loaded: {error.cause}",
            "scenario_unavailable",
        )
        return
    profile = dict(state.call.caller_profile)
    start = start_agent_for(snapshot, profile.get("language"))
    state.snapshot = shared_snapshot(snapshot)
    state.active_agent = start
    state.visited = [start]
    state.system_vars = {"session_profile": profile, "active_agent": start}
    if profile.get("client_id"):
        state.system_vars["client_id"] = profile["client_id"]
    try:
        greeting: str = await workflow.execute_local_activity(
            RENDER_START_GREETING,
            GreetingRequest(
                scenario=snapshot.scenario,
                agent=snapshot.agents[start].config,
                system_vars=state.system_vars,
            ),
            result_type=str,
            start_to_close_timeout=policies.HANDOFF.start_to_close,
            retry_policy=policies.HANDOFF.retry,
            summary=summaries.start_greeting(start),
        )
    except (ActivityError, ApplicationError) as error:
        failure = render_failure(error)
        if failure is None:
            raise
        await escalate(
            f"{start}'s greeting could not be rendered: {failure.message}", "render_error"
        )
        return
    call.turn_spoken = []
    await speaker.speak(start, greeting, "greeting")


def start_agent_for(snapshot: CallSnapshot, language: object) -> str:
    """The agent that answers: the scenario's pick for the caller's language (the signed
    profile's `language`, full tag first, then its primary language), else `start_agent`."""
    by_language = snapshot.scenario.start_agent_by_language
    if isinstance(language, str) and language and by_language:
        for key in (language, language.split("-")[0]):
            agent = by_language.get(key)
            if agent in snapshot.agents:
                return agent
    return snapshot.scenario.start_agent or next(iter(snapshot.agents))
