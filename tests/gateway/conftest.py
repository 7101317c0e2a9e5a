"""Gateway tests: real dev server, real workers with the offline speech providers, a real gateway
on loopback, and callers speaking its wire protocols through the independent `websockets` client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio
from temporalio.client import Client
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from activities.chat_models.base import ChatModel
from activities.chat_models.scripted import ScriptedChatModel
from activities.speech import SpeechActivities
from activities.speech_providers.offline_tts import EspeakSynthesizer
from activities.speech_providers.offline_whisper import WhisperRecognizer
from media_gateway.admission import SocketLimits
from media_gateway.gateway_config import GatewayConfig
from media_gateway.server import Gateway, SoftphoneAccess, start_gateway
from media_gateway.tokens import issue_token
from media_gateway.vad import BYTES_PER_MS, FRAME_BYTES
from workers.worker import run_workers

SILENCE_20MS = bytes(FRAME_BYTES)


async def speech_pcm(text: str) -> bytes:
    """Caller audio: `text` spoken by the offline voice, PCM16 mono 16 kHz."""
    chunks = [c.pcm16_16k async for c in EspeakSynthesizer().synthesize(text)]
    return b"".join(chunks)


@dataclass
class GatewayStack:
    client: Client
    gateway: Gateway
    secret: bytes
    operator_key: str

    @property
    def base(self) -> str:
        return f"127.0.0.1:{self.gateway.http_port}"

    def token(self, call_id: str, **caller: str) -> str:
        return issue_token(self.secret, call_id, caller=caller)

    def url(self, channel: str, call_id: str | None, token: str | None, **query: str) -> str:
        params = {"call_id": call_id, "token": token, **query}
        text = "&".join(f"{k}={v}" for k, v in params.items() if v is not None)
        return f"ws://{self.base}/media/{channel}" + (f"?{text}" if text else "")


@dataclass
class BrowserCaller:
    """A caller speaking Baton's browser protocol, recording everything the gateway sends."""

    ws: ClientConnection
    call_id: str
    audio: bytearray = field(default_factory=bytearray)
    events: list[dict[str, Any]] = field(default_factory=list)
    cleared: int = 0
    #: The transcript as the page holds it, from the timeline events' slices.
    timeline: list[dict[str, Any]] = field(default_factory=list)
    _reader: asyncio.Task[None] | None = None

    def start_reading(self) -> None:
        self._reader = asyncio.create_task(self._read())

    async def read_out(self) -> None:
        """Until the connection has closed and every message before the close is read (so
        `events` holds the gateway's last word, an `ended` say)."""
        assert self._reader is not None, "start_reading first"
        await asyncio.shield(self._reader)

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):  # e.g. the gateway's 1009 for a huge frame
            await self._read_until_closed()

    async def _read_until_closed(self) -> None:
        async for message in self.ws:
            if isinstance(message, bytes):
                self.on_audio(message)
                continue
            event = json.loads(message)
            self.events.append(event)
            if event["type"] == "clear":
                self.cleared += 1
            elif event["type"] == "timeline":
                self.timeline[event["start"] :] = event["items"]

    def on_audio(self, chunk: bytes) -> None:
        self.audio += chunk

    async def say(self, pcm: bytes, *, pace: float = 1.0, trailing_silence_ms: int = 800) -> None:
        """Send audio in 20 ms frames at `pace` times real time, then silence."""
        frames = [pcm[i : i + FRAME_BYTES] for i in range(0, len(pcm), FRAME_BYTES)]
        frames += [SILENCE_20MS] * (trailing_silence_ms // 20)
        for frame in frames:
            await self.ws.send(frame)
            await asyncio.sleep(0.02 / pace)

    async def wait_event(self, match: Any, timeout: float = 30.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                for event in self.events:
                    if match(event):
                        return event
                await asyncio.sleep(0.02)

    async def heard(self, ms: int, timeout: float = 30.0) -> None:
        """Until `ms` of playback audio has arrived."""
        async with asyncio.timeout(timeout):
            while len(self.audio) < ms * BYTES_PER_MS:
                await asyncio.sleep(0.02)

    async def close(self) -> None:
        await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()


async def browser_caller(
    stack: GatewayStack, call_id: str | None = None, **profile: str
) -> BrowserCaller:
    """A caller on the browser channel; `profile` goes into its signed token."""
    call_id = call_id or f"g-{uuid.uuid4().hex[:10]}"
    token = stack.token(call_id, **profile)
    ws = await connect(stack.url("browser", call_id, token), max_size=2**20)
    caller = BrowserCaller(ws, call_id)
    caller.start_reading()
    await ws.send(json.dumps({"type": "start", "call_id": call_id, "sample_rate": 16000}))
    return caller


def audio_ms(pcm: bytes | bytearray) -> int:
    return len(pcm) // BYTES_PER_MS


@pytest_asyncio.fixture
async def scripted() -> ScriptedChatModel:
    """A model each test scripts; `stack` runs the workers on it."""
    return ScriptedChatModel()


@pytest_asyncio.fixture
async def stack(
    temporal_client: Client, scripted: ScriptedChatModel
) -> AsyncIterator[GatewayStack]:
    async with open_gateway_stack(temporal_client, chat_model=scripted) as opened:
        yield opened


@pytest_asyncio.fixture
async def gateway_stack(temporal_client: Client) -> AsyncIterator[GatewayStack]:
    async with open_gateway_stack(temporal_client) as stack:
        yield stack


@contextlib.asynccontextmanager
async def open_gateway_stack(
    temporal_client: Client,
    chat_model: ChatModel | None = None,
    limits: SocketLimits | None = None,
    speech: SpeechActivities | None = None,
    queues: Sequence[str] = ("calls", "llm", "speech", "tools"),
    config: GatewayConfig | None = None,
) -> AsyncIterator[GatewayStack]:
    """Workers for `queues` (offline providers unless `chat_model` or `speech` is given) and a
    gateway (`config`, or one on a free port)."""
    stop = asyncio.Event()
    if speech is None:
        recognizer = WhisperRecognizer()
        recognizer.warm_up()  # as `baton worker` does: the model loads before the first call
        speech = SpeechActivities(recognizer, EspeakSynthesizer())
    workers = asyncio.create_task(
        run_workers(
            temporal_client,
            queues,
            stop,
            speech=speech,
            chat_model=chat_model,
        )
    )
    secret = secrets.token_bytes(32)
    operator_key = secrets.token_urlsafe(16)
    gateway = await start_gateway(
        temporal_client,
        config or GatewayConfig(media_address="127.0.0.1:0"),
        secret,
        http_port=0,
        softphone=SoftphoneAccess(enabled=True, operator_key=operator_key),
        limits=limits,
        notice_voice=speech_pcm,
    )
    try:
        yield GatewayStack(temporal_client, gateway, secret, operator_key)
    finally:
        await gateway.close()
        stop.set()
        await workers
        await speech.channels.close()


async def call_on_gateway(stack: GatewayStack, **profile: Any) -> Any:
    """A voice call attached to the gateway with no caller connected (playback runs unheard).

    Returns (CallMedia, CallSession): the gateway's side and a client for signals and queries.
    """
    from baton.call_client import CallSession

    call_id = f"g-{uuid.uuid4().hex[:10]}"
    media = await stack.gateway.registry.open(call_id, "browser", dict(profile), None)
    return media, CallSession(stack.client, media.control.call)


@contextlib.asynccontextmanager
async def quiet_line(send_quiet: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
    """While the body runs, a quiet frame every 20 ms, as a phone platform's stream carries
    frames all the time: a stream that simply stopped after the caller's line could leave an
    utterance the endpointer had not ended yet (on a loaded machine) waiting for quiet, or
    trip the gateway's idle timeout."""

    async def keep_sending() -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                await send_quiet()
                await asyncio.sleep(0.02)

    sender = asyncio.create_task(keep_sending())
    try:
        yield
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender


async def call_result(session: Any, timeout: float) -> Any:
    """The call's workflow result; a call still open after `timeout` fails the test with what
    its transcript holds, so a failure on a loaded CI machine says where the call stood."""
    try:
        return await asyncio.wait_for(session.handle.result(), timeout)
    except TimeoutError:
        items = await session.transcript()
        said = [
            {k: item.get(k) for k in ("type", "agent", "text", "tool", "outcome") if k in item}
            for item in items
        ]
        raise AssertionError(f"call still open after {timeout:g} s; transcript: {said}") from None
