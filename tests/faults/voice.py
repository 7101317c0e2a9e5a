"""The voice path's processes for fault tests: a `baton gateway` on fixed ports that can be
killed and started again where it was, and a browser caller that notes when audio arrives."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from websockets.asyncio.client import connect as ws_connect

from baton.temporal_server import free_port
from media_gateway.tokens import issue_token
from media_gateway.vad import BYTES_PER_MS
from tests.faults.processes import ChildProcess, Killed
from tests.gateway.conftest import BrowserCaller

#: Claims of the caller's token: the demo bank's customer, so tools know who is calling.
CALLER = {"name": "Alex Morgan", "client_id": "C1001"}


@dataclass
class TimedCaller(BrowserCaller):
    """A browser-protocol caller that notes when (`time.monotonic()`) each audio frame came."""

    arrivals: list[float] = field(default_factory=list)
    #: Where in `audio` each frame begins, one per arrival.
    offsets: list[int] = field(default_factory=list)

    def on_audio(self, chunk: bytes) -> None:
        self.arrivals.append(time.monotonic())
        self.offsets.append(len(self.audio))
        super().on_audio(chunk)

    async def hears_more(self, after_bytes: int, ms: int, timeout: float = 30.0) -> None:
        """Until `ms` of audio has come beyond the first `after_bytes` bytes."""
        async with asyncio.timeout(timeout):
            while len(self.audio) < after_bytes + ms * BYTES_PER_MS:
                await asyncio.sleep(0.01)

    def offset_at(self, mono: float) -> int:
        """Where in `audio` the first frame that arrived at or after `mono` begins."""
        return next(
            (
                at
                for arrival, at in zip(self.arrivals, self.offsets, strict=True)
                if arrival >= mono
            ),
            len(self.audio),
        )

    def first_audio_after(self, mono: float) -> float | None:
        return next((t for t in self.arrivals if t > mono), None)

    def pause_after(self, mono: float, gap: float = 0.2) -> tuple[float, float] | None:
        """The first pause in the audio of at least `gap` seconds that ends after `mono`, as
        (last frame before it, first frame after it); None when the audio went on without one.
        Frames come every 20 ms while a reply plays (a little ahead of time)."""
        last = mono
        for arrival in self.arrivals:
            if arrival > mono and arrival - last >= gap:
                return last, arrival
            last = max(last, arrival)
        return None


class GatewayProcess:
    """`baton gateway` in its own process, on ports chosen once, so a replacement started after
    a kill -9 listens where the dead one did: callers redial the same address, and speech
    workers reach the call's gateway address (carried by the call) again."""

    def __init__(
        self,
        temporal_address: str,
        logs: Path,
        registry: Path | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.temporal_address = temporal_address
        self.extra_args = extra_args
        self.logs = logs
        self.registry = registry
        self.secret = secrets.token_bytes(32)
        self.http_port = free_port()
        self.media_address = f"127.0.0.1:{free_port()}"
        self.process: ChildProcess | None = None
        self.started: list[ChildProcess] = []

    async def start(self) -> ChildProcess:
        args = ["gateway", "--address", self.temporal_address]
        args += ["--http-port", str(self.http_port), "--media-address", self.media_address]
        if self.registry is not None:
            args += ["--registry", str(self.registry)]
        args += self.extra_args
        self.process = ChildProcess(
            args,
            ready="media gateway:",
            log=self.logs / "gateway.log",
            env={"BATON_GATEWAY_SECRET": self.secret.hex()},
            name="gateway",
        )
        self.started.append(self.process)
        await self.process.ready_async()
        return self.process

    def kill(self) -> Killed:
        assert self.process is not None
        mono = time.monotonic()
        return Killed("gateway", self.process.kill(), mono)

    def stop(self) -> None:
        for process in self.started:
            process.stop()

    async def dial(self, call_id: str) -> TimedCaller:
        """A caller on the browser protocol (a redial with the same call id reconnects)."""
        token = issue_token(self.secret, call_id, caller=CALLER)
        url = f"ws://127.0.0.1:{self.http_port}/media/browser?call_id={call_id}&token={token}"
        caller = TimedCaller(await ws_connect(url, max_size=2**20), call_id)
        caller.start_reading()
        await caller.ws.send(json.dumps({"type": "start", "call_id": call_id}))
        return caller
