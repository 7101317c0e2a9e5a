"""Twilio, ACS and browser serializers: providers' message shapes in, exact shapes out."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from media_gateway.codecs import (
    downsample_16k_to_8k,
    resample,
    ulaw_decode,
    ulaw_encode,
    upsample_8k_to_16k,
)
from media_gateway.serializers import (
    AcsSerializer,
    Audio,
    BrowserSerializer,
    Control,
    Dtmf,
    FrameError,
    MarkPlayed,
    MediaSerializer,
    Started,
    Stopped,
    TwilioSerializer,
)

STREAM_SID = "MZ18ad3ab5a668481ce02b83e7395059f0"
CALL_SID = "CA7a1b2c3d4e5f60718293a4b5c6d7e8f9"
SUBSCRIPTION_ID = "89e8cb59-b991-48b0-b154-1db84f16a077"


def tone(rate: int, ms: int = 20, freq: float = 440.0) -> bytes:
    n = rate * ms // 1000
    samples = [round(8000 * math.sin(2 * math.pi * freq * i / rate)) for i in range(n)]
    return struct.pack(f"<{n}h", *samples)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message)


# --- Twilio Media Streams -------------------------------------------------------------------

TWILIO_CONNECTED = {"event": "connected", "protocol": "Call", "version": "1.0.0"}
TWILIO_START = {
    "event": "start",
    "sequenceNumber": "1",
    "start": {
        "accountSid": "AC0123456789abcdef0123456789abcdef",
        "streamSid": STREAM_SID,
        "callSid": CALL_SID,
        "tracks": ["inbound"],
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
        "customParameters": {"FirstName": "Jane", "RemoteParty": "Bob"},
    },
    "streamSid": STREAM_SID,
}


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


def test_twilio_media_becomes_16k_pcm(twilio: TwilioSerializer) -> None:
    ulaw = ulaw_encode(tone(8000))  # 160 bytes: 20 ms of 8 kHz μ-law
    [event] = twilio.parse(dumps(twilio_media(b64(ulaw))))
    assert event == Audio(upsample_8k_to_16k(ulaw_decode(ulaw)))
    assert isinstance(event, Audio)
    assert len(event.pcm16_16k) == 640  # 320 samples at 16 kHz


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
    pcm = tone(16000)
    [media] = twilio.audio(pcm)
    assert isinstance(media, str)
    message = json.loads(media)
    assert message.keys() == {"event", "streamSid", "media"}
    assert (message["event"], message["streamSid"]) == ("media", STREAM_SID)
    payload = base64.b64decode(message["media"]["payload"])
    assert payload == ulaw_encode(downsample_16k_to_8k(pcm))
    assert len(payload) == 160

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


def _without(message: dict[str, Any], *path: str) -> str:
    copy = json.loads(dumps(message))
    target = copy
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return dumps(copy)


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        ("{not json", "malformed JSON"),
        ("[1, 2, 3]", "expected a JSON object"),
        (b"\xff\xfe\x00garbage", "malformed JSON"),
        (dumps({"sequenceNumber": "1"}), "'event'"),
        (dumps({"event": "transcription"}), "unknown event 'transcription'"),
        (dumps({"event": "media", "streamSid": STREAM_SID}), "'media'"),
        (_without(twilio_media("AAAA"), "media", "payload"), "'payload'"),
        (dumps(twilio_media("not base64!")), "invalid base64"),
        (dumps(twilio_media("QUJ")), "invalid base64"),
        (_twilio_start_with(encoding="audio/l16"), "expected audio/x-mulaw 8000 Hz mono"),
        (_twilio_start_with(sampleRate=16000), "unsupported media format"),
        (_twilio_start_with(channels=2), "unsupported media format"),
        (_twilio_start_with(sampleRate="8000"), "non-integer field 'sampleRate'"),
        (_without(TWILIO_START, "start", "streamSid"), "'streamSid'"),
        (_without(TWILIO_START, "start", "mediaFormat"), "'mediaFormat'"),
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
    with pytest.raises(FrameError):
        twilio.parse("{")
    assert twilio.parse(dumps(twilio_media(b64(bytes([0xFF] * 160))))) == [Audio(bytes(640))]


# --- Azure Communication Services -----------------------------------------------------------


def acs_metadata(rate: int = 16000, **overrides: Any) -> str:
    meta = {
        "subscriptionId": SUBSCRIPTION_ID,
        "encoding": "PCM",
        "sampleRate": rate,
        "channels": 1,
        "length": rate // 50 * 2,
    }
    return dumps({"kind": "AudioMetadata", "audioMetadata": {**meta, **overrides}})


def acs_audio(pcm: bytes | None, silent: bool = False) -> str:
    body: dict[str, Any] = {
        "timestamp": "2024-11-15T19:16:12.925Z",
        "participantRawID": "8:acs:3d20e1de-0f28-41c5-84d0-447c7d9c5a9e_00000022-f2a2",
        "silent": silent,
    }
    if pcm is not None:
        body["data"] = b64(pcm)
    return dumps({"kind": "AudioData", "audioData": body})


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
    pcm_24k = tone(24000)
    assert acs.parse(acs_audio(pcm_24k)) == [Audio(resample(pcm_24k, 24000, 16000))]

    [out] = acs.audio(tone(16000))
    assert isinstance(out, str)
    message = json.loads(out)
    assert message["kind"] == "AudioData"
    assert len(base64.b64decode(message["audioData"]["data"])) == 960  # 20 ms at 24 kHz


def test_acs_silent_frames_become_digital_silence_of_the_same_length() -> None:
    acs = AcsSerializer()
    acs.parse(acs_metadata(24000))
    assert acs.parse(acs_audio(tone(24000), silent=True)) == [Audio(bytes(640))]
    assert acs.parse(acs_audio(None, silent=True)) == [Audio(bytes(640))]  # from metadata length
    assert AcsSerializer().parse(acs_audio(None, silent=True)) == []  # length unknown: skipped


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


# --- browser --------------------------------------------------------------------------------


def test_browser_binary_audio_and_control() -> None:
    browser = BrowserSerializer()
    assert browser.name == "browser"
    start = {"type": "start", "call_id": "web-42", "parameters": {"agent": "Alpha"}}
    assert browser.parse(dumps(start)) == [
        Started(
            call_id="web-42",
            stream_id=None,
            sample_rate=16000,
            encoding="pcm16",
            custom_parameters={"agent": "Alpha"},
        )
    ]
    pcm = tone(16000)
    assert browser.parse(pcm) == [Audio(pcm)]
    assert browser.parse(dumps({"type": "dtmf", "digits": "12#"})) == [Dtmf("12#")]
    assert browser.parse(dumps({"type": "mark", "name": "turn-2"})) == [MarkPlayed("turn-2")]
    assert browser.parse(dumps({"type": "ping", "ts": 17})) == [Control("ping", {"ts": 17})]
    assert browser.parse(dumps({"type": "stop"})) == [Stopped()]


def test_browser_outbound_messages() -> None:
    browser = BrowserSerializer()
    pcm = tone(16000)
    assert browser.audio(pcm) == [pcm]
    assert [json.loads(m) for m in browser.clear()] == [{"type": "clear"}]
    assert [json.loads(m) for m in browser.mark("turn-2")] == [{"type": "mark", "name": "turn-2"}]
    with pytest.raises(FrameError, match="odd byte length"):
        browser.audio(b"\x00")


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (b"\x00\x01\x02", "odd byte length"),
        (dumps({"kind": "start"}), "'type'"),
        (dumps({"type": "reboot"}), "unknown type 'reboot'"),
        (dumps({"type": "start", "sample_rate": 48000}), "expected pcm16 at 16000 Hz"),
        (dumps({"type": "start", "encoding": "opus"}), "unsupported format 'opus'"),
        (dumps({"type": "start", "call_id": 42}), "'call_id'"),
        (dumps({"type": "dtmf"}), "'digits'"),
        ('"start"', "expected a JSON object"),
    ],
)
def test_browser_bad_frames_raise_frame_error(frame: str | bytes, reason: str) -> None:
    with pytest.raises(FrameError, match=reason):
        BrowserSerializer().parse(frame)


# --- shared: size limits and robustness -----------------------------------------------------

SERIALIZERS = [TwilioSerializer, AcsSerializer, BrowserSerializer]


@pytest.mark.parametrize("make", SERIALIZERS)
def test_oversized_frames_are_refused(make: type[MediaSerializer]) -> None:
    serializer = make()
    too_big = dumps({"event": "media", "kind": "AudioData", "pad": "x" * 70_000})
    with pytest.raises(FrameError, match="exceeds the 65536-byte limit"):
        serializer.parse(too_big)
    with pytest.raises(FrameError, match="exceeds"):
        serializer.parse(too_big.encode())
    with pytest.raises(FrameError, match="exceeds"):
        serializer.parse('{"p": "' + "é" * 40_000 + '"}')  # 40k chars, 80k UTF-8 bytes


def test_frame_limit_is_configurable() -> None:
    browser = BrowserSerializer(max_frame_bytes=1024)
    assert browser.parse(bytes(1024)) == [Audio(bytes(1024))]
    with pytest.raises(FrameError, match="1026 bytes exceeds the 1024-byte limit"):
        browser.parse(bytes(1026))


@pytest.mark.parametrize("make", SERIALIZERS)
def test_deeply_nested_json_is_a_frame_error(make: type[MediaSerializer]) -> None:
    with pytest.raises(FrameError):
        make().parse("[" * 30_000 + "]" * 30_000)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
KEYS = ["event", "kind", "type", "media", "start", "mediaFormat", "audioData", "audioMetadata"]
NAMES = ["media", "start", "mark", "dtmf", "stop", "AudioData", "AudioMetadata", "DtmfData"]
shaped = st.dictionaries(
    st.sampled_from(KEYS),
    st.sampled_from(NAMES)
    | json_values
    | st.dictionaries(
        st.sampled_from(
            ["payload", "data", "encoding", "sampleRate", "streamSid", "callSid", "name", "digit"]
        ),
        json_values,
    ),
)
frames = st.binary(max_size=64) | st.text(max_size=64) | json_values.map(json.dumps)
frames |= shaped.map(json.dumps)


@settings(max_examples=300, deadline=None)
@given(frame=frames)
def test_parse_raises_nothing_but_frame_error(frame: str | bytes) -> None:
    for make in SERIALIZERS:
        with contextlib.suppress(FrameError):
            make().parse(frame)


def test_a_refused_start_frame_leaves_no_state_behind() -> None:
    twilio = TwilioSerializer()
    with pytest.raises(FrameError, match="'callSid'"):
        twilio.parse(_without(TWILIO_START, "start", "callSid"))
    assert twilio.stream_sid is None

    acs = AcsSerializer()
    with pytest.raises(FrameError, match="'subscriptionId'"):
        acs.parse(acs_metadata(24000, subscriptionId=None))
    pcm = tone(16000)
    assert acs.parse(acs_audio(pcm)) == [Audio(pcm)]  # still 16 kHz
