"""Calls driven by the `openai` SDK against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator

import pytest_asyncio

from activities.chat_models.openai_chat import OpenAIChatModel
from activities.escalation import open_tickets
from registries.demo_data import default_database_path
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    completion,
    error,
    stall,
    stream,
    tool_call,
)
from tests.workflow.conftest import Stack, items_of, started
from workflows.outages import TROUBLE_APOLOGY

HANDOFF_TO_FRAUD = completion(
    None,
    tool_calls=[
        tool_call(
            "handoff_to_agent", {"target_agent": "FraudAgent", "reason": "card used abroad"}, "c1"
        )
    ],
)


@pytest_asyncio.fixture
async def llm(stack: Stack) -> AsyncIterator[FakeOpenAIServer]:
    """A scripted server, with the stack's llm queue served by an OpenAI client of it."""
    await stack.stop_workers()
    with FakeOpenAIServer([], max_requests=50, lifetime=120) as server:
        await stack.start_workers(
            OpenAIChatModel(api_key="test", base_url=server.base_url, timeout=2.0)
        )
        yield server


async def test_handoff_and_tool_call_through_the_openai_client(
    stack: Stack, llm: FakeOpenAIServer
) -> None:
    llm.add(
        HANDOFF_TO_FRAUD,
        completion(
            None, tool_calls=[tool_call("block_card", {"last4": "8832", "reason": "stolen"}, "c2")]
        ),
        completion("Done. The card ending in 8832 is blocked.", usage=(300, 12)),
    )
    session = stack.call()
    await started(session)
    first = await session.say("Someone used my card abroad")
    assert first.agent == "FraudAgent" and first.spoken[0].kind == "greeting"
    second = await session.say("Block the card ending 8832")
    assert second.text == "Done. The card ending in 8832 is blocked."
    with sqlite3.connect(default_database_path()) as db:
        assert db.execute("SELECT status FROM cards WHERE last4='8832'").fetchone()[0] == "blocked"

    concierge_request = llm.requests[0].body
    system = concierge_request["messages"][0]
    assert system["role"] == "system" and "Harbor Private Bank" in system["content"]
    assert 'handoff_to_agent(target_agent="FraudAgent"' in system["content"]
    handoff_tool = next(
        t for t in concierge_request["tools"] if t["function"]["name"] == "handoff_to_agent"
    )
    assert (
        "ComplianceDesk"
        not in handoff_tool["function"]["parameters"]["properties"]["target_agent"]["enum"]
    )
    final_request = llm.requests[2].body["messages"]
    assert final_request[-1]["role"] == "tool" and "blocked" in final_request[-1]["content"]
    assert final_request[-2]["tool_calls"][0]["function"]["name"] == "block_card"
    usage = (await session.state())["usage"]
    assert usage["FraudAgent"]["prompt_tokens"] == 12 + 300
    await session.hang_up()


async def test_malformed_tool_call_is_refused_and_the_call_goes_on(
    stack: Stack, llm: FakeOpenAIServer
) -> None:
    llm.add(
        completion(None, tool_calls=[tool_call("get_account_balance", "{not json", "c1")]),
        completion(None, tool_calls=[tool_call("open_the_vault", "{}", "c2")]),
        completion("Your checking balance is $4,825.37."),
    )
    session = stack.call()
    await started(session)
    reply = await session.say("What's my balance?")
    assert reply.text == "Your checking balance is $4,825.37." and reply.status == "active"
    results = [
        json.loads(r["content"]) for r in items_of(await session.transcript(), "tool_result")
    ]
    assert "not a JSON object" in results[0]["error"]
    assert "unknown tool 'open_the_vault'" in results[1]["error"]
    await session.hang_up()


async def test_server_error_then_success_is_retried(stack: Stack, llm: FakeOpenAIServer) -> None:
    llm.add(error(500, "overloaded"), completion("Hello again."))
    session = stack.call()
    await started(session)
    assert (await session.say("hi")).text == "Hello again."
    assert len(llm.requests) == 2
    await session.hang_up()


async def test_timeout_is_retried(stack: Stack, llm: FakeOpenAIServer) -> None:
    llm.add(stall(5.0), completion("Sorry for the wait."))
    session = stack.call()
    await started(session)
    assert (await session.say("hi")).text == "Sorry for the wait."
    await session.hang_up()


async def test_model_that_keeps_failing_escalates(stack: Stack, llm: FakeOpenAIServer) -> None:
    llm.add(error(400, "bad request"), error(400, "bad request"))
    session = stack.call()
    await started(session)
    first = await session.say("hi")
    assert first.status == "active" and first.text == TROUBLE_APOLOGY  # the trouble is ours
    second = await session.say("hello?")
    assert second.status == "escalated"
    (ticket,) = open_tickets()
    assert "failed 2 times" in ticket.reason
    assert len(llm.requests) == 2  # a 400 is not retried


async def test_streamed_reply_and_streamed_tool_arguments(stack: Stack) -> None:
    await stack.stop_workers()
    with FakeOpenAIServer(
        [
            stream(
                tool_call_parts=[
                    {
                        "index": 0,
                        "id": "c1",
                        "name": "handoff_to_agent",
                        "arguments": '{"target_agent"',
                    },
                    {"index": 0, "arguments": ': "FraudAgent", "reason": "fraud"}'},
                ]
            ),
            stream(["I can ", "help with ", "that card."]),
        ],
        max_requests=10,
        lifetime=60,
    ) as server:
        await stack.start_workers(
            OpenAIChatModel(api_key="t", base_url=server.base_url, stream=True, timeout=5.0)
        )
        session = stack.call()
        await started(session)
        assert (await session.say("fraud on my card")).agent == "FraudAgent"
        reply = await session.say("It was a purchase in Bucharest")
        assert reply.text == "I can help with that card."
        assert server.requests[0].body["stream"] is True
        await session.hang_up()


async def test_tool_rounds_per_turn_are_capped(stack: Stack, llm: FakeOpenAIServer) -> None:
    llm.add(
        *[
            completion(None, tool_calls=[tool_call("get_account_balance", "{}", f"c{n}")])
            for n in range(5)
        ]
    )
    session = stack.call()
    await started(session)
    reply = await session.say("balance?")
    assert "trouble" in reply.text and reply.status == "active"
    assert len(llm.requests) == 5
    assert len(items_of(await session.transcript(), "tool_call")) == 5
    await session.hang_up()
