"""Paced playback: what the caller heard, pausing at speech onset, resuming, barge-in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from media_gateway.playback import Chunk, Playback, Sink
from media_gateway.segments import SegmentStore
from media_gateway.vad import BYTES_PER_MS


class Peer:
    def __init__(self, playback_sink: Sink) -> None:
        self.sent = bytearray()
        self.clears = 0
        playback_sink.send_audio = self.sent.extend
        playback_sink.clear = self.clear

    def clear(self) -> None:
        self.clears += 1


async def chunks(parts: list[tuple[int, int]]) -> AsyncIterator[Chunk]:
    """(milliseconds of audio, text offset reached) pairs as PCM chunks."""
    for ms, text_end in parts:
        yield Chunk(bytes(ms * BYTES_PER_MS), text_end)


async def test_a_reply_plays_in_real_time_and_completes() -> None:
    sink = Sink()
    peer = Peer(sink)
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await Playback(sink).play("r1", "Hello there.", chunks([(300, 6), (200, 12)]))
    elapsed = loop.time() - started
    assert result.completed and not result.barged_in and result.chars_played == 12
    assert len(peer.sent) == 500 * BYTES_PER_MS and result.played_ms == 500
    assert elapsed >= 0.45  # paced, not dumped: the caller hears it at speaking speed
    assert peer.clears == 0


async def test_barge_in_reports_the_text_heard_up_to_the_playback_clock() -> None:
    sink = Sink()
    peer = Peer(sink)
    playback = Playback(sink, lead_ms=60)
    text = "First sentence. Second sentence."
    task = asyncio.create_task(playback.play("r1", text, chunks([(1000, 16), (1000, 32)])))
    await asyncio.sleep(1.5)  # halfway through the second sentence
    assert playback.pause()
    heard = playback.barge_in()
    result = await task
    assert heard is not None and result.barged_in and not result.completed
    chars, played_ms, heard_text = heard
    assert heard_text == text[:chars]
    assert 1300 <= played_ms <= 1700
    assert 16 < chars < 32 and result.chars_played == chars  # inside the second sentence
    assert peer.clears >= 1
    # At most the lead was sent beyond what was heard.
    assert len(peer.sent) <= (played_ms + 60) * BYTES_PER_MS + 640


async def test_a_pause_then_resume_carries_on_from_what_was_heard() -> None:
    sink = Sink()
    peer = Peer(sink)
    playback = Playback(sink, lead_ms=60)
    task = asyncio.create_task(playback.play("r1", "Hello.", chunks([(800, 6)])))
    await asyncio.sleep(0.3)
    assert playback.pause()
    sent_at_pause = len(peer.sent)
    await asyncio.sleep(0.3)
    assert len(peer.sent) == sent_at_pause  # nothing is sent while the caller talks
    playback.resume()
    result = await task
    assert result.completed and result.chars_played == 6
    # The cleared lead was sent again: the caller hears all 800 ms, some of it twice over the wire.
    assert len(peer.sent) > 800 * BYTES_PER_MS


async def test_longer_frames_keep_real_time_and_the_end_is_announced_once() -> None:
    sink = Sink()
    sink.frame_ms = 40  # a transport that takes 40 ms messages
    frames: list[int] = []
    ends: list[int] = []
    sink.send_audio = lambda pcm: frames.append(len(pcm))
    sink.clear = lambda: None
    sink.end = lambda: ends.append(sum(frames))
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await Playback(sink).play("r1", "Hello.", chunks([(300, 6), (190, 6)]))
    assert result.completed and result.played_ms == 490
    assert loop.time() - started >= 0.45  # still paced at speaking speed
    # Whole 40 ms frames, the last one shorter; half the messages 20 ms frames would take.
    assert frames == [40 * BYTES_PER_MS] * 12 + [10 * BYTES_PER_MS]
    assert ends == [490 * BYTES_PER_MS]  # told once, after the last audio went out


async def test_a_peer_running_dry_gets_whole_20_ms_frames_without_waiting_for_a_long_one() -> None:
    sink = Sink()
    sink.frame_ms = 100  # a phone transport's long messages
    frames: list[int] = []
    sink.send_audio = lambda pcm: frames.append(len(pcm))
    sink.clear = lambda: None

    async def slow_voice() -> AsyncIterator[Chunk]:
        """A synthesizer barely keeping up: 50 ms of audio every 50 ms."""
        for _ in range(6):
            yield Chunk(bytes(50 * BYTES_PER_MS), 6)
            await asyncio.sleep(0.05)

    result = await Playback(sink).play("r1", "Hello.", slow_voice())
    assert result.completed and sum(frames) == 300 * BYTES_PER_MS
    # The first 40 ms went at once (the 10 ms scrap waits), not after 100 ms had built up.
    assert frames[0] == 40 * BYTES_PER_MS
    assert all(size % (20 * BYTES_PER_MS) == 0 for size in frames[:-1])


async def test_nothing_to_pause_when_nothing_plays() -> None:
    playback = Playback(Sink())
    assert playback.pause() is False and playback.barge_in() is None


async def test_cancel_stops_a_reply_and_clears_the_peer() -> None:
    sink = Sink()
    peer = Peer(sink)
    playback = Playback(sink)
    task = asyncio.create_task(playback.play("r1", "Long reply.", chunks([(5000, 11)])))
    await asyncio.sleep(0.2)
    playback.cancel()
    result = await task
    assert not result.completed and result.played_ms < 1000 and peer.clears == 1


async def test_provisional_segment_is_final_only_when_finalized() -> None:
    store = SegmentStore()
    segment = store.open(b"\x01\x00" * 100)
    assert not segment.final and not segment.finalized.is_set()
    store.finalize(segment, b"\x01\x00" * 100, 6)
    assert segment.final and segment.unchanged and segment.finalized.is_set()
    longer = store.open(b"\x01\x00" * 100)
    store.finalize(longer, b"\x01\x00" * 300, 19)
    assert longer.final and not longer.unchanged and store.get(longer.ref) is longer


def test_segments_are_bounded_and_expire() -> None:
    store = SegmentStore(max_segments=2, ttl_seconds=60)
    first = store.add(b"\x00\x00", 1)
    store.add(b"\x00\x00", 1)
    third = store.add(b"\x00\x00", 1)
    assert store.get(first.ref) is None and store.get(third.ref) is third
    expired = SegmentStore(ttl_seconds=-1.0)  # everything is already too old
    old = expired.add(b"\x00\x00", 1)
    assert expired.get(old.ref) is None


def numbered_audio(ms: int) -> bytes:
    """PCM whose every 20 ms frame is distinct, so where a stream starts can be read off it."""
    return b"".join(
        (frame % 30000).to_bytes(2, "little") * (20 * BYTES_PER_MS // 2)
        for frame in range(ms // 20)
    )


async def test_a_retried_reply_resumes_where_the_cut_attempt_was_heard() -> None:
    """The speech worker died mid-reply (its RPC cancelled the play); the activity's retry sends
    the same reply id from the first word again, and the caller hears it from where they were."""
    sink = Sink()
    peer = Peer(sink)
    playback = Playback(sink, lead_ms=60)
    audio = numbered_audio(1000)

    async def whole() -> AsyncIterator[Chunk]:
        yield Chunk(audio, 6)

    first = asyncio.create_task(playback.play("call/7", "Hello.", whole()))
    await asyncio.sleep(0.6)
    first.cancel()  # the worker died: the gateway's handler is cancelled
    await asyncio.gather(first, return_exceptions=True)
    heard_first = len(peer.sent)
    result = await playback.play("call/7", "Hello.", whole())
    assert result.completed and result.chars_played == 6
    resumed = bytes(peer.sent[heard_first:])
    # Not from the start: from a little before where the first attempt was cut.
    assert not resumed.startswith(audio[: 20 * BYTES_PER_MS])
    start = audio.find(resumed[: 20 * BYTES_PER_MS])
    assert 0 < start < heard_first
    assert heard_first - start <= (300 + 60 + 40) * BYTES_PER_MS  # the rewind, the lead, a frame
    assert result.played_ms >= 900  # the whole reply counts as heard


async def test_a_different_reply_plays_from_its_start() -> None:
    sink = Sink()
    peer = Peer(sink)
    playback = Playback(sink, lead_ms=60)
    first = asyncio.create_task(playback.play("call/7", "Hello.", chunks([(1000, 6)])))
    await asyncio.sleep(0.3)
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    before = len(peer.sent)
    result = await playback.play("call/8", "Bye.", chunks([(400, 4)]))
    assert result.completed and len(peer.sent) - before == 400 * BYTES_PER_MS


async def test_a_reply_played_to_its_end_is_not_played_again_by_a_retry() -> None:
    """The worker died after the gateway had played all of it: the retry adds nothing."""
    sink = Sink()
    peer = Peer(sink)
    playback = Playback(sink, lead_ms=60)
    await playback.play("call/7", "Hello.", chunks([(300, 6)]))
    before = len(peer.sent)
    result = await playback.play("call/7", "Hello.", chunks([(300, 6)]))
    assert result.completed and result.chars_played == 6 and len(peer.sent) == before
