"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests.

Real HTTP on loopback, so tests exercise the SDK's own request building, SSE parsing, error
mapping and timeouts, with no network beyond this machine and no extra dependencies:

    with FakeOpenAIServer([completion("Hello"), error(500, "boom")]) as server:
        model = OpenAIChatModel(api_key="test", base_url=server.base_url)
        ...
        assert server.requests[0].body["messages"][0]["role"] == "system"

It serves `POST /v1/chat/completions` and the Azure path
`/openai/deployments/{deployment}/chat/completions?api-version=...`, answering each request
with the next scripted `Reply`: a JSON completion, SSE chunks ending with `data: [DONE]`, an
HTTP error with an OpenAI-style JSON body, or any of these after a delay (longer than the
client's timeout, to test timeouts). Every request is recorded. The server answers at most
`max_requests` requests (503 after that, or when the script runs out) and stops by itself
after `lifetime` seconds; as a context manager it stops on exit.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

DEFAULT_MODEL = "gpt-fake"


@dataclass(frozen=True)
class Reply:
    """One scripted response: a JSON `body`, or `events` sent as SSE, after `delay` seconds."""

    status: int = 200
    body: Any = None
    events: Sequence[Any] | None = None
    delay: float = 0.0
    #: Pause between SSE events, to let a test observe deltas arriving one by one.
    event_delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received; `body` is the parsed JSON (None if it was not JSON)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    #: The Azure deployment named in the path, if the request used the Azure route.
    deployment: str | None = None


def tool_call(
    name: str, arguments: str | Mapping[str, Any], call_id: str = "call_1"
) -> dict[str, Any]:
    """A `tool_calls` entry; `arguments` may be a dict or raw (possibly malformed) text."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def completion(
    text: str | None = "",
    *,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    usage: tuple[int, int] | None = (12, 5),
    finish_reason: str | None = None,
    model: str = DEFAULT_MODEL,
    delay: float = 0.0,
) -> Reply:
    """A non-streamed chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = _usage(usage)
    return Reply(body=body, delay=delay)


def stream(
    text_parts: Iterable[str] = (),
    *,
    tool_call_parts: Iterable[Mapping[str, Any]] = (),
    usage: tuple[int, int] | None = (12, 5),
    finish_reason: str | None = None,
    model: str = DEFAULT_MODEL,
    event_delay: float = 0.0,
) -> Reply:
    """SSE chunks: one per text part, one per tool-call delta, a finish chunk, a usage chunk.

    A tool-call delta is a dict such as `{"index": 0, "id": "call_1", "name": "f",
    "arguments": "{\\"a\\""}`; later deltas for the same index usually carry only arguments.
    """
    events: list[Any] = []
    tool_calls = list(tool_call_parts)
    for part in text_parts:
        events.append(_chunk(model, {"content": part}))
    for fragment in tool_calls:
        delta: dict[str, Any] = {"index": fragment["index"]}
        if "id" in fragment:
            delta["id"] = fragment["id"]
            delta["type"] = "function"
        function = {key: fragment[key] for key in ("name", "arguments") if key in fragment}
        if function:
            delta["function"] = function
        events.append(_chunk(model, {"tool_calls": [delta]}))
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    events.append(_chunk(model, {}, finish_reason=reason))
    if usage is not None:
        events.append({**_chunk(model, {}), "choices": [], "usage": _usage(usage)})
    events.append("[DONE]")
    return Reply(events=events, event_delay=event_delay)


def error(status: int, message: str, *, kind: str = "invalid_request_error") -> Reply:
    """An HTTP error with the JSON body OpenAI sends."""
    return Reply(status=status, body={"error": {"message": message, "type": kind, "code": None}})


def stall(seconds: float, then: Reply | None = None) -> Reply:
    """`then` (a plain completion by default) only after `seconds`: longer than a timeout."""
    reply = then or completion("too late")
    return Reply(reply.status, reply.body, reply.events, seconds, reply.event_delay, reply.headers)


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion_tokens = usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def _chunk(model: str, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


class FakeOpenAIServer:
    """The scripted server (see the module docstring). Not started until `start`/`with`."""

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        max_requests: int | None = None,
        lifetime: float = 30.0,
    ) -> None:
        self._script = list(script)
        #: An explicit budget is a fixed cap; without one, the budget follows the script.
        self._budget_follows_script = max_requests is None
        self.max_requests = max_requests if max_requests is not None else max(1, len(self._script))
        self.lifetime = lifetime
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    @property
    def port(self) -> int:
        """The free loopback port the server bound."""
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """For `OpenAI(base_url=...)`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def azure_endpoint(self) -> str:
        """For `AzureOpenAI(azure_endpoint=...)`."""
        return f"http://127.0.0.1:{self.port}"

    def add(self, *replies: Reply) -> None:
        """Append replies to the script (raising the budget unless `max_requests` was given)."""
        with self._lock:
            self._script.extend(replies)
            if self._budget_follows_script:
                self.max_requests = max(1, len(self.requests) + len(self._script))

    def start(self) -> FakeOpenAIServer:
        """Serve in a background thread; stop by itself after `lifetime` seconds."""
        # A short poll interval: `shutdown` waits for the serving loop's next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed replies still waiting give up at once."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- used by the handler ---------------------------------------------------------------

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if len(self.requests) > self.max_requests:
                return error(503, "fake server: request budget exhausted", kind="server_error")
            if not self._script:
                return error(503, "fake server: no scripted reply left", kind="server_error")
            return self._script.pop(0)

    def _wait(self, seconds: float) -> bool:
        """Sleep `seconds`; False if the server stopped meanwhile."""
        return not self._stopping.wait(seconds) if seconds > 0 else True


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake: FakeOpenAIServer = self.server.fake  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        segments = parts.path.strip("/").split("/")
        azure = len(segments) == 5 and segments[:2] == ["openai", "deployments"]
        request = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
            deployment=segments[2] if azure else None,
        )
        known = parts.path == "/v1/chat/completions" or (
            azure and segments[3:] == ["chat", "completions"]
        )
        if self.command != "POST" or not known:
            with fake._lock:
                fake.requests.append(request)
            self._send(error(404, f"fake server: no route {self.command} {parts.path}"))
            return
        reply = fake._next(request)
        if not fake._wait(reply.delay):
            return
        # The client may have given up already (a timeout test): nothing left to do then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(reply, fake)

    def _send(self, reply: Reply, fake: FakeOpenAIServer | None = None) -> None:
        if reply.events is not None:
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            for position, event in enumerate(reply.events):
                if position and fake is not None and not fake._wait(reply.event_delay):
                    return
                data = event if isinstance(event, str) else json.dumps(event)
                self.wfile.write(f"data: {data}\n\n".encode())
                self.wfile.flush()
            return
        payload = json.dumps(reply.body if reply.body is not None else {}).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)
