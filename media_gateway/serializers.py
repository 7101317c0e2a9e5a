"""The three wire formats the gateway speaks, each behind `media_events.MediaSerializer`.
Pure: no sockets.

* Twilio Media Streams: JSON text, μ-law 8 kHz audio in base64.
* Azure Communication Services bidirectional media streaming: JSON text, PCM16 16/24 kHz base64.
* Browser (Baton's own protocol, typed in `contracts.gateway_events`): binary frames are PCM16
  mono 16 kHz little-endian audio; text frames are `BrowserFrame`s (`start` must say pcm16 at
  16000 Hz; `ping` becomes ``Control``). Anything else is a ``FrameError``.

Inside the gateway audio is always PCM16 mono 16 kHz. ``parse`` raises nothing but
``FrameError``, so the caller can log and drop one bad frame while the connection carries on.

A serializer belongs to one connection: a transport at another rate keeps one streaming
resampler per direction (`runtime.resampling`), so audio comes out a few milliseconds after it
goes in; ``end_audio`` plays out what the outbound one still holds when a reply ends, and
``clear`` drops it with the rest of the unplayed audio.
"""

from __future__ import annotations

import base64
import json
from typing import ClassVar

import numpy as np
from pydantic import ValidationError

from contracts.gateway_events import (
    ClearEvent,
    DtmfFrame,
    MarkEvent,
    MarkPlayedFrame,
    StartFrame,
    StopFrame,
    browser_frame,
)
from media_gateway.media_events import (
    DEFAULT_MAX_FRAME_BYTES,
    Audio,
    Control,
    Dtmf,
    MarkPlayed,
    MediaEvent,
    MediaSerializer,
    Started,
    Stopped,
)
from media_gateway.wire_fields import FrameError as FrameError  # callers catch it from here
from media_gateway.wire_fields import (
    base64_field,
    browser_frame_error,
    dumps,
    field_of,
    int_field,
    load_json,
    pcm16,
    str_map,
)
from runtime import audio
from runtime.resampling import StreamResampler

GATEWAY_RATE = 16000
_NO_SAMPLES = np.empty(0, dtype=np.float32)


