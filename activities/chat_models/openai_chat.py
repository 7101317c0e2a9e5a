"""OpenAI and Azure OpenAI chat completions behind the `ChatModel` protocol.

One request per turn: the agent's system prompt (with the running summary), the recent window
and the agent's tools. The SDK's own retries are off (`max_retries=0`) because Temporal's retry
policy owns retries; every failure comes back as a classified `ChatModelError`. With streaming
on, text deltas reach an optional callback as they arrive so a caller can heartbeat or start
speech early, and tool-call fragments are reassembled by index.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncAzureOpenAI, AsyncOpenAI
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

from activities.chat_models.base import (
    DEFAULT_AZURE_API_VERSION,
    DEFAULT_TIMEOUT_SECONDS,
    ChatModelError,
    error_for_status,
)
from baton.contracts import AgentTurnInput, AgentTurnResult, ChatMessage, TokenUsage, ToolCall

TextDeltaCallback = Callable[[str], Awaitable[None] | None]


class OpenAIChatModel:
    """Chat completions through `AsyncOpenAI` (or `AsyncAzureOpenAI`, see `azure`)."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        model: str | None = None,
        stream: bool = False,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_text_delta: TextDeltaCallback | None = None,
        client: AsyncOpenAI | None = None,
        provider: str = "openai",
    ) -> None:
        """`model` overrides the agent's model name; `client` replaces the built one."""
        self.provider = provider
        self.model = model
        self.stream = stream
        self.timeout = timeout
        self.on_text_delta = on_text_delta
        self.name = f"{provider}:{model}" if model else provider
        self._client = client or AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    @classmethod
    def azure(
        cls,
        *,
        endpoint: str,
        api_key: str,
        deployment: str,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        stream: bool = False,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_text_delta: TextDeltaCallback | None = None,
    ) -> OpenAIChatModel:
        """Azure OpenAI: requests go to `/openai/deployments/{deployment}` with an `api-key`."""
        client = AsyncAzureOpenAI(
            azure_endpoint=endpoint,
            azure_deployment=deployment,
            api_version=api_version,
            api_key=api_key,
            timeout=timeout,
            max_retries=0,
        )
        return cls(
            api_key=api_key,
            model=deployment,
            stream=stream,
            timeout=timeout,
            on_text_delta=on_text_delta,
            client=client,
            provider="azure",
        )

    async def aclose(self) -> None:
        """Close the HTTP connections (the model is unusable afterwards)."""
        await self._client.close()

    async def generate(
        self, request: AgentTurnInput, *, on_text_delta: TextDeltaCallback | None = None
    ) -> AgentTurnResult:
        """One chat completion for the turn; `on_text_delta` overrides the constructor's."""
        model = self.model or request.model
        params: dict[str, Any] = {
            "model": model,
            "messages": build_messages(request),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        tools = build_tools(request)
        if tools:  # OpenAI rejects an empty tools list
            params["tools"] = tools
        try:
            if self.stream:
                callback = on_text_delta or self.on_text_delta
                return await self._streamed(params, model, callback)
            completion = await self._client.chat.completions.create(**params)
            return self._from_completion(completion, model)
        except ChatModelError:
            raise
        except Exception as exc:
            raise classify_exception(exc, provider=self.provider) from exc

    def _from_completion(self, completion: ChatCompletion, model: str) -> AgentTurnResult:
        if not completion.choices:
            raise ChatModelError(
                "the response had no choices", retryable=True, provider=self.provider
            )
        choice = completion.choices[0]
        calls = []
        for index, call in enumerate(choice.message.tool_calls or []):
            function = getattr(call, "function", None)  # custom (non-function) tools have none
            if function is None:
                continue
            calls.append(_tool_call(call.id, function.name, function.arguments, index))
        usage = completion.usage
        return AgentTurnResult(
            text=choice.message.content or "",
            tool_calls=calls,
            usage=TokenUsage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
            ),
            provider=self.provider,
            model=completion.model or model,
            finish_reason=choice.finish_reason or "",
        )

    async def _streamed(
        self, params: dict[str, Any], model: str, callback: TextDeltaCallback | None
    ) -> AgentTurnResult:
        stream = await self._client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        assembly = _StreamAssembly(model=model)
        try:
            async for chunk in stream:
                delta_text = assembly.add(chunk)
                if delta_text and callback is not None:
                    outcome = callback(delta_text)
                    if inspect.isawaitable(outcome):
                        await outcome
        finally:
            await stream.close()
        return assembly.result(self.provider)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamAssembly:
    """Text, tool calls (by index), usage and finish reason gathered from stream chunks."""

    model: str
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str = ""

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk in; returns its text delta ("" when none)."""
        if chunk.model:
            self.model = chunk.model
        if chunk.usage is not None:  # the include_usage chunk comes last, with no choices
            self.usage = TokenUsage(
                prompt_tokens=chunk.usage.prompt_tokens or 0,
                completion_tokens=chunk.usage.completion_tokens or 0,
            )
        delta_text = ""
        for choice in chunk.choices[:1]:
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta.content:
                delta_text = delta.content
                self.text.append(delta_text)
            for fragment in delta.tool_calls or []:
                partial = self.calls.setdefault(fragment.index, _PartialCall())
                partial.id = partial.id or (fragment.id or "")
                function = fragment.function
                if function is None:
                    continue
                # Some servers repeat the full name in every fragment; others split it.
                if function.name and function.name != partial.name:
                    partial.name += function.name
                if function.arguments:
                    partial.arguments.append(function.arguments)
        return delta_text

    def result(self, provider: str) -> AgentTurnResult:
        calls = [
            _tool_call(partial.id, partial.name, "".join(partial.arguments), index)
            for index, partial in sorted(self.calls.items())
        ]
        return AgentTurnResult(
            text="".join(self.text),
            tool_calls=calls,
            usage=self.usage,
            provider=provider,
            model=self.model,
            finish_reason=self.finish_reason,
        )


def _tool_call(call_id: str | None, name: str, arguments: str | None, index: int) -> ToolCall:
    # Arguments stay raw even when they are not JSON: the workflow reports malformed calls
    # back to the model. Only an empty string becomes "{}", which is what it means.
    raw = arguments if arguments and arguments.strip() else "{}"
    return ToolCall(id=call_id or f"call-{index}", name=name, arguments=raw)


def build_messages(request: AgentTurnInput) -> list[ChatCompletionMessageParam]:
    """System prompt (plus the running summary), then the window in OpenAI's format."""
    system = request.system_prompt
    if request.summary:
        system = f"{system}\n\nConversation so far: {request.summary}"
    messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": system}]
    issued: set[str] = set()
    for message in request.messages:
        converted = _message(message, issued)
        if converted is not None:
            messages.append(converted)
    return messages


