"""OpenAIChatModel against a real OpenAI-compatible HTTP server on 127.0.0.1.

The scripted server (tests/fakes/openai_server.py) speaks HTTP and SSE like the real API, so
these tests cover what the SDK sends and how its answers and failures come back to Baton.
"""

from __future__ import annotations

import socket

import pytest

from activities.chat_models.base import (
    ChatModelError,
)
from activities.chat_models.openai_chat import OpenAIChatModel
from activities.chat_models.openai_wire import classify_exception
from contracts.agent_reply import AgentTurnResult, ChatMessage, ToolCall
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    completion,
    error,
    stall,
    stream,
    tool_call,
)
from tests.unit.openai_turns import BLOCK_CARD, expect_error, generate_once, run, turn

pytestmark = pytest.mark.usefixtures("loopback_only")


def test_plain_reply_with_usage() -> None:
    with FakeOpenAIServer([completion("Your card is safe.", usage=(120, 7))]) as server:
        model = OpenAIChatModel(api_key="sk-test", base_url=server.base_url)
        result = run(generate_once(model, turn()))
    assert result.text == "Your card is safe."
    assert result.tool_calls == []
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (120, 7)
    assert (result.provider, result.model, result.finish_reason) == ("openai", "gpt-fake", "stop")
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_usage_absent_counts_as_zero() -> None:
    with FakeOpenAIServer([completion("ok", usage=None)]) as server:
        result = run(generate_once(OpenAIChatModel(api_key="k", base_url=server.base_url), turn()))
    assert result.usage.total_tokens == 0


def test_tool_call_reply() -> None:
    call = tool_call("block_card", {"last4": "8832", "reason": "fraud"}, call_id="call_9")
    with FakeOpenAIServer([completion(None, tool_calls=[call])]) as server:
        result = run(generate_once(OpenAIChatModel(api_key="k", base_url=server.base_url), turn()))
    assert result.text == ""
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls == [
        ToolCall(id="call_9", name="block_card", arguments='{"last4": "8832", "reason": "fraud"}')
    ]


def test_malformed_tool_arguments_come_back_raw() -> None:
    broken = '{"last4": "8832", "reason": '
    with FakeOpenAIServer([completion(None, tool_calls=[tool_call("block_card", broken)])]) as srv:
        result = run(generate_once(OpenAIChatModel(api_key="k", base_url=srv.base_url), turn()))
    assert result.tool_calls[0].arguments == broken


def test_request_carries_prompt_summary_window_and_tools() -> None:
    window = [
        ChatMessage(role="user", content="someone used my card"),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(id="c1", name="block_card", arguments='{"last4": "8832"}')],
        ),
        ChatMessage(role="tool", tool_call_id="c1", name="block_card", content='{"ok": true}'),
        ChatMessage(role="assistant", content="Blocked."),
        ChatMessage(role="user", content="thanks"),
    ]
    request = turn(summary="Caller: hi", messages=window, temperature=0.2, max_tokens=99)
    with FakeOpenAIServer([completion("You're welcome.")]) as server:
        model = OpenAIChatModel(api_key="k", base_url=server.base_url, model="my-model")
        run(generate_once(model, request))
    body = server.requests[0].body
    assert server.requests[0].path == "/v1/chat/completions"
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("my-model", 0.2, 99)
    messages = body["messages"]
    assert messages[0] == {
        "role": "system",
        "content": "You are the fraud desk.\n\nConversation so far: Caller: hi",
    }
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[2]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "block_card", "arguments": '{"last4": "8832"}'},
        }
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "block_card",
                "description": BLOCK_CARD.description,
                "parameters": BLOCK_CARD.parameters,
            },
        }
    ]
    assert "stream" not in body


