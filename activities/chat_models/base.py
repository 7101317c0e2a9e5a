"""The chat-model seam: one async call that turns an `AgentTurnInput` into an `AgentTurnResult`.

Providers (the embedded offline policy, OpenAI, Azure OpenAI) live behind the `ChatModel`
protocol so the LLM activity never knows which one answers. Provider failures surface as
`ChatModelError` with a `retryable` flag: Temporal's retry policy owns retries, and the activity
marks non-retryable errors so a bad request or a wrong key fails fast instead of looping.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from contracts.agent_reply import AgentTurnResult, ChatMessage
from contracts.snapshot import HandoffRoute, ToolSchema

if TYPE_CHECKING:
    from activities.chat_models.openai_chat import OpenAIChatModel

PROVIDERS = ("offline", "openai", "azure")
DEFAULT_AZURE_API_VERSION = "2024-10-21"
DEFAULT_TIMEOUT_SECONDS = 30.0
#: Client errors that may succeed on a later attempt: timeout, conflict, rate limit.
RETRYABLE_STATUS = frozenset({408, 409, 429})


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


class ChatModelError(Exception):
    """A provider call failed; `retryable` says whether trying again can help."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status_code: int | None = None,
        provider: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status_code = status_code
        self.provider = provider

    def __str__(self) -> str:
        kind = "retryable" if self.retryable else "not retryable"
        where = f"{self.provider}: " if self.provider else ""
        return f"{where}{self.message} ({kind})"


def chat_model_name(model: ChatModel) -> str:
    """The model's `name` attribute, else its class name."""
    name = getattr(model, "name", None)
    return name if isinstance(name, str) and name else type(model).__name__


def is_retryable_status(status_code: int) -> bool:
    """HTTP 408/409/429 and every 5xx are worth retrying; other statuses are not.

    A 400/401/403/404/422 means the request or the configuration is wrong, and sending the
    same request again gives the same answer.
    """
    return status_code in RETRYABLE_STATUS or status_code >= 500


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


def env_value(env: Mapping[str, str], *names: str) -> str | None:
    """The first non-blank value among `names`."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from `name`, or `default`; ValueError says what is wrong."""
    raw = env_value(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:  # also rejects nan
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def _timeout(env: Mapping[str, str]) -> float:
    try:
        return env_seconds(env, "BATON_OPENAI_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)
    except ValueError as error:
        raise ChatModelError(str(error), retryable=False) from error


def _missing(provider: str, names: list[str]) -> ChatModelError:
    listed = ", ".join(names)
    return ChatModelError(
        f"BATON_CHAT_PROVIDER={provider} needs {listed}. Set them in the worker's environment, "
        "or unset BATON_CHAT_PROVIDER to use the embedded offline policy.",
        retryable=False,
        provider=provider,
    )


def chat_model_from_env(env: Mapping[str, str] = os.environ) -> ChatModel:
    """The chat model the environment asks for.

    `BATON_CHAT_PROVIDER`: `offline` (default, no network), `openai` or `azure`.

    * openai: `BATON_OPENAI_API_KEY` (or `OPENAI_API_KEY`), optional `BATON_OPENAI_BASE_URL`
      (or `OPENAI_BASE_URL`, e.g. a local OpenAI-compatible server) and `BATON_OPENAI_MODEL`
      (overrides each agent's model name).
    * azure: `AZURE_OPENAI_ENDPOINT`, `AZURE_OPENAI_API_KEY`, `AZURE_OPENAI_DEPLOYMENT` and
      optional `AZURE_OPENAI_API_VERSION` (default 2024-10-21).
    * both: `BATON_OPENAI_STREAM=1` streams responses; `BATON_OPENAI_TIMEOUT` (seconds, 30).

    Raises `ChatModelError(retryable=False)` naming what is missing or wrong.
    """
    provider = (env.get("BATON_CHAT_PROVIDER", "") or "offline").strip().lower()
    if provider == "offline":
        from activities.chat_models.offline_policy import OfflineChatModel

        return OfflineChatModel()
    if provider == "openai":
        return _openai_from_env(env)
    if provider == "azure":
        return _azure_from_env(env)
    raise ChatModelError(
        f"BATON_CHAT_PROVIDER must be one of {', '.join(PROVIDERS)}; got {provider!r}",
        retryable=False,
    )


def _openai_from_env(env: Mapping[str, str]) -> OpenAIChatModel:
    from activities.chat_models.openai_chat import OpenAIChatModel

    api_key = env_value(env, "BATON_OPENAI_API_KEY", "OPENAI_API_KEY")
    if api_key is None:
        # Local OpenAI-compatible servers usually ignore the key, but the SDK still sends one.
        raise _missing(
            "openai",
            [
                "BATON_OPENAI_API_KEY (or OPENAI_API_KEY; any value for a "
                "local server that ignores keys)"
            ],
        )
    return OpenAIChatModel(
        api_key=api_key,
        base_url=env_value(env, "BATON_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        model=env_value(env, "BATON_OPENAI_MODEL"),
        stream=_flag(env, "BATON_OPENAI_STREAM"),
        timeout=_timeout(env),
    )


def _azure_from_env(env: Mapping[str, str]) -> OpenAIChatModel:
    from activities.chat_models.openai_chat import OpenAIChatModel

    wanted = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_DEPLOYMENT")
    values = {name: env_value(env, name) for name in wanted}
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise _missing("azure", missing)
    return OpenAIChatModel.azure(
        endpoint=values["AZURE_OPENAI_ENDPOINT"] or "",
        api_key=values["AZURE_OPENAI_API_KEY"] or "",
        deployment=values["AZURE_OPENAI_DEPLOYMENT"] or "",
        api_version=env_value(env, "AZURE_OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION,
        stream=_flag(env, "BATON_OPENAI_STREAM"),
        timeout=_timeout(env),
    )
