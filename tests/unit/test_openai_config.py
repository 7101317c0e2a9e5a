"""Choosing and configuring the chat model from the environment: offline by default, OpenAI or
Azure OpenAI with their keys, URLs and options, and clear errors for a bad configuration."""

from __future__ import annotations

import pytest

from activities.chat_models.base import ChatModel, ChatModelError, chat_model_name
from activities.chat_models.factory import chat_model_from_env
from activities.chat_models.offline.policy import OfflineChatModel
from activities.chat_models.openai_chat import OpenAIChatModel
from activities.provider_errors import is_retryable_status
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    completion,
)
from tests.unit.openai_turns import generate_once, run, turn

pytestmark = pytest.mark.usefixtures("loopback_only")


# --- configuration from the environment -----------------------------------------------------


def test_offline_is_the_default_provider() -> None:
    model = chat_model_from_env({})
    assert isinstance(model, OfflineChatModel) and isinstance(model, ChatModel)
    assert chat_model_name(model) == "offline"


def test_openai_from_env_talks_to_the_configured_base_url() -> None:
    with FakeOpenAIServer([completion("configured")]) as server:
        env = {
            "BATON_CHAT_PROVIDER": "openai",
            "OPENAI_API_KEY": "fallback-key",
            "BATON_OPENAI_BASE_URL": server.base_url,
            "BATON_OPENAI_MODEL": "override-model",
        }
        model = chat_model_from_env(env)
        assert isinstance(model, OpenAIChatModel)
        result = run(generate_once(model, turn(model="agent-model")))
    assert result.text == "configured"
    assert server.requests[0].body["model"] == "override-model"
    assert server.requests[0].headers["authorization"] == "Bearer fallback-key"
    assert chat_model_name(model) == "openai:override-model"


def test_streaming_flag_from_env() -> None:
    env = {"BATON_CHAT_PROVIDER": "openai", "BATON_OPENAI_API_KEY": "k", "BATON_OPENAI_STREAM": "1"}
    model = chat_model_from_env(env)
    assert isinstance(model, OpenAIChatModel) and model.stream and model.timeout == 30.0


def test_azure_from_env_uses_the_default_api_version() -> None:
    with FakeOpenAIServer([completion("hi")]) as server:
        env = {
            "BATON_CHAT_PROVIDER": "azure",
            "AZURE_OPENAI_ENDPOINT": server.azure_endpoint,
            "AZURE_OPENAI_API_KEY": "az",
            "AZURE_OPENAI_DEPLOYMENT": "dep",
        }
        model = chat_model_from_env(env)
        assert isinstance(model, OpenAIChatModel)
        run(generate_once(model, turn()))
    assert server.requests[0].query["api-version"] == ["2024-10-21"]


@pytest.mark.parametrize(
    ("env", "mentions"),
    [
        ({"BATON_CHAT_PROVIDER": "openai"}, ["BATON_OPENAI_API_KEY", "OPENAI_API_KEY"]),
        (
            {"BATON_CHAT_PROVIDER": "azure", "AZURE_OPENAI_API_KEY": "k"},
            ["AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT"],
        ),
        ({"BATON_CHAT_PROVIDER": "anthropic"}, ["offline", "openai", "azure", "anthropic"]),
        (
            {"BATON_CHAT_PROVIDER": "openai", "OPENAI_API_KEY": "k", "BATON_OPENAI_TIMEOUT": "x"},
            ["BATON_OPENAI_TIMEOUT"],
        ),
    ],
)
def test_missing_or_bad_configuration_is_not_retryable(
    env: dict[str, str], mentions: list[str]
) -> None:
    with pytest.raises(ChatModelError) as caught:
        chat_model_from_env(env)
    assert caught.value.retryable is False
    for name in mentions:
        assert name in str(caught.value)


def test_retryable_statuses() -> None:
    assert [s for s in (400, 401, 403, 404, 408, 409, 422, 429) if is_retryable_status(s)] == [
        408,
        409,
        429,
    ]
    assert all(is_retryable_status(s) for s in (500, 502, 503, 504))
