"""A caller who pauses, goes on and pauses again: each pause hands all the audio so far to the
speech worker, which recognizes the latest and tells the gateway which audio its words are of.

Before revisions only the first pause was handed over: a caller who went on after it waited
for the plain 400 ms hangover and then for recognition from scratch. A real media plane on
loopback serves a real call's media (the energy VAD, so the synthetic voice below is speech);
the speech activity runs against it with a recognizer that names the audio it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.media_channels import MediaChannels
from activities.speech import SpeechActivities
from activities.speech_providers.base import Recognition
from activities.speech_providers.offline_tts import EspeakSynthesizer
from contracts.proto import media_pb2
from contracts.speech import TranscriptionRequest
from media_gateway.segments import Segment
from tests.gateway.test_media_plane_auth import Plane, open_plane
from tests.unit.test_vad import pcm, silence, voiced

FIRST, SECOND = pcm(voiced(600)), pcm(voiced(600, f0=150.0))


@pytest_asyncio.fixture
async def plane(temporal_client: Client) -> AsyncIterator[Plane]:
    async with open_plane(temporal_client, vad="offline-light") as opened:
        yield opened


def segments_opened(plane: Plane, monkeypatch: pytest.MonkeyPatch) -> list[Segment]:
    opened: list[Segment] = []
    real_open = plane.media.segments.open

    def recording_open(audio: bytes) -> Segment:
        opened.append(real_open(audio))
        return opened[-1]

    monkeypatch.setattr(plane.media.segments, "open", recording_open)
    return opened


def complete_sentence_heard(plane: Plane, segment: Segment, revision: int) -> None:
    """The speech worker's report: the words of `revision` end as a finished sentence."""
    plane.media.words_heard(
        segment.ref, backchannel=False, final=False, ending="complete", revision=revision
    )


def say(plane: Plane, audio: bytes) -> None:
    plane.media.caller_audio(audio)


class NamingRecognizer:
    """Hears the length of what it was given, so a test can tell which audio was recognized."""

    name = "naming"

    def __init__(self) -> None:
        self.heard: list[int] = []
        self.expected: list[tuple[str, ...]] = []

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        self.heard.append(len(pcm16_16k))
        self.expected.append(tuple(expected))
        return Recognition(f"I said {len(pcm16_16k)} bytes.", 0.9)


@contextlib.asynccontextmanager
async def fetched(plane: Plane, segment: Segment) -> AsyncIterator[AsyncIterator[Any]]:
    """The parts of `segment` as a speech worker's `FetchSegment` receives them."""
    channels = MediaChannels()
    try:
        request = media_pb2.SegmentRequest(call_id=plane.call_id, segment_ref=segment.ref)
        yield aiter(channels.stub(plane.address).FetchSegment(request, timeout=10))
    finally:
        await channels.close()


async def test_the_stream_sends_each_revision_then_the_final_audio(plane: Plane) -> None:
    segments = plane.media.segments
    segment = segments.open(b"\x01\x00" * 800)
    async with fetched(plane, segment) as parts:
        first = await anext(parts)
        assert (first.final, first.revision, len(first.pcm16_16k)) == (False, 1, 1600)
        segments.revise(segment, b"\x02\x00" * 1600)
        second = await anext(parts)
        assert (second.final, second.revision, len(second.pcm16_16k)) == (False, 2, 3200)
        segments.finalize(segment, b"\x02\x00" * 1600, 100)
        final = await anext(parts)
        assert final.final and final.unchanged and final.pcm16_16k == b""  # keep revision 2's words


async def test_a_revision_the_stream_never_sent_comes_whole_with_the_end(plane: Plane) -> None:
    segments = plane.media.segments
    segment = segments.open(b"\x01\x00" * 800)
    async with fetched(plane, segment) as parts:
        assert (await anext(parts)).revision == 1
        # Revised and final before the stream looked again: "unchanged" would mean revision 1.
        segments.revise(segment, b"\x02\x00" * 1600)
        segments.finalize(segment, b"\x02\x00" * 1600, 100)
        rest = [part async for part in parts]
        assert [(p.final, p.unchanged, len(p.pcm16_16k)) for p in rest] == [(True, False, 3200)]


async def test_words_of_audio_revised_since_leave_the_endpointer_waiting(
    plane: Plane, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = segments_opened(plane, monkeypatch)
    say(plane, pcm(silence(300)) + FIRST + pcm(silence(200)) + SECOND + pcm(silence(120)))
    (segment,) = opened  # one utterance: the second pause revised it
    assert segment.revision == 2 and not segment.final
    complete_sentence_heard(plane, segment, revision=1)  # "Is that right?" of FIRST
    say(plane, pcm(silence(200)))  # 320 ms quiet: past a complete sentence's 240
    assert not segment.final  # those words are of half of it: still waiting for the rest
    complete_sentence_heard(plane, segment, revision=2)
    assert segment.final and segment.unchanged  # ended on the words of all of it


@pytest.mark.parametrize("backchannels", [None, ["okay", "mm-hmm"]])
async def test_the_worker_recognizes_the_latest_revision_and_keeps_it(
    plane: Plane, monkeypatch: pytest.MonkeyPatch, backchannels: list[str] | None
) -> None:
    opened = segments_opened(plane, monkeypatch)
    say(plane, pcm(silence(300)) + FIRST + pcm(silence(200)) + SECOND + pcm(silence(120)))
    (segment,) = opened
    recognizer = NamingRecognizer()
    speech = SpeechActivities(recognizer, EspeakSynthesizer())
    request = TranscriptionRequest(
        call_id=plane.call_id,
        gateway_address=plane.address,
        segment_ref=segment.ref,
        backchannels=backchannels,
    )
    # 260 ms of quiet: past a complete sentence's 240, so its words, when they come, end it.
    say(plane, pcm(silence(140)))
    assert not segment.final
    try:
        heard = ActivityEnvironment().run(speech.transcribe_segment, request)
        result = await asyncio.wait_for(heard, 10)
    finally:
        await speech.channels.close()
    both = len(segment.pcm16_16k)
    assert both > len(FIRST) + len(SECOND)  # both phrases, as handed over at the second pause
    assert recognizer.heard == [both]  # once, on the revision: the end changed nothing
    # Words said over a reply (held) are recognized knowing the backchannels they may be.
    assert recognizer.expected == [tuple(backchannels or ())]
    assert result.text == f"I said {both} bytes."
