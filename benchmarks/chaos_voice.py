"""The chaos soak's voice callers: calls through a `baton gateway` process and a speech worker,
so the scheduler can kill those two as well (benchmarks/bench_chaos.py).

A voice caller is on the gateway's browser protocol and hears every reply as audio, paced in
real time; its lines go in as text Updates under utterance ids, as in
tests/workflow/test_fault_voice.py (recognition is not what these faults interrupt, and ids
let the same audit as the text calls find a lost or doubled line). A turn's reply time is the
first audio the caller hears after the line was sent: its next audible step, a filler
included. When the gateway dies the caller redials the same call id until the replacement
answers, as a softphone does; the reply lost with the gateway is said again over the new
connection (media_gateway.media_plane), and that audio ends the turn's stall.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field

from websockets.exceptions import ConnectionClosed

from baton.call_client import CallSession
from contracts.calls import TurnReply
from tests.faults.callers import say_until_answered
from tests.faults.voice import GatewayProcess, TimedCaller

#: A reply's audio ends with this much quiet: the next line waits for it.
QUIET_S = 0.6
#: The page pings this often, so a caller thinking between lines is not an idle socket.
PING_EVERY_S = 10.0
#: Redials while the gateway is down, this far apart.
REDIAL_PAUSE_S = 0.2


@dataclass
class VoiceLine:
    """One voice call's connection(s) to the gateway: a redial after a gateway death adds one."""

    gateway: GatewayProcess
    call_id: str
    connections: list[TimedCaller] = field(default_factory=list)
    #: When (monotonic) the caller was back on a gateway after losing its line.
    back: list[float] = field(default_factory=list)
    _keeper: asyncio.Task[None] | None = None

    async def dial(self, deadline: float) -> None:
        """Connect (again), retrying while nothing listens, until `deadline` (monotonic)."""
        while True:
            try:
                self.connections.append(await self.gateway.dial(self.call_id))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(REDIAL_PAUSE_S)
        if self._keeper is None:
            self._keeper = asyncio.create_task(self._keep_connected(deadline - time.monotonic()))

    async def _keep_connected(self, deadline: float) -> None:
        """Ping while connected; redial when the gateway drops the line (not when the call
        ended: the gateway says `ended` first), for up to `deadline` seconds each time."""
        while True:
            current = self.connections[-1]
            with contextlib.suppress(TimeoutError):
                # Read out, not just closed: the `ended` event read after the close was seen
                # made a finished call look dropped, and its caller redial it again and again.
                await asyncio.wait_for(current.read_out(), PING_EVERY_S)
            if current.ws.close_code is None:
                with contextlib.suppress(Exception):
                    await current.ws.send(json.dumps({"type": "ping"}))
                continue
            if any(event["type"] == "ended" for event in current.events):
                return
            try:
                await self.dial(time.monotonic() + deadline)
            except ConnectionClosed:  # the new gateway refused it: the call ended meanwhile
                return
            self.back.append(time.monotonic())

    @property
    def connected(self) -> bool:
        return bool(self.connections) and self.connections[-1].ws.close_code is None

    async def reconnected(self, timeout: float) -> None:
        """Until the caller is on a gateway: a person cannot speak into a dead line."""
        async with asyncio.timeout(timeout):
            while not self.connected:
                await asyncio.sleep(0.05)

    def audio_bytes(self) -> int:
        return sum(len(c.audio) for c in self.connections)

    def first_audio_after(self, mono: float) -> float | None:
        heard = [t for c in self.connections if (t := c.first_audio_after(mono)) is not None]
        return min(heard, default=None)

    def last_audio(self) -> float:
        return max((c.arrivals[-1] for c in self.connections if c.arrivals), default=0.0)

    async def quiet(self, timeout: float) -> None:
        """Until no audio has come for `QUIET_S` (a reply played out), or `timeout`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while time.monotonic() - self.last_audio() < QUIET_S:
                    await asyncio.sleep(0.1)

    async def heard_anything(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self.audio_bytes():
                    await asyncio.sleep(0.05)
        return self.audio_bytes() > 0

    async def close(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            # A redial that failed for good has said so through the turn that waited for it.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._keeper
        for connection in self.connections:
            with contextlib.suppress(Exception):
                await connection.close()


async def voice_turn(
    line: VoiceLine, session: CallSession, text: str, uid: str, deadline: float
) -> tuple[float, TurnReply, float | None]:
    """Say `text` as `uid` once the last reply has played out; (when sent, the reply, when its
    first audio came or None). Raises TimeoutError past `deadline` seconds."""
    await line.quiet(deadline)
    await line.reconnected(deadline)
    sent = time.monotonic()
    reply = await say_until_answered(session, text, uid, deadline)
    heard = line.first_audio_after(sent)
    if heard is None and reply.text:
        # The turn ended before its audio reached this caller (the gateway died with it): the
        # reply is said again once the caller is back on a gateway.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(deadline):
                while (heard := line.first_audio_after(sent)) is None:
                    await asyncio.sleep(0.05)
    return sent, reply, heard
