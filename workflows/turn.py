"""One caller turn inside the workflow: the active agent's model rounds, each maybe calling
tools or handing off, until someone has answered the caller.

Everything here is deterministic: activities are called by name and their results come from
history on replay.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.agent_reply import (
        GENERATE_AGENT_REPLY,
        AgentReplyRequest,
        AgentTurnResult,
        SpokenReply,
        with_agent_brief,
    )
    from contracts.calls import AgentUsage
    from contracts.metrics import EscalationReason
    from contracts.temporal import LLM_QUEUE
    from workflows import conversation, outages, policies, summaries
    from workflows.failures import render_failure, went_unserved
    from workflows.live_call import LiveCall
    from workflows.outages import TROUBLE_APOLOGY
    from workflows.speech import Speaker, was_cancelled
    from workflows.tool_calls import ToolCalls

#: Patch id: model requests name the snapshot instead of carrying the agent's brief.
SLIM_MODEL_REQUESTS = "slim-model-requests"
#: Patch id: voice replies are spoken while the model writes them.
STREAMED_REPLIES = "streamed-replies"
#: Patch id: rounds whose every tool call was refused count toward escalation.
REFUSED_ROUNDS_ESCALATE = "refused-rounds-escalate"
APOLOGY = "Sorry, I didn't catch that. Could you say it again?"
ROUND_LIMIT_REPLY = "I'm sorry, I'm having trouble with that request. Could you put it another way?"


class Turn:
    """Lets the active agent (and whoever it hands to) answer one utterance."""

    def __init__(
        self,
        call: LiveCall,
        speaker: Speaker,
        tool_calls: ToolCalls,
        *,
        escalate: Callable[[str, EscalationReason], Awaitable[None]],
    ) -> None:
        self.call = call
        self.speaker = speaker
        self.tool_calls = tool_calls
        self.escalate = escalate

    async def converse(self, utterance: str) -> None:
        live, speaker = self.call, self.speaker
        for round_no in range(live.limits.max_tool_rounds):
            if live.interrupted():
                return
            agent = live.state.active_agent
            reply_id = self._streamed_reply_id(round_no)
            follower = speaker.start_speech(agent, follow_reply_id=reply_id) if reply_id else None
            result = await self._ask_model(reply_id)
            if not isinstance(result, AgentTurnResult):
                if follower is not None:
                    follower.cancel()  # before the apology: the gateway plays one at a time
                if result:
                    await speaker.speak(agent, result, "reply")
                return
            if follower is not None and not result.published:
                follower.cancel()  # the gateway never got the text; speak it the ordinary way
                follower = None
            if not result.tool_calls:
                if result.text:
                    live.state.answers += 1  # the caller was answered: progress for the guard
                if follower is not None and result.text:
                    await speaker.finish_speech(follower, agent, result.text)
                else:
                    await speaker.speak(agent, result.text or APOLOGY, "reply")
                return
            if follower is not None and result.text:
                # Words the model wrote before its tool calls ("let me check") are being
                # spoken; they are recorded before the tools run, in the order they happened.
                await speaker.finish_speech(follower, agent, result.text)
            elif result.text and not live.has_voice:  # a text channel: recorded as said
                await speaker.speak(agent, result.text, "reply")
            round_id = live.state.turn * 100 + round_no
            tools_done = self.tool_calls.run(result.tool_calls, round_id, utterance)
            if self.tool_calls.hands_off(result.tool_calls):
                # A handoff is a local activity, whose result replay hands back at once: a
                # filler timer raced against it would be started in a different order on
                # replay. Handoffs take milliseconds; the filler is for business tools.
                done = await tools_done
            else:
                done = await outages.with_filler(live, speaker, tools_done, "tools")
            if done == "done":
                return
            if await self._refusals_exhausted(self.tool_calls.refusals):
                return
        await speaker.speak(live.state.active_agent, ROUND_LIMIT_REPLY, "reply")
        await self._count_model_failure(f"{live.limits.max_tool_rounds} tool rounds in one turn")

    def _streamed_reply_id(self, round_no: int) -> str:
        """On a voice call, the id under which this round's reply is spoken as it is written
        ("" otherwise). The TTS activity starts with the model call and follows the text the
        LLM worker publishes to the gateway, so the first audio waits for one sentence rather
        than the whole reply and a second activity hop."""
        if not self.call.has_voice or not workflow.patched(STREAMED_REPLIES):
            return ""
        return f"{self.call.state.turn}.{round_no}"

    async def _ask_model(self, spoken_reply_id: str = "") -> AgentTurnResult | str | None:
        """The model's answer; else the apology the caller must hear, or None when the turn
        ends with nothing more to say."""
        live = self.call
        state, agent, snapshot = live.state, live.state.active_agent, live.snapshot
        conversation.fold_summary(state, live.limits)
        request = AgentReplyRequest(
            call_id=state.call.call_id,
            agent_name=agent,
            snapshot_hash=snapshot.content_hash,
            scenario=snapshot.scenario.name,
            registry=snapshot.registry,
            system_vars=state.system_vars,
            summary=state.summary,
            messages=conversation.window_messages(state, live.limits),
            route_changes=list(state.route_changes),
            spoken=SpokenReply(
                gateway_address=state.call.gateway_address or "", reply_id=spoken_reply_id
            )
            if spoken_reply_id
            else None,
        )
        if not workflow.patched(SLIM_MODEL_REQUESTS):
            request = with_agent_brief(request, snapshot)  # what older calls recorded
        plan = outages.plan_for(live, agent)  # its patches are asked before the activity
        if plan.filler_after is not None:
            request = request.model_copy(update={"filler_after_seconds": plan.filler_after})
        started = workflow.now()
        outcome = await self._model_call(request, plan.primary_share(), spoken_reply_id)
        if isinstance(outcome, str) and plan.fallback:
            outcome = await self._fallback(request, plan, outcome, started)
        if isinstance(outcome, str):
            await self._count_model_failure(outcome)
            if state.status != "active":
                return None
            if not plan.honest:  # as recorded before: said while the streamed reply still waits
                await self.speaker.speak(agent, APOLOGY, "reply")
                return None
            # The trouble is ours: "didn't catch that" is only for audio not understood.
            return TROUBLE_APOLOGY
        if outcome is None:
            return None
        result = outcome
        if result.filler:
            outages.record_filler(live, agent, "model", result.filler)
        state.llm_failures = 0
        usage = state.usage.setdefault(agent, AgentUsage())
        usage.prompt_tokens += result.usage.prompt_tokens
        usage.completion_tokens += result.usage.completion_tokens
        usage.turns += 1
        return result

    async def _model_call(
        self, request: AgentReplyRequest, seconds: float | None, spoken_reply_id: str
    ) -> AgentTurnResult | str | None:
        """One model activity: its result, why it failed (a model failure), or None when the
        turn must stop here (cut in, no worker serving the queue, a prompt that cannot render:
        each dealt with already)."""
        live, agent = self.call, request.agent_name
        if seconds is not None:  # the LLM worker bounds each attempt's silence
            request = request.model_copy(update={"max_silence_seconds": seconds})
        handle = workflow.start_activity(
            GENERATE_AGENT_REPLY,
            request,
            result_type=AgentTurnResult,
            task_queue=LLM_QUEUE,
            start_to_close_timeout=policies.LLM.start_to_close,
            heartbeat_timeout=policies.LLM.heartbeat,
            schedule_to_start_timeout=policies.LLM.schedule_to_start,
            retry_policy=policies.LLM.retry,
            summary=summaries.model(agent, request.fallback_model),
        )
        try:
            result: AgentTurnResult = await live.interruptible(handle)
        except ActivityError as error:
            if was_cancelled(error):
                # Cut in while the model was still writing: only the gateway knows the words
                # of the reply the caller heard.
                barge = live.barge_in
                heard = (barge.heard_text or "") if barge and spoken_reply_id else ""
                self.speaker.record_barge_in(agent, heard, heard)
                return None
            if went_unserved(error):
                live.unserved = "llm"  # the main loop escalates: no retry can answer
                return None
            filler = outages.filler_before(error)
            if filler:  # the caller heard it before the model gave up
                outages.record_filler(live, agent, "model", filler)
            failure = render_failure(error)
            if failure is not None:
                await self.escalate(
                    f"{agent}'s prompt could not be rendered: {failure.message}", "render_error"
                )
                return None
            return str(error.cause or error)
        return result

    async def _fallback(
        self,
        request: AgentReplyRequest,
        plan: outages.OutagePlan,
        why: str,
        started: datetime,
    ) -> AgentTurnResult | str | None:
        """The agent's model failed this turn: try the fallback once (what is left of the
        silence bound), or with the offline fallback hand the caller to a person."""
        live, agent = self.call, request.agent_name
        item = outages.record_fallback(live, agent, plan.fallback, why)
        if plan.fallback == outages.OFFLINE:
            await self.escalate(
                f"{agent}'s model is unavailable ({why}); the offline fallback hands the "
                "caller to a person",
                "model_unavailable",
            )
            return None
        left = None
        if plan.max_silence is not None:
            spent = (workflow.now() - started).total_seconds()
            left = max(1.0, plan.max_silence - spent)
        # Not streamed: the gateway's reply is the cancelled primary's, so the fallback's
        # answer is spoken the ordinary way once it is written.
        fallback_request = request.model_copy(
            update={"fallback_model": plan.fallback, "spoken": None}
        )
        outcome = await self._model_call(fallback_request, left, "")
        if isinstance(outcome, AgentTurnResult):
            item.answered_by = outcome.model or plan.fallback
        elif isinstance(outcome, str):
            return f"{why}; fallback {plan.fallback}: {outcome}"
        return outcome

    async def _refusals_exhausted(self, refusals: list[str]) -> bool:
        """Count a response whose tool calls were all refused; escalate (True) at the limit.

        A model that keeps calling unknown tools or agents, or sends junk arguments, gets every
        answer over HTTP just fine: only its refusals show that it is stuck."""
        state, limits = self.call.state, self.call.limits
        if not refusals:
            state.refused_rounds = []
            return False
        state.refused_rounds.append("; ".join(refusals))
        if len(state.refused_rounds) < limits.max_refused_rounds:
            return False
        if not workflow.patched(REFUSED_ROUNDS_ESCALATE):
            return False  # calls recorded before this guard kept talking
        named = " | ".join(state.refused_rounds[-limits.max_refused_rounds :])
        await self.escalate(
            f"the agent's tool calls were refused {len(state.refused_rounds)} "
            f"times in a row: {named}",
            "refused_tool_calls",
        )
        return True

    async def _count_model_failure(self, why: str) -> None:
        state = self.call.state
        state.llm_failures += 1
        if state.llm_failures >= self.call.limits.max_llm_failures:
            await self.escalate(
                f"the agent failed {state.llm_failures} times in a row: {why}", "model_failures"
            )