def _message(message: ChatMessage, issued: set[str]) -> ChatCompletionMessageParam | None:
    content = message.content or ""
    if message.role == "system":
        return {"role": "system", "content": content}
    if message.role == "user":
        return {"role": "user", "content": content}
    if message.role == "assistant":
        if not message.tool_calls:
            return {"role": "assistant", "content": content}
        issued.update(call.id for call in message.tool_calls)
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    # A tool result whose call is not in the window would make the API reject the request
    # with a non-retryable 400, so such an orphan is left out.
    if message.tool_call_id is None or message.tool_call_id not in issued:
        return None
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}


def build_tools(request: AgentTurnInput) -> list[ChatCompletionToolParam]:
    """The agent's tools as chat-completions `function` tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters or {"type": "object", "properties": {}},
            },
        }
        for tool in request.tools
    ]


def classify_exception(exc: BaseException, *, provider: str) -> ChatModelError:
    """Map an SDK or transport exception to a `ChatModelError` with the right retry flag."""
    if isinstance(exc, openai.APITimeoutError):
        return ChatModelError("the request timed out", retryable=True, provider=provider)
    if isinstance(exc, openai.APIConnectionError):
        return ChatModelError(f"connection failed: {exc}", retryable=True, provider=provider)
    if isinstance(exc, openai.APIStatusError):
        return error_for_status(exc.status_code, _error_detail(exc), provider=provider)
    if isinstance(exc, openai.APIResponseValidationError):
        # The server answered with something that is not a completion; may be transient.
        return ChatModelError(f"unexpected response: {exc}", retryable=True, provider=provider)
    if isinstance(exc, TimeoutError | ConnectionError) or _is_transport_error(exc):
        # A stream cut or stalled mid-way raises the HTTP library's own errors, unwrapped.
        return ChatModelError(
            f"transport error: {type(exc).__name__}: {exc}", retryable=True, provider=provider
        )
    # Anything else (bad configuration, a bug) will fail again the same way.
    return ChatModelError(f"{type(exc).__name__}: {exc}", retryable=False, provider=provider)


def _is_transport_error(exc: BaseException) -> bool:
    module = type(exc).__module__.split(".")[0]
    return module in {"httpx", "httpx2", "httpcore", "httpcore2", "h11"}


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(exc.message)
