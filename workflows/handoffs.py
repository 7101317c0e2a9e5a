"""Handoffs inside the workflow: ask the HandoffService, record its decision, switch agents."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.handoff import RESOLVE_HANDOFF, HandoffRequest, HandoffResult, HandoffStep
    from contracts.metrics import EscalationReason, HandoffOutcome
    from contracts.registry import HandoffResolution
    from contracts.transcript import HandoffItem
    from workflows import policies, summaries
    from workflows.failures import render_failure
    from workflows.live_call import LiveCall
    from workflows.loop_guard import loop_guard_reason
    from workflows.metrics import count_handoff
    from workflows.speech import Speaker

#: Patch id: a return visit after the caller was answered does not trip the ping-pong guard.
RETURN_VISITS = "return-visits"
#: The same change, asked before the handoff's local activity instead of after its result: a
#: result that arrives in a later workflow task (the task heartbeats while a slow local activity
#: runs) comes back at once on replay, in the earlier task, where a marker asked for only after
#: it is not yet known (a nondeterminism seen under load). Calls recorded with RETURN_VISITS
#: keep replaying through it.
RETURN_VISITS_EARLY = "return-visits-early"
#: Patch id: the handoff fields of a business tool's result reach the handoff's resolution.
TOOL_HANDOFF_CONTEXT = "tool-handoff-context"
#: Patch id: a route's `on_tool_result` rule hands off once a business tool's result matches.
TOOL_RESULT_RULES = "tool-result-rules"
#: Patch id: a new caller turn or a business tool that succeeded is progress between hops too,
#: not only a reply to the caller: a specialist that finishes its task with a tool and hands
#: back in one response has not bounced the caller.
PROGRESS_BETWEEN_HOPS = "progress-between-hops"

#: Who asked for a handoff: the model, a supervisor, or a route's `on_tool_result` rule.
Trigger = Literal["llm", "supervisor", "rule"]
#: "continue": the new agent answers the same utterance (discrete); "done": the turn is over.
RoundOutcome = Literal["continue", "done"]


class Handoffs:
    """Requests and applies handoffs; escalates when the loop guard trips."""

    def __init__(
        self,
        call: LiveCall,
        speaker: Speaker,
        *,
        escalate: Callable[[str, EscalationReason], Awaitable[None]],
        agent_changed: Callable[[], None],
    ) -> None:
        self.call = call
        self.speaker = speaker
        self.escalate = escalate
        #: Called once the active agent changed (the search attributes follow it).
        self.agent_changed = agent_changed
        #: Whether this run judges return visits by the answers in between (RETURN_VISITS_EARLY).
        self.return_visits = False
        #: Whether caller turns and successful tools count as progress (PROGRESS_BETWEEN_HOPS).
        self.turns_and_tools_progress = False
        #: Whether routes' `on_tool_result` rules hand off (TOOL_RESULT_RULES).
        self.tool_result_rules = False

    def decide(self) -> None:
        """Ask, once at the start of each run, how this run counts progress between hops and
        whether tool-result rules hand off.

        Asked before any activity: both act after activity results, and a patch asked only
        then could land in another workflow task on replay (see
        workflows.transfer.HumanTransfer.decide).
        """
        self.turns_and_tools_progress = workflow.patched(PROGRESS_BETWEEN_HOPS)
        self.tool_result_rules = workflow.patched(TOOL_RESULT_RULES)

    def note_progress(self) -> None:
        """The caller said something new, or a business tool did its work: a hop after this is
        not a bounce (the loop guard compares the count at each hop)."""
        if self.turns_and_tools_progress:
            self.call.state.answers += 1

    async def request(
        self,
        source: str,
        tool: str,
        args: dict[str, Any] | None,
        utterance: str | None,
        trigger: Trigger,
        tool_result: dict[str, Any] | None = None,
    ) -> HandoffResult:
        """Ask the HandoffService (a local activity) and record its decision.

        `tool_result`: the handoff fields of a business tool that ran before it this turn.
        """
        state = self.call.state
        self.return_visits = self.return_visits or workflow.patched(RETURN_VISITS_EARLY)
        if tool_result is not None and not workflow.patched(TOOL_HANDOFF_CONTEXT):
            tool_result = None  # older calls resolved handoffs without them
        try:
            result = await self._resolve(source, tool, args, utterance, trigger, tool_result)
        except (ActivityError, ApplicationError) as error:
            failure = render_failure(error)
            if failure is None:
                raise
            # The route's context or the target's greeting cannot be rendered for this caller:
            # no retry or other wording helps, so a person takes the call.
            why = f"handoff from {source} via {tool} could not be rendered: {failure.message}"
            await self.escalate(why, "render_error")
            result = HandoffResult(resolution=HandoffResolution(success=False, error=why))
        r = result.resolution
        if not r.success:
            self._count(source, r.target_agent or "", "", "refused")
        state.transcript.append(
            HandoffItem(
                at=workflow.now(),
                turn=state.turn,
                source=source,
                target=r.target_agent,
                success=r.success,
                handoff_type=r.handoff_type,
                reason=r.reason,
                tool=tool,
                error=r.error,
                share_context=r.share_context,
                trigger=trigger,
                resolution=r,
                greeting=result.greeting,
            )
        )
        return result

    async def _resolve(
        self,
        source: str,
        tool: str,
        args: dict[str, Any] | None,
        utterance: str | None,
        trigger: Trigger,
        tool_result: dict[str, Any] | None,
    ) -> HandoffResult:
        state, snapshot = self.call.state, self.call.snapshot
        result: HandoffResult = await workflow.execute_local_activity(
            RESOLVE_HANDOFF,
            HandoffRequest(
                scenario=snapshot.scenario,
                agents=snapshot.agent_configs(),
                handoff_map=snapshot.handoff_map,
                source_agent=source,
                tool_name=tool,
                tool_args=args,
                system_vars=state.system_vars,
                user_last_utterance=utterance,
                visited=state.visited,
                tool_result=tool_result,
                route_changes=list(state.route_changes),
            ),
            result_type=HandoffResult,
            start_to_close_timeout=policies.HANDOFF.start_to_close,
            retry_policy=policies.HANDOFF.retry,
            summary=summaries.handoff(snapshot, source, tool, args, trigger),
        )
        return result

    async def switch(self, result: HandoffResult, trigger: Trigger) -> RoundOutcome:
        """Make the target the active agent; announced targets greet, discrete ones answer."""
        state, r = self.call.state, result.resolution
        target = r.target_agent or state.active_agent
        state.handoffs.append(
            HandoffStep(
                source=state.active_agent,
                target=target,
                handoff_type=r.handoff_type,
                reason=r.reason,
                trigger=trigger,
                turn=state.turn,
            )
        )
        self.call.turn_handoffs.append(
            f"{state.active_agent} -> {target} ({r.handoff_type}, {trigger}): {r.reason}"
        )
        state.active_agent = target
        if target not in state.visited:
            state.visited.append(target)
        state.system_vars = dict(r.system_vars)
        if not r.share_context:  # the target starts without the conversation so far
            state.window_floor = state.summarized_upto = len(state.transcript)
            state.summary = ""
        self.agent_changed()
        state.answers_at_handoffs.append(state.answers)
        # Older calls judged every quick A->B->A->B a loop, return visits included.
        return_visits = self.return_visits or workflow.patched(RETURN_VISITS)
        answers = state.answers_at_handoffs if return_visits else None
        guard = loop_guard_reason(state.handoffs, self.call.limits, answers)
        outcome: HandoffOutcome = "accepted" if guard is None else "loop_guard"
        self._count(state.handoffs[-1].source, target, r.handoff_type, outcome)
        if guard is not None:
            await self.escalate(guard, "loop_guard")
            return "done"
        if r.is_announced:
            await self.speaker.speak(
                target, result.greeting or "", "greeting", is_return=result.is_return
            )
            return "done"
        return "continue"

    def _count(
        self, source: str, target: str, handoff_type: str | None, outcome: HandoffOutcome
    ) -> None:
        """One handoff in the metrics; a target the scenario does not have (a model's invention)
        is counted as "unknown", so labels stay the scenario's own names."""
        snapshot = self.call.snapshot
        known = target if target in snapshot.agents else "unknown"
        count_handoff(snapshot.scenario.name, source, known, handoff_type or "", outcome)
