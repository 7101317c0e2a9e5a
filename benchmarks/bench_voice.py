"""Benchmark voice calls through the real gateway; prints figures, asserts nothing.

    python -m benchmarks.bench_voice [--calls 12] [--streams 10,25,50]
        [--protocol browser|twilio|acs] [--talking] [--noise-dbfs -54.7]

Everything is real and on loopback: the embedded Temporal dev server, one `baton worker`
process (all queues, offline chat and speech), one `baton gateway` process, and callers in this
process speaking the browser protocol with audio synthesized by the offline voice.

* Barge-in: caller speech onset (first speech frame sent) -> the gateway's `clear` arrives
  (playback stopped), and -> the workflow recorded the barge-in (the item's own timestamp).
* Response: end of caller speech -> first reply audio byte, split into endpointing, STT,
  orchestration, LLM and TTS first byte using the call's workflow history. The gateway hands
  the utterance over provisionally at a 60 ms pause, so STT overlaps the endpointer's wait.
* Gateway cost: share of a core the gateway process uses per call stream (its CPU clock, over
  two-second windows; the ratios are against the 1% target) with 20 ms frames both ways all the
  while: callers send quiet room noise the VAD classifies, and replies play back without a
  break, this process standing in for the speech worker once a call has greeted (`_speak`).
  Each window says how many streams heard audio and how much; the spacing of playback frames
  at the caller shows pacing holds under load. `--protocol` speaks that transport's wire
  format (`benchmarks.wire_callers`: Twilio μ-law 8 kHz with echoed marks, ACS 24 kHz, so the
  gateway resamples both ways, or `acs16`, ACS at its default 16 kHz). `--talking`: callers
  speak half the time instead, so the VAD runs Silero, barge-ins cut the reply playing
  (`--cut-at-once`: no words will come) and the next one plays, and utterances are handed to
  the workflow; the worker then serves no speech queue (no greeting, no recognition: see
  `main`), and barge-in and response time are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import secrets
import signal
import statistics
import struct
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from temporalio.client import Client

from activities.media_channels import MediaChannels
from baton.call_client import CallSession
from benchmarks.stats import line, pct
from benchmarks.voice_stack import (
    Caller,
    Stack,
    first_audio,
    hang_up,
    open_caller,
    played_out,
    stream,
)
from benchmarks.wire_callers import PROTOCOLS, Wire
from contracts.calls import CallInput
from contracts.proto import media_pb2
from media_gateway.vad import BYTES_PER_MS, FRAME_BYTES, FRAME_SAMPLES
from runtime.temporal_client import connect
from tests.gateway.conftest import speech_pcm

BARGE_IN = "Wait, wait, I have another question."
REQUEST = "What is my balance?"
#: About 14 s of speech, played again and again to every stream while gateway cost is measured.
REPLY = 3 * "While your account loads, please keep your card and security questions nearby. "
#: What talking callers say, each sentence followed by as long again of room noise.
TALK = (
    "Hi, I would like to check the balance on my checking account please.",
    "Yes, that is right.",
    "Can you also tell me when my last card payment went through?",
    "Okay, thank you.",
)


async def barge_in(stack: Stack, client: Client, calls: int) -> None:
    words = await speech_pcm(BARGE_IN)
    stopped, recorded = [], []
    for _ in range(calls):
        caller = await open_caller(stack)
        await first_audio(caller)
        await asyncio.sleep(1.0)  # a second into the greeting
        clears = caller.cleared
        onset = time.time()  # the first frame leaves with the task's first step
        sender = asyncio.create_task(stream(caller, words, silence_ms=600))
        async with asyncio.timeout(10):
            while caller.cleared == clears:
                await asyncio.sleep(0.001)
        stopped.append((time.time() - onset) * 1000)
        session = CallSession(client, CallInput(call_id=caller.call_id))
        items = await session.wait_for(lambda t: any(i["type"] == "barge_in" for i in t))
        at = next(i["at"] for i in items if i["type"] == "barge_in")
        recorded.append((datetime.fromisoformat(str(at)).timestamp() - onset) * 1000)
        await sender
        await hang_up(caller)
    print("barge-in (speech onset ->)")
    line("playback stopped at the gateway", stopped)
    line("workflow recorded the barge-in", recorded)


def activity_spans(history: Any) -> dict[str, list[tuple[float, float]]]:
    """Activity type -> (scheduled, completed or 0.0 if still running), wall-clock seconds."""
    index: dict[int, tuple[str, int]] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    for event in history.events:
        at = event.event_time.seconds + event.event_time.nanos / 1e9
        if event.HasField("activity_task_scheduled_event_attributes"):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            spans.setdefault(name, []).append((at, 0.0))
            index[event.event_id] = (name, len(spans[name]) - 1)
        elif event.HasField("activity_task_completed_event_attributes"):
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            name, position = index[scheduled]
            spans[name][position] = (spans[name][position][0], at)
    return spans


async def response_time(stack: Stack, client: Client, calls: int) -> dict[str, list[float]]:
    request = await speech_pcm(REQUEST)
    names = ("total", "endpointing", "stt", "stt done", "orchestration", "reply", "llm")
    parts: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(calls):
        caller = await open_caller(stack)
        session = CallSession(client, CallInput(call_id=caller.call_id))
        await first_audio(caller)  # the greeting is playing
        await played_out(caller)  # let the greeting finish: this measures a turn, not a barge-in
        heard = len(caller.audio)
        utterances = sum(1 for e in caller.events if e["type"] == "utterance")
        ended: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        sender = asyncio.create_task(stream(caller, request, silence_ms=1500, ended=ended))
        speech_end = await ended
        async with asyncio.timeout(10):
            while sum(1 for e in caller.events if e["type"] == "utterance") == utterances:
                await asyncio.sleep(0.001)
        endpointed = time.time()
        reply_at = await first_audio(caller, after=heard)
        await sender
        spans = activity_spans(await session.handle.fetch_history())
        stt = spans.get("transcribe_segment", [(0.0, 0.0)])[-1]
        llm = spans.get("generate_agent_reply", [(0.0, 0.0)])[-1]
        parts["total"].append((reply_at - speech_end) * 1000)
        parts["endpointing"].append((endpointed - speech_end) * 1000)
        parts["stt"].append((stt[1] - stt[0]) * 1000)
        parts["stt done"].append((stt[1] - speech_end) * 1000)
        # The reply's TTS activity starts with its model call and speaks the first sentence
        # as soon as it is written, so from there on model and speech overlap.
        parts["orchestration"].append((llm[0] - stt[1]) * 1000)
        parts["reply"].append((reply_at - llm[0]) * 1000)
        parts["llm"].append((llm[1] - llm[0]) * 1000)
        await hang_up(caller)
    print("end of caller speech -> first reply audio byte")
    labels = {
        "endpointing": "endpointing (utterance final)",
        "stt": "stt (starts at the 60 ms pause)",
        "stt done": "stt done, after end of speech",
        "orchestration": "orchestration (stt done -> final model call, via the tool)",
        "reply": "model call -> first audio (llm, tts overlap)",
        "llm": "llm activity, whole reply (overlaps)",
    }
    for name, samples in parts.items():
        line(labels.get(name, name), samples)
    return parts


def cpu_ns(pid: int) -> int:
    """CPU time of every thread `pid` ever ran, in ns, from its process CPU-time clock (the
    clockid clock_getcpuclockid gives, CPUCLOCK_SCHED): exact, where /proc/<pid>/stat counts
    10 ms ticks, and unlike summing task/*/schedstat it keeps the time of threads that ended."""
    return time.clock_gettime_ns((~pid << 3) | 2)


def room_noise(seconds: float = 1.0, rms: float = 60.0, seed: int = 7) -> bytes:
    """Varied quiet noise, about -55 dBFS: the VAD classifies every frame and, the level being
    under its -50 dBFS gate, finds no speech (which would pause or cut the playback)."""
    rng = random.Random(seed)
    samples = round(seconds * 16000) // FRAME_SAMPLES * FRAME_SAMPLES
    return struct.pack(f"<{samples}h", *(round(rng.gauss(0, rms)) for _ in range(samples)))


async def talking(rms: float) -> bytes:
    """Caller speech half the time: each sentence, then as long again of room noise (at least
    the endpointer's wait), so the VAD (Silero where the gate opens) hears speech, ends it and
    the gateway hands an utterance over, over and over."""
    pcm = b""
    for n, sentence in enumerate(TALK):
        speech = await speech_pcm(sentence)
        speech = speech[: len(speech) // FRAME_BYTES * FRAME_BYTES]
        quiet = max(len(speech), 1000 * BYTES_PER_MS) / (16000 * 2)
        pcm += speech + room_noise(quiet, rms, seed=n)
    return pcm


async def until_idle(stack: Stack) -> None:
    """Until the gateway holds no call: what a count measures is that count's calls only."""
    url = f"http://127.0.0.1:{stack.http_port}/healthz"
    async with asyncio.timeout(60):  # an ACS call, with no stop message, ends after the grace
        while True:
            with await asyncio.to_thread(urllib.request.urlopen, url, timeout=5) as response:
                if not json.load(response)["calls"]:
                    return
            await asyncio.sleep(0.2)


async def gateway_cost(
    stack: Stack,
    counts: list[int],
    wire: Wire,
    caller_pcm: bytes,
    *,
    greets: bool = True,
    windows: int = 5,
    secs: float = 2.0,
) -> None:
    """Per call stream share of a core, every caller sending `caller_pcm` (looped, each from
    its own offset) in `wire`'s format and hearing replies all the while."""
    print(f"gateway CPU per call stream ({wire.protocol}; {windows} x {secs:g} s windows)")
    pid = stack.gateway_pid
    await until_idle(stack)
    # A gateway started a moment ago is still finishing its start (3% of a core in its first
    # 2 s against 0.04-0.17% after, measured): let it settle before it counts as idle.
    await asyncio.sleep(secs)
    cpu = cpu_ns(pid)
    await asyncio.sleep(secs)
    print(f"  idle gateway (no calls): {(cpu_ns(pid) - cpu) / 1e7 / secs:.2f}% of a core")
    messages, reply = wire.encode(caller_pcm), await speech_pcm(REPLY)
    for count in counts:
        callers = [await wire.open(stack) for _ in range(count)]
        shares, playing, heard, clears = [], [], [], []
        load = os.getloadavg()[0]
        async with both_ways(stack, wire, callers, messages, reply, greets=greets):
            began, seen = time.monotonic(), [len(c.events) for c in callers]
            for _ in range(windows):
                audio = [len(c.audio) for c in callers]
                cleared = sum(c.cleared for c in callers)
                cpu, start = cpu_ns(pid), time.monotonic()
                await asyncio.sleep(secs)
                elapsed = time.monotonic() - start
                shares.append((cpu_ns(pid) - cpu) / 1e9 / elapsed / count * 100)
                got = [len(c.audio) - n for c, n in zip(callers, audio, strict=True)]
                playing.append(100 * sum(1 for n in got if n) / count)
                heard.append(100 * sum(got) / (count * elapsed * 1000 * BYTES_PER_MS))
                clears.append((sum(c.cleared for c in callers) - cleared) / count / elapsed * 60)
            ended = time.monotonic()
            load = max(load, os.getloadavg()[0])
            minutes = (ended - began) / 60
            # The browser page is told of each utterance handed over; phone transports are not.
            utterances = sum(
                1
                for c, n in zip(callers, seen, strict=True)
                for e in c.events[n:]
                if e.get("type") == "utterance"
            ) / (count * minutes)
        gaps = [
            (b - a) * 1000
            for c in callers
            for a, b in itertools.pairwise(c.arrivals)
            # One pacing tick's messages arrive together: a frame, and the sliver the playback
            # clock gained past it.
            if began <= a and b <= ended and b - a > 0.001
        ]
        p50, p95 = statistics.median(shares), pct(shares, 0.95)
        print(
            f"  {count:4d} streams: per call p50 {p50:5.2f}% p95 {p95:5.2f}% of a core "
            f"(target 1%: ratio p50 {p50:4.2f}, p95 {p95:4.2f}); load average up to {load:.1f}"
            f"\n{'':8}playback per window: streams hearing audio "
            f"{' '.join(f'{p:.0f}%' for p in playing)}, audio heard "
            f"{min(heard):.0f}-{max(heard):.0f}% of real time; frame gap p50 "
            f"{statistics.median(gaps):.1f} ms p95 {pct(gaps, 0.95):.1f} ms\n{'':8}per "
            f"call-minute: {statistics.mean(clears):.1f} clears (barge-in pauses and cuts)"
            + (f", {utterances:.1f} utterances handed over" if wire.protocol == "browser" else "")
        )
        await until_idle(stack)


@contextlib.asynccontextmanager
async def both_ways(
    stack: Stack,
    wire: Wire,
    callers: list[Caller],
    messages: list[str | bytes],
    reply: bytes,
    *,
    greets: bool,
) -> AsyncIterator[None]:
    """Every caller sends its audio and hears replies throughout the block; hung up after."""
    tasks: list[asyncio.Task[None]] = []
    try:
        channels = MediaChannels()  # as a speech worker dials: the media plane's secret and TLS
        try:
            try:
                stub = channels.stub(stack.media_address)
                if greets:
                    # Each greeting plays out first: how a turn ends and a reply starts
                    # (timeline queries and all) is a per-call event, and these windows
                    # measure streaming.
                    await asyncio.gather(*(first_audio(c, timeout=60) for c in callers))
                    async with asyncio.timeout(60):
                        await asyncio.gather(*(played_out(c) for c in callers))
                else:
                    await attached(stack, len(callers))
                rng = random.Random(11)  # callers start apart in the audio, as calls do
                tasks += [
                    asyncio.create_task(_send(c, messages, rng.randrange(len(messages))))
                    for c in callers
                ]
                tasks += [asyncio.create_task(_speak(stub, c.call_id, reply)) for c in callers]
                # Replies flowing, their starts behind us; with no greeting, the calls' own
                # starts (workflow, first timeline) too.
                await asyncio.sleep(2.0 if greets else 6.0)
                yield
                for task in tasks:
                    if task.done():
                        task.result()  # a stream that broke is an error, not a lighter load
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await channels.close()
    finally:
        await asyncio.gather(*(wire.hang_up(c) for c in callers))


async def attached(stack: Stack, count: int) -> None:
    """Until the gateway holds `count` calls (with no greeting to wait for)."""
    url = f"http://127.0.0.1:{stack.http_port}/healthz"
    async with asyncio.timeout(60):
        while True:
            with await asyncio.to_thread(urllib.request.urlopen, url, timeout=5) as response:
                if json.load(response)["calls"] >= count:
                    return
            await asyncio.sleep(0.2)


async def _send(caller: Caller, messages: list[str | bytes], offset: int) -> None:
    start = time.monotonic()
    for n in itertools.count():
        await caller.ws.send(messages[(offset + n) % len(messages)])
        await asyncio.sleep(max(0.0, start + (n + 1) * 0.02 - time.monotonic()))


async def _speak(stub: Any, call_id: str, pcm: bytes) -> None:
    """Stand in for the speech worker: reply after reply over the media plane's PlayReply, in
    100 ms chunks at real time a second ahead, as a streaming voice sends them. The figure is
    then the gateway's alone and comparable across runs (when this was written the offline
    voice resampled in pure Python, about 35x real time, too slow for 50 streams; with soxr
    the voice itself makes ~320x, but a worker's activities and streaming were not measured).
    """

    async def audio(reply_id: str, start: float) -> AsyncIterator[media_pb2.ReplyAudio]:
        for n, at in enumerate(range(0, len(pcm), 100 * BYTES_PER_MS)):
            await asyncio.sleep(max(0.0, start + n * 0.1 - 1.0 - time.monotonic()))
            end = min(len(pcm), at + 100 * BYTES_PER_MS)
            first = {"call_id": call_id, "reply_id": reply_id, "text": REPLY} if n == 0 else {}
            yield media_pb2.ReplyAudio(
                pcm16_16k=pcm[at:end], text_end=len(REPLY) * end // len(pcm), **first
            )

    while True:
        await stub.PlayReply(audio(f"bench/{uuid.uuid4().hex[:10]}", time.monotonic()))


async def main(args: argparse.Namespace) -> None:
    # `timeout` and friends send SIGTERM: cancel, so the `finally` below still stops the stack.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    # Talking callers' utterances are handed over, and recognizing each would take the shared
    # machine's cores (Whisper at 0.4x real time, dozens of streams): no speech worker then,
    # so nothing greets either, and barge-in and response time, which need one, are skipped.
    # With no words ever coming, a reply held for them would stay paused for the word wait;
    # `--cut-at-once` makes each barge-in a real interruption, and the next reply plays.
    worker_args = ("--queues", "calls,llm,tools") if args.talking else ()
    gateway_args = ("--cut-at-once",) if args.talking else ()
    stack = Stack(secrets.token_bytes(32), gateway_args=gateway_args, worker_args=worker_args)
    try:
        await stack.start()
        client = await connect(stack.temporal.address)
        if args.calls and not args.talking:
            await barge_in(stack, client, args.calls)
            await response_time(stack, client, args.calls)
        counts = [int(n) for n in args.streams.split(",") if int(n) > 0]
        if not counts:  # `--streams 0`: barge-in and response time only
            return
        noise_rms = 32768 * 10 ** (args.noise_dbfs / 20)
        pcm = await talking(noise_rms) if args.talking else room_noise(1.0, noise_rms)
        print(f"callers: {'talking half the time' if args.talking else 'quiet room noise'}")
        await gateway_cost(
            stack,
            counts,
            Wire(args.protocol),
            pcm,
            greets=not args.talking,
        )
    finally:
        await stack.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=12, help="barge-in and response calls")
    parser.add_argument("--streams", default="10,25,50", help="0: no gateway cost")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="browser")
    parser.add_argument("--talking", action="store_true", help="callers speak half the time")
    # Above the VAD's -50 dBFS gate (say -40) every window goes to Silero: a noisy line's cost.
    parser.add_argument("--noise-dbfs", type=float, default=-54.7, help="callers' room noise")
    asyncio.run(main(parser.parse_args()))
