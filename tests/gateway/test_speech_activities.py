"""The speech activities against a real gateway: playback the caller can cut short, segments
recognized by the offline recognizer. No caller is connected; the gateway plays into the void
with real timing, which is what a barge-in must be able to interrupt."""

from __future__ import annotations

import asyncio
import uuid

from contracts.calls import SIGNAL_BARGE_IN, UPDATE_SUBMIT_UTTERANCE, BargeIn, TurnReply, Utterance
from media_gateway.calls import CallMedia
from media_gateway.gateway_config import GatewayConfig
from media_gateway.server import start_gateway
from tests.gateway.conftest import GatewayStack, call_on_gateway, speech_pcm
from tests.workflow.conftest import items_of, speech_in_flight
from workflows.outages import FILLER


async def test_barge_in_signal_cuts_playback_and_records_what_was_heard(
    gateway_stack: GatewayStack,
) -> None:
    media, session = await call_on_gateway(gateway_stack)
    played: set[str] = set()
    await speech_in_flight(session, played)  # the opening greeting is playing
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=12))
    items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")))
    greeting_cut = items_of(items, "barge_in")[0]
    assert greeting_cut["agent"] == "Concierge" and len(greeting_cut["heard_text"]) == 12
    assert greeting_cut["interrupted_text"].startswith(greeting_cut["heard_text"])
    (greeting,) = items_of(items, "greeting")
    assert greeting["interrupted"] and greeting["heard_text"] == greeting_cut["heard_text"]
    await playback_stopped(media)

    reply_task = asyncio.create_task(session.say("What's my checking balance?"))
    await speech_in_flight(session, played)
    await audible(media)  # the speech activity starts before the reply has words
    await asyncio.sleep(0.5)
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn())
    reply = await reply_task
    cut = [t for t in items_of(await session.transcript(), "agent_turn") if t["interrupted"]]
    assert len(cut) == 1 and cut[0]["text"].startswith(cut[0]["heard_text"])
    assert len(cut[0]["heard_text"]) < len(cut[0]["text"])
    assert reply.text == cut[0]["heard_text"]
    # Otherwise the cut reply's last frames would pass for the next reply's audio below.
    await playback_stopped(media)

    follow_up = asyncio.create_task(session.say("And my savings?"))
    await speech_in_flight(session, played)
    await audible(media)
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=5))
    assert (await follow_up).agent == "Concierge"
    assert len(items_of(await session.transcript(), "barge_in")) == 3
    await session.hang_up()


async def playback_stopped(media: CallMedia) -> None:
    """Until the gateway has stopped a cut reply: the speech activity learns of its
    cancellation at its next heartbeat and stops the playback then."""
    for _ in range(200):
        if not media.playback.speaking:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("the cut reply kept playing")


async def audible(media: CallMedia) -> None:
    """Until the gateway is playing the model's reply to the caller: its words, not a filler
    said while a slow tool round or model call goes on (a loaded machine gets those)."""
    for _ in range(800):
        reply = media.playback.current
        if (
            media.playback.speaking
            and reply is not None
            and reply.text.strip() not in ("", FILLER)
            and reply.played > 0
        ):
            return
        await asyncio.sleep(0.025)
    raise TimeoutError("no reply audio reached the gateway")


async def test_gateway_barge_in_reports_heard_text_from_its_playback_clock(
    gateway_stack: GatewayStack,
) -> None:
    media, session = await call_on_gateway(gateway_stack)
    played: set[str] = set()
    await speech_in_flight(session, played)
    await asyncio.sleep(1.0)  # about a second of the greeting has played
    media.playback.pause()
    heard = media.playback.barge_in()
    assert heard is not None
    chars, played_ms, _ = heard
    assert 700 <= played_ms <= 2500 and chars > 0
    items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")))
    cut = items_of(items, "barge_in")[0]
    assert chars == len(cut["heard_text"]) < len(cut["interrupted_text"])
    await session.hang_up()


async def test_caller_segment_is_fetched_and_recognized_by_the_speech_worker(
    gateway_stack: GatewayStack,
) -> None:
    media, session = await call_on_gateway(gateway_stack)
    await session.wait_for(lambda t: bool(items_of(t, "greeting")))
    segment = media.segments.add(await speech_pcm("What is my balance?"), 1000)
    reply = await session.handle.execute_update(
        UPDATE_SUBMIT_UTTERANCE,
        Utterance(utterance_id="u-seg", segment_ref=segment.ref),
        result_type=TurnReply,
    )
    assert reply.status == "active"
    turns = items_of(await session.transcript(), "user_turn")
    assert (
        "balance" in turns[-1]["text"].lower()
    )  # the words came from the recognizer, not the test
    history = await session.handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert "transcribe_segment" in scheduled
    await session.hang_up()


async def test_unknown_segment_gets_an_apology_not_a_crash(gateway_stack: GatewayStack) -> None:
    _, session = await call_on_gateway(gateway_stack)
    await session.wait_for(lambda t: bool(items_of(t, "greeting")))
    reply = await session.handle.execute_update(
        UPDATE_SUBMIT_UTTERANCE,
        Utterance(utterance_id="u-missing", segment_ref="seg-nowhere-1"),
        result_type=TurnReply,
    )
    assert reply.status == "active" and reply.text  # the agent apologised
    history = await session.handle.fetch_history()
    names = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert "generate_agent_reply" not in names  # nothing was heard, so nothing to answer
    await session.hang_up()


async def test_each_call_speaks_through_its_own_gateway(gateway_stack: GatewayStack) -> None:
    second = await start_gateway(
        gateway_stack.client,
        GatewayConfig(media_address="127.0.0.1:0"),
        gateway_stack.secret,
        http_port=0,
    )
    try:
        a, b = f"multi-{uuid.uuid4().hex[:8]}", f"multi-{uuid.uuid4().hex[:8]}"
        here = await gateway_stack.gateway.registry.open(a, "browser", {}, None)
        there = await second.registry.open(b, "browser", {}, None)
        assert here.control.call.gateway_address != there.control.call.gateway_address
        for media in (here, there):
            for _ in range(200):  # each greeting plays on the gateway that holds the call
                if media.playback.speaking:
                    break
                await asyncio.sleep(0.025)
            assert media.playback.speaking
        assert second.registry.get(a) is None and gateway_stack.gateway.registry.get(b) is None
        for media in (here, there):
            await media.control.hang_up("test over")
    finally:
        await second.close()
