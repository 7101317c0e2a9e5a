"""Activity `generate_agent_reply` (llm queue): one model turn of the active agent."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from contracts._base import Payload
from contracts.registry import AgentConfig
from contracts.routes import RouteChange
from contracts.snapshot import CallSnapshot, HandoffRoute, ToolSchema

GENERATE_AGENT_REPLY = "generate_agent_reply"


class ToolCall(Payload):
    """A tool call as the model emitted it; `arguments` is raw text and may be malformed."""

    id: str
    name: str
    arguments: str = "{}"


class ChatMessage(Payload):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    #: For role "tool": the call this message answers.
    tool_call_id: str | None = None
    name: str | None = None


class SpokenReply(Payload):
    """Where a voice call's model turn publishes its text while writing it: the gateway holding
    the call, under an id the turn's speech activity follows."""

    gateway_address: str
    reply_id: str


class AgentReplyRequest(Payload):
    """One model turn. Current calls name the agent and the pinned snapshot by hash (the LLM
    worker loads the snapshot once per hash), which keeps each turn's history small; calls
    recorded before that send the agent's whole brief (`agent`, `tools`, ...) instead."""

    call_id: str
    agent_name: str = ""
    snapshot_hash: str = ""
    #: Where the snapshot comes from, so a worker that has not seen the hash can rebuild it.
    scenario: str = ""
    registry: str | None = None
    agent: AgentConfig | None = None
    template_vars: dict[str, Any] = Field(default_factory=dict)
    system_vars: dict[str, Any] = Field(default_factory=dict)
    handoff_instructions: str = ""
    tools: list[ToolSchema] = Field(default_factory=list)
    routes: list[HandoffRoute] = Field(default_factory=list)
    summary: str = ""
    messages: list[ChatMessage] = Field(default_factory=list)
    spoken: SpokenReply | None = None
    #: The call's live route changes (Update `change_routes`): the agent's routes, handoff
    #: tool and instructions are rebuilt with them applied.
    route_changes: list[RouteChange] = Field(default_factory=list)
    #: Seconds with nothing speakable before a voice turn's filler (None: the worker's default).
    filler_after_seconds: float | None = None
    #: Answer with this model (the agent's fallback) instead of the agent's own.
    fallback_model: str = ""
    #: An attempt with nothing written for the caller this long fails, not retried (None: no
    #: bound); a reply already being written is never cut.
    max_silence_seconds: float | None = None


def with_agent_brief(request: AgentReplyRequest, snapshot: CallSnapshot) -> AgentReplyRequest:
    """`request` with its agent's brief filled in from `snapshot`."""
    brief = snapshot.agents[request.agent_name]
    return request.model_copy(
        update={
            "agent": brief.config,
            "template_vars": brief.template_vars,
            "handoff_instructions": brief.handoff_instructions,
            "tools": brief.tools,
            "routes": brief.routes,
        }
    )


class TokenUsage(Payload):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class AgentTurnResult(Payload):
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage = TokenUsage()
    provider: str = ""
    model: str = ""
    finish_reason: str = ""
    #: The text went to the call's gateway as it was written, for its speech to follow.
    published: bool = False
    #: The filler the gateway got ahead of the reply because the model was slow ("" if none).
    filler: str = ""
