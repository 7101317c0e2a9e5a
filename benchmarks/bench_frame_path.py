"""Benchmark the gateway's per-frame work in one process; prints figures, asserts nothing.

    python -m benchmarks.bench_frame_path [--protocol twilio,acs,browser] [--talking] [--runs 5]

What a caller's frame costs the gateway's Python once it is off the socket, without the event
loop, aiohttp or the other processes `bench_voice` needs (so on a loaded machine it varies far
less): each wire's caller messages, exactly as `benchmarks.wire_callers` sends them, through
the transport's serializer (JSON, base64, μ-law, resampling to 16 kHz) and the endpointer with
the gateway's default Silero VAD; and a reply out through the serializer in the transport's
playback frames (resampling to the wire's rate, μ-law, base64, JSON), with a mark and the
peer's echo of it per frame where the peer echoes marks (Twilio). Figures are µs of process
time per 20 ms of call, best of `--runs` passes, and that as % of a core per call. To compare
two commits, run it in a worktree of each, alternately.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from benchmarks.bench_voice import room_noise, talking
from benchmarks.wire_callers import PROTOCOLS, Protocol, Wire, _acs_metadata, _twilio_start
from media_gateway import media_events as events
from media_gateway import serializers as wire
from media_gateway.silero_vad import SileroClassifier
from media_gateway.vad import FRAME_BYTES, Endpointer, EndpointerConfig

NOISE_DBFS = -54.7  # bench_voice's room noise


def serializer(protocol: Protocol) -> events.MediaSerializer:
    """A serializer past its stream's start, as on a live call."""
    if protocol == "twilio":
        twilio = wire.TwilioSerializer()
        twilio.parse(_twilio_start("bench", "token", "MZ" + "0" * 32))
        return twilio
    if protocol in ("acs", "acs16"):
        acs = wire.AcsSerializer()
        acs.parse(json.dumps(_acs_metadata(Wire(protocol).acs_rate)))
        return acs
    return wire.BrowserSerializer()


def one_pass(protocol: Protocol, messages: list[str | bytes], pcm: bytes) -> float:
    """Process time per 20 ms of call: every caller message in, the reply out in the transport's
    playback frames, each with its mark and the peer's echo of it where the peer echoes marks."""
    parser, out = serializer(protocol), serializer(protocol)
    endpointer = Endpointer(EndpointerConfig(pause_ms=120), classifier=SileroClassifier())
    frame = out.playback_frame_ms * FRAME_BYTES // 20
    echo = '{"event":"mark","streamSid":"MZ-x","mark":{"name":"m%d"}}'
    started = time.process_time()
    for message in messages:
        for event in parser.parse(message):
            if isinstance(event, events.Audio):
                endpointer.feed(event.pcm16_16k)
    for n, at in enumerate(range(0, len(pcm), frame)):
        out.audio(pcm[at : at + frame])
        if out.echoes_marks:
            out.mark(f"m{n}")
            parser.parse(echo % n)
    return (time.process_time() - started) / len(messages)


def main(args: argparse.Namespace) -> None:
    rms = 32768 * 10 ** (NOISE_DBFS / 20)
    pcm = asyncio.run(talking(rms)) if args.talking else room_noise(10.0, rms)
    pcm = pcm[: len(pcm) // (5 * FRAME_BYTES) * 5 * FRAME_BYTES]  # whole 100 ms frames
    callers = "talking half the time" if args.talking else "quiet room noise"
    print(f"per-frame gateway work, callers: {callers}, {len(pcm) // FRAME_BYTES} frames")
    for protocol in (p for p in PROTOCOLS if p in args.protocol.split(",")):
        messages = Wire(protocol).encode(pcm)
        one_pass(protocol, messages, pcm)  # warm up: model session, tables, caches
        best = min(one_pass(protocol, messages, pcm) for _ in range(args.runs))
        print(f"  {protocol}: {best * 1e6:6.1f} µs per 20 ms, {best / 0.02 * 100:.2f}% of a core")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", default=",".join(PROTOCOLS))
    parser.add_argument("--talking", action="store_true", help="callers speak half the time")
    parser.add_argument("--runs", type=int, default=5)
    main(parser.parse_args())
