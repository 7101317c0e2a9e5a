"""The page's timeline after a reply is played: the workflow records the reply only once its
speech activity completes, a moment after the gateway finished playing it, so the page asks
again until the reply's item is there (`media_gateway.page_timeline`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast

import pytest

from contracts.calls import CallSummary, TranscriptSlice
from contracts.gateway_events import GatewayEvent, TimelineEvent
from contracts.transcript import GreetingItem, HandoffItem, TranscriptItem
from media_gateway import page_timeline
from media_gateway.control import CallControl
from media_gateway.page_timeline import PageTimeline

AT = datetime(2026, 11, 28, tzinfo=UTC)
SUMMARY = CallSummary(status="active", active_agent="Concierge", visited=[], turn=0)
GREETING = GreetingItem(at=AT, turn=0, agent="Concierge", text="Welcome to the bank.")


@dataclass
class _Call:
    call_id: str = "c-timeline"


@dataclass
class RecordingWorkflow:
    """Answers the timeline queries from a transcript the test appends to, counting asks."""

    transcript: list[TranscriptItem] = field(default_factory=list)
    asks: int = 0
    call: _Call = field(default_factory=_Call)

    async def timeline(self, start: int) -> tuple[CallSummary, TranscriptSlice]:
        self.asks += 1
        items = self.transcript[start:]
        return SUMMARY, TranscriptSlice(start=start, items=items, total=len(self.transcript))

    def record_later(self, *steps: tuple[float, TranscriptItem]) -> asyncio.Task[None]:
        """Append each item after its delay, as speech activities completing after playback."""

        async def record() -> None:
            for delay, item in steps:
                await asyncio.sleep(delay)
                self.transcript.append(item)

        return asyncio.create_task(record())


def page(workflow: RecordingWorkflow) -> tuple[PageTimeline, list[TimelineEvent]]:
    sent: list[TimelineEvent] = []

    def send(event: GatewayEvent) -> None:
        assert isinstance(event, TimelineEvent)
        sent.append(event)

    return PageTimeline(cast(CallControl, workflow), send), sent


def shown(events: list[TimelineEvent]) -> list[TranscriptItem]:
    items: list[TranscriptItem] = []
    for event in events:
        items[event.start :] = event.items
    return items


async def test_a_greeting_recorded_after_its_playback_ended_still_reaches_the_page() -> None:
    workflow = RecordingWorkflow()
    timeline, sent = page(workflow)

    recording = workflow.record_later((0.2, GREETING))
    await timeline.refresh(until_spoken=True)
    await recording
    assert sent[0].items == []  # the first ask came before the record
    assert shown(sent) == [GREETING]
    assert [len(e.items) for e in sent[1:]] == [1]  # follow-ups send only what is new


async def test_follow_ups_stop_once_the_reply_is_on_the_page() -> None:
    workflow = RecordingWorkflow(transcript=[GREETING])
    timeline, sent = page(workflow)
    await timeline.refresh(until_spoken=True)
    assert workflow.asks == 1 and shown(sent) == [GREETING]


async def test_a_handoff_alone_does_not_end_the_follow_ups_for_the_reply() -> None:
    handoff = HandoffItem(at=AT, source="Concierge", target="FraudAgent", success=True)
    workflow = RecordingWorkflow(transcript=[handoff])
    timeline, sent = page(workflow)

    recording = workflow.record_later((0.1, GREETING))
    await timeline.refresh(until_spoken=True)
    await recording
    assert shown(sent) == [handoff, GREETING]


async def test_the_page_stops_asking_when_nothing_is_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(page_timeline, "FOLLOW_UP_DELAYS", (0.01, 0.01, 0.01))
    workflow = RecordingWorkflow()
    timeline, sent = page(workflow)
    await timeline.refresh(until_spoken=True)
    assert workflow.asks == 4 and len(sent) == 1  # one state update, no empty follow-ups


async def test_a_plain_refresh_asks_once() -> None:
    workflow = RecordingWorkflow()
    timeline, sent = page(workflow)
    await timeline.refresh()
    assert workflow.asks == 1 and len(sent) == 1


async def test_two_replies_recorded_late_both_reach_the_page() -> None:
    workflow = RecordingWorkflow()
    timeline, sent = page(workflow)
    second = GreetingItem(at=AT, turn=0, agent="FraudAgent", text="Fraud desk, how can I help?")

    recording = workflow.record_later((0.1, GREETING), (0.3, second))
    await asyncio.gather(timeline.refresh(until_spoken=True), timeline.refresh(until_spoken=True))
    await recording
    assert shown(sent) == [GREETING, second]


async def test_replies_played_while_one_is_followed_up_add_no_follow_ups_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(page_timeline, "FOLLOW_UP_DELAYS", (0.05, 0.05, 0.05))
    workflow = RecordingWorkflow()
    timeline, _ = page(workflow)
    # Three replies end while nothing is recorded (a gateway asked faster than the workflow):
    # one reply's follow-ups run, the others ask once each.
    await asyncio.gather(*(timeline.refresh(until_spoken=True) for _ in range(3)))
    assert workflow.asks == 3 + 3
