"""Chat turns and helpers shared by the OpenAI chat-model tests."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from activities.chat_models.base import (
    AgentTurnInput,
    ChatModelError,
)
from activities.chat_models.openai_chat import OpenAIChatModel
from contracts.agent_reply import AgentTurnResult, ChatMessage
from contracts.snapshot import ToolSchema

T = TypeVar("T")

BLOCK_CARD = ToolSchema(
    name="block_card",
    description="Block one of the caller's cards by its last four digits.",
    parameters={
        "type": "object",
        "properties": {"last4": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["last4", "reason"],
    },
)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def turn(**fields: Any) -> AgentTurnInput:
    values: dict[str, Any] = {
        "call_id": "call-1",
        "agent": "FraudAgent",
        "system_prompt": "You are the fraud desk.",
        "messages": [ChatMessage(role="user", content="block my card ending in 8832")],
        "tools": [BLOCK_CARD],
        "model": "gpt-4o-mini",
    }
    values.update(fields)
    return AgentTurnInput(**values)


async def generate_once(model: OpenAIChatModel, request: AgentTurnInput) -> AgentTurnResult:
    try:
        return await model.generate(request)
    finally:
        await model.aclose()


def expect_error(model: OpenAIChatModel, request: AgentTurnInput) -> ChatModelError:
    with pytest.raises(ChatModelError) as caught:
        run(generate_once(model, request))
    return caught.value
