"""The voice benchmark's stack and callers: the embedded Temporal server, a `baton worker` and
a `baton gateway` process, and browser-protocol callers that note when audio arrives."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from media_gateway.tokens import issue_token
from media_gateway.vad import FRAME_BYTES
from tests.gateway.conftest import BrowserCaller

SILENCE = bytes(FRAME_BYTES)


class Stack:
    """Temporal, a worker process and a gateway process; stopped by `close`."""

    def __init__(
        self,
        secret: bytes,
        gateway_args: tuple[str, ...] = (),
        worker_args: tuple[str, ...] = (),
        worker_env: dict[str, str] | None = None,
    ) -> None:
        self.secret = secret
        #: Extra `baton gateway` options (e.g. ``--endpointing fixed``).
        self.gateway_args = gateway_args
        #: Extra `baton worker` options (e.g. ``--queues calls,llm,tools``: no speech worker).
        self.worker_args = worker_args
        #: Extra environment for the worker (e.g. ``BATON_WHISPER_WINDOW=full``).
        self.worker_env = worker_env or {}
        self.temporal = EmbeddedTemporal(DevServerOptions())
        self.procs: list[subprocess.Popen[bytes]] = []
        self.http_port = 0
        self.media_address = ""

    async def start(self) -> None:
        await self.temporal.astart()
        address = self.temporal.address
        self._spawn("worker", "--address", address, *self.worker_args, env=self.worker_env)
        banner = self._spawn(  # "media gateway: softphone http://h:p/, media plane h:p"
            "gateway",
            "--address",
            address,
            "--http-port",
            "0",
            "--media-address",
            "127.0.0.1:0",
            *self.gateway_args,
        )
        self.http_port = int(banner.split("http://")[1].split("/")[0].rsplit(":", 1)[1])
        self.media_address = banner.rsplit("media plane ", 1)[1].strip()

    def _spawn(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Start `baton <args>`; returns the first line it prints, which it prints once ready."""
        # BATON_BENCH_LOGS=DIR keeps each process's log there, to look into what a run did.
        logs = os.environ.get("BATON_BENCH_LOGS")
        stderr: Any = subprocess.DEVNULL
        if logs:
            stderr = open(Path(logs) / f"{args[0]}-{len(self.procs)}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "baton.cli", *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, **(env or {}), "BATON_GATEWAY_SECRET": self.secret.hex()},
        )
        self.procs.append(proc)  # before anything can fail, so `close` stops it
        assert proc.stdout is not None
        return proc.stdout.readline().decode()

    @property
    def gateway_pid(self) -> int:
        return self.procs[1].pid

    async def close(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        await self.temporal.astop()


@dataclass
class Caller(BrowserCaller):
    """A browser caller that also notes when each playback frame arrived."""

    arrivals: list[float] = field(default_factory=list)

    def on_audio(self, chunk: bytes) -> None:
        self.arrivals.append(time.monotonic())
        super().on_audio(chunk)


async def open_caller(stack: Stack) -> Caller:
    from websockets.asyncio.client import connect as ws_connect

    call_id = f"bench-{uuid.uuid4().hex[:10]}"
    token = issue_token(stack.secret, call_id)
    url = f"ws://127.0.0.1:{stack.http_port}/media/browser?call_id={call_id}&token={token}"
    caller = Caller(await ws_connect(url, max_size=2**20), call_id)
    caller.start_reading()
    await caller.ws.send(json.dumps({"type": "start", "call_id": call_id}))
    return caller


async def hang_up(caller: BrowserCaller) -> None:
    """End the call, not just the connection: a dropped caller's call (and its playback) lives
    on through the reconnect grace and would load whatever is measured next."""
    with contextlib.suppress(ConnectionClosed):
        await caller.ws.send(json.dumps({"type": "stop"}))
    await caller.close()


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


async def played_out(caller: BrowserCaller) -> None:
    """Until no audio has come for 300 ms."""
    while True:
        before = len(caller.audio)
        await asyncio.sleep(0.3)
        if len(caller.audio) == before:
            return
