"""The browser protocol is one typed union each way (`contracts.gateway_events`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from contracts.calls import CallSummary
from contracts.gateway_events import (
    BargeInEvent,
    ClearEvent,
    DtmfFrame,
    EndedEvent,
    GatewayEvent,
    MarkEvent,
    PingFrame,
    PongEvent,
    SpeakingEvent,
    StartFrame,
    TimelineEvent,
    UtteranceEvent,
    browser_frame,
    gateway_event,
)
from contracts.transcript import HandoffItem, UserTurn

AT = datetime(2026, 11, 24, tzinfo=UTC)
EVENTS: list[GatewayEvent] = [
    ClearEvent(),
    MarkEvent(name="r1"),
    SpeakingEvent(agent="Concierge", text="Hello", reply_id="1.0"),
    BargeInEvent(heard_chars=12, played_ms=640),
    UtteranceEvent(segment="s3", ms=1200),
    TimelineEvent(
        state=CallSummary(
            status="active", active_agent="FraudAgent", visited=["Concierge"], turn=1
        ),
        start=2,
        items=[
            UserTurn(at=AT, utterance_id="u1", text="my card", agent="Concierge"),
            HandoffItem(at=AT, source="Concierge", target="FraudAgent", success=True),
        ],
    ),
    EndedEvent(status="escalated"),
    PongEvent(),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_every_gateway_event_reads_back_as_itself(event: GatewayEvent) -> None:
    sent = gateway_event.dump_json(event)
    assert gateway_event.validate_json(sent) == event


def test_a_timeline_event_carries_typed_items_the_page_tells_apart_by_type() -> None:
    sent = json.loads(gateway_event.dump_json(EVENTS[5]))
    assert [item["type"] for item in sent["items"]] == ["user_turn", "handoff"]
    assert sent["state"]["active_agent"] == "FraudAgent" and sent["start"] == 2


def test_page_frames_parse_into_their_own_types() -> None:
    start = browser_frame.validate_json('{"type": "start", "call_id": "c1", "parameters": {}}')
    assert isinstance(start, StartFrame) and start.call_id == "c1" and start.sample_rate == 16000
    assert browser_frame.validate_json('{"type": "dtmf", "digits": "12#"}') == DtmfFrame(
        type="dtmf", digits="12#"
    )
    assert isinstance(browser_frame.validate_json('{"type": "ping", "t": 5}'), PingFrame)


def test_a_number_where_a_string_belongs_is_refused_not_coerced() -> None:
    with pytest.raises(ValueError, match="call_id"):
        browser_frame.validate_json('{"type": "start", "call_id": 42}')
