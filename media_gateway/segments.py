"""Caller utterances, kept on the gateway until a speech worker fetches them.

Audio never enters Temporal history; the workflow gets a reference (``seg-<store>-<n>``) and the
STT activity fetches the audio over the media plane. A segment may be opened *provisionally*
when the caller pauses, so recognition can start while the endpointer is still making sure the
utterance is over; a later pause *revises* it (the caller went on: all the audio so far, a new
revision the speech worker recognizes instead), and it becomes final at the end of the utterance
(with more audio if the caller went on after the last pause). Segments are bounded per call
and expire, so a call whose workflow never asks for them cannot grow the gateway's memory.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

DEFAULT_TTL_SECONDS = 300.0
DEFAULT_MAX_SEGMENTS = 32


@dataclass(eq=False)
class Segment:
    ref: str
    pcm16_16k: bytes
    duration_ms: int
    stored_at: float
    final: bool = True
    #: Whether the final audio is exactly the latest provisional audio (its recognition stands).
    unchanged: bool = True
    finalized: asyncio.Event = field(default_factory=asyncio.Event)
    #: Which provisional audio this is (1 at the first pause, +1 at each later one); 0: none.
    revision: int = 0
    #: Set (and replaced) when a later pause revises the provisional audio.
    revised: asyncio.Event = field(default_factory=asyncio.Event)


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
        """A finished utterance."""
        segment = self._store(pcm16_16k, duration_ms, final=True)
        segment.finalized.set()
        return segment

    def open(self, pcm16_16k: bytes) -> Segment:
        """An utterance that is probably over; `finalize` it when the endpointer is sure."""
        segment = self._store(pcm16_16k, 0, final=False)
        segment.revision = 1
        return segment

    def revise(self, segment: Segment, pcm16_16k: bytes) -> None:
        """The caller went on and paused again: `pcm16_16k` (all of it so far) supersedes the
        provisional audio."""
        segment.pcm16_16k, segment.revision = pcm16_16k, segment.revision + 1
        segment.revised.set()
        segment.revised = asyncio.Event()  # the next revision's waiters wait on a fresh one

    def finalize(self, segment: Segment, pcm16_16k: bytes, duration_ms: int) -> None:
        segment.unchanged = pcm16_16k == segment.pcm16_16k
        segment.pcm16_16k, segment.duration_ms, segment.final = pcm16_16k, duration_ms, True
        segment.finalized.set()

    def get(self, ref: str) -> Segment | None:
        self._expire()
        return self._segments.get(ref)

    def _store(self, pcm16_16k: bytes, duration_ms: int, *, final: bool) -> Segment:
        self._expire()
        ref = f"{self._prefix}-{next(self._numbers)}"
        segment = Segment(ref, pcm16_16k, duration_ms, time.monotonic(), final=final)
        self._segments[ref] = segment
        while len(self._segments) > self.max_segments:
            self._segments.popitem(last=False)
        return segment

    def _expire(self) -> None:
        cutoff = time.monotonic() - self.ttl_seconds
        while self._segments:
            oldest = next(iter(self._segments.values()))
            if oldest.stored_at >= cutoff:
                break
            self._segments.popitem(last=False)