class TwilioSerializer(MediaSerializer):
    """Twilio Media Streams. Remembers the ``streamSid`` from ``start`` for outbound messages.

    Only the ``inbound`` track is caller audio; media on any other track is ignored.
    Building outbound messages before ``start`` raises ``FrameError`` (no streamSid yet).
    """

    name = "twilio"
    # Twilio queues `media` payloads of any length, plays them back to back and drops what it
    # holds on `clear`, so a long message lets no more of a cut reply through; 100 ms rather
    # than 40 sends a fifth of the media, mark and echoed-mark messages per second of reply
    # (each costs the gateway a syscall, a WebSocket frame and a wake-up either way).
    playback_frame_ms = 100
    echoes_marks = True

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        super().__init__(max_frame_bytes=max_frame_bytes)
        self.stream_sid: str | None = None
        self._sid_for: str | None = None  # the streamSid `_sid_json` encodes
        self._sid_json = ""
        self._inbound = StreamResampler(8000, GATEWAY_RATE)
        self._outbound = StreamResampler(GATEWAY_RATE, 8000)

    def _parse(self, message: str | bytes) -> list[MediaEvent]:
        data = load_json(message, self.name)
        event = field_of(data, "event", str, self.name)
        where = f"{self.name} {event}"
        if event == "media":
            media = field_of(data, "media", dict, where)
            payload = base64_field(field_of(media, "payload", str, where), where)
            if media.get("track", "inbound") != "inbound":
                return []
            # μ-law straight to the resampler's float32 and back to bytes once (same bytes as
            # decoding to PCM16 first, one table lookup instead of three conversions).
            pcm = self._inbound.process_samples(audio.ulaw_decode_samples(payload)).tobytes()
            return [Audio(pcm)] if pcm else []
        if event == "connected":
            return []
        if event == "start":
            start = field_of(data, "start", dict, where)
            fmt = field_of(start, "mediaFormat", dict, where)
            encoding = field_of(fmt, "encoding", str, where)
            rate = int_field(fmt, "sampleRate", where)
            channels = fmt.get("channels", 1)
            if (encoding, rate, channels) != ("audio/x-mulaw", 8000, 1):
                raise FrameError(
                    f"{where}: unsupported media format {encoding} {rate} Hz {channels} channel(s);"
                    " expected audio/x-mulaw 8000 Hz mono"
                )
            started = Started(
                call_id=field_of(start, "callSid", str, where),
                stream_id=field_of(start, "streamSid", str, where),
                sample_rate=rate,
                encoding=encoding,
                custom_parameters=str_map(start, "customParameters", where),
            )
            self.stream_sid = started.stream_id  # only once the whole start frame checked out
            return [started]
        if event == "mark":
            return [MarkPlayed(field_of(field_of(data, "mark", dict, where), "name", str, where))]
        if event == "dtmf":
            return [Dtmf(field_of(field_of(data, "dtmf", dict, where), "digit", str, where))]
        if event == "stop":
            return [Stopped()]
        raise FrameError(f"{self.name}: unknown event {event!r}")

    def _sid(self) -> str:
        """The streamSid as a JSON string, for the messages built by hand below."""
        if self.stream_sid is None:
            raise FrameError(f"{self.name}: no streamSid yet; outbound messages need a start event")
        if self._sid_for != self.stream_sid:
            self._sid_for, self._sid_json = self.stream_sid, json.dumps(self.stream_sid)
        return self._sid_json

    def audio(self, pcm16_16k: bytes) -> list[str | bytes]:
        """One ``media`` message: 16 kHz PCM downsampled to 8 kHz, μ-law, base64.

        Twilio plays ``media`` payloads of any length back to back, so one message carries
        whatever the resampler finished (none at all while it fills, at a stream's start)."""
        sid = self._sid()
        samples = np.frombuffer(pcm16(pcm16_16k, self.name), dtype="<i2").astype(np.float32)
        return self._media(sid, self._outbound.process_samples(samples))

    def end_audio(self) -> list[str | bytes]:
        """The last few milliseconds of a reply, which the resampler was holding."""
        return self._media(self._sid(), self._outbound.process_samples(_NO_SAMPLES, last=True))

    def _media(self, sid: str, samples_8k: np.ndarray) -> list[str | bytes]:
        if not len(samples_8k):
            return []
        payload = base64.b64encode(audio.ulaw_encode_samples(samples_8k)).decode("ascii")
        # What `dumps` makes of the message, built by hand: `media` and `mark` go out with
        # every playback frame of every call, and json.dumps cost ~8 µs each (base64 needs no
        # escaping).
        return ['{"event":"media","streamSid":' + sid + ',"media":{"payload":"' + payload + '"}}']

    def clear(self) -> list[str | bytes]:
        """One ``clear`` message: Twilio drops its buffered outbound audio (and the resampler
        what it held of it)."""
        self._sid()  # raises before a start, as every outbound message does
        message = dumps({"event": "clear", "streamSid": self.stream_sid})
        self._outbound.reset()
        return [message]

    def mark(self, name: str) -> list[str | bytes]:
        """One ``mark`` message; Twilio echoes it back once the audio before it has played."""
        return [
            '{"event":"mark","streamSid":'
            + self._sid()
            + ',"mark":{"name":'
            + json.dumps(name)
            + "}}"
        ]


