"""OpenAI and Azure OpenAI chat completions behind the `ChatModel` protocol.

One request per turn: the agent's system prompt (with the running summary), the recent window
and the agent's tools. The SDK's own retries are off (see `activities.openai_clients`) because
Temporal's retry policy owns retries; every failure comes back as a classified
`ChatModelError`. With streaming on, text deltas reach an optional callback as they arrive so a
caller can heartbeat or start speech early, and tool-call fragments are reassembled by index.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any, TypeVar

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from activities.chat_models.base import (
    DEFAULT_TIMEOUT_SECONDS,
    AgentTurnInput,
    ChatModelError,
    TextDeltaCallback,
)
from activities.chat_models.openai_wire import (
    StreamAssembly,
    build_messages,
    build_tools,
    classify_exception,
    tool_call,
)
from activities.openai_clients import DEFAULT_AZURE_API_VERSION, azure_openai_client, openai_client
from contracts.agent_reply import AgentTurnResult, TokenUsage

T = TypeVar("T")


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
        self._client = client or openai_client(api_key=api_key, base_url=base_url, timeout=timeout)

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
        client = azure_openai_client(
            endpoint=endpoint,
            api_key=api_key,
            deployment=deployment,
            api_version=api_version,
            timeout=timeout,
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
        """One chat completion for the turn; `on_text_delta` overrides the constructor's, and
        asks for a streamed response even when the model was built without `stream`."""
        # A fallback names another model or Azure deployment behind the same endpoint.
        model = request.fallback_model or self.model or request.model
        params: dict[str, Any] = {
            "model": model,
            "messages": build_messages(request),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        tools = build_tools(request)
        if tools:  # OpenAI rejects an empty tools list
            params["tools"] = tools
        callback = on_text_delta or self.on_text_delta
        if self.stream or callback is not None:
            return await self._streamed(params, model, callback)
        completion = await self._sdk(self._client.chat.completions.create(**params))
        return self._from_completion(completion, model)

    async def _sdk(self, pending: Awaitable[T]) -> T:
        """Await an SDK call, turning its failures into classified `ChatModelError`s.

        Only SDK awaits go through here, so an exception raised by the caller's own
        `on_text_delta` callback reaches the caller unchanged.
        """
        try:
            return await pending
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
            calls.append(tool_call(call.id, function.name, function.arguments, index))
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
        stream = await self._sdk(
            self._client.chat.completions.create(
                **params, stream=True, stream_options={"include_usage": True}
            )
        )
        assembly = StreamAssembly(model=model)
        try:
            while (chunk := await self._sdk(anext(stream, None))) is not None:
                delta_text = assembly.add(chunk)
                if delta_text and callback is not None:
                    outcome = callback(delta_text)
                    if inspect.isawaitable(outcome):
                        await outcome
        finally:
            await stream.close()
        if assembly.empty:
            # Not an empty answer: a model that says nothing still ends its stream with a
            # finish reason. An endpoint that ignores `stream` and answers plain JSON (some
            # proxies do) reads as no events at all, and the caller would hear "didn't catch
            # that" for words that were heard; as a failure it gets the fallback or the truth.
            raise ChatModelError(
                "the streamed response carried no chunks (does the endpoint stream?)",
                retryable=False,
                provider=self.provider,
            )
        return assembly.result(self.provider)
