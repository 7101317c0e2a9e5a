"""Workflow tests: real dev server, real workers in this process, real activities."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.client import Client

from activities.chat_models.base import ChatModel
from activities.chat_models.scripted import ScriptedChatModel
from baton.call_client import CallSession
from contracts.calls import CallInput
from workers.worker import run_workers

ALL_QUEUES = ["calls", "llm", "speech", "tools"]
PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}


class Stack:
    """Workers serving every queue for one test, and a way to place calls on them."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def start_workers(
        self, chat_model: ChatModel | None = None, queues: list[str] | None = None
    ) -> None:
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(
            run_workers(self.client, queues or ALL_QUEUES, self._stop, chat_model=chat_model)
        )

    async def stop_workers(self) -> None:
        if self._stop is not None and self._task is not None:
            self._stop.set()
            await self._task
            self._stop = self._task = None

    def call(self, scenario: str = "banking", **fields: Any) -> CallSession:
        fields.setdefault("caller_profile", PROFILE)
        call = CallInput(call_id=f"t-{uuid.uuid4().hex[:10]}", scenario=scenario, **fields)
        return CallSession(self.client, call)


@pytest_asyncio.fixture
async def stack(temporal_client: Client) -> AsyncIterator[Stack]:
    stack = Stack(temporal_client)
    await stack.start_workers()
    try:
        yield stack
    finally:
        await stack.stop_workers()


async def started(session: CallSession) -> list[dict[str, Any]]:
    """Start the call and wait for the opening greeting."""
    await session.start()
    return await session.wait_for(lambda items: any(i["type"] == "greeting" for i in items))


def items_of(transcript: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [item for item in transcript if item["type"] == kind]


async def scripted_stack(temporal_client: Client) -> tuple[Stack, ScriptedChatModel]:
    """Workers for every queue on a model each test scripts per call (`model.queue`)."""
    stack, model = Stack(temporal_client), ScriptedChatModel()
    await stack.start_workers(chat_model=model)
    return stack, model


async def speech_in_flight(session: CallSession, played: set[str]) -> None:
    """Wait until a new speech activity (not one in `played`) is playing to the caller."""
    for _ in range(400):
        described = await session.handle.describe()
        for pending in described.raw_description.pending_activities:
            if pending.activity_type.name == "synthesize_speech" and (
                pending.activity_id not in played
            ):
                played.add(pending.activity_id)
                return
        await asyncio.sleep(0.025)
    raise TimeoutError("speech never started")
