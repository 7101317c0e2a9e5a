"""Baton's own counters and stage histograms move as a call says they should, read from the
process's prometheus_client registry before and after: a real gateway and workers in this
process (offline speech and model), their client on a runtime whose SDK metrics (what the
workflow counts) reach the same registry, as `--metrics-port` sets it up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest_asyncio
from prometheus_client import REGISTRY
from temporalio.client import Client

from baton.call_client import CallSession, new_utterance_id
from baton.temporal_server import EmbeddedTemporal
from contracts.calls import SIGNAL_DTMF, CallInput, Dtmf
from runtime.logs import sdk_telemetry
from runtime.sdk_metrics import metrics_runtime
from runtime.temporal_client import CallIdInLogs, connect_options, data_converter
from tests.gateway.conftest import audio_ms, browser_caller, open_gateway_stack, speech_pcm

FRAUD = "I think someone stole my card."
#: Every series this test moves: (metric sample, labels).
SERIES = {
    "bad frame": ("baton_bad_frames_total", {"transport": "browser"}),
    "barge-in": ("baton_barge_ins_total", {"outcome": "confirmed"}),
    "escalation": ("baton_escalations_total", {"reason": "agent_requested"}),
    "duplicate": ("baton_utterances_total", {"outcome": "retried"}),
    "refused": ("baton_utterances_total", {"outcome": "dropped"}),
    **{
        stage: ("baton_turn_stage_seconds_count", {"stage": stage})
        for stage in ("stt", "tts_first_byte", "speech_to_first_audio")
    },
}
#: Bounds on steps that take a fraction of them, not expectations.
STEP_TIMEOUT = 60.0


def readings() -> dict[str, float]:
    """Each series' value now (collecting drains the SDK's buffer: the workflow's counts)."""
    return {what: REGISTRY.get_sample_value(*series) or 0.0 for what, series in SERIES.items()}


@pytest_asyncio.fixture
async def metered_client(temporal_server: EmbeddedTemporal) -> AsyncIterator[Client]:
    """A client (and so the workers built on it) whose SDK metrics reach this process's
    registry; the bridge leaves the registry with the test."""
    runtime, bridge = metrics_runtime(sdk_telemetry())
    try:
        yield await Client.connect(
            **connect_options(temporal_server.address),
            runtime=runtime,
            data_converter=data_converter(),
            interceptors=[CallIdInLogs()],
        )
    finally:
        REGISTRY.unregister(bridge)


async def test_a_call_moves_each_counter_and_stage_histogram(metered_client: Client) -> None:
    before = readings()
    async with open_gateway_stack(metered_client) as stack:
        # A voice call: a bad frame, then the caller speaks over the greeting and is answered.
        caller = await browser_caller(stack)
        await caller.ws.send("{not json")
        await caller.heard(800)  # well into the greeting
        await caller.say(await speech_pcm(FRAUD), pace=2.0)
        await caller.wait_event(
            lambda e: e["type"] == "timeline" and e["state"]["active_agent"] == "FraudAgent",
            timeout=STEP_TIMEOUT,
        )
        await caller.heard(audio_ms(caller.audio) + 300, timeout=STEP_TIMEOUT)  # the answer
        await caller.close()

        # A text call: an utterance sent twice, a keypad flood past the queue's cap, then the
        # caller asks for a person.
        session = CallSession(stack.client, CallInput(call_id=f"m-{new_utterance_id()}"))
        await session.start()
        twice = new_utterance_id()
        await session.say("What is my checking balance?", utterance_id=twice)
        assert (await session.say("What is my checking balance?", utterance_id=twice)).duplicate
        flood = [session.handle.signal(SIGNAL_DTMF, Dtmf(digits="5")) for _ in range(60)]
        await asyncio.gather(*flood)
        async with asyncio.timeout(STEP_TIMEOUT):
            while (await session.state())["pending"]:
                await asyncio.sleep(0.1)
        reply = await session.say("Can I speak to a real person please?")
        assert reply.status == "escalated"

    # The workflow's counts reach the SDK's buffer within about a second.
    deadline = asyncio.get_running_loop().time() + STEP_TIMEOUT
    while True:
        after = readings()
        moved = {what: after[what] - before[what] for what in SERIES}
        if all(moved.values()) or asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.2)
    assert [what for what, by in moved.items() if not by] == []
    assert moved["bad frame"] == 1  # this process's only gateway saw exactly one
    # At least: calls earlier tests left on the session's server may be served here too.
    assert all(by >= 1 for by in moved.values()), moved