def test_no_tools_key_without_tools_and_orphan_tool_results_are_dropped() -> None:
    window = [
        ChatMessage(role="tool", tool_call_id="gone", content="{}"),
        ChatMessage(role="user", content="hello"),
    ]
    with FakeOpenAIServer([completion("Hi")]) as server:
        model = OpenAIChatModel(api_key="k", base_url=server.base_url)
        run(generate_once(model, turn(tools=[], messages=window)))
    body = server.requests[0].body
    assert "tools" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_streamed_text_reaches_the_callback_delta_by_delta() -> None:
    seen: list[str] = []

    async def on_delta(text: str) -> None:
        seen.append(text)

    reply = stream(["Your ", "card ", "is blocked."], usage=(40, 6), event_delay=0.01)
    with FakeOpenAIServer([reply]) as server:
        model = OpenAIChatModel(
            api_key="k", base_url=server.base_url, stream=True, on_text_delta=on_delta
        )
        result = run(generate_once(model, turn()))
    assert seen == ["Your ", "card ", "is blocked."]
    assert result.text == "Your card is blocked."
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (40, 6)
    assert result.finish_reason == "stop"
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streamed_tool_call_arguments_are_reassembled_by_index() -> None:
    parts = [
        {"index": 0, "id": "call_a", "name": "block_card", "arguments": ""},
        {"index": 1, "id": "call_b", "name": "block_card", "arguments": '{"last4": '},
        {"index": 0, "arguments": '{"last4": "88'},
        {"index": 0, "arguments": '32", "reason": "fraud"}'},
        {"index": 1, "arguments": '"4417", "reason'},  # never closed: stays malformed
    ]
    with FakeOpenAIServer([stream(["One moment. "], tool_call_parts=parts)]) as server:
        seen: list[str] = []
        model = OpenAIChatModel(api_key="k", base_url=server.base_url, stream=True)
        result = run(_stream_with(model, seen))
    assert seen == ["One moment. "]  # a plain (non-async) callback works too
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls == [
        ToolCall(id="call_a", name="block_card", arguments='{"last4": "8832", "reason": "fraud"}'),
        ToolCall(id="call_b", name="block_card", arguments='{"last4": "4417", "reason'),
    ]


async def _stream_with(model: OpenAIChatModel, seen: list[str]) -> AgentTurnResult:
    try:
        return await model.generate(turn(), on_text_delta=seen.append)
    finally:
        await model.aclose()


def test_a_failing_callback_is_not_disguised_as_a_provider_error() -> None:
    def explode(_: str) -> None:
        raise RuntimeError("tts is down")

    with FakeOpenAIServer([stream(["Hi"])]) as server:
        model = OpenAIChatModel(
            api_key="k", base_url=server.base_url, stream=True, on_text_delta=explode
        )
        with pytest.raises(RuntimeError, match="tts is down"):
            run(generate_once(model, turn()))


def test_http_500_is_retryable_and_the_next_attempt_succeeds() -> None:
    script = [error(500, "upstream exploded", kind="server_error"), completion("Recovered.")]
    with FakeOpenAIServer(script) as server:

        async def two_attempts() -> tuple[ChatModelError, AgentTurnResult]:
            model = OpenAIChatModel(api_key="k", base_url=server.base_url)
            try:
                with pytest.raises(ChatModelError) as caught:
                    await model.generate(turn())
                # Temporal would retry the activity; the SDK itself must not have.
                assert len(server.requests) == 1
                return caught.value, await model.generate(turn())
            finally:
                await model.aclose()

        failure, result = run(two_attempts())
    assert failure.retryable is True and failure.status_code == 500
    assert "upstream exploded" in str(failure)
    assert result.text == "Recovered."
    assert len(server.requests) == 2


def test_http_400_is_not_retryable() -> None:
    with FakeOpenAIServer([error(400, "messages: invalid role")]) as server:
        failure = expect_error(OpenAIChatModel(api_key="k", base_url=server.base_url), turn())
    assert failure.retryable is False and failure.status_code == 400
    assert "messages: invalid role" in failure.message
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(401, False), (403, False), (404, False), (422, False), (408, True), (409, True),
     (429, True), (502, True), (503, True)],
)  # fmt: skip
def test_status_classification_over_http(status: int, retryable: bool) -> None:
    with FakeOpenAIServer([error(status, f"status {status}")]) as server:
        failure = expect_error(OpenAIChatModel(api_key="k", base_url=server.base_url), turn())
    assert (failure.status_code, failure.retryable) == (status, retryable)
    assert len(server.requests) == 1  # max_retries=0: one attempt per generate


