"""Activity: one LLM turn of the active agent (llm queue).

Renders the agent's prompt with the call's variables, then asks the configured chat model
(`BATON_CHAT_PROVIDER`: the offline policy by default, OpenAI or Azure OpenAI). Provider errors
arrive classified; non-retryable ones stop Temporal's retries at once. On a voice call the reply
is published to the call's gateway sentence by sentence as the model writes it, for the turn's
speech activity (started at the same moment) to speak.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.chat_models.base import ChatModel, ChatModelError, chat_model_from_env
from activities.media_channels import MediaChannels
from activities.payloads import GENERATE_AGENT_REPLY, AgentReplyRequest, CallSnapshot
from activities.reply_publisher import ReplyPublisher
from activities.snapshot_cache import cached_snapshot, shared_snapshot
from baton.contracts import QUERY_SNAPSHOT, AgentTurnInput, AgentTurnResult
from registries.errors import TemplateRenderError
from registries.prompting import render_system_prompt

T = TypeVar("T")
HEARTBEAT_SECONDS = 2.0


async def with_brief(request: AgentReplyRequest) -> AgentReplyRequest:
    """The request with the agent's brief, fetched once per snapshot hash from the call's
    own workflow (a query), so model requests in history stay small."""
    if request.agent is not None:
        return request
    snapshot = cached_snapshot(request.snapshot_hash)
    if snapshot is None:
        workflow_id = activity.info().workflow_id
        if workflow_id is None:
            raise ApplicationError("a model turn needs its call's snapshot", non_retryable=True)
        handle = activity.client().get_workflow_handle(workflow_id)
        fetched = await handle.query(QUERY_SNAPSHOT, result_type=CallSnapshot)
        if fetched is None or fetched.content_hash != request.snapshot_hash:
            raise ApplicationError(f"the call has no snapshot {request.snapshot_hash!r}")
        snapshot = shared_snapshot(fetched)
    return snapshot.brief_request(request)


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
        temperature=agent.model.temperature,
        max_tokens=agent.model.max_tokens,
        template_vars=request.template_vars,
    )


async def with_heartbeats(work: Awaitable[T]) -> T:
    """Await `work`, heartbeating meanwhile so a cancellation reaches this activity fast."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_SECONDS)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        task.cancel()  # no-op when finished; stops the provider call when we are cancelled


class AgentReplyActivity:
    """Holds the worker's chat model (from the environment unless one is given)."""

    def __init__(self, model: ChatModel | None = None) -> None:
        self.model = model or chat_model_from_env()
        self.channels = MediaChannels()

    @activity.defn(name=GENERATE_AGENT_REPLY)
    async def generate_agent_reply(self, request: AgentReplyRequest) -> AgentTurnResult:
        try:
            turn = build_turn_input(await with_brief(request))
        except TemplateRenderError as exc:
            raise ApplicationError(str(exc), type="TemplateError", non_retryable=True) from exc
        publisher = None
        if request.spoken is not None:
            publisher = ReplyPublisher(self.channels, request.call_id, request.spoken)
        try:
            result = await with_heartbeats(
                self.model.generate(turn, on_text_delta=publisher.add if publisher else None)
            )
        except BaseException as exc:
            if publisher is not None:
                publisher.abort()
            if isinstance(exc, ChatModelError):
                raise ApplicationError(
                    str(exc), type="ChatModelError", non_retryable=not exc.retryable
                ) from exc
            raise
        if publisher is not None:
            published = await publisher.finish(result.text)
            result = result.model_copy(update={"published": published})
        return result
