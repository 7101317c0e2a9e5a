"""Twilio playback marks against a real gateway on loopback: a mark after every reply chunk, the
echoed marks as the truth of what the caller heard, a `clear`'s echoed marks counting for
nothing, and a peer that never echoes served by the gateway's clock as before."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from media_gateway.calls import CallMedia
from media_gateway.connection import Connection
from media_gateway.playback import Heard
from tests.gateway.conftest import GatewayStack, speech_pcm
from tests.gateway.test_transports import session_for, telephone_frames, twilio_media, twilio_start
from tests.workflow.conftest import items_of

#: Each playback message carries this much audio on Twilio (`TwilioSerializer.playback_frame_ms`).
FRAME_MS = 100


@dataclass
class TwilioPeer:
    """Twilio's side of a Media Stream: records what the gateway sends and echoes its marks.

    Marks numbered below `echo_first` are echoed as they arrive (their audio "played"); the rest
    are held, as audio still in Twilio's buffer, until a `clear` makes Twilio echo them all."""

    ws: ClientConnection
    call_id: str
    echo_first: int = 0
    echo_on_clear: bool = True
    messages: list[dict[str, Any]] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    _reader: asyncio.Task[None] | None = None

    @property
    def marks(self) -> list[str]:
        return [m["mark"]["name"] for m in self.messages if m["event"] == "mark"]

    @property
    def media_ms(self) -> int:
        ulaw = sum(len(base64.b64decode(m["media"]["payload"])) for m in self.media)
        return ulaw // 8  # μ-law at 8 kHz: 8 bytes a millisecond

    @property
    def media(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["event"] == "media"]

    async def echo(self, name: str) -> None:
        await self.ws.send(
            json.dumps({"event": "mark", "streamSid": "MZ-x", "mark": {"name": name}})
        )

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for raw in self.ws:
                message = json.loads(raw)
                self.messages.append(message)
                if message["event"] == "mark":
                    if len(self.marks) <= self.echo_first:
                        await self.echo(message["mark"]["name"])
                    else:
                        self.held.append(message["mark"]["name"])
                elif message["event"] == "clear" and self.echo_on_clear:
                    held, self.held = self.held, []
                    for name in held:
                        await self.echo(name)

    async def wait_for(self, ready: Any, timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            while not ready():
                await asyncio.sleep(0.02)

    async def speak_over(self, text: str) -> None:
        for frame in telephone_frames(await speech_pcm(text))[:40]:  # 0.8 s of speech
            await self.ws.send(twilio_media(frame))
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def twilio_call(stack: GatewayStack, **echo: Any) -> Any:
    call_id = f"tm-{uuid.uuid4().hex[:8]}"
    async with connect(stack.url("twilio", None, None)) as ws:
        peer = TwilioPeer(ws, call_id, **echo)
        peer._reader = asyncio.create_task(peer._read())
        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await ws.send(twilio_start(call_id, stack.token(call_id)))
        try:
            yield peer
        finally:
            await ws.send(json.dumps({"event": "stop", "stop": {"callSid": "CA1"}}))
            peer._reader.cancel()


def call_of(stack: GatewayStack, peer: TwilioPeer) -> CallMedia:
    return stack.gateway.registry.calls[peer.call_id]


def connection_of(stack: GatewayStack, peer: TwilioPeer) -> Connection:
    connection = call_of(stack, peer).peer
    assert isinstance(connection, Connection)
    return connection


def record_heard(monkeypatch: pytest.MonkeyPatch, call: CallMedia) -> list[Heard]:
    """What the gateway tells the workflow at each barge-in, still sent on to it."""
    reported: list[Heard] = []
    send = call.control.barge_in

    async def recording(heard: Heard) -> None:
        reported.append(heard)
        await send(heard)

    monkeypatch.setattr(call.control, "barge_in", recording)
    return reported


async def test_a_mark_follows_every_chunk_and_echoed_marks_advance_what_was_heard(
    gateway_stack: GatewayStack,
) -> None:
    async with twilio_call(gateway_stack) as peer:
        await peer.wait_for(lambda: len(peer.media) >= 12)
        events = [m["event"] for m in peer.messages]
        # Every chunk of audio is followed by its own mark, before the next chunk goes out.
        for i, event in enumerate(events[:-1]):
            if event == "media":
                assert events[i + 1] == "mark"
        marks = peer.marks
        assert len(marks) >= len(peer.media) and len(set(marks)) == len(marks)
        assert all(m["streamSid"] == "MZ-stream" for m in peer.messages if m["event"] == "mark")
        playback = call_of(gateway_stack, peer).playback
        assert not playback.marks_echoed  # nothing echoed yet: the clock says what was heard
        await peer.echo(marks[0])
        await peer.echo(marks[1])
        await peer.echo(marks[2])
        await peer.wait_for(lambda: playback.heard_ms() == 3 * FRAME_MS, timeout=5)
        await peer.echo(marks[7])  # echoes mean all before them played, whatever skipped
        await peer.wait_for(lambda: playback.heard_ms() == 8 * FRAME_MS, timeout=5)
        assert playback.marks_echoed and peer.media_ms > 8 * FRAME_MS
        assert connection_of(gateway_stack, peer).bad_frames == 0


async def test_after_a_barge_in_the_heard_text_is_what_the_echoed_marks_say(
    gateway_stack: GatewayStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with twilio_call(gateway_stack, echo_first=4) as peer:
        await peer.wait_for(lambda: len(peer.marks) >= 2)
        reported = record_heard(monkeypatch, call_of(gateway_stack, peer))
        # Twilio still holds most of what was sent: 1.5 s sent, only 400 ms echoed as played.
        await peer.wait_for(lambda: peer.media_ms >= 1500)
        await peer.speak_over("Hello there, I need some help with my account please.")
        await peer.wait_for(lambda: bool(reported), timeout=10)
        assert any(m["event"] == "clear" for m in peer.messages)
        (heard,) = reported
        assert heard.played_ms == 4 * FRAME_MS < peer.media_ms - 1000
        session = session_for(gateway_stack, peer.call_id)
        items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")))
        (cut,) = items_of(items, "barge_in")
        assert cut["heard_text"] == heard.text
        assert cut["interrupted_text"].startswith(heard.text) and heard.text
        assert len(heard.text) < len(cut["interrupted_text"])
        # The marks of the cleared audio came back (as Twilio sends them) and were accepted.
        await peer.wait_for(lambda: not peer.held)
        assert connection_of(gateway_stack, peer).bad_frames == 0


async def test_a_peer_that_never_echoes_marks_is_heard_by_the_clock(
    gateway_stack: GatewayStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with twilio_call(gateway_stack, echo_on_clear=False) as peer:
        await peer.wait_for(lambda: len(peer.marks) >= 2)
        call = call_of(gateway_stack, peer)
        reported = record_heard(monkeypatch, call)
        await peer.wait_for(lambda: peer.media_ms >= 1500)
        await peer.speak_over("Hello there, I need some help with my account please.")
        await peer.wait_for(lambda: bool(reported), timeout=10)
        (heard,) = reported
        # About the 1.5 s the clock counted before the caller cut in (minus the lead the
        # gateway keeps in flight), far past any mark.
        assert heard.played_ms >= 1000 and heard.chars > 0
        assert not call.playback.marks_echoed
        session = session_for(gateway_stack, peer.call_id)
        items = await session.wait_for(lambda t: bool(items_of(t, "barge_in")))
        assert items_of(items, "barge_in")[0]["heard_text"] == heard.text


async def test_malformed_and_unknown_marks_are_refused_and_the_call_goes_on(
    gateway_stack: GatewayStack,
) -> None:
    async with twilio_call(gateway_stack) as peer:
        await peer.wait_for(lambda: len(peer.marks) >= 4)
        marks = peer.marks
        bad = [
            {"event": "mark", "streamSid": "MZ-x"},  # no mark object
            {"event": "mark", "mark": {"name": 7}},  # a name that is no string
            {"event": "mark", "mark": {"name": "never-sent"}},
        ]
        for frame in bad:
            await peer.ws.send(json.dumps(frame))
        await peer.echo(marks[3])
        await peer.echo(marks[3])  # already had back: as unknown as one never sent
        playback = call_of(gateway_stack, peer).playback
        connection = connection_of(gateway_stack, peer)
        await peer.wait_for(lambda: connection.bad_frames == 4, timeout=5)
        assert playback.heard_ms() == 4 * FRAME_MS  # the good echo between them counted
        await peer.ws.send(json.dumps({"event": "dtmf", "dtmf": {"digit": "5"}}))
        session = session_for(gateway_stack, peer.call_id)
        items = await session.wait_for(lambda t: bool(items_of(t, "dtmf")))
        assert items_of(items, "dtmf")[0]["digits"] == "5"
        count = len(peer.media)
        await peer.wait_for(lambda: len(peer.media) > count + 5)  # the reply still plays
