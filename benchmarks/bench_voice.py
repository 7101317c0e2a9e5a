"""Benchmark voice calls through the real gateway; prints figures, asserts nothing.

    python -m benchmarks.bench_voice [--calls 12] [--streams 10,25,50]

Everything is real and on loopback: the embedded Temporal dev server, one `baton worker`
process (all queues, offline chat and speech), one `baton gateway` process, and callers in this
process speaking the browser protocol with audio synthesized by the offline voice.

* Barge-in: caller speech onset (first speech frame sent) -> the gateway's `clear` arrives
  (playback stopped), and -> the workflow recorded the barge-in (the item's own timestamp).
* Response: end of caller speech -> first reply audio byte, split into endpointing, STT,
  orchestration, LLM and TTS first byte using the call's workflow history. The gateway hands
  the utterance over provisionally at a 120 ms pause, so STT overlaps the endpointer's wait.
* Gateway cost: share of a core the gateway process uses per call stream, with 20 ms frames
  both ways and VAD on, from /proc over one-second windows; the ratio is against the 1%
  target, and the spacing of playback frames at the caller shows pacing holds under load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime
from typing import Any

from temporalio.client import Client

from baton.call_client import CallSession
from baton.contracts import CallInput
from baton.temporal_client import connect
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from media_gateway.tokens import issue_token
from media_gateway.vad import FRAME_BYTES
from tests.gateway.conftest import BrowserCaller, speech_pcm

SILENCE = bytes(FRAME_BYTES)
BARGE_IN = "Wait, wait, I have another question."
REQUEST = "What is my balance?"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def line(label: str, samples: list[float], unit: str = "ms") -> None:
    if not samples:
        print(f"  {label:<44} no samples")
        return
    print(
        f"  {label:<44} p50 {statistics.median(samples):8.1f} {unit}   "
        f"p95 {pct(samples, 0.95):8.1f} {unit}   (n={len(samples)})"
    )


class Stack:
    """Temporal, a worker process and a gateway process; stopped by `close`."""

    def __init__(self, secret: bytes) -> None:
        self.secret = secret
        self.temporal = EmbeddedTemporal(DevServerOptions())
        self.procs: list[subprocess.Popen[bytes]] = []
        self.http_port = 0

    async def start(self) -> None:
        await self.temporal.astart()
        env = {**os.environ, "BATON_GATEWAY_SECRET": self.secret.hex()}
        address = self.temporal.address
        self.procs.append(self._spawn(["worker", "--address", address], env))
        gateway = self._spawn(
            ["gateway", "--address", address, "--http-port", "0", "--media-address", "127.0.0.1:0"],
            env,
        )
        self.procs.append(gateway)
        assert gateway.stdout is not None
        banner = gateway.stdout.readline().decode()  # "media gateway: softphone http://h:p/, ..."
        self.http_port = int(banner.split("http://")[1].split("/")[0].rsplit(":", 1)[1])

    @staticmethod
    def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "baton.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert proc.stdout is not None
        if args[0] == "worker":
            proc.stdout.readline()  # the worker says when it polls
        return proc

    @property
    def gateway_pid(self) -> int:
        return self.procs[1].pid

    async def close(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(timeout=30)
        await self.temporal.astop()


async def open_caller(stack: Stack) -> BrowserCaller:
    from websockets.asyncio.client import connect as ws_connect

    call_id = f"bench-{uuid.uuid4().hex[:10]}"
    token = issue_token(stack.secret, call_id)
    url = f"ws://127.0.0.1:{stack.http_port}/media/browser?call_id={call_id}&token={token}"
    caller = BrowserCaller(await ws_connect(url, max_size=2**20), call_id)
    caller.start_reading()
    await caller.ws.send(json.dumps({"type": "start", "call_id": call_id}))
    return caller


async def first_audio(caller: BrowserCaller, after: int = 0, timeout: float = 30.0) -> float:
    async with asyncio.timeout(timeout):
        while len(caller.audio) <= after:
            await asyncio.sleep(0.002)
    return time.time()


async def stream(
    caller: BrowserCaller,
    pcm: bytes,
    silence_ms: int = 0,
    ended: asyncio.Future[float] | None = None,
) -> None:
    """Send `pcm` then silence in real time; `ended` gets the time the last speech frame left."""
    frames = [pcm[i : i + FRAME_BYTES] for i in range(0, len(pcm), FRAME_BYTES)]
    frames += [SILENCE] * (silence_ms // 20)
    start = time.monotonic()
    for n, frame in enumerate(frames):
        if n == len(frames) - silence_ms // 20 and ended is not None:
            ended.set_result(time.time())
        await caller.ws.send(frame)
        await asyncio.sleep(max(0.0, start + (n + 1) * 0.02 - time.monotonic()))


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
        await caller.close()
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


async def response_time(stack: Stack, client: Client, calls: int) -> None:
    request = await speech_pcm(REQUEST)
    names = ("total", "endpointing", "stt", "stt done", "orchestration", "llm", "tts first byte")
    parts: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(calls):
        caller = await open_caller(stack)
        session = CallSession(client, CallInput(call_id=caller.call_id))
        await first_audio(caller)  # the greeting is playing
        while await _still_playing(caller):
            pass  # let the greeting finish: this measures a turn, not a barge-in
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
        tts_start = spans.get("synthesize_speech", [(0.0, 0.0)])[-1][0]
        total = (reply_at - speech_end) * 1000
        stt_done = (stt[1] - speech_end) * 1000
        parts["total"].append(total)
        parts["endpointing"].append((endpointed - speech_end) * 1000)
        parts["stt"].append((stt[1] - stt[0]) * 1000)
        parts["stt done"].append(stt_done)
        parts["llm"].append((llm[1] - llm[0]) * 1000)
        parts["tts first byte"].append((reply_at - tts_start) * 1000)
        parts["orchestration"].append(
            total - stt_done - parts["llm"][-1] - parts["tts first byte"][-1]
        )
        await caller.close()
    print("end of caller speech -> first reply audio byte")
    labels = {
        "endpointing": "endpointing (utterance final)",
        "stt": "stt (starts at the 120 ms pause)",
        "stt done": "stt done, after end of speech",
        "orchestration": "orchestration (after stt)",
    }
    for name, samples in parts.items():
        line(labels.get(name, name), samples)


async def _still_playing(caller: BrowserCaller) -> bool:
    before = len(caller.audio)
    await asyncio.sleep(0.3)
    return len(caller.audio) != before


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def gateway_cost(stack: Stack, counts: list[int], windows: int = 5) -> None:
    print(f"gateway CPU per call stream (20 ms frames both ways, VAD on; {windows} x 1 s windows)")
    for count in counts:
        callers = [await open_caller(stack) for _ in range(count)]
        await asyncio.gather(*(first_audio(c, timeout=60) for c in callers))
        gaps: list[float] = []
        talking = [asyncio.create_task(_talk_quietly(c, windows + 0.5, gaps)) for c in callers]
        shares = []
        for _ in range(windows):
            before, start = cpu_seconds(stack.gateway_pid), time.monotonic()
            await asyncio.sleep(1.0)
            used = (cpu_seconds(stack.gateway_pid) - before) / (time.monotonic() - start)
            shares.append(used / count * 100)
        await asyncio.gather(*talking)
        print(
            f"  {count:4d} streams: per call p50 {statistics.median(shares):5.2f}% "
            f"p95 {pct(shares, 0.95):5.2f}% of a core (target 1%: ratio "
            f"{pct(shares, 0.95):4.2f}); playback frame gap p50 {statistics.median(gaps):.1f} ms "
            f"p95 {pct(gaps, 0.95):.1f} ms"
        )
        for caller in callers:
            await caller.close()


async def _talk_quietly(caller: BrowserCaller, seconds: float, gaps: list[float]) -> None:
    """Stream low noise (the VAD runs, nothing is speech) and note playback frame spacing."""
    noise = bytes((n * 7919) % 9 for n in range(FRAME_BYTES))
    start = time.monotonic()
    last_len, last_at = len(caller.audio), time.monotonic()
    for n in range(int(seconds / 0.02)):
        await caller.ws.send(noise)
        if len(caller.audio) != last_len:
            now = time.monotonic()
            gaps.append((now - last_at) * 1000)
            last_len, last_at = len(caller.audio), now
        await asyncio.sleep(max(0.0, start + (n + 1) * 0.02 - time.monotonic()))


async def main(args: argparse.Namespace) -> None:
    stack = Stack(secrets.token_bytes(32))
    await stack.start()
    try:
        client = await connect(stack.temporal.address)
        await barge_in(stack, client, args.calls)
        await response_time(stack, client, args.calls)
        await gateway_cost(stack, [int(n) for n in args.streams.split(",")])
    finally:
        await stack.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--streams", default="10,25,50")
    asyncio.run(main(parser.parse_args()))
