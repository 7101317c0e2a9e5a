"""A scripted Azure Speech service on 127.0.0.1, speaking the SDK's real WebSocket protocol.

The Speech SDK talks to the service over a WebSocket (subprotocol `USP`) with text messages
made of `Name:value` header lines, a blank line and a JSON body, and binary messages made of
a 2-byte big-endian header length, the header lines and the payload. The SDK accepts a plain
`ws://` endpoint or host, so tests point it here and exercise its real connection, framing,
event and error handling:

    async with FakeAzureSpeechServer(phrases=[("Hello world.", 0.87)]) as server:
        settings = AzureSpeechSettings(key="test", host=server.host)
        ...

Recognition (`/speech/recognition/...`): once the client's audio ends (an empty `audio`
message) the server answers `turn.start`, `speech.startDetected`, a `speech.hypothesis` and a
`speech.phrase` (detailed format, with NBest confidence) per scripted phrase,
`speech.endDetected` and `turn.end`.

Synthesis (`/cognitiveservices/websocket/v1`): on `ssml` the server answers `turn.start` and
`response`, then per word of the spoken text an `audio.metadata` word boundary followed by
`audio_per_word` bytes of audio, then `turn.end`. The SDK raises boundary and audio events on
different threads, so their order is not fixed; with `metadata_lead` the server sends every
boundary first and waits that many seconds before the audio, making the order certain. With
`gate` set, it pauses after the first word until the test sets the event, so a test can prove
audio streams before synthesis ends. With `recognition_gate` set, recognition answers nothing
until the test sets that event: a recognizer as slow as the test needs.

Failures: `reject_status` answers the WebSocket upgrade with that HTTP status; `drop_on`
aborts the TCP connection when a message with that path arrives (`"audio-end"` for the end of
recognition audio); `silent` never answers at all.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

STT_PATH = "/speech/recognition/"
TTS_PATH = "/cognitiveservices/websocket/v1"
TICKS_PER_SECOND = 10_000_000
BYTES_PER_SECOND = 32_000  # 16 kHz, 16-bit mono: what Raw16Khz16BitMonoPcm asks for


@dataclass
class Message:
    """A message the client sent: its header lines and body (text or bytes)."""

    headers: dict[str, str]
    body: str | bytes

    @property
    def path(self) -> str:
        return self.headers.get("Path", "")


@dataclass
class Connection:
    """One WebSocket the client opened: its request and every message it sent."""

    path: str
    headers: dict[str, str]
    messages: list[Message] = field(default_factory=list)

    def bodies(self, path: str) -> list[str | bytes]:
        return [message.body for message in self.messages if message.path == path]


def parse(frame: str | bytes) -> Message:
    """Split a USP message into headers and body (text or binary framing)."""
    body: str | bytes
    if isinstance(frame, bytes):
        size = int.from_bytes(frame[:2], "big")
        head, body = frame[2 : 2 + size].decode(), frame[2 + size :]
    else:
        head, _, body = frame.partition("\r\n\r\n")
    headers = {}
    for line in head.split("\r\n"):
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip()] = value.strip()
    return Message(headers, body)


def text_message(path: str, request_id: str, body: Any) -> str:
    return (
        f"X-RequestId:{request_id}\r\nPath:{path}\r\n"
        f"Content-Type:application/json; charset=utf-8\r\n\r\n{json.dumps(body)}"
    )


def audio_message(request_id: str, pcm: bytes) -> bytes:
    head = f"X-RequestId:{request_id}\r\nPath:audio\r\nContent-Type:audio/x-wav\r\n".encode()
    return len(head).to_bytes(2, "big") + head + pcm


def spoken_words(ssml: str) -> list[str]:
    """The words of the text inside an SSML document, as the service would speak them."""
    inner = re.sub(r"<[^>]*>", " ", ssml)
    return re.findall(r"[\w']+", html.unescape(inner))


class FakeAzureSpeechServer:
    """The scripted service (see the module docstring); use as `async with`."""

    def __init__(
        self,
        *,
        phrases: Sequence[tuple[str, float]] = (),
        audio_per_word: int = 3200,
        gate: asyncio.Event | None = None,
        recognition_gate: asyncio.Event | None = None,
        metadata_lead: float | None = None,
        reject_status: int | None = None,
        drop_on: str | None = None,
        silent: bool = False,
    ) -> None:
        self.phrases = list(phrases)
        self.audio_per_word = audio_per_word
        self.gate = gate
        self.recognition_gate = recognition_gate
        self.metadata_lead = metadata_lead
        self.reject_status = reject_status
        self.drop_on = drop_on
        self.silent = silent
        self.connections: list[Connection] = []
        self._server: Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def host(self) -> str:
        """For `SpeechConfig(host=...)`: the SDK adds the role's path."""
        return f"ws://127.0.0.1:{self.port}"

    @property
    def stt_endpoint(self) -> str:
        return f"{self.host}/speech/recognition/conversation/cognitiveservices/v1"

    @property
    def tts_endpoint(self) -> str:
        return f"{self.host}{TTS_PATH}"

    async def __aenter__(self) -> FakeAzureSpeechServer:
        self._server = await serve(
            self._handle,
            "127.0.0.1",
            0,
            subprotocols=[Subprotocol("USP")],
            process_request=self._upgrade,
            # The SDK may keep a connection open for reuse; do not wait long on close.
            close_timeout=1,
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.gate is not None:
            self.gate.set()  # never leave a handler parked on the gate
        if self.recognition_gate is not None:
            self.recognition_gate.set()
        if self._server is not None:
            self._server.close()
            await asyncio.wait_for(self._server.wait_closed(), 5)

    def _upgrade(self, connection: ServerConnection, request: Request) -> Response | None:
        self.connections.append(Connection(request.path, dict(request.headers.raw_items())))
        if self.reject_status is not None:
            return connection.respond(self.reject_status, "fake Azure Speech: rejected\n")
        if STT_PATH not in request.path and not request.path.startswith(TTS_PATH):
            return connection.respond(404, f"fake Azure Speech: no route {request.path}\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        record = self.connections[-1]
        try:
            async for frame in ws:
                message = parse(frame)
                record.messages.append(message)
                audio_end = message.path == "audio" and message.body == b""
                if self.drop_on is not None and self.drop_on in {
                    message.path,
                    "audio-end" if audio_end else "",
                }:
                    ws.transport.abort()  # a dropped TCP connection, no closing handshake
                    return
                if self.silent:
                    continue
                request_id = message.headers.get("X-RequestId", uuid.uuid4().hex)
                if audio_end:
                    await self._recognition_turn(ws, request_id)
                elif message.path == "ssml":
                    await self._synthesis_turn(ws, request_id, str(message.body))
        except ConnectionClosed:
            pass  # the client went away; nothing left to answer

    async def _recognition_turn(self, ws: ServerConnection, request_id: str) -> None:
        if self.recognition_gate is not None:
            await self.recognition_gate.wait()
        await ws.send(text_message("turn.start", request_id, {"context": {"serviceTag": "fake"}}))
        await ws.send(text_message("speech.startDetected", request_id, {"Offset": 0}))
        offset = 0
        for text, confidence in self.phrases:
            duration = TICKS_PER_SECOND
            lexical = re.sub(r"[^\w' ]", "", text).lower()
            await ws.send(
                text_message(
                    "speech.hypothesis",
                    request_id,
                    {"Text": lexical, "Offset": offset, "Duration": duration},
                )
            )
            best = {
                "Confidence": confidence,
                "Lexical": lexical,
                "ITN": lexical,
                "MaskedITN": lexical,
                "Display": text,
            }
            phrase = {
                "RecognitionStatus": "Success",
                "DisplayText": text,
                "Offset": offset,
                "Duration": duration,
                "NBest": [best],
            }
            await ws.send(text_message("speech.phrase", request_id, phrase))
            offset += duration
        await ws.send(text_message("speech.endDetected", request_id, {"Offset": offset}))
        await ws.send(text_message("turn.end", request_id, {}))

    async def _synthesis_turn(self, ws: ServerConnection, request_id: str, ssml: str) -> None:
        await ws.send(text_message("turn.start", request_id, {"context": {"serviceTag": "fake"}}))
        response = {"context": {"serviceTag": "fake"}, "audio": {"type": "inline"}}
        await ws.send(text_message("response", request_id, response))
        per_word = self.audio_per_word * TICKS_PER_SECOND // BYTES_PER_SECOND
        words = spoken_words(ssml)
        boundaries = []
        for index, word in enumerate(words):
            data = {
                "Offset": index * per_word,
                "Duration": per_word,
                "text": {"Text": word, "Length": len(word), "BoundaryType": "WordBoundary"},
            }
            metadata = {"Metadata": [{"Type": "WordBoundary", "Data": data}]}
            boundaries.append(text_message("audio.metadata", request_id, metadata))
        if self.metadata_lead is not None:
            for boundary in boundaries:
                await ws.send(boundary)
            await asyncio.sleep(self.metadata_lead)
        for index, _ in enumerate(words):
            if self.metadata_lead is None:
                await ws.send(boundaries[index])
            # Distinct sample values per word, so a test can tell the words' audio apart.
            sample = (index + 1).to_bytes(2, "little", signed=True)
            await ws.send(audio_message(request_id, sample * (self.audio_per_word // 2)))
            if index == 0 and self.gate is not None:
                await self.gate.wait()
        await ws.send(text_message("turn.end", request_id, {}))
