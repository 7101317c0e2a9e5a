"""What the gateway tells an SRE: its metrics (runtime.baton_metrics) and each caller turn's
span, from the end of the caller's speech to the first audio frame sent back.

The turn span is the root of the utterance's trace: the Update is sent inside it (temporalio's
TracingInterceptor adds a child span and carries the context into the workflow, whose turn
activities join it, see runtime.turn_traces), and it ends at the reply's first audio frame
with a `first_audio` child marking the moment. With tracing off no span is made at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from opentelemetry import trace

from contracts.calls import Channel
from contracts.metrics import (
    ACTIVE_CALLS,
    BAD_FRAMES,
    BARGE_INS,
    UTTERANCES,
    WEBSOCKET_CONNECTIONS,
    BargeInOutcome,
)
from runtime.baton_metrics import count, gauge, observe_stage
from runtime.tracing import tracer, tracing_enabled

TRANSPORTS: tuple[Channel, ...] = ("browser", "twilio", "acs")
#: Turns whose span a call keeps open at once (a caller rarely has more than two in flight).
OPEN_TURNS = 8


class TurnClock:
    """One call's turns as the gateway sees them: speech ended → Update → first audio."""

    def __init__(self, transport: Channel) -> None:
        self.transport = transport
        self._speech_ended_at: float | None = None
        self._spans: dict[str, trace.Span] = {}
        self._latest: str | None = None

    def speech_ended(self, utterance_id: str) -> None:
        """The caller finished an utterance (the gateway submits it now)."""
        self._speech_ended_at = time.monotonic()
        if not tracing_enabled():
            return
        self._spans[utterance_id] = tracer().start_span(
            "baton.turn", attributes={"baton.transport": self.transport}
        )
        self._latest = utterance_id
        while len(self._spans) > OPEN_TURNS:
            self._spans.pop(next(iter(self._spans))).end()

    @contextmanager
    def delivering(self, utterance_id: str) -> Iterator[None]:
        """The block (sending the utterance's Update) runs inside the turn's span."""
        span = self._spans.get(utterance_id)
        if span is None:
            yield
            return
        with trace.use_span(span, end_on_exit=False):
            yield

    def audio_sent(self) -> None:
        """An audio frame went to the caller: the first since speech ended ends the turn."""
        if self._speech_ended_at is None:
            return
        observe_stage("speech_to_first_audio", time.monotonic() - self._speech_ended_at)
        self._speech_ended_at = None
        if self._latest is not None:
            span = self._spans.pop(self._latest, None)
            self._latest = None
            if span is not None:
                with trace.use_span(span, end_on_exit=True):
                    tracer().start_span("baton.first_audio").end()

    def answered(self, utterance_id: str) -> None:
        """The workflow answered; a turn with no audio (text only) ends here."""
        span = self._spans.pop(utterance_id, None)
        if span is not None:
            span.end()
        if self._latest == utterance_id:
            self._latest = None

    def not_a_turn(self, utterance_id: str) -> None:
        """The utterance was a backchannel over a reply that carried on: no turn to time."""
        self.answered(utterance_id)
        self._speech_ended_at = None

    def close(self) -> None:
        for span in self._spans.values():
            span.end()
        self._spans.clear()


def count_barge_in(outcome: BargeInOutcome) -> None:
    count(BARGE_INS, outcome=outcome)


def count_dropped_utterance() -> None:
    count(UTTERANCES, outcome="dropped")


def count_bad_frame(transport: Channel) -> None:
    count(BAD_FRAMES, transport=transport)


def watch_gateway(
    calls: Callable[[], Iterable[Channel]], sockets: Callable[[], Iterable[Channel]]
) -> None:
    """The call and WebSocket gauges read the gateway's own tables at scrape time, so they
    can never drift from what it holds. `calls`/`sockets` give each one's transport."""
    for transport in TRANSPORTS:
        gauge(ACTIVE_CALLS, transport=transport).set_function(_counter(calls, transport))
        gauge(WEBSOCKET_CONNECTIONS, transport=transport).set_function(_counter(sockets, transport))


def _counter(items: Callable[[], Iterable[Channel]], transport: Channel) -> Callable[[], float]:
    return lambda: float(sum(1 for item in items() if item == transport))
