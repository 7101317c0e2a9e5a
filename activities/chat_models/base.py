"""The chat-model seam: one async call that turns an `AgentTurnInput` into an `AgentTurnResult`.

Providers (the embedded offline policy, OpenAI, Azure OpenAI) live behind the `ChatModel`
protocol so the LLM activity never knows which one answers. Provider failures surface as
`ChatModelError`, a `ProviderError` with a `retryable` flag: Temporal's retry policy owns
retries, and the activity marks non-retryable errors so a bad request or a wrong key fails fast
instead of looping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from activities.provider_errors import ProviderError, is_retryable_status
from contracts.agent_reply import AgentTurnResult, ChatMessage
from contracts.snapshot import HandoffRoute, ToolSchema

DEFAULT_TIMEOUT_SECONDS = 30.0


class AgentTurnInput(BaseModel):
    """One LLM turn of the active agent as every provider receives it: rendered prompt,
    recent window and tools. It never leaves the LLM worker."""

    model_config = ConfigDict(extra="ignore", frozen=True)

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
    #: The agent's fallback model for this turn: wins over any model the provider is set to.
    fallback_model: str = ""
    temperature: float = 0.3
    max_tokens: int = 400
    #: Template variables of the agent (company_name, ...), for offline answers.
    template_vars: dict[str, Any] = Field(default_factory=dict)


TextDeltaCallback = Callable[[str], Awaitable[None] | None]


@runtime_checkable
class ChatModel(Protocol):
    """Anything that can play one LLM turn of an agent.

    Implementations may also carry a `name` attribute (e.g. "offline", "openai:gpt-4o-mini")
    for logs; read it with `chat_model_name`, which copes with models that have none.
    """

    async def generate(
        self, request: AgentTurnInput, *, on_text_delta: TextDeltaCallback | None = None
    ) -> AgentTurnResult:
        """Answer the turn: text for the caller and/or tool calls for the workflow to run.

        A model that can stream passes the text to `on_text_delta` as it is written, so speech
        can start before the reply is finished; one that cannot may ignore it.
        """
        ...


class ChatModelError(ProviderError):
    """A `ProviderError` whose text names the provider and whether a retry can help.

    The chat models raise it, and so do the OpenAI audio endpoints, whose SDK failures are
    classified the same way (`openai_wire.classify_exception`). The text becomes the failed
    attempt's message in the worker's log and the workflow's history, where nobody has the
    exception's attributes at hand.
    """

    def __str__(self) -> str:
        kind = "retryable" if self.retryable else "not retryable"
        where = f"{self.provider}: " if self.provider else ""
        return f"{where}{self.message} ({kind})"


def chat_model_name(model: ChatModel) -> str:
    """The model's `name` attribute, else its class name."""
    name = getattr(model, "name", None)
    return name if isinstance(name, str) and name else type(model).__name__


def error_for_status(status_code: int, detail: str, *, provider: str = "") -> ChatModelError:
    """A `ChatModelError` for an HTTP error response, classified by status code."""
    hint = _STATUS_HINTS.get(status_code, "")
    message = f"HTTP {status_code}: {detail.strip() or 'no detail'}{hint}"
    return ChatModelError(
        message,
        retryable=is_retryable_status(status_code),
        status_code=status_code,
        provider=provider,
    )


_STATUS_HINTS = {
    401: "; check the API key",
    403: "; the key may lack access to this model or deployment",
    404: "; check the base URL, model name or Azure deployment name",
}