def test_timeout_is_retryable() -> None:
    with FakeOpenAIServer([stall(5.0)]) as server:
        model = OpenAIChatModel(api_key="k", base_url=server.base_url, timeout=0.3)
        failure = expect_error(model, turn())
    assert failure.retryable is True and "timed out" in failure.message
    assert len(server.requests) == 1


def test_stream_stalling_midway_is_retryable() -> None:
    seen: list[str] = []
    reply = stream(["Hello", " there"], event_delay=3.0)
    with FakeOpenAIServer([reply]) as server:
        model = OpenAIChatModel(
            api_key="k",
            base_url=server.base_url,
            stream=True,
            timeout=0.4,
            on_text_delta=seen.append,
        )
        failure = expect_error(model, turn())
    assert seen == ["Hello"]  # the first delta arrived, then the server went quiet
    assert failure.retryable is True


def test_a_streamed_request_answered_without_events_is_a_model_failure() -> None:
    # An endpoint (or proxy) that ignores `stream` and answers plain JSON: the SDK reads no
    # events from it. That is not the model saying nothing (that stream ends "stop").
    with FakeOpenAIServer([completion("Your card is safe.")]) as server:
        model = OpenAIChatModel(api_key="k", base_url=server.base_url, stream=True)
        failure = expect_error(model, turn())
    assert "carried no chunks" in failure.message and failure.retryable is False


def test_a_streamed_empty_answer_is_still_an_answer() -> None:
    with FakeOpenAIServer([stream([])]) as server:
        model = OpenAIChatModel(api_key="k", base_url=server.base_url, stream=True)
        result = run(generate_once(model, turn()))
    assert (result.text, result.tool_calls, result.finish_reason) == ("", [], "stop")


def test_connection_refused_is_retryable() -> None:
    with socket.socket() as probe:  # a port nobody listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", timeout=2)
    failure = expect_error(model, turn())
    assert failure.retryable is True


def test_transport_errors_outside_the_sdk_are_retryable() -> None:
    # Older SDKs let a stream cut mid-way surface as the HTTP library's own exception.
    class ReadError(Exception):
        pass

    ReadError.__module__ = "httpx"
    assert classify_exception(ReadError("connection reset"), provider="openai").retryable
    assert classify_exception(TimeoutError(), provider="openai").retryable
    assert not classify_exception(KeyError("bug"), provider="openai").retryable


def test_azure_deployment_path_api_version_and_api_key_header() -> None:
    with FakeOpenAIServer([completion("Hello from Azure", model="gpt-4o")]) as server:
        model = OpenAIChatModel.azure(
            endpoint=server.azure_endpoint,
            api_key="azure-key",
            deployment="baton-gpt4o",
            api_version="2024-10-21",
        )
        result = run(generate_once(model, turn()))
    request = server.requests[0]
    assert request.path == "/openai/deployments/baton-gpt4o/chat/completions"
    assert request.deployment == "baton-gpt4o"
    assert request.query["api-version"] == ["2024-10-21"]
    assert request.headers["api-key"] == "azure-key"
    assert "authorization" not in request.headers
    assert (result.text, result.provider, result.model) == ("Hello from Azure", "azure", "gpt-4o")


def test_fake_server_refuses_beyond_its_budget_and_stops() -> None:
    with FakeOpenAIServer([completion("one")], max_requests=1) as server:
        model = OpenAIChatModel(api_key="k", base_url=server.base_url)

        async def twice() -> ChatModelError:
            try:
                await model.generate(turn())
                with pytest.raises(ChatModelError) as caught:
                    await model.generate(turn())
                return caught.value
            finally:
                await model.aclose()

        refused = run(twice())
    assert refused.status_code == 503 and "budget" in refused.message
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", server.port)) != 0  # stopped on exit
