"""Voice replies spoken while the model is still writing them.

The LLM worker publishes each sentence to the gateway as the `openai` client streams it from a
scripted OpenAI-compatible server on loopback; the speech worker follows the reply and the
gateway plays it. Everything else is real: dev server, workers, gateway, espeak-ng, Whisper.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.client import Client

from activities.agent_reply import FILLER, FILLER_AFTER_SECONDS
from activities.chat_models.openai_chat import OpenAIChatModel
from tests.fakes.openai_server import FakeOpenAIServer, stall, stream
from tests.gateway.conftest import (
    GatewayStack,
    browser_caller,
    call_on_gateway,
    open_gateway_stack,
    speech_pcm,
)
from tests.workflow.conftest import items_of

#: Written one piece every 0.8 s; only the first and third pieces end a sentence.
SENTENCES = (
    "Your card is safe. ",
    "I have also looked at ",
    "your recent payments. ",
    "Nothing there looks wrong.",
)
WHOLE = "".join(SENTENCES)
PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}


@pytest_asyncio.fixture
async def llm_stack(temporal_client: Client) -> AsyncIterator[tuple[GatewayStack, Any]]:
    with FakeOpenAIServer([], max_requests=20, lifetime=180) as llm:
        model = OpenAIChatModel(api_key="test", base_url=llm.base_url, timeout=20.0)
        async with open_gateway_stack(temporal_client, chat_model=model) as stack:
            yield stack, llm
        await model.aclose()


async def greeting_done(media: Any) -> None:
    """Wait until the call's greeting has played out (the gateway plays it unheard)."""
    async with asyncio.timeout(30):
        while media.playback.current is None:
            await asyncio.sleep(0.02)
        while media.playback.current is not None:
            await asyncio.sleep(0.02)


async def reply_starting(media: Any, prefix: str) -> str:
    """The text the gateway holds for the reply starting with `prefix` when it starts playing."""
    async with asyncio.timeout(30):
        while True:
            current = media.playback.current
            if current is not None and current.text.startswith(prefix):
                return str(current.text)
            await asyncio.sleep(0.005)


async def test_the_first_sentence_plays_while_the_model_is_still_writing(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    llm.add(stream(SENTENCES, event_delay=0.8))
    media, session = await call_on_gateway(stack, **PROFILE)
    await greeting_done(media)
    turn = asyncio.create_task(session.say("Is my card safe?"))
    # When playback starts the model has written only the first sentence: the text the gateway
    # holds for the reply is that sentence and nothing more.
    assert await reply_starting(media, "Your card") == SENTENCES[0]
    reply = await turn
    assert llm.requests[0].body.get("stream") is True
    assert reply.text == WHOLE
    items = await session.transcript()
    spoken = items_of(items, "agent_turn")
    assert [t["text"] for t in spoken] == [WHOLE]
    assert not spoken[0]["interrupted"] and spoken[0]["heard_text"] is None
    await session.hang_up()


async def test_words_before_a_tool_call_are_spoken_and_recorded_before_the_tool_runs(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    llm.add(
        stream(
            ["Let me check that for you. "],
            tool_call_parts=[
                {
                    "index": 0,
                    "id": "call_1",
                    "name": "get_account_balance",
                    "arguments": '{"account_type": "checking"}',
                }
            ],
        ),
        stream(["Your checking account holds the balance I just read out."]),
    )
    media, session = await call_on_gateway(stack, **PROFILE)
    await greeting_done(media)
    reply = await session.say("What's my checking balance?")
    assert [line.text for line in reply.spoken] == [
        "Let me check that for you. ",
        "Your checking account holds the balance I just read out.",
    ]
    items = await session.transcript()
    kinds = [i["type"] for i in items if i["turn"] == 1]
    assert kinds == ["user_turn", "agent_turn", "tool_call", "tool_result", "agent_turn"]
    await session.hang_up()


async def test_cutting_in_while_the_model_writes_keeps_the_words_the_caller_heard(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    llm.add(stream(SENTENCES, event_delay=0.8), stream(["Of course, go ahead."]))
    caller = await browser_caller(stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    await caller.say(await speech_pcm("Is my card safe?"), pace=2.0)
    await caller.wait_event(lambda e: e["type"] == "speaking" and e["text"] == SENTENCES[0])
    await asyncio.sleep(0.6)  # some of the first sentence has played
    await caller.say(await speech_pcm("Wait, one more thing."), pace=1.0)
    await caller.wait_event(lambda e: e["type"] == "barge_in")
    session = stack_session(stack, caller.call_id)
    items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")), timeout=30)
    cut = items_of(items, "barge_in")[0]
    # The model was still writing when the caller cut in, so the words come from the gateway.
    assert cut["heard_text"] and SENTENCES[0].startswith(cut["heard_text"])
    interrupted = [t for t in items_of(items, "agent_turn") if t["interrupted"]]
    assert interrupted and interrupted[0]["heard_text"] == cut["heard_text"]
    items = await session.wait_for(
        lambda t: any(a["text"] == "Of course, go ahead." for a in items_of(t, "agent_turn")),
        timeout=60,
    )
    assert not any(a["text"] == WHOLE for a in items_of(items, "agent_turn"))
    await caller.close()
    await session.hang_up()


def stack_session(stack: GatewayStack, call_id: str) -> Any:
    from baton.call_client import CallSession
    from contracts.calls import CallInput

    return CallSession(stack.client, CallInput(call_id=call_id))


async def test_a_slow_model_gets_a_filler_spoken_first_and_the_record_says_so(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    llm.add(stall(FILLER_AFTER_SECONDS + 1.0, then=stream(SENTENCES[:1])))
    media, session = await call_on_gateway(stack, **PROFILE)
    await greeting_done(media)
    turn = asyncio.create_task(session.say("Is my card safe?"))
    assert await reply_starting(media, FILLER) == FILLER  # said while the model still thinks
    reply = await turn
    assert reply.text == FILLER + SENTENCES[0]  # what the caller heard
    spoken = items_of(await session.transcript(), "agent_turn")[-1]
    assert spoken["text"] == SENTENCES[0]  # the model's words, and what was heard beside them
    assert spoken["heard_text"] == FILLER + SENTENCES[0]


async def test_a_prompt_model_gets_no_filler(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    llm.add(stream(SENTENCES[:1]))
    media, session = await call_on_gateway(stack, **PROFILE)
    await greeting_done(media)
    await session.say("Is my card safe?")
    spoken = items_of(await session.transcript(), "agent_turn")[-1]
    assert spoken["text"] == SENTENCES[0] and not spoken.get("heard_text")
