"""Word-aware barge-in, end to end: a backchannel over a reply resumes it, anything else cuts it.

Real gateway, workers (Whisper tiny.en hears the offline voice) and dev server: the caller
speaks over the greeting, the gateway pauses it at once and holds it until the speech worker
says what the words were.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.client import Client

from audit.bundle import bundle_from_histories
from audit.timeline import read_timeline
from baton.call_client import CallSession
from contracts.calls import CallInput
from registries.loading import SHIPPED_REGISTRY
from tests.gateway.conftest import (
    BrowserCaller,
    GatewayStack,
    browser_caller,
    open_gateway_stack,
    speech_pcm,
)
from tests.workflow.conftest import items_of

#: The recognizer's time to words is the machine's, and a loaded one takes seconds: the tests
#: give it that long, since what they check is what the words decide (the cap has its own test).
PATIENT_MS = 15_000


def be_patient(stack: GatewayStack, word_wait_ms: int = PATIENT_MS) -> GatewayStack:
    """New calls on `stack` wait `word_wait_ms` for the words of speech over a reply (that
    long exactly: the recognizer's pace neither shortens nor lengthens it)."""
    registry = stack.gateway.registry
    registry.config = dataclasses.replace(
        registry.config, word_wait_ms=word_wait_ms, max_word_wait_ms=word_wait_ms
    )
    return stack


@pytest_asyncio.fixture
async def patient_stack(temporal_client: Client) -> AsyncIterator[GatewayStack]:
    async with open_gateway_stack(temporal_client) as stack:
        yield be_patient(stack)


async def speak_over_the_greeting(stack: GatewayStack, words: str) -> BrowserCaller:
    """A caller who lets the greeting play for a moment, then says `words` over it."""
    caller = await browser_caller(stack)
    await caller.heard(800)  # well into the greeting
    # A line keeps sending (quiet) audio: the endpointer ends the utterance on it.
    await caller.say(await speech_pcm(words), trailing_silence_ms=1000)
    return caller


async def keeps_playing(caller: BrowserCaller, ms: int = 600, timeout: float = 30.0) -> bool:
    """Whether `ms` more of the reply arrives within `timeout` seconds."""
    start = len(caller.audio)
    try:
        await caller.heard(start // 32 + ms, timeout=timeout)
    except TimeoutError:
        return False
    return True


async def model_calls(session: CallSession) -> int:
    history = await session.handle.fetch_history()
    return sum(
        1
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name
        == "generate_agent_reply"
    )


async def test_a_backchannel_over_a_reply_resumes_it_and_is_no_turn(
    patient_stack: GatewayStack,
) -> None:
    caller = await speak_over_the_greeting(patient_stack, "Okay.")
    assert caller.cleared >= 1  # the greeting paused the moment the caller spoke
    assert await keeps_playing(caller)  # ...and carried on once the words were "okay"
    session = CallSession(patient_stack.client, CallInput(call_id=caller.call_id))
    items = await session.wait_for(lambda t: bool(items_of(t, "backchannel")))
    (backchannel,) = items_of(items, "backchannel")
    assert "okay" in backchannel["text"].lower() and backchannel["agent"] == "Concierge"
    items = await session.wait_for(lambda t: bool(items_of(t, "greeting")))
    assert not items_of(items, "barge_in") and not items_of(items, "user_turn")
    assert not items_of(items, "greeting")[0]["interrupted"]
    assert await model_calls(session) == 0
    assert not [e for e in caller.events if e["type"] == "barge_in"]
    # The audit timeline, from history alone, says the same: a backchannel, never a turn.
    history = await session.handle.fetch_history()
    bundle = await bundle_from_histories(session.handle.id, [json.loads(history.to_json())])
    timeline = await read_timeline(bundle)
    (heard,) = [item for item in timeline.items if item.kind == "backchannel"]
    assert "okay" in heard.text.lower() and heard.turn == -1
    assert not [item for item in timeline.items if item.kind in ("utterance", "barge_in")]
    assert not timeline.turns
    await caller.close()


async def test_wait_stop_over_a_reply_cuts_it_and_is_answered(
    patient_stack: GatewayStack,
) -> None:
    caller = await speak_over_the_greeting(patient_stack, "Wait, stop.")
    session = CallSession(patient_stack.client, CallInput(call_id=caller.call_id))
    items = await session.wait_for(lambda t: bool(items_of(t, "user_turn")), timeout=30)
    assert items_of(items, "barge_in")
    assert items_of(items, "greeting")[0]["interrupted"]
    assert "stop" in items_of(items, "user_turn")[0]["text"].lower()
    assert not items_of(items, "backchannel")
    assert any(e["type"] == "barge_in" for e in caller.events)
    await caller.close()


@pytest.fixture
def go_on_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped registry whose banking scenario takes only "go on" as a backchannel."""
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    scenario = registry / "scenariostore" / "banking" / "scenario.yaml"
    data: dict[str, Any] = yaml.safe_load(scenario.read_text())
    data["backchannels"] = ["go on"]
    scenario.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("BATON_REGISTRY", str(registry))
    return registry


async def test_the_scenarios_own_backchannels_are_the_ones_that_resume(
    temporal_client: Client, go_on_registry: Path
) -> None:
    async with open_gateway_stack(temporal_client) as stack:
        listening = await speak_over_the_greeting(be_patient(stack), "Go on.")
        assert await keeps_playing(listening)
        session = CallSession(stack.client, CallInput(call_id=listening.call_id))
        items = await session.wait_for(lambda t: bool(items_of(t, "backchannel")))
        assert not items_of(items, "barge_in")
        await listening.close()

        # "okay" is a backchannel by default, but not in this scenario: it cuts.
        cutting = await speak_over_the_greeting(stack, "Okay.")
        session = CallSession(stack.client, CallInput(call_id=cutting.call_id))
        items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")), timeout=30)
        assert not items_of(items, "backchannel")
        await cutting.close()


async def test_a_backchannel_whose_words_come_too_late_cuts_the_reply(
    gateway_stack: GatewayStack,
) -> None:
    caller = await speak_over_the_greeting(be_patient(gateway_stack, word_wait_ms=1), "Okay.")
    session = CallSession(gateway_stack.client, CallInput(call_id=caller.call_id))
    items = await session.wait_for(lambda t: bool(items_of(t, "user_turn")), timeout=30)
    assert items_of(items, "barge_in") and not items_of(items, "backchannel")
    assert "okay" in items_of(items, "user_turn")[0]["text"].lower()  # answered as a turn
    await caller.close()
