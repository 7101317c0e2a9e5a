"""Playing replies to one caller, paced in real time, and knowing exactly what was heard.

The gateway, not the peer, owns the playback clock: it sends 20 ms frames only slightly ahead
of real time (``lead_ms``), so at any moment it knows how much audio the caller has heard, and a
barge-in throws away at most ``lead_ms`` of buffered audio on the peer (Twilio ``clear``, ACS
``StopAudio``, the page's stop).

Speech onset *pauses* a reply at once; the connection then either confirms the barge-in (the
caller kept talking) and the reply ends there, or resumes it (a cough, an "mm-hm"). Paused audio
that the peer had buffered was cleared, so resuming rewinds to what was actually heard.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from media_gateway.vad import BYTES_PER_MS, FRAME_BYTES, FRAME_MS

#: Audio kept in flight on the peer; a barge-in discards at most this much.
DEFAULT_LEAD_MS = 60


@dataclass(frozen=True, slots=True)
class PlaybackResult:
    chars_played: int
    played_ms: int
    completed: bool
    barged_in: bool


class Sink:
    """Where a call's audio goes: the caller's current connection, or nowhere while detached."""

    def __init__(self) -> None:
        self.send_audio: Callable[[bytes], None] | None = None
        self.clear: Callable[[], None] | None = None
        #: Called once a reply's last audio is sent (a resampler on the way plays out its tail).
        self.end: Callable[[], None] | None = None


class Chunk(NamedTuple):
    """A piece of a reply's audio and where in the text its end is."""

    pcm16_16k: bytes
    #: Character offset into the reply's text reached once this audio has played.
    text_end: int
    #: Text added to the reply before this chunk (a followed reply grows as it is spoken).
    text_more: str = ""


class Heard(NamedTuple):
    """How much of an interrupted reply reached the caller."""

    chars: int
    played_ms: int
    #: The words themselves: the workflow may not have the whole text of a reply that was
    #: still being written when the caller cut in.
    text: str


@dataclass
class _Reply:
    reply_id: str
    text: str
    audio: bytearray = field(default_factory=bytearray)
    #: (byte offset where a chunk ends, text offset reached there), in order.
    marks: list[tuple[int, int]] = field(default_factory=list)
    received_all: bool = False
    sent: int = 0  # bytes handed to the peer
    played: float = 0.0  # bytes the caller has heard (the clock, in bytes)
    paused: bool = False
    barged_in: bool = False
    cancelled: bool = False
    ended: bool = False  # the last audio went out and the sink was told
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def heard_chars(self) -> int:
        """Text offset reached at the playback position, interpolated inside a chunk."""
        played = int(self.played)
        start_byte, start_char = 0, 0
        for end_byte, end_char in self.marks:
            if played >= end_byte:
                start_byte, start_char = end_byte, end_char
                continue
            span = end_byte - start_byte
            part = (played - start_byte) / span if span else 1.0
            return start_char + int(part * (end_char - start_char))
        return start_char


class Playback:
    """One call's replies, played one at a time in the order they arrive."""

    def __init__(self, sink: Sink, *, lead_ms: int = DEFAULT_LEAD_MS) -> None:
        self.sink = sink
        self.lead_bytes = lead_ms * BYTES_PER_MS
        self._turn = asyncio.Lock()
        self.current: _Reply | None = None

    @property
    def speaking(self) -> bool:
        reply = self.current
        return reply is not None and not reply.barged_in and not reply.cancelled

    async def play(self, reply_id: str, text: str, chunks: AsyncIterator[Chunk]) -> PlaybackResult:
        """Play a reply whose audio arrives in chunks; return what was heard."""
        async with self._turn:
            reply = _Reply(reply_id=reply_id, text=text)
            self.current = reply
            receiver = asyncio.create_task(self._receive(reply, chunks))
            try:
                await self._pace(reply)
            finally:
                receiver.cancel()
                if reply.cancelled or not reply.received_all:
                    self._clear_peer()
                self.current = None
            played_ms = int(reply.played) // BYTES_PER_MS
            completed = not reply.barged_in and not reply.cancelled
            chars = len(reply.text) if completed else min(len(reply.text), reply.heard_chars())
            return PlaybackResult(chars, played_ms, completed, reply.barged_in)

    async def _receive(self, reply: _Reply, chunks: AsyncIterator[Chunk]) -> None:
        try:
            async for pcm, text_end, text_more in chunks:
                reply.text += text_more
                reply.audio += pcm
                reply.marks.append((len(reply.audio), text_end))
                reply.wake.set()
        finally:
            reply.received_all = True
            reply.wake.set()

    async def _pace(self, reply: _Reply) -> None:
        last = time.monotonic()
        while not (reply.barged_in or reply.cancelled):
            now = time.monotonic()
            if not reply.paused:
                # The clock only advances over audio the peer actually has (an underrun while
                # the synthesizer catches up is silence, not progress).
                reply.played = min(
                    float(reply.sent), reply.played + (now - last) * BYTES_PER_MS * 1000
                )
                self._send_ahead(reply)
            last = now
            if reply.received_all and reply.played >= len(reply.audio):
                return
            reply.wake.clear()
            waiting = reply.paused or (
                reply.sent >= len(reply.audio) and reply.played >= reply.sent
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reply.wake.wait(), None if waiting else FRAME_MS / 1000)

    def _send_ahead(self, reply: _Reply) -> None:
        target = min(len(reply.audio), int(reply.played) + self.lead_bytes)
        send = self.sink.send_audio
        while reply.sent < target:
            # Whole frames only (the lead may run up to a frame over): cutting at the target
            # sent a frame plus a scrap most ticks, twice the messages and syscalls. A shorter
            # frame goes only at the end of the audio.
            end = min(len(reply.audio), reply.sent + FRAME_BYTES)
            if end - reply.sent < FRAME_BYTES and not reply.received_all:
                break
            if send is not None:
                send(bytes(reply.audio[reply.sent : end]))
            reply.sent = end
        if reply.received_all and reply.sent >= len(reply.audio) and not reply.ended:
            reply.ended = True
            if self.sink.end is not None:
                self.sink.end()

    def _clear_peer(self) -> None:
        if self.sink.clear is not None:
            self.sink.clear()

    # -- barge-in control (called by the connection) ---------------------------------------

    def pause(self) -> bool:
        """Caller speech began: stop the reply at once. False when nothing was playing."""
        reply = self.current
        if reply is None or reply.paused or not self.speaking:
            return False
        reply.paused = True
        reply.sent = int(reply.played) - int(reply.played) % 2  # the peer's buffer is cleared
        reply.ended = False
        self._clear_peer()
        reply.wake.set()
        return True

    def resume(self) -> None:
        """It was only noise: carry on from what the caller last heard."""
        reply = self.current
        if reply is not None and reply.paused:
            reply.paused = False
            reply.wake.set()

    def barge_in(self) -> Heard | None:
        """The caller is really talking: end the reply and say how much of it was heard."""
        reply = self.current
        if reply is None or reply.barged_in:
            return None
        reply.barged_in = True
        self._clear_peer()
        reply.wake.set()
        chars = min(len(reply.text), reply.heard_chars())
        return Heard(chars, int(reply.played) // BYTES_PER_MS, reply.text[:chars])

    def cancel(self) -> None:
        """The speech worker gave up on the reply (activity cancelled): stop it."""
        reply = self.current
        if reply is not None:
            reply.cancelled = True
            reply.wake.set()
