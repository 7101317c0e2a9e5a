"""The chat model the environment asks for: the one place chat-provider config is read."""

from __future__ import annotations

from collections.abc import Mapping

from activities.chat_models.base import DEFAULT_TIMEOUT_SECONDS, ChatModel, ChatModelError
from activities.chat_models.offline.policy import OfflineChatModel
from activities.provider_env import is_on, seconds
from runtime.settings import Settings, settings

PROVIDERS = ("offline", "openai", "azure")


def chat_model_from_env(env: Mapping[str, str] | None = None) -> ChatModel:
    """The chat model the environment asks for.

    `BATON_CHAT_PROVIDER`: `offline` (default, no network), `openai` or `azure`.

    * openai: `BATON_OPENAI_API_KEY` (or `OPENAI_API_KEY`), optional `BATON_OPENAI_BASE_URL`
      (or `OPENAI_BASE_URL`, e.g. a local OpenAI-compatible server) and `BATON_OPENAI_MODEL`
      (overrides each agent's model name).
    * azure: `AZURE_OPENAI_ENDPOINT`, `AZURE_OPENAI_API_KEY`, `AZURE_OPENAI_DEPLOYMENT` and
      optional `AZURE_OPENAI_API_VERSION` (default 2024-10-21).
    * both: `BATON_OPENAI_STREAM=1` streams responses; `BATON_OPENAI_TIMEOUT` (seconds, 30).

    `env` defaults to this process's environment. Raises `ChatModelError(retryable=False)`
    naming what is missing or wrong.
    """
    config = settings(env)
    provider = (config.chat_provider or "offline").lower()
    if provider == "offline":
        return OfflineChatModel()
    if provider == "openai":
        return _openai_from(config)
    if provider == "azure":
        return _azure_from(config)
    raise ChatModelError(
        f"BATON_CHAT_PROVIDER must be one of {', '.join(PROVIDERS)}; got {provider!r}",
        retryable=False,
    )


def _openai_from(config: Settings) -> ChatModel:
    # Imported here so a worker on the offline policy never loads the OpenAI SDK.
    from activities.chat_models.openai_chat import OpenAIChatModel

    api_key = config.openai_api_key
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
        base_url=config.openai_base_url,
        model=config.openai_model,
        stream=is_on(config.openai_stream),
        timeout=_timeout(config),
    )


def _azure_from(config: Settings) -> ChatModel:
    # Imported here so a worker on the offline policy never loads the OpenAI SDK.
    from activities.chat_models.openai_chat import OpenAIChatModel
    from activities.openai_clients import DEFAULT_AZURE_API_VERSION

    values = {
        "AZURE_OPENAI_ENDPOINT": config.azure_openai_endpoint,
        "AZURE_OPENAI_API_KEY": config.azure_openai_api_key,
        "AZURE_OPENAI_DEPLOYMENT": config.azure_openai_deployment,
    }
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise _missing("azure", missing)
    return OpenAIChatModel.azure(
        endpoint=values["AZURE_OPENAI_ENDPOINT"] or "",
        api_key=values["AZURE_OPENAI_API_KEY"] or "",
        deployment=values["AZURE_OPENAI_DEPLOYMENT"] or "",
        api_version=config.azure_openai_api_version or DEFAULT_AZURE_API_VERSION,
        stream=is_on(config.openai_stream),
        timeout=_timeout(config),
    )


def _timeout(config: Settings) -> float:
    try:
        return seconds(config.openai_timeout, "BATON_OPENAI_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)
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
