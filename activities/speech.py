"""Speech activities (speech queue): synthesize a reply to the caller, transcribe a segment.

Contracts and cancellation are fixed here; the media gateway issue plugs in the audio. Until
then `synthesize_speech` paces the reply at the voice's speaking rate and heartbeats its
progress, which is exactly the behaviour a barge-in must be able to cut short, and produces no
audio. Text calls (no gateway) never call these activities.
"""

from __future__ import annotations

import asyncio
import re
import time

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.payloads import (
    SYNTHESIZE_SPEECH,
    TRANSCRIBE_SEGMENT,
    SynthesisRequest,
    SynthesisResult,
    TranscriptionRequest,
    TranscriptionResult,
)

#: Typical conversational speaking rate (about 150 words a minute).
CHARS_PER_SECOND = 15.0
TICK_SECONDS = 0.05


def speaking_rate(rate: str) -> float:
    """Characters per second for an SSML-style rate such as '+10%' or '-20%'."""
    match = re.fullmatch(r"([+-]?\d+(?:\.\d+)?)%", rate.strip())
    factor = 1 + float(match.group(1)) / 100 if match else 1.0
    return CHARS_PER_SECOND * max(factor, 0.25)


@activity.defn(name=SYNTHESIZE_SPEECH)
async def synthesize_speech(request: SynthesisRequest) -> SynthesisResult:
    """Play `text` to the caller; heartbeats chars played so cancellation lands mid-reply."""
    per_second = speaking_rate(request.rate)
    total = len(request.text)
    started = time.monotonic()
    played = 0
    while played < total:
        await asyncio.sleep(TICK_SECONDS)  # cancellation (a barge-in) is raised here
        played = min(total, int((time.monotonic() - started) * per_second))
        activity.heartbeat(played)
    return SynthesisResult(
        chars_played=total, played_ms=int((time.monotonic() - started) * 1000), completed=True
    )


@activity.defn(name=TRANSCRIBE_SEGMENT)
async def transcribe_segment(request: TranscriptionRequest) -> TranscriptionResult:
    """Fetch a caller segment from the gateway and recognize it (media plane: next issue)."""
    raise ApplicationError(
        f"segment {request.segment_ref!r}: this worker has no speech recognizer configured; "
        "send utterance text instead",
        type="SpeechUnavailable",
        non_retryable=True,
    )
