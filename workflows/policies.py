"""Every timeout, retry policy and limit of a call, in one place.

Retries belong to Temporal: providers make one attempt each (the OpenAI client runs with
`max_retries=0`) and raise errors marked retryable or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.common import RetryPolicy


@dataclass(frozen=True)
class ActivityPolicy:
    start_to_close: timedelta
    retry: RetryPolicy
    heartbeat: timedelta | None = None


def _retry(attempts: int, first: float = 0.2) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=first),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=5),
        maximum_attempts=attempts,
    )


SNAPSHOT = ActivityPolicy(timedelta(seconds=30), _retry(5))
#: The model may stream for a while; heartbeats let a barge-in cancel it promptly.
LLM = ActivityPolicy(timedelta(seconds=60), _retry(3, first=0.5), heartbeat=timedelta(seconds=10))
TOOL = ActivityPolicy(timedelta(seconds=30), _retry(5))
HANDOFF = ActivityPolicy(timedelta(seconds=5), _retry(3, first=0.05))
TTS = ActivityPolicy(timedelta(seconds=120), _retry(2), heartbeat=timedelta(seconds=3))
STT = ActivityPolicy(timedelta(seconds=30), _retry(3))
ESCALATION = ActivityPolicy(timedelta(seconds=30), _retry(10))


@dataclass(frozen=True)
class CallLimits:
    """Guards that keep one call from looping or growing without bound."""

    #: Model responses (each may call tools) allowed for one utterance.
    max_tool_rounds: int = 5
    #: Handoffs allowed in one call before a human takes over.
    max_handoffs: int = 8
    #: A -> B -> A -> B within this many turns counts as ping-pong.
    ping_pong_turns: int = 4
    #: Consecutive failed model turns before a human takes over.
    max_llm_failures: int = 2
    #: Chat messages sent verbatim to the model; older ones are summarized.
    window_items: int = 16
    summary_chars: int = 1500
    #: Utterance ids remembered for duplicate detection.
    remembered_utterances: int = 500
    #: Transcript items carried through continue-as-new (older ones live in earlier runs).
    carried_transcript_items: int = 400


LIMITS = CallLimits()
