"""Activity: one LLM turn of the active agent (llm queue).

Renders the agent's prompt with the call's variables, then asks the configured chat model
(`BATON_CHAT_PROVIDER`: the offline policy by default, OpenAI or Azure OpenAI). Provider errors
arrive classified; non-retryable ones stop Temporal's retries at once, as does a prompt that
fails to render (`TemplateRenderError`). On a voice call the reply is published to the call's
gateway sentence by sentence as the model writes it, for the turn's speech activity (started
at the same moment) to speak.
"""

from __future__ import annotations

import asyncio
import time
from asyncio import FIRST_COMPLETED
from collections.abc import Awaitable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.chat_models.base import (
    AgentTurnInput,
    ChatModel,
    ChatModelError,
    chat_model_name,
)
from activities.chat_models.factory import chat_model_from_env
from activities.heartbeats import with_heartbeats
from activities.live_routes import with_route_changes
from activities.media_channels import MediaChannels
from activities.provider_errors import ProviderError, to_application_error
from activities.reply_publisher import ReplyPublisher
from activities.snapshot import pinned_snapshot
from activities.template_errors import render_failures_as_application_errors
from contracts.agent_reply import (
    GENERATE_AGENT_REPLY,
    AgentReplyRequest,
    AgentTurnResult,
    with_agent_brief,
)
from contracts.metrics import LLM_TOKENS
from registries.prompting import render_system_prompt
from runtime.baton_metrics import count, observe_stage

#: Well inside the workflow's two-second heartbeat timeout, even on a busy worker.
HEARTBEAT_SECONDS = 0.5
#: A model that has written nothing speakable this long into a voice turn gets a filler
#: spoken first, so the caller is not left in silence.
FILLER_AFTER_SECONDS = 1.5
FILLER = "One moment, please. "
#: The error type Temporal records when the chat model fails.
FAILURE_TYPE = "ChatModelError"


def with_brief(request: AgentReplyRequest) -> AgentReplyRequest:
    """The request with the agent's brief from the call's pinned snapshot (loaded by hash,
    once per worker process), so model requests in history stay small."""
    if request.agent is not None:
        return request
    snapshot = pinned_snapshot(request.snapshot_hash, request.scenario, request.registry)
    snapshot = with_route_changes(snapshot, request.agent_name, request.route_changes)
    return with_agent_brief(request, snapshot)


def build_turn_input(request: AgentReplyRequest) -> AgentTurnInput:
    """The provider-neutral turn for a request that carries the agent's brief."""
    agent = request.agent
    assert agent is not None, "call with_brief first"
    prompt = render_system_prompt(
        agent,
        request.template_vars,
        request.system_vars,
        handoff_instructions=request.handoff_instructions,
    )
    return AgentTurnInput(
        call_id=request.call_id,
        agent=agent.name,
        agent_description=agent.description,
        system_prompt=prompt,
        summary=request.summary,
        messages=request.messages,
        tools=request.tools,
        routes=request.routes,
        model=agent.model.name,
        fallback_model=request.fallback_model,
        temperature=agent.model.temperature,
        max_tokens=agent.model.max_tokens,
        template_vars=request.template_vars,
    )


class AgentReplyActivity:
    """Holds the worker's chat model (from the environment unless one is given)."""

    def __init__(self, model: ChatModel | None = None) -> None:
        self.model = model or chat_model_from_env()
        self.channels = MediaChannels()

    @activity.defn(name=GENERATE_AGENT_REPLY)
    async def generate_agent_reply(self, request: AgentReplyRequest) -> AgentTurnResult:
        with render_failures_as_application_errors():
            turn = build_turn_input(with_brief(request))
        publisher = None
        filler: asyncio.Task[None] | None = None
        if request.spoken is not None:
            publisher = ReplyPublisher(self.channels, request.call_id, request.spoken)
            wait = request.filler_after_seconds or FILLER_AFTER_SECONDS
            filler = asyncio.create_task(_filler_when_slow(publisher, wait))
        started = time.monotonic()
        answering = asyncio.Event()  # the model has written something for the caller

        def on_text(delta: str) -> None:
            answering.set()
            if publisher is not None:
                publisher.add(delta)

        generation = self.model.generate(turn, on_text_delta=on_text if publisher else None)
        try:
            result = await with_heartbeats(
                self._answer_within(generation, answering, request.max_silence_seconds),
                every=HEARTBEAT_SECONDS,
            )
        except BaseException as exc:
            if publisher is not None:
                publisher.abort()
            if isinstance(exc, ProviderError):
                failure = to_application_error(exc, failure_type=FAILURE_TYPE)
                if publisher is not None and publisher.interjected:
                    # The workflow records the filler the caller heard before the failure.
                    failure = ApplicationError(
                        failure.message,
                        FILLER.strip(),
                        type=FAILURE_TYPE,
                        non_retryable=failure.non_retryable,
                    )
                raise failure from exc
            raise
        finally:
            if filler is not None:
                filler.cancel()
        observe_stage("model", time.monotonic() - started)
        model = result.model or turn.model
        count(LLM_TOKENS, result.usage.prompt_tokens, agent=turn.agent, model=model, kind="prompt")
        count(
            LLM_TOKENS,
            result.usage.completion_tokens,
            agent=turn.agent,
            model=model,
            kind="completion",
        )
        if publisher is not None:
            published = await publisher.finish(result.text)
            said = FILLER.strip() if publisher.interjected else ""
            result = result.model_copy(update={"published": published, "filler": said})
        return result

    async def _answer_within(
        self,
        generation: Awaitable[AgentTurnResult],
        answering: asyncio.Event,
        seconds: float | None,
    ) -> AgentTurnResult:
        """The model's result, unless it has written nothing for the caller `seconds` into the
        attempt: then a non-retryable failure, so the turn moves on to its fallback or an
        apology. A reply that is being written is never cut: only silence is bounded."""
        task = asyncio.ensure_future(generation)
        if seconds is None:
            return await task
        started = asyncio.ensure_future(answering.wait())
        try:
            await asyncio.wait({task, started}, timeout=seconds, return_when=FIRST_COMPLETED)
        finally:
            started.cancel()
        if not task.done() and not answering.is_set():
            task.cancel()
            raise ChatModelError(
                f"no answer within {seconds:g} s",
                retryable=False,
                provider=chat_model_name(self.model),
            )
        return await task


async def _filler_when_slow(publisher: ReplyPublisher, wait: float) -> None:
    await asyncio.sleep(wait)
    if publisher.interject(FILLER):
        activity.logger.info("the model is slow: a filler is spoken first")
