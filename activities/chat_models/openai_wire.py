"""Chat-completions wire format: requests built from an `AgentTurnInput`, results read back.

Kept apart from the client so it can be tested without HTTP: the message and tool mapping,
stream reassembly (text deltas, tool-call fragments by index, the final usage chunk) and the
mapping of SDK and transport exceptions to classified `ChatModelError`s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

from activities.chat_models.base import AgentTurnInput, ChatModelError, error_for_status
from contracts.agent_reply import AgentTurnResult, ChatMessage, TokenUsage, ToolCall


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembly:
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

    @property
    def empty(self) -> bool:
        """Nothing came: no text, no tool call, no finish reason."""
        return not (self.text or self.calls or self.finish_reason)

    def result(self, provider: str) -> AgentTurnResult:
        """The assembled turn, once the stream has ended."""
        calls = [
            tool_call(partial.id, partial.name, "".join(partial.arguments), index)
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


def tool_call(call_id: str | None, name: str, arguments: str | None, index: int) -> ToolCall:
    """A `ToolCall` as the model sent it (an id is made up from `index` if it sent none)."""
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
