"""A scripted OpenAI-compatible audio server on 127.0.0.1, for tests.

Real HTTP on loopback, so the tests exercise the SDK's multipart upload, its streamed
response handling, its error mapping and its timeouts:

    with FakeOpenAIAudioServer([transcript("hello"), speech(pcm_24k)]) as server:
        recognizer = OpenAIRecognizer(api_key="test", base_url=server.base_url)

It serves `POST /v1/audio/transcriptions` (multipart form: the file and fields are parsed and
recorded) and `POST /v1/audio/speech` (JSON), plus the Azure routes
`/openai/deployments/{deployment}/audio/...`. Each request gets the next scripted `Reply`: a
JSON body, raw audio sent with chunked transfer encoding in `chunk_size` pieces, or an
OpenAI-style JSON error, optionally after `delay` seconds (longer than a client timeout, to
test timeouts). An empty script answers 503. `always` maps a route ("transcriptions",
"speech") to the reply every request to it gets instead, for a call whose requests to the two
routes interleave in an order a test cannot script. The server stops itself after `lifetime`.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Reply:
    """A JSON `body`, or `audio` streamed in `chunk_size` pieces, after `delay` seconds."""

    status: int = 200
    body: Any = None
    audio: bytes | None = None
    chunk_size: int = 4800
    #: Pause between audio pieces, so a test can watch them arrive one by one.
    chunk_delay: float = 0.0
    delay: float = 0.0


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    #: JSON body, or the multipart text fields.
    fields: dict[str, Any] = field(default_factory=dict)
    #: Multipart file uploads: field name -> (filename, content type, bytes).
    files: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)
    deployment: str | None = None


def transcript(text: str) -> Reply:
    return Reply(body={"text": text})


def speech(audio: bytes, *, chunk_size: int = 4800, chunk_delay: float = 0.0) -> Reply:
    return Reply(audio=audio, chunk_size=chunk_size, chunk_delay=chunk_delay)


def error(status: int, message: str, *, kind: str = "invalid_request_error") -> Reply:
    return Reply(status=status, body={"error": {"message": message, "type": kind, "code": None}})


def stall(seconds: float, then: Reply) -> Reply:
    return Reply(then.status, then.body, then.audio, then.chunk_size, then.chunk_delay, seconds)


def parse_multipart(content_type: str, raw: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fields and files of a multipart/form-data body, via the stdlib MIME parser."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + raw)
    fields: dict[str, Any] = {}
    files: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        filename = part.get_filename()
        if filename is not None:
            files[str(name)] = (filename, part.get_content_type(), payload)
        else:
            fields[str(name)] = payload.decode() if isinstance(payload, bytes) else payload
    return fields, files


class FakeOpenAIAudioServer:
    """The scripted server (see the module docstring); `with` starts and stops it."""

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        always: dict[str, Reply] | None = None,
        lifetime: float = 30.0,
    ) -> None:
        self._script = list(script)
        self.always = dict(always or {})
        self.lifetime = lifetime
        self.requests: list[RecordedRequest] = []
        #: Set when a request arrives, so a test can see whether one has been made yet.
        self.request_arrived = threading.Event()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def azure_endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def __enter__(self) -> FakeOpenAIAudioServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _next(self, request: RecordedRequest, route: str) -> Reply:
        with self._lock:
            self.requests.append(request)
            self.request_arrived.set()
            if route in self.always:
                return self.always[route]
            if not self._script:
                return error(503, "fake server: no scripted reply left", kind="server_error")
            return self._script.pop(0)

    def _wait(self, seconds: float) -> bool:
        """Sleep; False if the server stopped meanwhile."""
        return not self._stopping.wait(seconds) if seconds > 0 else True


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeOpenAIAudio/1.0"
    protocol_version = "HTTP/1.1"  # chunked transfer encoding needs HTTP/1.1

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        fake: FakeOpenAIAudioServer = self.server.fake  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        segments = path.strip("/").split("/")
        deployment = segments[2] if segments[:2] == ["openai", "deployments"] else None
        request = RecordedRequest(
            path=path, headers={k.lower(): v for k, v in self.headers.items()}
        )
        request.deployment = deployment
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("multipart/form-data"):
            request.fields, request.files = parse_multipart(content_type, raw)
        elif raw:
            request.fields = json.loads(raw)
        if segments[-2:] not in (["audio", "transcriptions"], ["audio", "speech"]):
            self._json(error(404, f"fake server: no route {path}"))
            return
        reply = fake._next(request, segments[-1])
        if not fake._wait(reply.delay):
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if reply.audio is not None:
                self._stream(reply, fake)
            else:
                self._json(reply)

    def _json(self, reply: Reply) -> None:
        payload = json.dumps(reply.body if reply.body is not None else {}).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, reply: Reply, fake: FakeOpenAIAudioServer) -> None:
        audio = reply.audio or b""
        self.send_response(reply.status)
        self.send_header("Content-Type", "audio/pcm")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for start in range(0, len(audio), reply.chunk_size):
            if start and not fake._wait(reply.chunk_delay):
                return
            piece = audio[start : start + reply.chunk_size]
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
