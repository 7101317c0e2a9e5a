"""A call no workflow worker serves is told so by the gateway itself, never left in silence.

Real dev server, a real gateway and real workers for every queue but `calls`: the call's
workflow starts and nobody runs it. The speech worker plays no part in what the caller hears
(the gateway's own notices), and a `calls` worker started late takes the call on as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import REGISTRY
from temporalio.client import Client

from baton.call_client import CallSession
from contracts.calls import CallInput
from contracts.metrics import UNSERVED_CALLS
from media_gateway.gateway_config import GatewayConfig
from media_gateway.unserved import (
    APOLOGY,
    END_REASON,
    GOODBYE,
    SPEAKER,
    STILL_WAITING,
    ServiceNotices,
)
from tests.gateway.conftest import audio_ms, browser_caller, open_gateway_stack, speech_pcm
from workers.worker import run_workers

WITHOUT_CALLS = ("llm", "speech", "tools")


def unserved_counts() -> dict[str, float]:
    name = f"{UNSERVED_CALLS}_total"
    return {
        outcome: REGISTRY.get_sample_value(name, {"outcome": outcome}) or 0.0
        for outcome in ("apologized", "recovered", "ended")
    }


@contextlib.asynccontextmanager
async def calls_worker(client: Client) -> AsyncIterator[None]:
    """A `calls` worker arriving now (workflow tasks only)."""
    stop = asyncio.Event()
    worker = asyncio.create_task(run_workers(client, ["calls"], stop))
    try:
        yield
    finally:
        stop.set()
        await worker


def spoken(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["agent"], e["text"]) for e in events if e["type"] == "speaking"]


async def test_an_unserved_call_hears_an_apology_updates_then_an_honest_goodbye(
    temporal_client: Client,
) -> None:
    config = GatewayConfig(
        media_address="127.0.0.1:0", unserved_update_s=4.0, unserved_give_up_s=9.0
    )
    before = unserved_counts()
    async with open_gateway_stack(temporal_client, queues=WITHOUT_CALLS, config=config) as stack:
        caller = await browser_caller(stack)
        first = await caller.wait_event(lambda e: e["type"] == "speaking")
        assert (first["agent"], first["text"]) == (SPEAKER, APOLOGY)
        # Said in the gateway's own voice (rendered once at start), not the stand-in chime.
        assert stack.gateway.registry.notices != ServiceNotices.chime()
        await caller.heard(ms=1500)  # the apology's words are audio, not only the page's text
        ended = await caller.wait_event(lambda e: e["type"] == "ended", timeout=60)
        assert ended["status"] == "hung_up"
        await asyncio.wait_for(caller.ws.wait_closed(), 30)
        said = spoken(caller.events)
        assert {agent for agent, _ in said} == {SPEAKER}
        texts = [text for _, text in said]
        assert texts[0] == APOLOGY and texts[-1] == GOODBYE and STILL_WAITING in texts[1:-1]
        notices_ms = audio_ms(await speech_pcm(APOLOGY)) + audio_ms(await speech_pcm(GOODBYE))
        assert audio_ms(caller.audio) > notices_ms  # the hold tone and updates between
        after = unserved_counts()
        assert after["apologized"] == before["apologized"] + 1
        assert after["ended"] == before["ended"] + 1
        assert after["recovered"] == before["recovered"]
        # A worker that comes back much later finds the hang-up in the call's history.
        session = CallSession(temporal_client, CallInput(call_id=caller.call_id))
        async with calls_worker(temporal_client):
            outcome = await asyncio.wait_for(session.handle.result(), 90)
        assert outcome["status"] == "hung_up"
        assert outcome["end_reason"] == END_REASON


async def test_a_worker_that_comes_back_takes_the_call_on_as_usual(
    temporal_client: Client,
) -> None:
    before = unserved_counts()
    async with open_gateway_stack(temporal_client, queues=WITHOUT_CALLS) as stack:
        caller = await browser_caller(stack)
        first = await caller.wait_event(lambda e: e["type"] == "speaking")
        assert (first["agent"], first["text"]) == (SPEAKER, APOLOGY)
        async with calls_worker(temporal_client):
            greeting = await caller.wait_event(
                lambda e: e["type"] == "speaking" and e["agent"] != SPEAKER, timeout=60
            )
            assert greeting["agent"] == "Concierge"
            await caller.say(await speech_pcm("I think someone stole my card."), pace=2.0)
            await caller.wait_event(
                lambda e: e["type"] == "timeline" and e["state"]["active_agent"] == "FraudAgent",
                timeout=90,
            )
            session = CallSession(temporal_client, CallInput(call_id=caller.call_id))
            assert (await session.summary()).status == "active"
            assert not [e for e in caller.events if e["type"] == "ended"]
            assert GOODBYE not in [text for _, text in spoken(caller.events)]
            after = unserved_counts()
            assert after["apologized"] == before["apologized"] + 1
            assert after["recovered"] == before["recovered"] + 1
            assert after["ended"] == before["ended"]
            await caller.close()


async def test_a_call_whose_worker_goes_away_mid_call_is_told_and_answered_once_it_is_back(
    temporal_client: Client,
) -> None:
    before = unserved_counts()
    async with open_gateway_stack(temporal_client, queues=WITHOUT_CALLS) as stack:
        caller = await browser_caller(stack)
        async with calls_worker(temporal_client):
            greeting = await caller.wait_event(lambda e: e["type"] == "speaking", timeout=60)
            assert greeting["agent"] == "Concierge"
            await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
        # The only `calls` worker is gone: the caller's next line is not taken up by anyone.
        await caller.say(await speech_pcm("I think someone stole my card."), pace=2.0)
        notice = await caller.wait_event(
            lambda e: e["type"] == "speaking" and e["agent"] == SPEAKER, timeout=60
        )
        assert notice["text"] == APOLOGY
        async with calls_worker(temporal_client):
            await caller.wait_event(
                lambda e: e["type"] == "timeline" and e["state"]["active_agent"] == "FraudAgent",
                timeout=90,
            )
            user_turns = [i for i in caller.timeline if i["type"] == "user_turn"]
            assert len(user_turns) == 1 and "card" in user_turns[0]["text"]  # once, not lost
            after = unserved_counts()
            assert after["apologized"] == before["apologized"] + 1
            assert after["recovered"] == before["recovered"] + 1
            await caller.close()
