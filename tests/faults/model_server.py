"""A slow, rule-following chat model on loopback: the fake OpenAI server answering by rules.

`tests/fakes/openai_server.py` answers from a script, one reply per request in order. A call
whose model worker is killed mid-request sends that request again from another worker, and a
chaos run sends thousands from hundreds of calls at once, so no fixed order exists: this
server answers each request from its own messages, the way the banking demo goes:

* the caller reports fraud and the agent may hand off to the FraudAgent: hand off;
* the caller asks to block a card ending in four digits and `block_card` is offered: call it;
* the caller says goodbye and `end_call` is offered: call it;
* the last message is a tool result: say what it says (its `message`, or its error);
* anything else: a short acknowledgement.

A request with `"stream": true` (a voice call's, whose reply is spoken as it is written) is
answered with the same reply as server-sent events, as the real API does.

It can answer after a delay (a model's latency, uniform between two bounds) and can hold the
first request for a given utterance until the server stops, never answering it: the worker that
sent it is to be killed while it waits, and the retry (another request) is answered.

Run on its own for the chaos bench (`python -m tests.faults.model_server --delay-ms 300`); it
prints `model server on <base url>` once it serves, and stops on SIGTERM or after --lifetime.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any, Self

from contracts.registry import HANDOFF_TOOL
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    completion,
    stream,
    tool_call,
)

ACKNOWLEDGEMENT = "I understand. Is there anything else I can help you with?"
_CARD_DIGITS = re.compile(r"\b(\d{4})\b")


def scripted_reply(body: Any) -> Reply:
    """The reply to one chat-completions request body, by the rules in the module docstring."""
    body = body if isinstance(body, dict) else {}
    messages = body.get("messages") or [{}]
    tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or []}
    last = messages[-1]
    if last.get("role") == "tool":
        return completion(_say_tool_result(str(last.get("content") or "")))
    text = str(last.get("content") or "").lower()
    if "goodbye" in text and "end_call" in tools:
        return _call("end_call", {"reason": "the caller said goodbye"})
    if "fraud" in text and _may_hand_to(tools, "FraudAgent"):
        return _call(HANDOFF_TOOL, {"target_agent": "FraudAgent", "reason": "suspected fraud"})
    digits = _CARD_DIGITS.search(text)
    if "block" in text and digits and "block_card" in tools:
        return _call("block_card", {"last4": digits.group(1), "reason": "suspected fraud"})
    return completion(ACKNOWLEDGEMENT)


def streamed(reply: Reply) -> Reply:
    """A chat completion `reply` as the SSE chunks a streamed request gets."""
    message = (reply.body or {})["choices"][0]["message"]
    calls = [
        {"index": n, "id": call["id"], **call["function"]}
        for n, call in enumerate(message.get("tool_calls") or [])
    ]
    return stream([message["content"]] if message.get("content") else [], tool_call_parts=calls)


def _call(name: str, arguments: Mapping[str, Any]) -> Reply:
    # Ids only need to be unique within the call's window of messages.
    return completion(None, tool_calls=[tool_call(name, arguments, f"call_{time.time_ns()}")])


def _may_hand_to(tools: Mapping[str, Any], agent: str) -> bool:
    handoff = tools.get(HANDOFF_TOOL)
    if handoff is None:
        return False
    target = handoff.get("parameters", {}).get("properties", {}).get("target_agent", {})
    return agent in target.get("enum", [agent])


def _say_tool_result(content: str) -> str:
    try:
        result = json.loads(content)
    except ValueError:
        return "Done."
    if not isinstance(result, dict):
        return "Done."
    if result.get("error"):
        return f"Sorry, that did not work: {result['error']}"
    return str(result.get("message") or "Done, that's taken care of.")


class ScriptedModelServer(FakeOpenAIServer):
    """The fake OpenAI server answering by `scripted_reply`, with latency and one hold."""

    def __init__(
        self,
        *,
        delay: tuple[float, float] = (0.0, 0.0),
        record: bool = True,
        lifetime: float = 300.0,
    ) -> None:
        super().__init__([], lifetime=lifetime)
        self.delay = delay
        #: Keep every request (tests read them); a long chaos run only counts them.
        self.record = record
        self.answered = 0
        #: Set once the held request has arrived (its sender may now be killed).
        self.held = threading.Event()
        self._hold_marker: str | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def hold_first(self, utterance: str) -> None:
        """Never answer the next request whose last user message contains `utterance`."""
        with self._lock:
            self._hold_marker = utterance.lower()
            self.held.clear()

    def matching_requests(self, utterance: str) -> list[RecordedRequest]:
        """Recorded requests whose last user message contains `utterance`."""
        with self._lock:
            return [r for r in self.requests if utterance.lower() in _last_user_text(r.body)]

    # The base class picks replies in `_next` (called from each request's handler thread);
    # answering here by rules instead of from a script is the whole point of this subclass.
    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self.record:
                self.requests.append(request)
            hold = self._hold_marker is not None and self._hold_marker in _last_user_text(
                request.body
            )
            if hold:
                self._hold_marker = None
        if hold:
            self.held.set()
            # Until the server stops (its lifetime bounds it): the sender will be dead by then,
            # and the reply goes nowhere.
            self._stopping.wait()
        low, high = self.delay
        if high > 0:
            time.sleep(random.uniform(low, high))
        with self._lock:
            self.answered += 1
        reply = scripted_reply(request.body)
        if isinstance(request.body, dict) and request.body.get("stream"):
            return streamed(reply)
        return reply


def _last_user_text(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in reversed(messages or []):
        if message.get("role") == "user":
            return str(message.get("content") or "").lower()
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description="A rule-following chat model on loopback")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="mean latency; ±50%% jitter")
    parser.add_argument("--lifetime", type=float, default=3600.0, help="stop after this long")
    args = parser.parse_args()
    mean = args.delay_ms / 1000
    server = ScriptedModelServer(
        delay=(mean * 0.5, mean * 1.5), record=False, lifetime=args.lifetime
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    print(f"model server on {server.base_url}", flush=True)
    try:
        stop.wait(args.lifetime)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
