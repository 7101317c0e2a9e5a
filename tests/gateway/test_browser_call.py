"""A voice call from the browser protocol, end to end: caller audio in, agent audio out."""

from __future__ import annotations

from tests.gateway.conftest import GatewayStack, audio_ms, browser_caller, speech_pcm


async def test_spoken_request_reaches_the_fraud_desk_through_a_handoff(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    greeting = await caller.wait_event(lambda e: e["type"] == "speaking")
    assert greeting["agent"] == "Concierge"
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    await caller.say(await speech_pcm("I think someone stole my card."), pace=2.0)
    handed = await caller.wait_event(
        lambda e: e["type"] == "timeline" and e["state"]["active_agent"] == "FraudAgent"
    )
    kinds = [item["type"] for item in handed["items"]]
    assert "handoff" in kinds
    user_turn = next(i for i in handed["items"] if i["type"] == "user_turn")
    assert "card" in user_turn["text"]
    assert audio_ms(caller.audio) > 1000  # the greeting and the fraud desk were heard
    await caller.close()
