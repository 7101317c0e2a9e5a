"""A model provider that fails or hangs, in real calls: the `openai` client against a scripted
OpenAI-compatible server on loopback returning 500s or never answering.

The caller hears that the trouble is ours (never "didn't catch that"), the fallback model
answers when there is one and the record says so, a hanging model costs at most the scenario's
silence bound, and outage turns in a row end with a person and a ticket.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio
import yaml

from activities.chat_models.openai_chat import OpenAIChatModel
from registries.loading import SHIPPED_REGISTRY
from tests.fakes.openai_server import FakeOpenAIServer, Reply, completion, error, stall
from tests.workflow.conftest import Stack, items_of, started
from workflows.outages import TROUBLE_APOLOGY

#: Temporal tries a failing model call three times (workflows.policies.LLM).
ATTEMPTS = 3
#: Short enough for a test, long enough for three quick failing attempts to fit.
SILENCE_BOUND = 3.0


def failing(status: int = 500) -> list[Reply]:
    """One turn's worth of failed attempts."""
    return [error(status, "the model is overloaded", kind="server_error")] * ATTEMPTS


@pytest_asyncio.fixture
async def llm(stack: Stack) -> AsyncIterator[FakeOpenAIServer]:
    """The llm queue served by an OpenAI client of a scripted server; the client's own timeout
    is long, so only the workflow's silence bound can end a hanging request."""
    await stack.stop_workers()
    with FakeOpenAIServer([], max_requests=50, lifetime=120) as server:
        model = OpenAIChatModel(api_key="test", base_url=server.base_url, timeout=60.0)
        await stack.start_workers(model)
        yield server
        await stack.stop_workers()
        await model.aclose()


def registry_copy(
    root: Path,
    edit: Callable[[dict[str, Any], dict[str, Any]], None],
    silence_bound: float | None = SILENCE_BOUND,
) -> str:
    """The shipped registry with the banking scenario and the Concierge edited by `edit`, and
    the scenario's silence bound set to `silence_bound` (None: the default)."""
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    scenario_file = registry / "scenariostore" / "banking" / "scenario.yaml"
    agent_file = registry / "agentstore" / "concierge" / "agent.yaml"
    scenario, agent = (
        yaml.safe_load(scenario_file.read_text()),
        yaml.safe_load(agent_file.read_text()),
    )
    if silence_bound is not None:
        scenario["max_silence_seconds"] = silence_bound
    edit(scenario, agent)
    scenario_file.write_text(yaml.safe_dump(scenario))
    agent_file.write_text(yaml.safe_dump(agent))
    return str(registry)


def no_change(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
    pass


async def test_a_failing_model_gets_the_honest_apology(stack: Stack, llm: FakeOpenAIServer) -> None:
    llm.add(*failing())
    session = stack.call()
    await started(session)
    reply = await session.say("What's my balance?")
    assert reply.text == TROUBLE_APOLOGY and reply.status == "active"
    assert "catch" not in reply.text
    said = [t["text"] for t in items_of(await session.transcript(), "agent_turn")]
    assert said == [TROUBLE_APOLOGY]
    assert len(llm.requests) == ATTEMPTS
    await session.hang_up()


async def test_the_fallback_model_answers_and_the_record_says_which(
    stack: Stack, llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    def fallback(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
        agent["model"] = {"name": "primary-model", "fallback": "backup-model"}

    llm.add(*failing(), completion("Your balance is ready.", model="backup-model"))
    # The default bound (8 s, half of it the primary's) leaves room for all three attempts.
    session = stack.call(registry=registry_copy(tmp_path, fallback, silence_bound=None))
    await started(session)
    reply = await session.say("What's my balance?")
    assert reply.text == "Your balance is ready."
    asked = [r.body["model"] for r in llm.requests]
    assert asked == ["primary-model"] * ATTEMPTS + ["backup-model"]
    (item,) = items_of(await session.transcript(), "model_fallback")
    assert item["agent"] == "Concierge" and item["fallback"] == "backup-model"
    assert item["answered_by"] == "backup-model" and "HTTP 500" in item["reason"]
    await session.hang_up()


async def test_a_hanging_model_costs_at_most_the_silence_bound(
    stack: Stack, llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm.add(stall(60.0))
    session = stack.call(registry=registry_copy(tmp_path, no_change))
    await started(session)
    reply = await session.say("What's my balance?")
    # The model never answered: the bound cut it off and the caller was told the truth.
    assert reply.text == TROUBLE_APOLOGY
    assert len(llm.requests) == 1  # cancelled inside its first attempt, not retried
    await session.hang_up()


async def test_a_hanging_model_then_the_fallback_within_the_same_bound(
    stack: Stack, llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    def fallback(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
        scenario["model_fallback"] = "backup-model"

    llm.add(stall(60.0), completion("Here I am.", model="backup-model"))
    session = stack.call(registry=registry_copy(tmp_path, fallback))
    await started(session)
    reply = await session.say("Hello?")
    assert reply.text == "Here I am."
    (item,) = items_of(await session.transcript(), "model_fallback")
    assert "no answer within" in item["reason"] and item["answered_by"] == "backup-model"
    await session.hang_up()


async def test_outage_turns_in_a_row_escalate_with_a_ticket(
    stack: Stack, llm: FakeOpenAIServer
) -> None:
    llm.add(*failing(), *failing(503))
    session = stack.call()
    await started(session)
    first = await session.say("hi")
    assert first.text == TROUBLE_APOLOGY and first.status == "active"
    second = await session.say("hello?")
    assert second.status == "escalated"
    ticket = (await session.state())["ticket"]
    assert "failed 2 times" in ticket["reason"] and "HTTP 503" in ticket["reason"]


async def test_the_offline_fallback_hands_the_caller_to_a_person(
    stack: Stack, llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    def offline(scenario: dict[str, Any], agent: dict[str, Any]) -> None:
        scenario["model_fallback"] = "offline"

    llm.add(*failing())
    session = stack.call(registry=registry_copy(tmp_path, offline))
    await started(session)
    reply = await session.say("What's my balance?")
    assert reply.status == "escalated"
    state = await session.state()
    assert "offline fallback" in state["ticket"]["reason"]
    (item,) = items_of(state["transcript"], "model_fallback")
    assert item["fallback"] == "offline" and item["answered_by"] == ""
