"""Barge-in and hang-up: what is cut short, what runs to the end, what is recorded."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import yaml

from baton.contracts import SIGNAL_BARGE_IN, UPDATE_SUBMIT_UTTERANCE, BargeIn, TurnReply, Utterance
from registries.loading import SHIPPED_REGISTRY
from tests.workflow.conftest import Stack, items_of, speech_in_flight


async def test_barge_in_cuts_playback_and_records_what_was_heard(stack: Stack) -> None:
    session = stack.call(channel="browser", gateway_address="127.0.0.1:9")
    await session.start()
    played: set[str] = set()
    await speech_in_flight(session, played)  # the opening greeting is playing
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=12))
    items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")))
    greeting_cut = items_of(items, "barge_in")[0]
    assert greeting_cut["agent"] == "Concierge" and len(greeting_cut["heard_text"]) == 12
    assert greeting_cut["interrupted_text"].startswith(greeting_cut["heard_text"])
    (greeting,) = items_of(items, "greeting")
    assert greeting["interrupted"] and greeting["heard_text"] == greeting_cut["heard_text"]

    reply_task = asyncio.create_task(session.say("What's my checking balance?"))
    await speech_in_flight(session, played)
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn())
    reply = await reply_task
    transcript = await session.transcript()
    cut = [t for t in items_of(transcript, "agent_turn") if t["interrupted"]]
    assert len(cut) == 1 and cut[0]["text"].startswith(cut[0]["heard_text"])
    assert len(cut[0]["heard_text"]) < len(cut[0]["text"])
    assert reply.text == cut[0]["heard_text"]

    # The next utterance is handled normally by the same agent.
    follow_up = asyncio.create_task(session.say("And my savings?"))
    await speech_in_flight(session, played)
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=5))
    assert (await follow_up).agent == "Concierge"
    assert len(items_of(await session.transcript(), "barge_in")) == 3
    await session.hang_up()


SLOW_TOOL = {
    "tools": [
        {
            "name": "count_loyalty_points",
            "description": "Count the caller's loyalty points and rewards points balance.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            "mutates": True,
        }
    ]
}
SLOW_HANDLER = """
import time
from pathlib import Path

GATE = Path(__file__).parent.parent.parent / "gate"


def count_loyalty_points(ctx):
    (GATE / "started").write_text(ctx.idempotency_key)
    deadline = time.monotonic() + 20
    while not (GATE / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (GATE / "finished").write_text(ctx.idempotency_key)
    return {"points": 1200, "message": "You have 1,200 points."}
"""


def registry_with_slow_tool(root: Path) -> Path:
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    (registry / "toolstore" / "slow.yaml").write_text(yaml.safe_dump(SLOW_TOOL))
    (registry / "toolstore" / "slow.py").write_text(SLOW_HANDLER)
    agent_file = registry / "agentstore" / "concierge" / "agent.yaml"
    agent: dict[str, Any] = yaml.safe_load(agent_file.read_text())
    agent["tools"].append("count_loyalty_points")
    agent_file.write_text(yaml.safe_dump(agent))
    (root / "gate").mkdir()
    return registry


async def test_hang_up_during_a_tool_call_lets_the_tool_finish(
    stack: Stack, tmp_path: Path
) -> None:
    registry = registry_with_slow_tool(tmp_path)
    gate = tmp_path / "gate"
    session = stack.call(registry=str(registry))
    await session.start()
    await session.wait_for(lambda t: bool(items_of(t, "greeting")))
    turn = asyncio.create_task(session.say("How many loyalty points do I have?"))
    for _ in range(800):
        if (gate / "started").exists():
            break
        await asyncio.sleep(0.025)
    await session.hang_up()
    (gate / "release").write_text("go")
    reply = await turn
    outcome = await session.handle.result()
    assert outcome["status"] == "hung_up"
    assert (gate / "finished").read_text() == (gate / "started").read_text()
    transcript = await session.transcript()
    results = items_of(transcript, "tool_result")
    assert results[-1]["tool"] == "count_loyalty_points" and "1200" in results[-1]["content"]
    assert not items_of(transcript, "agent_turn")  # nobody talks to a caller who hung up
    assert reply.status in ("active", "hung_up")


async def test_audio_segment_goes_through_speech_recognition(stack: Stack) -> None:
    session = stack.call(channel="browser", gateway_address="127.0.0.1:9")
    await session.start()
    played: set[str] = set()
    await speech_in_flight(session, played)
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=3))
    turn = asyncio.create_task(
        session.handle.execute_update(
            UPDATE_SUBMIT_UTTERANCE,
            Utterance(utterance_id="seg-1", segment_ref="segment-1"),
            result_type=TurnReply,
        )
    )
    await speech_in_flight(session, played)  # the apology: no recognizer on this worker yet
    await session.handle.signal(SIGNAL_BARGE_IN, BargeIn(heard_chars=5))
    reply = await turn
    assert reply.status == "active"
    history = await session.handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert "transcribe_segment" in scheduled
    assert "generate_agent_reply" not in scheduled  # nothing was heard, so nothing to answer
    await session.hang_up()
