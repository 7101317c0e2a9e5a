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
    #: How long a task may wait for a worker: past it, nobody serves the queue and the call
    #: says so (apology, escalation) instead of waiting in silence.
    schedule_to_start: timedelta | None = None
    #: All attempts together, retries' waits included: past it the activity gives up.
    schedule_to_close: timedelta | None = None


def _retry(attempts: int, first: float = 0.2) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=first),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=5),
        maximum_attempts=attempts,
    )


#: A worker killed mid-activity is noticed when its heartbeats stop: each of these activities
#: heartbeats at least every half second while it waits, so two seconds of silence means the
#: worker is gone and another attempt starts on a live one (Temporal's own retry).
_GONE_AFTER = timedelta(seconds=2)
#: Every worker polls its queue continuously: ten seconds unclaimed means none is serving it.
#: A killed worker's replacement (speech models loaded) is polling well inside that, so a
#: restart is ridden out and only a queue nobody serves escalates.
_UNSERVED_AFTER = timedelta(seconds=10)

SNAPSHOT = ActivityPolicy(timedelta(seconds=30), _retry(5))
LLM = ActivityPolicy(
    timedelta(seconds=60), _retry(3, first=0.5), _GONE_AFTER, schedule_to_start=_UNSERVED_AFTER
)
#: Business tools heartbeat too; a retry after a lost worker reuses the idempotency key, so a
#: mutating tool applies its effect once.
TOOL = ActivityPolicy(
    timedelta(seconds=30), _retry(5), _GONE_AFTER, schedule_to_start=_UNSERVED_AFTER
)
HANDOFF = ActivityPolicy(timedelta(seconds=5), _retry(3, first=0.05))
#: Retries span a gateway's reconnect backoff (activities.media_channels): a reply right after
#: the gateway restarts is played, and one while it is down gives up within a few seconds.
TTS = ActivityPolicy(
    timedelta(seconds=120), _retry(4, first=0.5), _GONE_AFTER, schedule_to_start=_UNSERVED_AFTER
)
STT = ActivityPolicy(
    timedelta(seconds=30), _retry(3), _GONE_AFTER, schedule_to_start=_UNSERVED_AFTER
)
#: Filing the ticket in the local store is a write of milliseconds (an attempt waits at most
#: 5 s for another writer's lock): a few attempts, under 30 s at worst, and never a wait on a
#: tools queue nobody serves, since the caller is on hold meanwhile.
ESCALATION = ActivityPolicy(
    timedelta(seconds=10), _retry(4, first=0.5), schedule_to_start=_UNSERVED_AFTER
)
#: The ticket webhook runs beside the call (nobody waits for it), so it may retry for longer:
#: backoff 1 s doubling to a minute, ten attempts of at most 5 s each (~5 min), and a hard
#: stop at 10 min. A receiver's 4xx (but 408/429) ends it at once.
TICKET_WEBHOOK = ActivityPolicy(
    timedelta(seconds=10),
    RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=60),
        maximum_attempts=10,
    ),
    schedule_to_close=timedelta(minutes=10),
)
#: Asking a platform (Twilio, ACS, the gateway's console) to take the caller is one quick
#: request: a few short attempts, then the caller is told nobody could take the call rather
#: than left in silence (under a minute at worst).
TRANSFER = ActivityPolicy(
    timedelta(seconds=15), _retry(3, first=0.5), schedule_to_start=_UNSERVED_AFTER
)


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
    #: Model responses in a row whose every tool call was refused (unknown tool, refused
    #: handoff, junk arguments) before a human takes over.
    max_refused_rounds: int = 3
    #: Utterances (keypad presses included) waiting to be answered; more are refused.
    max_pending: int = 20
    #: Chat messages sent verbatim to the model; older ones are summarized.
    window_items: int = 16
    summary_chars: int = 1500
    #: Utterance ids remembered for duplicate detection.
    remembered_utterances: int = 500
    #: Transcript items carried through continue-as-new (older ones live in earlier runs).
    carried_transcript_items: int = 400


LIMITS = CallLimits()
