"""The browser serializer, and what every serializer does with oversized, nested or malformed
frames."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from media_gateway.media_events import (
    Audio,
    Control,
    Dtmf,
    MarkPlayed,
    MediaSerializer,
    Started,
    Stopped,
)
from media_gateway.serializers import (
    AcsSerializer,
    BrowserSerializer,
    FrameError,
    TwilioSerializer,
)
from tests.unit.serializer_frames import (
    TWILIO_START,
    acs_audio,
    acs_metadata,
    dumps,
    tone,
    without,
)

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
        twilio.parse(without(TWILIO_START, "start", "callSid"))
    assert twilio.stream_sid is None

    acs = AcsSerializer()
    with pytest.raises(FrameError, match="'subscriptionId'"):
        acs.parse(acs_metadata(24000, subscriptionId=None))
    pcm = tone(16000)
    assert acs.parse(acs_audio(pcm)) == [Audio(pcm)]  # still 16 kHz
