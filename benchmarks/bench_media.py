"""Benchmark the gateway's per-frame audio work; prints figures, asserts nothing.

    python -m benchmarks.bench_media [--seconds 60]

For one Twilio call stream, every 20 ms: parse the inbound `media` frame (base64 μ-law 8 kHz),
decode and upsample to PCM16 16 kHz, run the VAD/endpointer; and build one outbound frame
(downsample, μ-law encode, base64 JSON). The figure is the share of one core a call costs
(target ≤ 1%), against a baseline in the same run: base64 and JSON alone, the floor of any
gateway speaking Twilio's format. Network and the event loop are not included.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import statistics
import time

from media_gateway.media_events import Audio
from media_gateway.serializers import TwilioSerializer
from media_gateway.vad import Endpointer
from runtime.audio import ulaw_encode

FRAME_MS = 20


def caller_frames(seconds: int) -> list[str]:
    """Twilio `media` messages of a caller alternating 1 s of voiced sound and 1 s of silence."""
    frames = []
    for n in range(seconds * 1000 // FRAME_MS):
        voiced = (n // 50) % 2 == 0
        samples = [
            int(6000 * math.sin(2 * math.pi * 180 * (n * 160 + i) / 8000)) if voiced else 0
            for i in range(160)
        ]
        pcm = b"".join(s.to_bytes(2, "little", signed=True) for s in samples)
        payload = base64.b64encode(ulaw_encode(pcm)).decode()
        frames.append(
            json.dumps(
                {
                    "event": "media",
                    "streamSid": "MZ1",
                    "media": {
                        "track": "inbound",
                        "chunk": str(n),
                        "timestamp": str(n * 20),
                        "payload": payload,
                    },
                }
            )
        )
    return frames


def run(frames: list[str], reply_pcm: bytes) -> float:
    serializer = TwilioSerializer()
    serializer.parse(
        json.dumps(
            {
                "event": "start",
                "start": {
                    "streamSid": "MZ1",
                    "callSid": "CA1",
                    "accountSid": "AC1",
                    "tracks": ["inbound"],
                    "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                    "customParameters": {},
                },
                "streamSid": "MZ1",
            }
        )
    )
    endpointer = Endpointer()
    start = time.process_time()
    for frame in frames:
        for event in serializer.parse(frame):
            if isinstance(event, Audio):
                endpointer.feed(event.pcm16_16k)
        serializer.audio(reply_pcm)
    return time.process_time() - start


def baseline(frames: list[str], reply_pcm: bytes) -> float:
    start = time.process_time()
    for frame in frames:
        message = json.loads(frame)
        base64.b64decode(message["media"]["payload"])
        json.dumps(
            {
                "event": "media",
                "streamSid": "MZ1",
                "media": {"payload": base64.b64encode(reply_pcm[:160]).decode()},
            }
        )
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="audio per run")
    args = parser.parse_args()
    frames = caller_frames(args.seconds)
    reply_pcm = bytes(640)  # 20 ms of PCM16 16 kHz
    costs = [run(frames, reply_pcm) for _ in range(5)]
    floors = [baseline(frames, reply_pcm) for _ in range(5)]
    share = statistics.median(costs) / args.seconds * 100
    floor = statistics.median(floors) / args.seconds * 100
    print(
        f"one Twilio stream, both directions, VAD on: {share:.2f}% of a core "
        f"(worst of 5 runs {max(costs) / args.seconds * 100:.2f}%), target <= 1%"
    )
    print(f"baseline (base64 + JSON only): {floor:.2f}% of a core; ratio {share / floor:.1f}x")
    print(f"calls one core carries at this cost: {100 / share:.0f}")


if __name__ == "__main__":
    main()