class AcsSerializer(MediaSerializer):
    """Azure Communication Services bidirectional media streaming (PCM16 mono 16 or 24 kHz).

    The wire rate comes from ``AudioMetadata`` (until then, ``sample_rate`` given here).
    Frames flagged ``silent`` are delivered as digital silence of the same length rather than
    skipped, so downstream timing (VAD, end-of-speech) keeps counting; a silent frame with no
    ``data`` uses the metadata ``length`` and is skipped if that is unknown. ACS has no marks.
    """

    name = "acs"
    RATES: ClassVar[frozenset[int]] = frozenset({16000, 24000})
    # ACS buffers outbound AudioData of any length and drops it on StopAudio: as for Twilio.
    playback_frame_ms = 100

    def __init__(
        self, *, sample_rate: int = 16000, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ) -> None:
        super().__init__(max_frame_bytes=max_frame_bytes)
        if sample_rate not in self.RATES:
            raise ValueError(f"ACS streams PCM at 16000 or 24000 Hz, not {sample_rate}")
        self.sample_rate = sample_rate
        self.frame_length: int | None = None
        self._inbound, self._outbound = _resamplers(sample_rate)

    def _parse(self, message: str | bytes) -> list[MediaEvent]:
        data = load_json(message, self.name)
        kind = field_of(data, "kind", str, self.name)
        where = f"{self.name} {kind}"
        if kind == "AudioData":
            body = field_of(data, "audioData", dict, where)
            silent = body.get("silent") is True
            if silent and body.get("data") is None:
                if self.frame_length is None:
                    return []
                pcm = bytes(self.frame_length)
            else:
                pcm = pcm16(base64_field(field_of(body, "data", str, where), where), where)
                if silent:
                    pcm = bytes(len(pcm))
            if self._inbound is not None:
                pcm = self._inbound.process(pcm)
            return [Audio(pcm)] if pcm else []
        if kind == "AudioMetadata":
            meta = field_of(data, "audioMetadata", dict, where)
            encoding = field_of(meta, "encoding", str, where)
            rate = int_field(meta, "sampleRate", where)
            channels = meta.get("channels", 1)
            if encoding.upper() != "PCM" or rate not in self.RATES or channels != 1:
                raise FrameError(
                    f"{where}: unsupported audio format {encoding} {rate} Hz {channels} channel(s);"
                    " expected PCM 16000 or 24000 Hz mono"
                )
            started = Started(
                call_id=None,  # ACS puts the call connection id in the WebSocket headers
                stream_id=field_of(meta, "subscriptionId", str, where),
                sample_rate=rate,
                encoding="PCM",
            )
            length = meta.get("length")
            valid_length = isinstance(length, int) and length > 0 and length % 2 == 0
            if rate != self.sample_rate:
                self._inbound, self._outbound = _resamplers(rate)
            self.sample_rate = rate
            self.frame_length = length if valid_length else None
            return [started]
        if kind == "DtmfData":
            return [Dtmf(field_of(field_of(data, "dtmfData", dict, where), "data", str, where))]
        raise FrameError(f"{self.name}: unknown kind {kind!r}")

    def audio(self, pcm16_16k: bytes) -> list[str | bytes]:
        """One ``AudioData`` message at the negotiated rate (none while a resampler fills)."""
        pcm = pcm16(pcm16_16k, self.name)
        return self._audio_data(pcm if self._outbound is None else self._outbound.process(pcm))

    def end_audio(self) -> list[str | bytes]:
        """The last few milliseconds of a reply, which the resampler was holding."""
        return [] if self._outbound is None else self._audio_data(self._outbound.flush())

    @staticmethod
    def _audio_data(pcm: bytes) -> list[str | bytes]:
        if not pcm:
            return []
        payload = base64.b64encode(pcm).decode("ascii")
        return ['{"kind":"AudioData","audioData":{"data":"' + payload + '"}}']  # as `dumps` would

    def clear(self) -> list[str | bytes]:
        """One ``StopAudio`` message: ACS drops the audio it has queued for playback."""
        if self._outbound is not None:
            self._outbound.reset()
        return [dumps({"kind": "StopAudio", "audioData": None, "stopAudio": {}})]

    def mark(self, name: str) -> list[str | bytes]:
        """ACS has no playback marks, so nothing is sent."""
        return []


def _resamplers(rate: int) -> tuple[StreamResampler | None, StreamResampler | None]:
    """(inbound, outbound) resamplers for a wire at `rate`; none when it is the gateway's."""
    if rate == GATEWAY_RATE:
        return None, None
    return StreamResampler(rate, GATEWAY_RATE), StreamResampler(GATEWAY_RATE, rate)


class BrowserSerializer(MediaSerializer):
    """Baton's browser protocol: binary PCM16 mono 16 kHz audio plus JSON control messages."""

    name = "browser"
    # The page queues each chunk behind the last, whatever its length.
    playback_frame_ms = 40

    def _parse(self, message: str | bytes) -> list[MediaEvent]:
        if isinstance(message, bytes):
            return [Audio(pcm16(message, f"{self.name} audio"))]
        data = load_json(message, self.name)
        try:
            frame = browser_frame.validate_python(data)
        except ValidationError as error:
            raise browser_frame_error(error, self.name) from None
        if isinstance(frame, StartFrame):
            if frame.sample_rate != GATEWAY_RATE or frame.encoding != "pcm16":
                raise FrameError(
                    f"{self.name} start: unsupported format {frame.encoding!r} at "
                    f"{frame.sample_rate!r} Hz; expected pcm16 at 16000 Hz"
                )
            return [
                Started(
                    call_id=frame.call_id,
                    stream_id=frame.stream_id,
                    sample_rate=GATEWAY_RATE,
                    encoding="pcm16",
                    custom_parameters=dict(frame.parameters),
                )
            ]
        if isinstance(frame, StopFrame):
            return [Stopped()]
        if isinstance(frame, DtmfFrame):
            return [Dtmf(frame.digits)]
        if isinstance(frame, MarkPlayedFrame):
            return [MarkPlayed(frame.name)]
        return [Control(frame.type, {k: v for k, v in data.items() if k != "type"})]

    def audio(self, pcm16_16k: bytes) -> list[str | bytes]:
        """The audio itself as one binary frame."""
        return [bytes(pcm16(pcm16_16k, self.name))]

    def clear(self) -> list[str | bytes]:
        """`ClearEvent`: the page drops audio it has queued."""
        return [ClearEvent().model_dump_json()]

    def mark(self, name: str) -> list[str | bytes]:
        """`MarkEvent`: echoed by the page once prior audio has played."""
        return [MarkEvent(name=name).model_dump_json()]
