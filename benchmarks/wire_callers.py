"""Callers speaking each transport's wire format to a real gateway, for the voice bench's cost
measurement: Baton's browser protocol, Twilio Media Streams (μ-law 8 kHz in base64 JSON, with
`mark`s echoed as Twilio does) and ACS bidirectional media streaming (PCM16 24 kHz base64 JSON).

Caller audio is encoded once per run (`Wire.encode`), so a caller's send is one prepared
message every 20 ms and the bench process spends little of the shared machine. Playback heard
is counted as its length at 16 kHz PCM16 (`Caller.audio`), whatever the wire's rate, so
figures compare across protocols without decoding anything.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from benchmarks.voice_stack import Caller, Stack, hang_up, open_caller
from media_gateway.tokens import issue_token
from media_gateway.vad import FRAME_BYTES
from runtime import audio
from runtime.resampling import StreamResampler

Protocol = Literal["browser", "twilio", "acs", "acs16"]
PROTOCOLS: tuple[Protocol, ...] = ("browser", "twilio", "acs", "acs16")
#: ACS streams at 16 or 24 kHz: "acs" is 24 kHz, the rate that exercises the gateway's
#: resamplers; "acs16" is ACS's default 16 kHz, the gateway's own rate.
ACS_RATE = 24000
_SID = "MZ" + "0" * 32  # a Twilio stream id's length; the gateway reads it only from `start`


#: How the gateway's audio messages begin (`media_gateway.serializers`, compact JSON), and
#: the key their base64 audio follows.
_TWILIO_MEDIA, _TWILIO_PAYLOAD = '{"event":"media"', '"payload":"'
_ACS_AUDIO, _ACS_DATA = '{"kind":"AudioData"', '"data":"'


def _payload(message: str, key: str) -> str:
    start = message.index(key) + len(key)
    return message[start : message.index('"', start)]


def _b64_len(text: str) -> int:
    """Bytes a base64 string decodes to, without decoding it."""
    return len(text) * 3 // 4 - (2 if text.endswith("==") else 1 if text.endswith("=") else 0)


@dataclass
class TwilioCaller(Caller):
    """Plays what Twilio would: `media` queued back to back, each `mark` echoed once the audio
    sent before it has played, and every outstanding mark echoed at once on `clear`."""

    stream_sid: str = ""
    _play_end: float = 0.0
    _marks: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    _sequence: int = 0

    async def _read_until_closed(self) -> None:
        async for message in self.ws:
            assert isinstance(message, str)
            if message.startswith(_TWILIO_MEDIA):
                # Most messages are audio: its length is read off the text, not parsed, so
                # this process (one core's share for every stream) keeps up with the gateway.
                ulaw_bytes = _b64_len(_payload(message, _TWILIO_PAYLOAD))
                now = time.monotonic()
                self._play_end = max(now, self._play_end) + ulaw_bytes / 8000
                self.on_audio(bytes(4 * ulaw_bytes))  # 8 kHz μ-law -> 16 kHz PCM16 length
                continue
            event = json.loads(message)
            kind = event.get("event")
            if kind == "mark":
                name = event["mark"]["name"]
                loop = asyncio.get_running_loop()
                self._marks[name] = loop.call_at(
                    max(loop.time(), loop.time() + self._play_end - time.monotonic()),
                    self._echo,
                    name,
                )
            elif kind == "clear":
                self.cleared += 1
                self._play_end = 0.0
                for name, handle in list(self._marks.items()):
                    handle.cancel()
                    self._echo(name)
            self.events.append(event)

    def _echo(self, name: str) -> None:
        self._marks.pop(name, None)
        self._sequence += 1
        message = json.dumps(
            {
                "event": "mark",
                "sequenceNumber": str(self._sequence),
                "streamSid": self.stream_sid,
                "mark": {"name": name},
            }
        )
        task = asyncio.ensure_future(self.ws.send(message))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a closed socket


@dataclass
class AcsCaller(Caller):
    """Counts `AudioData` heard (at `rate`) and `StopAudio` (the gateway's clear)."""

    rate: int = ACS_RATE

    async def _read_until_closed(self) -> None:
        async for message in self.ws:
            assert isinstance(message, str)
            if message.startswith(_ACS_AUDIO):
                pcm_bytes = _b64_len(_payload(message, _ACS_DATA))
                self.on_audio(bytes(pcm_bytes * 16000 // self.rate))
                continue
            event = json.loads(message)
            kind = event.get("kind")
            if kind == "StopAudio":
                self.cleared += 1
            self.events.append(event)


@dataclass(frozen=True)
class Wire:
    """One transport as the bench speaks it."""

    protocol: Protocol

    @property
    def acs_rate(self) -> int:
        return 16000 if self.protocol == "acs16" else ACS_RATE

    def encode(self, pcm16_16k: bytes) -> list[str | bytes]:
        """A continuous 16 kHz stream as this wire's 20 ms caller messages."""
        frames = len(pcm16_16k) // FRAME_BYTES
        if self.protocol == "browser":
            return [pcm16_16k[i * FRAME_BYTES : (i + 1) * FRAME_BYTES] for i in range(frames)]
        if self.protocol == "twilio":
            ulaw = audio.ulaw_encode(StreamResampler(16000, 8000).process(pcm16_16k, last=True))
            return [_twilio_media(n, ulaw[n * 160 : (n + 1) * 160]) for n in range(frames)]
        rate = self.acs_rate
        pcm = pcm16_16k
        if rate != 16000:
            pcm = StreamResampler(16000, rate).process(pcm16_16k, last=True)
        size = 20 * rate // 1000 * 2
        return [_acs_audio(n, pcm[n * size : (n + 1) * size]) for n in range(frames)]

    async def open(self, stack: Stack) -> Caller:
        if self.protocol == "browser":
            return await open_caller(stack)
        call_id = f"bench-{uuid.uuid4().hex[:10]}"
        token = issue_token(stack.secret, call_id)
        path = "acs" if self.protocol == "acs16" else self.protocol
        base = f"ws://127.0.0.1:{stack.http_port}/media/{path}"
        if self.protocol == "twilio":
            twilio = TwilioCaller(
                await connect(base, max_size=2**20), call_id, stream_sid="MZ" + uuid.uuid4().hex
            )
            twilio.start_reading()
            await twilio.ws.send(json.dumps({"event": "connected", "protocol": "Call"}))
            await twilio.ws.send(_twilio_start(call_id, token, twilio.stream_sid))
            return twilio
        url = f"{base}?call_id={call_id}&token={token}"
        acs = AcsCaller(await connect(url, max_size=2**20), call_id, rate=self.acs_rate)
        acs.start_reading()
        await acs.ws.send(json.dumps(_acs_metadata(self.acs_rate)))
        return acs

    async def hang_up(self, caller: Caller) -> None:
        """End the call (not just the socket) where the wire can say so; ACS, which has no stop
        message, leaves the call to the gateway's reconnect grace."""
        if self.protocol == "browser":
            await hang_up(caller)
            return
        if self.protocol == "twilio":
            with contextlib.suppress(ConnectionClosed):
                await caller.ws.send(json.dumps({"event": "stop", "stop": {"callSid": "CA"}}))
        await caller.close()


def _twilio_start(call_id: str, token: str, stream_sid: str) -> str:
    start = {
        "streamSid": stream_sid,
        "accountSid": "AC" + "0" * 32,
        "callSid": "CA" + uuid.uuid4().hex,
        "tracks": ["inbound"],
        "customParameters": {"call_id": call_id, "token": token},
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
    }
    return json.dumps({"event": "start", "sequenceNumber": "1", "start": start})


def _twilio_media(n: int, ulaw: bytes) -> str:
    """A `media` message as Twilio sends it (every field, so parsing costs what it would)."""
    media = {
        "track": "inbound",
        "chunk": str(n + 1),
        "timestamp": str(20 * n),
        "payload": base64.b64encode(ulaw).decode("ascii"),
    }
    return json.dumps(
        {"event": "media", "sequenceNumber": str(n + 2), "media": media, "streamSid": _SID}
    )


def _acs_metadata(rate: int = ACS_RATE) -> dict[str, object]:
    return {
        "kind": "AudioMetadata",
        "audioMetadata": {
            "subscriptionId": str(uuid.uuid4()),
            "encoding": "PCM",
            "sampleRate": rate,
            "channels": 1,
            "length": 20 * rate // 1000 * 2,
        },
    }


def _acs_audio(n: int, pcm: bytes) -> str:
    body = {
        "timestamp": f"2026-01-01T00:00:{n // 50 % 60:02d}.{n % 50 * 20:03d}Z",
        "participantRawID": "8:acs:bench",
        "data": base64.b64encode(pcm).decode("ascii"),
        "silent": False,
    }
    return json.dumps({"kind": "AudioData", "audioData": body})
