"""Playing replies to one caller, paced in real time, and knowing exactly what was heard.

The gateway, not the peer, owns the playback clock: it sends frames (20 ms, or longer where the
transport takes them: `Sink.frame_ms`) only slightly ahead of real time (``lead_ms`` plus a
frame), so at any moment it knows how much audio the caller has heard, and a barge-in has the
peer drop what it holds (Twilio ``clear``, ACS ``StopAudio``, the page's stop).

Speech onset *pauses* a reply at once; the connection then either confirms the barge-in (the
caller kept talking) and the reply ends there, or resumes it (a cough, an "mm-hm"). Paused audio
that the peer had buffered was cleared, so resuming rewinds to what was actually heard.

Where the peer echoes playback marks (Twilio Media Streams: `Sink.mark`), a mark follows every
frame sent, and the marks it echoes are the truth of what was heard: once a peer has echoed one,
a cut reply reports the position of its last echoed mark rather than the clock's estimate (which
cannot see the network and the peer's jitter buffer). The marks outstanding when the peer is
told to clear come back at once for audio never played, so they count for nothing. A peer that
never echoes a mark is served by the clock alone, as before.

A reply is known by its id (the speech activity's, the same on every attempt). When the speech
worker dies mid-reply, Temporal runs the activity again on another worker, which synthesizes the
reply from its first word; the gateway remembers how far each recent reply was heard and plays
the new attempt from there (a moment earlier, so a word cut in half is said whole), so the caller
never hears the reply start over.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from media_gateway.vad import BYTES_PER_MS, FRAME_BYTES, FRAME_MS

#: Audio kept in flight on the peer; a barge-in discards at most this much.
DEFAULT_LEAD_MS = 60
#: Marks remembered while the peer has not echoed them (a second of 20 ms frames is 50): a peer
#: that never echoes costs no more than this.
MAX_MARKS_OUT = 512
#: A reply played again after a cut resumes this far before where the caller stopped hearing it.
RESUME_REWIND_MS = 300
#: Recent replies whose progress a retried attempt can resume from.
MAX_REMEMBERED_REPLIES = 8


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
        #: Sends a named playback mark after the audio sent so far, on transports whose peer
        #: echoes it once that audio has played (None: the clock alone says what was heard).
        self.mark: Callable[[str], None] | None = None
        #: Audio per message. Each costs a socket write and an event-loop wake-up, so transports
        #: that take longer frames get them (the connection sets this).
        self.frame_ms = FRAME_MS


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
    #: The audio stream broke (its speech worker died) before it said it was complete.
    broken: bool = False
    sent: int = 0  # bytes handed to the peer
    played: float = 0.0  # bytes the caller has heard (the clock, in bytes)
    confirmed: int = 0  # bytes the peer's echoed marks say have played
    paused: bool = False
    barged_in: bool = False
    cancelled: bool = False
    ended: bool = False  # the last audio went out and the sink was told
    #: What the pacer awaits between ticks; `wake` resolves it early.
    waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def nap(self, seconds: float | None) -> None:
        """Until `wake`, or `seconds` (None: until `wake`). A future and a timer per tick:
        `asyncio.wait_for` on an Event made a task per tick per call."""
        loop = asyncio.get_running_loop()
        self.waiter = waiter = loop.create_future()
        timer = None if seconds is None else loop.call_later(seconds, _resolve, waiter)
        try:
            await waiter
        finally:
            self.waiter = None
            if timer is not None:
                timer.cancel()

    def heard_chars(self, played: int) -> int:
        """Text offset reached at playback position `played`, interpolated inside a chunk."""
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
        #: Sent marks not yet echoed, by name: the reply and its byte offset after the mark,
        #: or None once a `clear` made the peer drop the audio before it.
        self._marks_out: dict[str, tuple[_Reply, int] | None] = {}
        self._mark_count = 0
        #: The peer has echoed a mark of played audio: its marks, not the clock, say what was heard.
        self.marks_echoed = False
        #: Recent replies by id: bytes heard, and whether they were cut before the end.
        self._progress: OrderedDict[str, tuple[int, bool]] = OrderedDict()

    @property
    def speaking(self) -> bool:
        reply = self.current
        return reply is not None and not reply.barged_in and not reply.cancelled

    async def play(self, reply_id: str, text: str, chunks: AsyncIterator[Chunk]) -> PlaybackResult:
        """Play a reply whose audio arrives in chunks; return what was heard."""
        async with self._turn:
            reply = _Reply(reply_id=reply_id, text=text)
            reply.sent = reply.confirmed = self._resume_at(reply_id)
            reply.played = float(reply.sent)
            self.current = reply
            receiver = asyncio.create_task(self._receive(reply, chunks))
            try:
                await self._pace(reply)
            finally:
                receiver.cancel()
                if reply.cancelled or not reply.received_all:
                    self._clear_peer()
                self.current = None
                self._remember(reply)
            completed = not reply.barged_in and not reply.cancelled
            heard = int(reply.played) if completed else self._heard_bytes(reply)
            chars = len(reply.text) if completed else min(len(reply.text), reply.heard_chars(heard))
            return PlaybackResult(chars, heard // BYTES_PER_MS, completed, reply.barged_in)

    def _resume_at(self, reply_id: str) -> int:
        """Where an attempt of `reply_id` starts: 0 for a new reply, else where the caller
        stopped hearing the last attempt (a little before, if that one was cut off)."""
        heard, cut = self._progress.get(reply_id, (0, False))
        if cut:
            heard = max(0, heard - RESUME_REWIND_MS * BYTES_PER_MS)
        return heard - heard % 2

    def _remember(self, reply: _Reply) -> None:
        if reply.barged_in:
            return  # the caller cut in: nobody plays this reply again
        played_out = reply.received_all and reply.played >= len(reply.audio)
        if played_out and not (reply.cancelled or reply.broken):
            self._progress[reply.reply_id] = (len(reply.audio), False)
        else:
            self._progress[reply.reply_id] = (self._heard_bytes(reply), True)
        self._progress.move_to_end(reply.reply_id)
        while len(self._progress) > MAX_REMEMBERED_REPLIES:
            self._progress.popitem(last=False)

    async def _receive(self, reply: _Reply, chunks: AsyncIterator[Chunk]) -> None:
        try:
            async for pcm, text_end, text_more in chunks:
                reply.text += text_more
                reply.audio += pcm
                reply.marks.append((len(reply.audio), text_end))
                reply.wake()
        except Exception:
            reply.broken = True  # what arrived still plays; a retry resumes after it
            raise
        finally:
            reply.received_all = True
            reply.wake()

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
            waiting = reply.paused or (
                reply.sent >= len(reply.audio) and reply.played >= reply.sent
            )
            # Nothing runs between these checks and the nap, so no wake-up is missed.
            await reply.nap(None if waiting else self.sink.frame_ms / 1000)

    def _send_ahead(self, reply: _Reply) -> None:
        frame = self.sink.frame_ms * BYTES_PER_MS
        # A tick is a frame long, so longer frames need a longer lead to keep as much audio in
        # hand between ticks: 20 ms frames keep `lead_ms`, 100 ms frames 80 ms more.
        lead = self.lead_bytes + frame - FRAME_BYTES
        target = min(len(reply.audio), int(reply.played) + lead)
        send = self.sink.send_audio
        while reply.sent < target:
            # Whole frames only (the lead may run up to a frame over): cutting at the target
            # sent a frame plus a scrap most ticks, twice the messages and syscalls. A shorter
            # frame goes at the end of the audio, or while the peer has less than 20 ms left
            # to play (a reply's first words, a synthesizer catching up): then any whole 20 ms
            # go at once rather than wait for a long frame to fill.
            end = min(len(reply.audio), reply.sent + frame)
            if end - reply.sent < frame and not reply.received_all:
                if reply.sent - reply.played >= FRAME_BYTES or end - reply.sent < FRAME_BYTES:
                    break
                end -= (end - reply.sent) % FRAME_BYTES
            if send is not None:
                send(bytes(reply.audio[reply.sent : end]))
            reply.sent = end
            if send is not None and self.sink.mark is not None:
                self._mark(reply, self.sink.mark)
        if reply.received_all and reply.sent >= len(reply.audio) and not reply.ended:
            reply.ended = True
            if self.sink.end is not None:
                self.sink.end()

    def _mark(self, reply: _Reply, send_mark: Callable[[str], None]) -> None:
        self._mark_count += 1
        name = f"m{self._mark_count}"  # unique on the call; says nothing about the caller
        if len(self._marks_out) >= MAX_MARKS_OUT:
            del self._marks_out[next(iter(self._marks_out))]
        self._marks_out[name] = (reply, reply.sent)
        send_mark(name)

    def mark_played(self, name: str) -> bool:
        """The peer echoed mark `name`: the audio before it has played (or was cleared).
        False for a name this playback never sent or already had back."""
        if name not in self._marks_out:
            return False
        sent = self._marks_out.pop(name)
        if sent is not None:
            reply, offset = sent
            reply.confirmed = max(reply.confirmed, offset)
            self.marks_echoed = True
        return True

    def heard_ms(self) -> int:
        """How much of the current reply the caller has heard (0 with none playing)."""
        reply = self.current
        return 0 if reply is None else self._heard_bytes(reply) // BYTES_PER_MS

    def _heard_bytes(self, reply: _Reply) -> int:
        return reply.confirmed if self.marks_echoed else int(reply.played)

    def _clear_peer(self) -> None:
        if self.sink.clear is not None:
            self.sink.clear()
        # The peer echoes the marks of the audio it dropped: none of them was heard.
        for name in self._marks_out:
            self._marks_out[name] = None

    # -- barge-in control (called by the connection) ---------------------------------------

    def pause(self) -> bool:
        """Caller speech began: stop the reply at once. False when nothing was playing."""
        reply = self.current
        if reply is None or reply.paused or not self.speaking:
            return False
        reply.paused = True
        heard = self._heard_bytes(reply)
        reply.sent = heard - heard % 2  # the peer's buffer is cleared
        reply.played = float(reply.sent)
        reply.ended = False
        self._clear_peer()
        reply.wake()
        return True

    def resume(self) -> None:
        """It was only noise: carry on from what the caller last heard."""
        reply = self.current
        if reply is not None and reply.paused:
            reply.paused = False
            reply.wake()

    def barge_in(self) -> Heard | None:
        """The caller is really talking: end the reply and say how much of it was heard."""
        reply = self.current
        if reply is None or reply.barged_in:
            return None
        reply.barged_in = True
        self._clear_peer()
        reply.wake()
        heard = self._heard_bytes(reply)
        chars = min(len(reply.text), reply.heard_chars(heard))
        return Heard(chars, heard // BYTES_PER_MS, reply.text[:chars])

    def cancel(self) -> None:
        """The speech worker gave up on the reply (activity cancelled): stop it."""
        reply = self.current
        if reply is not None:
            reply.cancelled = True
            reply.wake()


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
