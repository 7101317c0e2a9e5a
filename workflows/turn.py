"""One caller turn: model rounds, tool calls, handoffs and speaking, inside the workflow.

`TurnSteps` is a mixin of `CallSessionWorkflow`; it holds no state of its own beyond the
workflow's. Everything here is deterministic: activities are called by name and their results
come from history on replay.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.agent_reply import (
        GENERATE_AGENT_REPLY,
        AgentReplyRequest,
        AgentTurnResult,
        SpokenReply,
        ToolCall,
        with_agent_brief,
    )
    from contracts.calls import AgentUsage
    from contracts.handoff import RESOLVE_HANDOFF, HandoffRequest, HandoffResult, HandoffStep
    from contracts.registry import HANDOFF_TOOL
    from contracts.temporal import LLM_QUEUE, TOOLS_QUEUE
    from contracts.tools import RUN_BUSINESS_TOOL, ToolRequest, ToolResult
    from contracts.transcript import HandoffItem, ToolCallItem, ToolResultItem
    from workflows import conversation, policies
    from workflows.loop_guard import loop_guard_reason
    from workflows.speech_steps import SpeechSteps, was_cancelled

RoundOutcome = Literal["continue", "done"]
#: Patch id: model requests name the snapshot instead of carrying the agent's brief.
SLIM_MODEL_REQUESTS = "slim-model-requests"
#: Patch id: voice replies are spoken while the model writes them.
STREAMED_REPLIES = "streamed-replies"
APOLOGY = "Sorry, I didn't catch that. Could you say it again?"
ROUND_LIMIT_REPLY = "I'm sorry, I'm having trouble with that request. Could you put it another way?"


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Tool arguments as a dict, or None when the model sent something else."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class TurnSteps(SpeechSteps):
    """The steps of a turn; `CallSessionWorkflow` supplies the state and the guards."""

    # -- the conversation loop -------------------------------------------------------------

    async def converse(self, utterance: str) -> None:
        """Let the active agent (and whoever it hands to) answer one utterance."""
        for round_no in range(self.limits.max_tool_rounds):
            if self._interrupted():
                return
            agent = self.state.active_agent
            reply_id = self._streamed_reply_id(round_no)
            follower = self.start_speech(agent, follow_reply_id=reply_id) if reply_id else None
            result = await self._ask_model(reply_id)
            if result is None:
                if follower is not None:
                    follower.cancel()
                return
            if follower is not None and not result.published:
                follower.cancel()  # the gateway never got the text; speak it the ordinary way
                follower = None
            if not result.tool_calls:
                if follower is not None and result.text:
                    await self.finish_speech(follower, agent, result.text)
                else:
                    await self.speak(agent, result.text or APOLOGY, "reply")
                return
            if follower is not None and result.text:
                # Words the model wrote before its tool calls ("let me check") are being
                # spoken; they are recorded before the tools run, in the order they happened.
                await self.finish_speech(follower, agent, result.text)
            elif result.text and not self.has_voice:  # a text channel: recorded as said
                await self.speak(agent, result.text, "reply")
            round_id = self.state.turn * 100 + round_no
            if await self._run_tool_calls(result.tool_calls, round_id, utterance) == "done":
                return
        await self.speak(self.state.active_agent, ROUND_LIMIT_REPLY, "reply")
        await self._count_model_failure(f"{self.limits.max_tool_rounds} tool rounds in one turn")

    def _streamed_reply_id(self, round_no: int) -> str:
        """On a voice call, the id under which this round's reply is spoken as it is written
        ("" otherwise). The TTS activity starts with the model call and follows the text the
        LLM worker publishes to the gateway, so the first audio waits for one sentence rather
        than the whole reply and a second activity hop."""
        if not self.has_voice or not workflow.patched(STREAMED_REPLIES):
            return ""
        return f"{self.state.turn}.{round_no}"

    async def _ask_model(self, spoken_reply_id: str = "") -> AgentTurnResult | None:
        state, agent = self.state, self.state.active_agent
        conversation.fold_summary(state, self.limits)
        request = AgentReplyRequest(
            call_id=state.call.call_id,
            agent_name=agent,
            snapshot_hash=self.snapshot.content_hash,
            scenario=self.snapshot.scenario.name,
            registry=self.snapshot.registry,
            system_vars=state.system_vars,
            summary=state.summary,
            messages=conversation.window_messages(state, self.limits),
            spoken=SpokenReply(
                gateway_address=state.call.gateway_address or "", reply_id=spoken_reply_id
            )
            if spoken_reply_id
            else None,
        )
        if not workflow.patched(SLIM_MODEL_REQUESTS):
            request = with_agent_brief(request, self.snapshot)  # what older calls recorded
        handle = workflow.start_activity(
            GENERATE_AGENT_REPLY,
            request,
            result_type=AgentTurnResult,
            task_queue=LLM_QUEUE,
            start_to_close_timeout=policies.LLM.start_to_close,
            heartbeat_timeout=policies.LLM.heartbeat,
            retry_policy=policies.LLM.retry,
        )
        try:
            result: AgentTurnResult = await self._interruptible(handle)
        except ActivityError as error:
            if was_cancelled(error):
                # Cut in while the model was still writing: only the gateway knows the words
                # of the reply the caller heard.
                barge = self._barge_in
                heard = (barge.heard_text or "") if barge and spoken_reply_id else ""
                self._record_barge_in(agent, heard, heard)
                return None
            await self._count_model_failure(str(error.cause or error))
            if state.status == "active":
                await self.speak(agent, APOLOGY, "reply")
            return None
        state.llm_failures = 0
        usage = state.usage.setdefault(agent, AgentUsage())
        usage.prompt_tokens += result.usage.prompt_tokens
        usage.completion_tokens += result.usage.completion_tokens
        usage.turns += 1
        return result

    async def _count_model_failure(self, why: str) -> None:
        self.state.llm_failures += 1
        if self.state.llm_failures >= self.limits.max_llm_failures:
            await self.escalate(f"the agent failed {self.state.llm_failures} times in a row: {why}")

    # -- tools and handoffs ----------------------------------------------------------------

    async def _run_tool_calls(
        self, calls: list[ToolCall], round_id: int, utterance: str
    ) -> RoundOutcome:
        state, agent = self.state, self.state.active_agent
        now = workflow.now()
        for call in calls:
            state.transcript.append(
                ToolCallItem(
                    at=now,
                    turn=state.turn,
                    agent=agent,
                    tool_call_id=call.id,
                    tool=call.name,
                    arguments=call.arguments,
                    round=round_id,
                )
            )
        offered = {tool.name for tool in self.snapshot.agents[agent].tools}
        switched: HandoffResult | None = None
        ending: dict[str, Any] | None = None
        for call in calls:
            if switched is not None or ending is not None or self._hang_up is not None:
                self._tool_result(agent, call, {"skipped": "the call moved on before this ran"})
                continue
            args = parse_arguments(call.arguments)
            if call.name not in offered:
                names = ", ".join(sorted(offered)) or "none"
                content: dict[str, Any] = {"error": f"unknown tool {call.name!r}; tools: {names}"}
            elif call.name == HANDOFF_TOOL or call.name in self.snapshot.handoff_map:
                result = await self.request_handoff(agent, call.name, args, utterance, "llm")
                resolution = result.resolution
                if resolution.success:
                    switched = result
                    content = {"success": True, "target_agent": resolution.target_agent}
                else:
                    content = {"success": False, "error": resolution.error}
            elif args is None:
                content = {
                    "error": "the arguments were not a JSON object; call the tool again "
                    "with valid JSON arguments"
                }
            else:
                content = await self._business_tool(call.name, args)
                if self.snapshot.tool_specs[call.name].ends_conversation and "error" not in content:
                    ending = {"tool": call.name, **content}
            self._tool_result(agent, call, content)
        if switched is not None:
            return await self.apply_switch(switched, "llm")
        if ending is not None:
            await self._end_by_tool(agent, ending)
            return "done"
        return "continue"

    def _tool_result(self, agent: str, call: ToolCall, content: dict[str, Any]) -> None:
        self.state.transcript.append(
            ToolResultItem(
                at=workflow.now(),
                turn=self.state.turn,
                agent=agent,
                tool_call_id=call.id,
                tool=call.name,
                content=json.dumps(content, sort_keys=True, default=str),
            )
        )

    async def _business_tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        state = self.state
        state.tool_seq += 1
        request = ToolRequest(
            call_id=state.call.call_id,
            tool=name,
            arguments=args,
            idempotency_key=f"{state.call.call_id}/tool-{state.tool_seq}",
            system_vars=state.system_vars,
            registry=self.snapshot.registry,
        )
        try:
            outcome: ToolResult = await workflow.execute_activity(
                RUN_BUSINESS_TOOL,
                request,
                result_type=ToolResult,
                task_queue=TOOLS_QUEUE,
                start_to_close_timeout=policies.TOOL.start_to_close,
                retry_policy=policies.TOOL.retry,
            )
        except ActivityError as error:
            return {
                "error": f"{name} failed: {error.cause or error}; tell the caller and offer "
                "another way to help"
            }
        if outcome.error:
            return {"error": outcome.error}
        self._learn_identity(outcome.result)
        return outcome.result

    def _learn_identity(self, result: dict[str, Any]) -> None:
        """A successful identity check tells every later tool and agent who is calling."""
        if result.get("verified") is True and result.get("client_id"):
            profile = dict(self.state.system_vars.get("session_profile") or {})
            profile["client_id"] = result["client_id"]
            if result.get("name"):
                profile["name"] = result["name"]
            self.state.system_vars["client_id"] = result["client_id"]
            self.state.system_vars["session_profile"] = profile

    async def request_handoff(
        self,
        source: str,
        tool: str,
        args: dict[str, Any] | None,
        utterance: str | None,
        trigger: Literal["llm", "supervisor"],
    ) -> HandoffResult:
        """Ask the HandoffService (a local activity) and record its decision."""
        state = self.state
        result: HandoffResult = await workflow.execute_local_activity(
            RESOLVE_HANDOFF,
            HandoffRequest(
                scenario=self.snapshot.scenario,
                agents=self.snapshot.agent_configs(),
                handoff_map=self.snapshot.handoff_map,
                source_agent=source,
                tool_name=tool,
                tool_args=args,
                system_vars=state.system_vars,
                user_last_utterance=utterance,
                visited=state.visited,
            ),
            result_type=HandoffResult,
            start_to_close_timeout=policies.HANDOFF.start_to_close,
            retry_policy=policies.HANDOFF.retry,
        )
        r = result.resolution
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

    async def apply_switch(
        self, result: HandoffResult, trigger: Literal["llm", "supervisor"]
    ) -> RoundOutcome:
        """Make the target the active agent; announced targets greet, discrete ones answer."""
        state, r = self.state, result.resolution
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
        self._turn_handoffs.append(
            f"{state.active_agent} -> {target} ({r.handoff_type}, {trigger}): {r.reason}"
        )
        state.active_agent = target
        if target not in state.visited:
            state.visited.append(target)
        state.system_vars = dict(r.system_vars)
        if not r.share_context:  # the target starts without the conversation so far
            state.window_floor = state.summarized_upto = len(state.transcript)
            state.summary = ""
        self.publish()
        guard = loop_guard_reason(state.handoffs, self.limits)
        if guard is not None:
            await self.escalate(guard)
            return "done"
        if r.is_announced:
            await self.speak(target, result.greeting or "", "greeting", is_return=result.is_return)
            return "done"
        return "continue"

    # -- supplied by the workflow ----------------------------------------------------------

    @abstractmethod
    async def escalate(self, reason: str) -> None:
        """End the call as `escalated`, filing a ticket for a human."""

    @abstractmethod
    async def _end_by_tool(self, agent: str, result: dict[str, Any]) -> None:
        """End the call because a tool (end_call, escalate_human) said so."""
