"""The chat model the environment asks for: the one place chat-provider config is read."""

from __future__ import annotations

import os
from collections.abc import Mapping

from activities.chat_models.base import DEFAULT_TIMEOUT_SECONDS, ChatModel, ChatModelError
from activities.chat_models.offline.policy import OfflineChatModel
from activities.provider_env import env_flag, env_seconds, env_value

PROVIDERS = ("offline", "openai", "azure")


def chat_model_from_env(env: Mapping[str, str] = os.environ) -> ChatModel:
    """The chat model the environment asks for.

    `BATON_CHAT_PROVIDER`: `offline` (default, no network), `openai` or `azure`.

    * openai: `BATON_OPENAI_API_KEY` (or `OPENAI_API_KEY`), optional `BATON_OPENAI_BASE_URL`
      (or `OPENAI_BASE_URL`, e.g. a local OpenAI-compatible server) and `BATON_OPENAI_MODEL`
      (overrides each agent's model name).
    * azure: `AZURE_OPENAI_ENDPOINT`, `AZURE_OPENAI_API_KEY`, `AZURE_OPENAI_DEPLOYMENT` and
      optional `AZURE_OPENAI_API_VERSION` (default 2024-10-21).
    * both: `BATON_OPENAI_STREAM=1` streams responses; `BATON_OPENAI_TIMEOUT` (seconds, 30).

    Raises `ChatModelError(retryable=False)` naming what is missing or wrong.
    """
    provider = (env.get("BATON_CHAT_PROVIDER", "") or "offline").strip().lower()
    if provider == "offline":
        return OfflineChatModel()
    if provider == "openai":
        return _openai_from_env(env)
    if provider == "azure":
        return _azure_from_env(env)
    raise ChatModelError(
        f"BATON_CHAT_PROVIDER must be one of {', '.join(PROVIDERS)}; got {provider!r}",
        retryable=False,
    )


def _openai_from_env(env: Mapping[str, str]) -> ChatModel:
    # Imported here so a worker on the offline policy never loads the OpenAI SDK.
    from activities.chat_models.openai_chat import OpenAIChatModel

    api_key = env_value(env, "BATON_OPENAI_API_KEY", "OPENAI_API_KEY")
    if api_key is None:
        # Local OpenAI-compatible servers usually ignore the key, but the SDK still sends one.
        raise _missing(
            "openai",
            [
                "BATON_OPENAI_API_KEY (or OPENAI_API_KEY; any value for a "
                "local server that ignores keys)"
            ],
        )
    return OpenAIChatModel(
        api_key=api_key,
        base_url=env_value(env, "BATON_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        model=env_value(env, "BATON_OPENAI_MODEL"),
        stream=env_flag(env, "BATON_OPENAI_STREAM"),
        timeout=_timeout(env),
    )


def _azure_from_env(env: Mapping[str, str]) -> ChatModel:
    # Imported here so a worker on the offline policy never loads the OpenAI SDK.
    from activities.chat_models.openai_chat import OpenAIChatModel
    from activities.openai_clients import DEFAULT_AZURE_API_VERSION

    wanted = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_DEPLOYMENT")
    values = {name: env_value(env, name) for name in wanted}
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise _missing("azure", missing)
    return OpenAIChatModel.azure(
        endpoint=values["AZURE_OPENAI_ENDPOINT"] or "",
        api_key=values["AZURE_OPENAI_API_KEY"] or "",
        deployment=values["AZURE_OPENAI_DEPLOYMENT"] or "",
        api_version=env_value(env, "AZURE_OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION,
        stream=env_flag(env, "BATON_OPENAI_STREAM"),
        timeout=_timeout(env),
    )


def _timeout(env: Mapping[str, str]) -> float:
    try:
        return env_seconds(env, "BATON_OPENAI_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)
    except ValueError as error:
        raise ChatModelError(str(error), retryable=False) from error


def _missing(provider: str, names: list[str]) -> ChatModelError:
    listed = ", ".join(names)
    return ChatModelError(
        f"BATON_CHAT_PROVIDER={provider} needs {listed}. Set them in the worker's environment, "
        "or unset BATON_CHAT_PROVIDER to use the embedded offline policy.",
        retryable=False,
        provider=provider,
    )
