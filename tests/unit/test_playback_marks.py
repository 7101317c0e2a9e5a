"""Playback marks: a pause rewinds to the last echoed mark, stale echoes never move a later
reply, and a peer that never echoes holds only a bounded number of marks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from media_gateway.playback import MAX_MARKS_OUT, Chunk, Playback, Sink
from media_gateway.vad import BYTES_PER_MS


class MarkingPeer:
    """A peer that records the audio and marks sent to it, in order."""

    def __init__(self, sink: Sink) -> None:
        self.sent = bytearray()
        self.marks: list[tuple[str, int]] = []  # (name, bytes of audio sent before it)
        self.clears = 0
        sink.frame_ms = 40
        sink.send_audio = self.sent.extend
        sink.mark = lambda name: self.marks.append((name, len(self.sent)))
        sink.clear = self.clear

    def clear(self) -> None:
        self.clears += 1


async def chunks(parts: list[tuple[int, int]]) -> AsyncIterator[Chunk]:
    for ms, text_end in parts:
        yield Chunk(bytes(ms * BYTES_PER_MS), text_end)


async def test_a_pause_rewinds_to_the_last_echoed_mark_not_the_clock() -> None:
    sink = Sink()
    peer = MarkingPeer(sink)
    playback = Playback(sink)
    task = asyncio.create_task(playback.play("r1", "Hello there.", chunks([(1000, 12)])))
    while len(peer.marks) < 8:
        await asyncio.sleep(0.02)
    name, offset = peer.marks[2]
    assert playback.mark_played(name)
    assert playback.heard_ms() == offset // BYTES_PER_MS == 120
    assert playback.pause()
    # Everything sent after that mark is sent again on resume: the peer dropped it unplayed.
    sent_at_pause = len(peer.sent)
    held = [n for n, _ in peer.marks[3:]]
    assert all(playback.mark_played(n) for n in held)  # a clear's echoes are known...
    assert playback.heard_ms() == 120  # ...and move nothing
    playback.resume()
    result = await task
    assert result.completed and result.chars_played == 12
    assert len(peer.sent) - sent_at_pause == (1000 - 120) * BYTES_PER_MS


async def test_an_echo_after_its_reply_ended_is_accepted_and_moves_no_later_reply() -> None:
    sink = Sink()
    peer = MarkingPeer(sink)
    playback = Playback(sink)
    await playback.play("r1", "Hi.", chunks([(200, 3)]))
    late = peer.marks[-1][0]
    task = asyncio.create_task(playback.play("r2", "Next.", chunks([(2000, 5)])))
    while len(peer.marks) < 8:
        await asyncio.sleep(0.02)
    assert playback.mark_played(late)  # r1's last mark, echoed after r1 ended
    assert playback.heard_ms() == 0  # r2: nothing of it echoed yet
    assert not playback.mark_played(late)  # the same echo twice is refused
    playback.cancel()
    await task


async def test_a_peer_that_never_echoes_holds_a_bounded_number_of_marks() -> None:
    sink = Sink()
    peer = MarkingPeer(sink)
    playback = Playback(sink, lead_ms=(MAX_MARKS_OUT + 10) * 40)  # sent at once, far ahead
    task = asyncio.create_task(playback.play("r1", "Long.", chunks([(60_000, 5)])))
    while len(peer.marks) < MAX_MARKS_OUT + 10:
        await asyncio.sleep(0.02)
    playback.cancel()
    result = await task
    assert not playback.marks_echoed and result.played_ms < 60_000
    assert len(playback._marks_out) == MAX_MARKS_OUT
    assert not playback.mark_played(peer.marks[0][0])  # the oldest was forgotten
    assert playback.mark_played(peer.marks[-1][0])
