"""One caller turn is one trace: the gateway's turn span (end of speech) holds the Update, and
the turn's STT, model, tool and TTS activities (run by real workers) join it, up to the first
audio frame sent back. Spans are caught by an in-memory exporter."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from runtime.temporal_client import connect
from runtime.tracing import disable_tracing, enable_tracing
from tests.gateway.conftest import audio_ms, browser_caller, open_gateway_stack, speech_pcm

# Two words the concierge routes to the fraud desk, each heard whole under small changes of
# level and noise; "Someone used my card abroad, I think it's fraud" came back as "...on rod,
# I think it's thawed." and leaned on "someone used" alone (CI once sent it to the card desk).
FRAUD = "My card was stolen and someone used it."
# A card tool's turn whose arguments need no spoken digits: Whisper tiny, on a loaded machine,
# sometimes misheard "ending in 8832", and the policy then asked for the digits instead.
CARDS = "What cards do I have on my account?"
CARD_TOOLS = ("list_cards", "block_card")
TURN_ACTIVITIES = {
    "RunActivity:transcribe_segment",
    "RunActivity:generate_agent_reply",
    "RunActivity:run_business_tool",
    "RunActivity:synthesize_speech",
}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(provider)
    try:
        yield exporter
    finally:
        disable_tracing()
        provider.shutdown()


def turn_trace(finished: list[ReadableSpan], turn: ReadableSpan) -> list[ReadableSpan]:
    assert turn.context is not None
    return [s for s in finished if s.context and s.context.trace_id == turn.context.trace_id]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_spoken_turn_is_one_trace_from_end_of_speech_to_first_audio(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    # A server of its own: on the session's shared task queues a worker another test left
    # running (without tracing) could run this call's activities, and their spans be missing.
    server = EmbeddedTemporal(DevServerOptions(db_filename=tmp_path / "temporal.sqlite3"))
    await server.astart()
    try:
        await speak_two_turns(await connect(server.address))  # connected with tracing on
    finally:
        await asyncio.to_thread(server.stop)
    check_the_tool_turns_trace(spans)


async def speak_two_turns(client: Client) -> None:
    """The fraud report (a handoff), then asking for the cards (a tool), heard to the end."""
    async with open_gateway_stack(client) as stack:
        caller = await browser_caller(stack)
        await caller.wait_event(lambda e: e["type"] == "speaking")
        await caller.say(await speech_pcm(FRAUD), pace=2.0)
        try:
            await caller.wait_event(
                lambda e: e["type"] == "timeline" and e["state"]["active_agent"] == "FraudAgent",
                timeout=45,
            )
        except TimeoutError as error:
            said = [(i["type"], i.get("text") or i.get("target")) for i in caller.timeline]
            raise AssertionError(f"not at the fraud desk; the call so far: {said}") from error
        # Said as the fraud desk starts to speak, so the reply pauses and the workflow hears
        # the words on arrival, in their own task: they must still join this turn's trace.
        await caller.say(await speech_pcm(CARDS), pace=2.0)
        async with asyncio.timeout(45):
            # A business tool's own result (a handoff is recorded as a tool call and result
            # too): list_cards, or block_card if the offline policy, which this test does not
            # judge, took the fraud desk's question about cards as a request to block one.
            while not any(
                i["type"] == "tool_result" and i.get("tool") in CARD_TOOLS for i in caller.timeline
            ):
                await asyncio.sleep(0.05)
        await caller.heard(audio_ms(caller.audio) + 500)  # the reply after the tool is heard
        await caller.close()


def check_the_tool_turns_trace(spans: InMemorySpanExporter) -> None:
    finished = list(spans.get_finished_spans())
    turns = [s for s in finished if s.name == "baton.turn"]
    assert len(turns) >= 2
    # The turn whose reply ran the card tool: its trace holds everything the turn did.
    tool_turn = next(
        t
        for t in turns
        if "RunActivity:run_business_tool" in {s.name for s in turn_trace(finished, t)}
    )
    trace = turn_trace(finished, tool_turn)
    names = {s.name for s in trace}
    assert names >= TURN_ACTIVITIES
    assert tool_turn.parent is None  # the turn is the trace's root
    assert tool_turn.context is not None
    update = next(s for s in trace if s.name == "StartWorkflowUpdate:submit_utterance")
    assert parent_id(update) == tool_turn.context.span_id
    assert update.context is not None
    # Each activity ran under the span the workflow recorded starting it, a child of the Update.
    by_id = {s.context.span_id: s for s in trace if s.context is not None}
    for activity in (s for s in trace if s.name in TURN_ACTIVITIES):
        started = by_id[parent_id(activity) or 0]
        assert started.name == activity.name.replace("Run", "Start"), activity.name
        assert parent_id(started) == update.context.span_id, started.name
    first_audio = next(s for s in trace if s.name == "baton.first_audio")
    assert parent_id(first_audio) == tool_turn.context.span_id
    # The other turn's activities are in its own trace, not this one.
    fraud_turn = next(t for t in turns if t is not tool_turn)
    assert fraud_turn.context is not None
    assert fraud_turn.context.trace_id != tool_turn.context.trace_id
