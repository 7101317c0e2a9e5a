"""Audio and message builders shared by the serializer tests."""

from __future__ import annotations

import base64
import json
import math
import struct
from typing import Any

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


def without(message: dict[str, Any], *path: str) -> str:
    copy = json.loads(dumps(message))
    target = copy
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return dumps(copy)


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
