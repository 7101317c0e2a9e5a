"""The chaos bench's rule-following model answers a streamed request (a voice call's) as
server-sent events, as the real API does: before, it answered every request with plain JSON,
the SDK read no events from it, and each voice caller in the soak heard an apology instead of
the fraud desk."""

from __future__ import annotations

import json

import pytest

from activities.chat_models.openai_chat import OpenAIChatModel
from tests.faults.model_server import ScriptedModelServer
from tests.unit.openai_turns import generate_once, run, turn

pytestmark = pytest.mark.usefixtures("loopback_only")


@pytest.mark.parametrize("streaming", [True, False])
def test_the_card_is_blocked_whether_or_not_the_request_streams(streaming: bool) -> None:
    with ScriptedModelServer(lifetime=30) as server:
        model = OpenAIChatModel(api_key="k", base_url=server.base_url, stream=streaming)
        result = run(generate_once(model, turn()))
    assert bool(server.requests[0].body.get("stream")) is streaming
    [call] = result.tool_calls
    assert call.name == "block_card"
    assert json.loads(call.arguments)["last4"] == "8832"


def test_a_streamed_acknowledgement_is_its_text() -> None:
    deltas: list[str] = []
    with ScriptedModelServer(lifetime=30) as server:
        model = OpenAIChatModel(
            api_key="k", base_url=server.base_url, stream=True, on_text_delta=deltas.append
        )
        result = run(generate_once(model, turn(messages=[])))
    assert result.text.startswith("I understand") and result.finish_reason == "stop"
    assert "".join(deltas) == result.text
