"""Finished caller utterances, kept on the gateway until a speech worker fetches them.

Audio never enters Temporal history; the workflow gets a reference (``seg-<store>-<n>``) and the STT
activity fetches the audio over the media plane. Segments are bounded per call and expire, so a
call whose workflow never asks for them cannot grow the gateway's memory.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

DEFAULT_TTL_SECONDS = 300.0
DEFAULT_MAX_SEGMENTS = 32


@dataclass(frozen=True, slots=True)
class Segment:
    ref: str
    pcm16_16k: bytes
    duration_ms: int
    stored_at: float


class SegmentStore:
    """One call's recent segments, oldest evicted first."""

    def __init__(
        self, *, ttl_seconds: float = DEFAULT_TTL_SECONDS, max_segments: int = DEFAULT_MAX_SEGMENTS
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self.max_segments = max_segments
        self._segments: OrderedDict[str, Segment] = OrderedDict()
        self._numbers = itertools.count(1)
        # Unique per store, so a reference from before a gateway restart never names new audio.
        self._prefix = f"seg-{secrets.token_hex(4)}"

    def add(self, pcm16_16k: bytes, duration_ms: int) -> Segment:
        self._expire()
        segment = Segment(
            f"{self._prefix}-{next(self._numbers)}", pcm16_16k, duration_ms, time.monotonic()
        )
        self._segments[segment.ref] = segment
        while len(self._segments) > self.max_segments:
            self._segments.popitem(last=False)
        return segment

    def get(self, ref: str) -> Segment | None:
        self._expire()
        return self._segments.get(ref)

    def _expire(self) -> None:
        cutoff = time.monotonic() - self.ttl_seconds
        while self._segments:
            oldest = next(iter(self._segments.values()))
            if oldest.stored_at >= cutoff:
                break
            self._segments.popitem(last=False)
