"""A voice call from the browser protocol, end to end: caller audio in, agent audio out."""

from __future__ import annotations

import asyncio
import math
from array import array

from baton.call_client import CallSession
from contracts.calls import CallInput
from tests.gateway.conftest import GatewayStack, audio_ms, browser_caller, speech_pcm
from tests.workflow.conftest import items_of


async def test_spoken_request_reaches_the_fraud_desk_through_a_handoff(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    greeting = await caller.wait_event(lambda e: e["type"] == "speaking")
    assert greeting["agent"] == "Concierge"
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    await caller.say(await speech_pcm("I think someone stole my card."), pace=2.0)
    await caller.wait_event(
        lambda e: e["type"] == "timeline" and e["state"]["active_agent"] == "FraudAgent"
    )
    kinds = [item["type"] for item in caller.timeline]
    assert "handoff" in kinds
    user_turn = next(i for i in caller.timeline if i["type"] == "user_turn")
    assert "card" in user_turn["text"]
    assert audio_ms(caller.audio) > 1000  # the greeting and the fraud desk were heard
    await caller.close()


async def test_a_short_noise_pauses_the_greeting_but_does_not_interrupt_it(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.heard(800)  # well into the greeting
    # 100 ms of voiced sound, from just past the breathy "H" (whose noise the VAD rightly
    # doubts: with the voice resampled by soxr it keeps its hiss up to 8 kHz).
    cough = (await speech_pcm("Hello there, how are you doing today?"))[60 * 32 : 160 * 32]
    await caller.say(cough, trailing_silence_ms=600)
    assert caller.cleared >= 1  # playback stopped the instant the noise began...
    heard_at_noise = len(caller.audio)
    await asyncio.sleep(0.5)
    assert len(caller.audio) > heard_at_noise  # ...and carried on once it proved short
    session = CallSession(gateway_stack.client, CallInput(call_id=caller.call_id))
    items = await session.wait_for(lambda t: bool(items_of(t, "greeting")))
    assert not items_of(items, "barge_in")
    assert not items_of(items, "greeting")[0]["interrupted"]
    await caller.close()


async def test_a_hum_starting_under_the_greeting_neither_interrupts_nor_speaks_for_the_caller(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.heard(800)  # well into the greeting
    hum = array("h", (int(4000 * math.sin(2 * math.pi * 120 * n / 16000)) for n in range(24000)))
    await caller.say(hum.tobytes(), trailing_silence_ms=600)  # 1.5 s of a steady 120 Hz hum
    session = CallSession(gateway_stack.client, CallInput(call_id=caller.call_id))
    items = await session.wait_for(lambda t: bool(items_of(t, "greeting")))
    assert not items_of(items, "barge_in") and not items_of(items, "user_turn")
    assert not items_of(items, "greeting")[0]["interrupted"]
    assert not [e for e in caller.events if e["type"] in ("utterance", "barge_in")]
    await caller.close()


async def test_caller_going_on_after_a_pause_is_one_utterance_with_all_the_words(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    while True:  # let the greeting finish
        before = len(caller.audio)
        await asyncio.sleep(0.4)
        if len(caller.audio) == before:
            break
    first, second = (
        await speech_pcm("I would like to know"),
        await speech_pcm("my checking balance."),
    )
    # 200 ms of quiet: long enough to hand the utterance over early (60 ms), too short to end
    # it even when its words come back as a finished sentence ("I would like to know.": 240 ms
    # of quiet ends it). 250 ms, which the VAD hears as 260, raced the recognizer on an idle
    # machine.
    await caller.say(first, trailing_silence_ms=200)
    await caller.say(second, trailing_silence_ms=800)
    session = CallSession(gateway_stack.client, CallInput(call_id=caller.call_id))
    items = await session.wait_for(lambda t: bool(items_of(t, "agent_turn")), timeout=30)
    turns, utterances = (
        items_of(items, "user_turn"),
        [e for e in caller.events if e["type"] == "utterance"],
    )
    assert len(turns) == 1 and len(utterances) == 1, (turns, utterances)
    text = turns[0]["text"].lower()
    assert "balance" in text and "know" in text, text
    await caller.close()


async def test_when_the_agent_ends_the_call_the_page_is_told_before_the_socket_closes(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    await caller.say(await speech_pcm("That's all, thank you, goodbye."), pace=2.0)
    ended = await caller.wait_event(lambda e: e["type"] == "ended")
    assert ended["status"] == "completed"
    session = CallSession(gateway_stack.client, CallInput(call_id=caller.call_id))
    assert (await session.handle.result())["status"] == "completed"
    await caller.close()
