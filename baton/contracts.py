"""Wire contracts shared by every Baton process: names, queues and payload models.

The gateway, the CLI and the workers agree on these and nothing else, so none of them imports
workflow code. Payload models are pydantic; Temporal carries them with the pydantic data
converter (`baton.temporal_client`). Every model has defaults for new fields so old histories
keep decoding.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# --- task queues: each scales as its own worker fleet ---------------------------------------

CALLS_QUEUE = "baton-calls"
LLM_QUEUE = "baton-llm"
SPEECH_QUEUE = "baton-speech"
TOOLS_QUEUE = "baton-tools"
QUEUES = {"calls": CALLS_QUEUE, "llm": LLM_QUEUE, "speech": SPEECH_QUEUE, "tools": TOOLS_QUEUE}

NAMESPACE = "default"
WORKFLOW_NAME = "CallSessionWorkflow"

# --- messages -------------------------------------------------------------------------------

UPDATE_SUBMIT_UTTERANCE = "submit_utterance"
SIGNAL_UTTERANCE = "utterance"
SIGNAL_BARGE_IN = "barge_in"
SIGNAL_DTMF = "dtmf"
SIGNAL_HANG_UP = "hang_up"
SIGNAL_SUPERVISOR_TRANSFER = "supervisor_transfer"
QUERY_STATE = "state"
QUERY_TRANSCRIPT = "transcript"
QUERY_HANDOFF_HISTORY = "handoff_history"
QUERY_TOKEN_USAGE = "token_usage"
QUERY_SNAPSHOT = "snapshot"

# --- search attributes (registered by `baton server`) -----------------------------------------

SEARCH_ATTRIBUTES: dict[str, str] = {
    "BatonScenario": "Keyword",
    "BatonActiveAgent": "Keyword",
    "BatonStatus": "Keyword",
    "BatonVisitedCount": "Int",
}

MAX_UTTERANCE_CHARS = 4000
CallStatus = Literal["active", "completed", "escalated", "hung_up", "failed"]
Channel = Literal["text", "browser", "twilio", "acs"]


def workflow_id_for(call_id: str) -> str:
    """The workflow id of a call: starting twice for one call id reaches the same workflow."""
    return f"call-{call_id}"


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CallInput(_Payload):
    """What starts a call."""

    call_id: str = Field(min_length=1, max_length=200)
    scenario: str = "banking"
    caller_profile: dict[str, Any] = Field(default_factory=dict)
    channel: Channel = "text"
    #: gRPC address of the media gateway serving this call; None for text calls.
    gateway_address: str | None = None
    #: Registry folder the workers load the scenario from; None means the worker's default.
    registry: str | None = None
    #: Continue-as-new once the run's history holds this many events.
    max_history_events: int = Field(default=4000, ge=50)


class CallSessionStart(_Payload):
    """The workflow's start argument as clients send it (the workflow adds carried state)."""

    call: CallInput


class Utterance(_Payload):
    """One thing the caller said (text) or an audio segment to transcribe first."""

    utterance_id: str = Field(min_length=1, max_length=200)
    text: str | None = Field(default=None, max_length=MAX_UTTERANCE_CHARS)
    #: Gateway reference of a recorded caller segment, when the gateway did not transcribe.
    segment_ref: str | None = None
    #: Recognizer confidence when the text came from speech.
    confidence: float | None = None


class BargeIn(_Payload):
    """The caller spoke over the agent; the gateway already stopped playback."""

    utterance_id: str | None = None
    #: Characters of the interrupted reply the caller heard before playback stopped.
    heard_chars: int | None = None
    played_ms: int | None = None
    #: Those characters, for a reply the workflow did not yet have whole when it was cut.
    heard_text: str | None = None


class Dtmf(_Payload):
    digits: str = Field(pattern=r"^[0-9*#A-D]{1,32}$")


class SupervisorTransfer(_Payload):
    """A supervisor (code, not the LLM) moves the call to another agent."""

    target_agent: str = Field(min_length=1)
    reason: str = ""
    supervisor: str = "supervisor"


class HangUp(_Payload):
    reason: str = "caller hung up"


class SpokenLine(_Payload):
    agent: str
    text: str
    kind: Literal["greeting", "reply"] = "reply"


class TurnReply(_Payload):
    """What the caller hears back for one utterance (the Update's result)."""

    utterance_id: str
    agent: str
    text: str
    #: Greetings and replies in the order they were spoken this turn.
    spoken: list[SpokenLine] = Field(default_factory=list)
    handoffs: list[str] = Field(default_factory=list)
    status: CallStatus = "active"
    duplicate: bool = False


# --- LLM activity ---------------------------------------------------------------------------


class ToolCall(_Payload):
    """A tool call as the model emitted it; `arguments` is raw text and may be malformed."""

    id: str
    name: str
    arguments: str = "{}"


class ChatMessage(_Payload):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    #: For role "tool": the call this message answers.
    tool_call_id: str | None = None
    name: str | None = None


class ToolSchema(_Payload):
    """A tool offered to the model (the chat-completions `function` shape)."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=dict)


class HandoffRoute(_Payload):
    """An outbound route of the active agent, for policies that reason about routing."""

    target_agent: str
    condition: str = ""
    target_description: str = ""


class AgentTurnInput(_Payload):
    """One LLM turn of the active agent: rendered prompt, recent window and tools."""

    call_id: str
    agent: str
    agent_description: str = ""
    system_prompt: str
    #: Older conversation, condensed; the window below holds the recent messages verbatim.
    summary: str = ""
    messages: list[ChatMessage]
    tools: list[ToolSchema] = Field(default_factory=list)
    routes: list[HandoffRoute] = Field(default_factory=list)
    model: str = "gpt-4o-mini"
    temperature: float = 0.3
    max_tokens: int = 400
    #: Template variables of the agent (company_name, ...), for offline answers.
    template_vars: dict[str, Any] = Field(default_factory=dict)


class TokenUsage(_Payload):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class AgentTurnResult(_Payload):
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage = TokenUsage()
    provider: str = ""
    model: str = ""
    finish_reason: str = ""
    #: The text went to the call's gateway as it was written, for its speech to follow.
    published: bool = False
