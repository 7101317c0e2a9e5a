"""The offline policy's conversation rules: goodbyes, asking for a person, offers of help, token
usage, and tool calls with valid arguments for any utterance."""

from __future__ import annotations

import dataclasses

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from activities.chat_models.offline import policy as offline_policy
from contracts.agent_reply import ChatMessage
from registries.loading import Registry
from tests.unit.offline_policy_turns import calls, generate, make_turn

# --- conversation ---------------------------------------------------------------------------


def test_goodbye_ends_the_call_when_the_agent_can(shipped: Registry) -> None:
    result = generate(make_turn(shipped, "banking", "Concierge", "no thanks, that's all. Bye!"))
    assert calls(result) == [("end_call", {"reason": "caller done"})]
    assert "Thank you for calling Harbor Private Bank" in result.text
    fraud = generate(
        make_turn(shipped, "banking", "FraudAgent", "ok that's it, goodbye", with_routes=False)
    )
    assert calls(fraud) == [("end_call", {"reason": "caller done"})]


def test_goodbye_from_an_agent_that_cannot_end_the_call_is_said_without_a_tool(
    shipped: Registry,
) -> None:
    fraud = shipped.agents["FraudAgent"]
    without = fraud.model_copy(update={"tools": tuple(t for t in fraud.tools if t != "end_call")})
    registry = dataclasses.replace(shipped, agents={**shipped.agents, "FraudAgent": without})
    result = generate(
        make_turn(registry, "banking", "FraudAgent", "ok that's it, goodbye", with_routes=False)
    )
    assert result.tool_calls == [] and "Goodbye" in result.text


def test_asking_for_a_person_escalates(shipped: Registry) -> None:
    result = generate(
        make_turn(shipped, "banking", "Concierge", "can I speak to a real person please")
    )
    ((name, args),) = calls(result)
    assert name == "escalate_human" and args["reason"] == "caller asked for a person"


def test_greeting_and_unknown_requests_get_an_offer_of_help(shipped: Registry) -> None:
    hello = generate(make_turn(shipped, "healthcare", "ReceptionAgent", "hello"))
    assert hello.tool_calls == []
    assert "City Health Clinic" in hello.text and "book, reschedule or cancel" in hello.text
    unknown = generate(
        make_turn(shipped, "banking", "FraudAgent", "what is the weather like", with_routes=False)
    )
    assert unknown.tool_calls == [] and unknown.text.startswith("I'm not sure I can help")


def test_token_usage_is_recorded_deterministically(shipped: Registry) -> None:
    short = make_turn(shipped, "banking", "Concierge", "what's my balance")
    longer = make_turn(
        shipped,
        "banking",
        "Concierge",
        "hello",
        ChatMessage(role="assistant", content="Hi there, how can I help?"),
        "what's my balance",
    )
    first, again, more = generate(short), generate(short), generate(longer)
    assert first == again  # same turn, same answer, same call ids
    assert (first.provider, first.model) == ("offline", "offline-policy")
    assert first.usage.prompt_tokens > 100 and first.usage.completion_tokens > 0
    assert more.usage.prompt_tokens > first.usage.prompt_tokens
    assert first.tool_calls[0].id == "offline-Concierge-1-0"


def test_says_once_that_it_is_not_a_language_model(
    shipped: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offline_policy, "_announced", False)
    with structlog.testing.capture_logs() as logs:
        generate(make_turn(shipped, "banking", "Concierge", "hello"))
        generate(make_turn(shipped, "banking", "Concierge", "hello"))
    notices = [entry for entry in logs if entry["event"] == "offline chat policy in use"]
    assert len(notices) == 1 and "not a language model" in notices[0]["detail"]


_WORDS = [
    "card",
    "fraud",
    "balance",
    "my",
    "block",
    "claim",
    "policy",
    "bye",
    "8832",
    "POL-A-1001",
    "appointment",
    "fever",
    "invoice",
    "stolen",
    "portfolio",
    "the",
    "$2,500",
    "thanks",
    "person",
]


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.sampled_from(_WORDS), max_size=8),
    agent=st.sampled_from(["Concierge", "FraudAgent", "InvestmentAdvisor"]),
)
def test_any_utterance_yields_offered_tools_with_json_arguments(
    shipped: Registry, words: list[str], agent: str
) -> None:
    request = make_turn(shipped, "banking", agent, " ".join(words) or "hmm")
    result = generate(request)
    offered = {tool.name: tool for tool in request.tools}
    assert result.text or result.tool_calls
    for name, args in calls(result):
        assert name in offered
        assert set(offered[name].parameters.get("required", [])) <= set(args)
        if name == "handoff_to_agent":
            assert (
                args["target_agent"]
                in offered[name].parameters["properties"]["target_agent"]["enum"]
            )
