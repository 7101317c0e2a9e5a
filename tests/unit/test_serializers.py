"""Twilio and ACS serializers: the providers' message shapes in, exact shapes out."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from media_gateway.media_events import Audio, Dtmf, MarkPlayed, Started, Stopped
from media_gateway.serializers import AcsSerializer, FrameError, TwilioSerializer
from runtime.audio import ulaw_decode, ulaw_encode
from runtime.resampling import StreamResampler
from tests.unit.serializer_frames import (
    CALL_SID,
    STREAM_SID,
    SUBSCRIPTION_ID,
    TWILIO_START,
    acs_audio,
    acs_metadata,
    b64,
    dumps,
    tone,
    without,
)

# --- Twilio Media Streams -------------------------------------------------------------------

TWILIO_CONNECTED = {"event": "connected", "protocol": "Call", "version": "1.0.0"}


def twilio_media(payload: str, track: str = "inbound") -> dict[str, Any]:
    return {
        "event": "media",
        "sequenceNumber": "3",
        "media": {"track": track, "chunk": "1", "timestamp": "5", "payload": payload},
        "streamSid": STREAM_SID,
    }


@pytest.fixture
def twilio() -> TwilioSerializer:
    serializer = TwilioSerializer()
    serializer.parse(dumps(TWILIO_CONNECTED))
    serializer.parse(dumps(TWILIO_START))
    return serializer


def test_twilio_connected_and_start() -> None:
    serializer = TwilioSerializer()
    assert serializer.name == "twilio"
    assert serializer.parse(dumps(TWILIO_CONNECTED)) == []
    assert serializer.parse(dumps(TWILIO_START)) == [
        Started(
            call_id=CALL_SID,
            stream_id=STREAM_SID,
            sample_rate=8000,
            encoding="audio/x-mulaw",
            custom_parameters={"FirstName": "Jane", "RemoteParty": "Bob"},
        )
    ]
    assert serializer.stream_sid == STREAM_SID


def caller_audio(serializer: TwilioSerializer | AcsSerializer, frames: list[str]) -> bytes:
    """The 16 kHz audio a run of inbound frames became, joined."""
    events = [event for frame in frames for event in serializer.parse(frame)]
    assert all(isinstance(event, Audio) and event.pcm16_16k for event in events)
    return b"".join(event.pcm16_16k for event in events if isinstance(event, Audio))


def test_twilio_media_becomes_16k_pcm_through_one_stream(twilio: TwilioSerializer) -> None:
    ulaw = ulaw_encode(tone(8000, ms=500))
    frames = [dumps(twilio_media(b64(ulaw[i : i + 160]))) for i in range(0, len(ulaw), 160)]
    pcm = caller_audio(twilio, frames)
    # The connection's resampler holds back its filter's worth (30 ms) and no more: 20 ms in
    # is 20 ms out from then on.
    assert len(pcm) == (500 - 30) * 32
    reference = StreamResampler(8000, 16000)
    assert pcm == b"".join(
        reference.process(ulaw_decode(ulaw[i : i + 160])) for i in range(0, len(ulaw), 160)
    )


def test_twilio_media_on_another_track_is_ignored(twilio: TwilioSerializer) -> None:
    assert twilio.parse(dumps(twilio_media(b64(bytes(160)), track="outbound"))) == []


def test_twilio_mark_dtmf_stop(twilio: TwilioSerializer) -> None:
    mark = {
        "event": "mark",
        "sequenceNumber": "4",
        "streamSid": STREAM_SID,
        "mark": {"name": "turn-3"},
    }
    dtmf = {
        "event": "dtmf",
        "streamSid": STREAM_SID,
        "sequenceNumber": "5",
        "dtmf": {"track": "inbound_track", "digit": "7"},
    }
    stop = {
        "event": "stop",
        "sequenceNumber": "6",
        "streamSid": STREAM_SID,
        "stop": {"accountSid": "AC0123456789abcdef0123456789abcdef", "callSid": CALL_SID},
    }
    assert twilio.parse(dumps(mark)) == [MarkPlayed("turn-3")]
    assert twilio.parse(dumps(dtmf)) == [Dtmf("7")]
    assert twilio.parse(dumps(stop)) == [Stopped()]


def test_twilio_outbound_messages(twilio: TwilioSerializer) -> None:
    pcm = tone(16000, ms=40)
    [media] = twilio.audio(pcm)
    assert isinstance(media, str)
    message = json.loads(media)
    assert message.keys() == {"event", "streamSid", "media"}
    assert (message["event"], message["streamSid"]) == ("media", STREAM_SID)
    first = base64.b64decode(message["media"]["payload"])
    # 40 ms in: what the stream finished (40 ms less the 15 ms its filter holds), as μ-law.
    assert len(first) == 8 * (40 - 15)
    [tail] = twilio.end_audio()  # the reply ended: what the resampler held goes out
    rest = base64.b64decode(json.loads(tail)["media"]["payload"])
    assert len(first) + len(rest) == 320  # 40 ms at 8 kHz, nothing lost or added
    assert twilio.end_audio() == []  # nothing left

    assert [json.loads(m) for m in twilio.clear()] == [{"event": "clear", "streamSid": STREAM_SID}]
    assert [json.loads(m) for m in twilio.mark("turn-3")] == [
        {"event": "mark", "streamSid": STREAM_SID, "mark": {"name": "turn-3"}}
    ]


def test_twilio_outbound_before_start_is_refused() -> None:
    serializer = TwilioSerializer()
    with pytest.raises(FrameError, match="no streamSid"):
        serializer.audio(bytes(640))
    with pytest.raises(FrameError, match="no streamSid"):
        serializer.clear()
    with pytest.raises(FrameError, match="no streamSid"):
        serializer.mark("x")


def _twilio_start_with(**media_format: Any) -> str:
    start = json.loads(dumps(TWILIO_START))
    start["start"]["mediaFormat"].update(media_format)
    return dumps(start)


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        ("{not json", "malformed JSON"),
        ("[1, 2, 3]", "expected a JSON object"),
        (b"\xff\xfe\x00garbage", "malformed JSON"),
        (dumps({"sequenceNumber": "1"}), "'event'"),
        (dumps({"event": "transcription"}), "unknown event 'transcription'"),
        (dumps({"event": "media", "streamSid": STREAM_SID}), "'media'"),
        (without(twilio_media("AAAA"), "media", "payload"), "'payload'"),
        (dumps(twilio_media("not base64!")), "invalid base64"),
        (dumps(twilio_media("QUJ")), "invalid base64"),
        (_twilio_start_with(encoding="audio/l16"), "expected audio/x-mulaw 8000 Hz mono"),
        (_twilio_start_with(sampleRate=16000), "unsupported media format"),
        (_twilio_start_with(channels=2), "unsupported media format"),
        (_twilio_start_with(sampleRate="8000"), "non-integer field 'sampleRate'"),
        (without(TWILIO_START, "start", "streamSid"), "'streamSid'"),
        (without(TWILIO_START, "start", "mediaFormat"), "'mediaFormat'"),
        (dumps({"event": "dtmf", "dtmf": {"track": "inbound_track"}}), "'digit'"),
        (dumps({"event": "mark", "mark": {"name": 7}}), "'name'"),
    ],
)
def test_twilio_bad_frames_raise_frame_error(frame: str | bytes, reason: str) -> None:
    with pytest.raises(FrameError, match=reason):
        TwilioSerializer().parse(frame)


def test_twilio_custom_parameters_must_be_strings() -> None:
    start = json.loads(dumps(TWILIO_START))
    start["start"]["customParameters"] = {"n": 3}
    with pytest.raises(FrameError, match="'customParameters' must be an object of strings"):
        TwilioSerializer().parse(dumps(start))


def test_a_bad_frame_costs_one_frame_not_the_stream(twilio: TwilioSerializer) -> None:
    quiet = dumps(twilio_media(b64(bytes([0xFF] * 160))))
    before = caller_audio(twilio, [quiet] * 5)
    with pytest.raises(FrameError):
        twilio.parse("{")
    after = caller_audio(twilio, [quiet] * 5)
    assert after == bytes(5 * 640) and len(before) == 5 * 640 - 30 * 32


# --- Azure Communication Services -----------------------------------------------------------


def test_acs_metadata_then_16k_audio_passes_through() -> None:
    acs = AcsSerializer()
    assert acs.name == "acs"
    assert acs.parse(acs_metadata()) == [
        Started(call_id=None, stream_id=SUBSCRIPTION_ID, sample_rate=16000, encoding="PCM")
    ]
    pcm = tone(16000)
    assert acs.parse(acs_audio(pcm)) == [Audio(pcm)]


def test_acs_24k_is_resampled_both_ways() -> None:
    acs = AcsSerializer()
    acs.parse(acs_metadata(24000))
    pcm_24k = tone(24000, ms=200)
    frames = [acs_audio(pcm_24k[i : i + 960]) for i in range(0, len(pcm_24k), 960)]
    assert len(caller_audio(acs, frames)) == (200 - 10) * 32  # 10 ms held by the filter

    sent = acs.audio(tone(16000, ms=200)) + acs.end_audio()
    messages = [json.loads(m) for m in sent]
    assert {m["kind"] for m in messages} == {"AudioData"}
    audio = b"".join(base64.b64decode(m["audioData"]["data"]) for m in messages)
    assert len(audio) == 200 * 48  # 200 ms at 24 kHz once the reply's end is flushed
    [clear] = acs.clear()
    assert json.loads(clear)["kind"] == "StopAudio"


def test_acs_silent_frames_become_digital_silence_of_the_same_length() -> None:
    acs = AcsSerializer()
    assert acs.parse(acs_metadata()) and acs.frame_length == 640
    assert acs.parse(acs_audio(tone(16000), silent=True)) == [Audio(bytes(640))]
    assert acs.parse(acs_audio(None, silent=True)) == [Audio(bytes(640))]  # from metadata length
    assert AcsSerializer().parse(acs_audio(None, silent=True)) == []  # length unknown: skipped
    resampled = AcsSerializer()
    resampled.parse(acs_metadata(24000, length=960))
    frames = [acs_audio(tone(24000), silent=True), acs_audio(None, silent=True)] * 5
    assert caller_audio(resampled, frames) == bytes(10 * 640 - 10 * 32)  # silence, 10 ms held


def test_acs_dtmf() -> None:
    assert AcsSerializer().parse(dumps({"kind": "DtmfData", "dtmfData": {"data": "3"}})) == [
        Dtmf("3")
    ]


def test_acs_outbound_messages() -> None:
    acs = AcsSerializer()
    pcm = tone(16000)
    assert [json.loads(m) for m in acs.audio(pcm)] == [
        {"kind": "AudioData", "audioData": {"data": b64(pcm)}}
    ]
    assert [json.loads(m) for m in acs.clear()] == [
        {"kind": "StopAudio", "audioData": None, "stopAudio": {}}
    ]
    assert acs.mark("turn-1") == []


def test_acs_rejects_unsupported_configured_rate() -> None:
    with pytest.raises(ValueError, match="16000 or 24000"):
        AcsSerializer(sample_rate=8000)


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (dumps({"kind": "TranscriptionData"}), "unknown kind 'TranscriptionData'"),
        (dumps({"audioData": {}}), "'kind'"),
        (dumps({"kind": "AudioData"}), "'audioData'"),
        (dumps({"kind": "AudioData", "audioData": {"silent": False}}), "'data'"),
        (acs_audio(b"\x01\x02\x03"), "odd byte length"),
        (dumps({"kind": "AudioData", "audioData": {"data": "%%%"}}), "invalid base64"),
        (acs_metadata(8000), "expected PCM 16000 or 24000 Hz mono"),
        (acs_metadata(encoding="OPUS"), "unsupported audio format"),
        (acs_metadata(channels=2), "unsupported audio format"),
        (acs_metadata(sampleRate=True), "non-integer field 'sampleRate'"),
        (dumps({"kind": "DtmfData", "dtmfData": {}}), "'data'"),
    ],
)
def test_acs_bad_frames_raise_frame_error(frame: str, reason: str) -> None:
    with pytest.raises(FrameError, match=reason):
        AcsSerializer().parse(frame)
