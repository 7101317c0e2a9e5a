"""Checks a command makes before it starts anything, so a user meets one plain sentence saying
what is wrong and what to do, instead of a traceback or a timeout."""

from __future__ import annotations

from temporalio.client import Client

from registries.errors import BatonError, RegistryError
from registries.loading import load_registry
from runtime.settings import Settings, settings
from runtime.temporal_client import connect, connect_options, temporal_address, tls_problem


class CommandFailedError(BatonError):
    """The command could not do its job (exit 1); a plain `BatonError` is a usage or
    configuration mistake (exit 2)."""


async def connect_or_explain(address: str | None, *, namespace: str | None = None) -> Client:
    """A Temporal client, or `CommandFailedError` saying how to get a server running."""
    target = temporal_address(address)
    try:
        return await connect(address, namespace=namespace)
    except RuntimeError as error:  # the SDK's "Failed client connect: ..."
        problem = tls_problem(error, connect_options(address))
        if problem is not None:  # a server is there: starting one is not the answer
            raise CommandFailedError(
                f"cannot connect to the Temporal server at {target}: {problem}."
            ) from error
        raise CommandFailedError(
            f"cannot reach a Temporal server at {target} ({_reason(error)}). Start one in "
            "another terminal with `baton dev`, or point --address or BATON_TEMPORAL_ADDRESS "
            "at yours."
        ) from error


def require_scenario(name: str, registry: str | None) -> None:
    """Refuse a scenario the registry does not have, listing the ones it has."""
    try:
        known = sorted(load_registry(registry).scenarios)
    except RegistryError:
        return  # the workers report registry problems in full; this check is only a shortcut
    if name not in known:
        raise BatonError(f"no scenario {name!r}; the registry has: {', '.join(known)}")


def require_provider_settings(queues: list[str]) -> None:
    """Refuse to start workers whose chat or speech provider is missing a setting (a key, an
    endpoint), naming it, instead of failing on the first call."""
    # Imported here: only the commands that run workers pay for loading the providers.
    from activities.chat_models.factory import chat_model_from_env
    from activities.provider_errors import ProviderError
    from activities.speech_providers.factory import recognizer_from_env, synthesizer_from_env

    config = settings()
    cloud_stt = not (config.stt or "offline").startswith("offline")
    cloud_tts = not (config.tts or "offline").startswith("offline")
    try:
        if "llm" in queues:
            chat_model_from_env()
        if "speech" in queues and cloud_stt:  # offline models load later, once, at start
            recognizer_from_env()
        if "speech" in queues and cloud_tts:
            synthesizer_from_env()
    except ProviderError as error:
        raise BatonError(error.message) from None
    if "tools" in queues:  # the tools queue files tickets
        require_ticket_sink_settings()


def require_ticket_sink_settings() -> None:
    """Refuse a ticket sink setting that would lose tickets (a webhook without a URL or a
    secret, plain http:// off this machine), in one line naming the variable."""
    from activities.ticket_sinks import TicketSinkError, ticket_sink_settings

    try:
        ticket_sink_settings()
    except TicketSinkError as error:
        raise BatonError(str(error)) from None


def providers_in_use(config: Settings) -> str:
    """The chat, recognition and synthesis providers these settings choose, for banners."""
    chat = (config.chat_provider or "offline").lower()
    if chat == "openai":
        where = f" at {config.openai_base_url}" if config.openai_base_url else ""
        chat_text = f"OpenAI{where}, model {config.openai_model or 'as each agent says'}"
    elif chat == "azure":
        chat_text = f"Azure OpenAI deployment {config.azure_openai_deployment or '(unset)'}"
    else:
        chat_text = "the offline policy (no network, no language model)"
    stt = (config.stt or "offline").lower()
    tts = (config.tts or "offline").lower()
    return (
        f"chat: {chat_text}; speech recognition: {_SPEECH.get(('stt', stt), stt)}; "
        f"voice: {_SPEECH.get(('tts', tts), tts)}"
    )


_SPEECH = {
    ("stt", "offline"): "Whisper tiny.en (offline)",
    ("stt", "offline-light"): "PocketSphinx (offline)",
    ("tts", "offline"): "espeak-ng (offline)",
    ("tts", "offline-light"): "espeak-ng (offline)",
    ("stt", "openai"): "OpenAI audio",
    ("tts", "openai"): "OpenAI audio",
    ("stt", "azure-openai"): "Azure OpenAI audio",
    ("tts", "azure-openai"): "Azure OpenAI audio",
    ("stt", "azure"): "Azure AI Speech",
    ("tts", "azure"): "Azure AI Speech",
}


def _reason(error: BaseException) -> str:
    text = str(error)
    if "refused" in text.lower():
        return "connection refused"
    return text.strip().splitlines()[-1][:160] if text.strip() else type(error).__name__
