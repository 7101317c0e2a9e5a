"""The speech providers the environment asks for: the one place speech config is read.

`BATON_STT` picks the recognizer and `BATON_TTS` the synthesizer, each one of:

* `offline` (default): embedded Whisper tiny.en / espeak-ng, no network and no key.
* `offline-light`: PocketSphinx instead of Whisper (fast and small, far less accurate; see the
  README's speech figures). For BATON_TTS it is the same espeak-ng voice as `offline`.
* `openai`: OpenAI's audio endpoints, or any OpenAI-compatible server.
  `BATON_OPENAI_API_KEY` (or `OPENAI_API_KEY`), optional `BATON_OPENAI_BASE_URL` (or
  `OPENAI_BASE_URL`), `BATON_OPENAI_STT_MODEL` (gpt-4o-mini-transcribe),
  `BATON_OPENAI_TTS_MODEL` (gpt-4o-mini-tts), `BATON_OPENAI_TTS_VOICE` (alloy; used when an
  agent's voice is not an OpenAI voice).
* `azure-openai`: Azure OpenAI audio deployments. `AZURE_OPENAI_ENDPOINT`,
  `AZURE_OPENAI_API_KEY`, `AZURE_OPENAI_STT_DEPLOYMENT` / `AZURE_OPENAI_TTS_DEPLOYMENT`,
  optional `AZURE_OPENAI_API_VERSION` and `BATON_OPENAI_TTS_VOICE`.
* `azure`: Azure AI Speech. `AZURE_SPEECH_KEY` plus where to reach it: `AZURE_SPEECH_REGION`
  (e.g. westeurope), or `AZURE_SPEECH_ENDPOINT` (a full URL, shared by both roles, or the
  role's own `AZURE_SPEECH_STT_ENDPOINT` / `AZURE_SPEECH_TTS_ENDPOINT`), or
  `AZURE_SPEECH_HOST` (scheme, host and port; the SDK adds each role's path).
  `BATON_AZURE_SPEECH_VOICE` sets the voice used when an agent names none.

`BATON_STT_FALLBACK` and `BATON_TTS_FALLBACK` name a second provider (same choices) that takes
over a segment or a reply the first fails on with an error a retry could cure, e.g. `azure`
backed by `offline` (activities.speech_providers.fallback). An agent's or scenario's
`speech_fallback` names one per call instead (`recognizer_named` / `synthesizer_named`, set up
from the same variables).

The network providers share `BATON_SPEECH_TIMEOUT` (seconds, default 30). Anything missing or
malformed raises `ProviderError(retryable=False)` naming the variable and how to set it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from activities.provider_env import seconds
from activities.provider_errors import ProviderError
from activities.speech_providers.base import SpeechRecognizer, SpeechSynthesizer
from activities.speech_providers.fallback import FallbackRecognizer, FallbackSynthesizer
from contracts.speech import SPEECH_PROVIDERS
from runtime.settings import Settings, settings

if TYPE_CHECKING:  # the providers import their SDKs, so they load only when chosen
    from activities.speech_providers.azure_speech import AzureSpeechSettings

PROVIDERS = SPEECH_PROVIDERS
#: What a provider named by a registry is called in its configuration errors.
REGISTRY_RECOGNIZER = "speech_fallback.recognizer"
REGISTRY_SYNTHESIZER = "speech_fallback.synthesizer"
DEFAULT_TIMEOUT_SECONDS = 30.0


def recognizer_from_env(env: Mapping[str, str] | None = None) -> SpeechRecognizer:
    """The speech recognizer `BATON_STT` names (see the module docstring), backed by the one
    `BATON_STT_FALLBACK` names, if any, for segments it fails on."""
    config = settings(env)
    primary = _recognizer(config, _provider(config.stt, "BATON_STT"), "BATON_STT")
    if not config.stt_fallback:
        return primary
    variable = "BATON_STT_FALLBACK"
    fallback = _recognizer(config, _provider(config.stt_fallback, variable), variable)
    return FallbackRecognizer(primary, fallback)


def recognizer_named(provider: str, env: Mapping[str, str] | None = None) -> SpeechRecognizer:
    """The recognizer a registry's `speech_fallback.recognizer` names, set up from the same
    environment variables as when BATON_STT names it."""
    variable = REGISTRY_RECOGNIZER
    return _recognizer(settings(env), _provider(provider, variable), variable)


def _recognizer(config: Settings, provider: str, variable: str) -> SpeechRecognizer:
    if provider == "offline":
        from activities.speech_providers.offline_whisper import WhisperRecognizer

        # The fitted window by default: ~3x faster, and spoken numbers came back whole as often
        # as in the 30 s window (docs/PERFORMANCE.md, "Whisper's window and spoken numbers").
        window = config.whisper_window or "fitted"
        if window not in ("fitted", "full"):
            raise ProviderError(
                f"BATON_WHISPER_WINDOW is {window!r}: choose `fitted` or `full`", retryable=False
            )
        return WhisperRecognizer(fitted=window == "fitted")
    if provider == "offline-light":
        from activities.speech_providers.offline_stt import PocketsphinxRecognizer

        return PocketsphinxRecognizer()
    timeout = _timeout(config)
    if provider == "openai":
        from activities.speech_providers.openai_audio import DEFAULT_STT_MODEL, OpenAIRecognizer

        return OpenAIRecognizer(
            api_key=_openai_key(config, variable),
            base_url=config.openai_base_url,
            model=config.openai_stt_model or DEFAULT_STT_MODEL,
            timeout=timeout,
        )
    if provider == "azure-openai":
        from activities.speech_providers.openai_audio import OpenAIRecognizer

        endpoint, key, deployment, version = _azure_openai(config, variable, "STT")
        return OpenAIRecognizer.azure(
            endpoint=endpoint,
            api_key=key,
            deployment=deployment,
            api_version=version,
            timeout=timeout,
        )
    from activities.speech_providers.azure_speech import AzureRecognizer

    return AzureRecognizer(_azure_speech(config, variable, "STT"), timeout=timeout)


def synthesizer_from_env(env: Mapping[str, str] | None = None) -> SpeechSynthesizer:
    """The speech synthesizer `BATON_TTS` names (see the module docstring), backed by the one
    `BATON_TTS_FALLBACK` names, if any, for texts it fails on."""
    config = settings(env)
    primary = _synthesizer(config, _provider(config.tts, "BATON_TTS"), "BATON_TTS")
    if not config.tts_fallback:
        return primary
    variable = "BATON_TTS_FALLBACK"
    fallback = _synthesizer(config, _provider(config.tts_fallback, variable), variable)
    return FallbackSynthesizer(primary, fallback)


def synthesizer_named(provider: str, env: Mapping[str, str] | None = None) -> SpeechSynthesizer:
    """The synthesizer a registry's `speech_fallback.synthesizer` names (as `recognizer_named`)."""
    variable = REGISTRY_SYNTHESIZER
    return _synthesizer(settings(env), _provider(provider, variable), variable)


def _synthesizer(config: Settings, provider: str, variable: str) -> SpeechSynthesizer:
    if provider in ("offline", "offline-light"):
        from activities.speech_providers.offline_tts import EspeakSynthesizer

        return EspeakSynthesizer()
    timeout = _timeout(config)
    if provider in {"openai", "azure-openai"}:
        from activities.speech_providers.openai_audio import (
            DEFAULT_TTS_MODEL,
            DEFAULT_VOICE,
            OpenAISynthesizer,
        )

        voice = config.openai_tts_voice or DEFAULT_VOICE
        if provider == "openai":
            return OpenAISynthesizer(
                api_key=_openai_key(config, variable),
                base_url=config.openai_base_url,
                model=config.openai_tts_model or DEFAULT_TTS_MODEL,
                voice=voice,
                timeout=timeout,
            )
        endpoint, key, deployment, version = _azure_openai(config, variable, "TTS")
        return OpenAISynthesizer.azure(
            endpoint=endpoint,
            api_key=key,
            deployment=deployment,
            voice=voice,
            api_version=version,
            timeout=timeout,
        )
    from activities.speech_providers.azure_speech import DEFAULT_VOICE as AZURE_VOICE
    from activities.speech_providers.azure_speech import AzureSynthesizer

    return AzureSynthesizer(
        _azure_speech(config, variable, "TTS"),
        voice=config.azure_speech_voice or AZURE_VOICE,
        timeout=timeout,
    )


def _provider(value: str | None, variable: str) -> str:
    provider = (value or "offline").lower()
    if provider not in PROVIDERS:
        raise ProviderError(
            f"{variable} must be one of {', '.join(PROVIDERS)}; got {provider!r}",
            retryable=False,
        )
    return provider


def _missing(variable: str, provider: str, names: list[str]) -> ProviderError:
    return ProviderError(
        f"{variable}={provider} needs {', '.join(names)}. Set them in the worker's environment, "
        f"or unset {variable} to use the offline provider.",
        retryable=False,
    )


def _timeout(config: Settings) -> float:
    try:
        return seconds(config.speech_timeout, "BATON_SPEECH_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)
    except ValueError as error:
        raise ProviderError(str(error), retryable=False) from error


def _openai_key(config: Settings, variable: str) -> str:
    key = config.openai_api_key
    if key is None:
        # A local OpenAI-compatible server may ignore the key, but the SDK insists on one.
        raise _missing(
            variable,
            "openai",
            ["BATON_OPENAI_API_KEY (or OPENAI_API_KEY; any value for a local server)"],
        )
    return key


def _azure_openai(config: Settings, variable: str, role: str) -> tuple[str, str, str, str]:
    # Imported here, like the providers: the module loads the OpenAI SDK.
    from activities.openai_clients import DEFAULT_AZURE_API_VERSION

    wanted = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", f"AZURE_OPENAI_{role}_DEPLOYMENT")
    deployment = getattr(config, f"azure_openai_{role.lower()}_deployment")
    values = [config.azure_openai_endpoint, config.azure_openai_api_key, deployment]
    missing = [name for name, value in zip(wanted, values, strict=True) if value is None]
    if missing:
        raise _missing(variable, "azure-openai", missing)
    endpoint, key, deployment = (value or "" for value in values)
    return (
        endpoint,
        key,
        deployment,
        config.azure_openai_api_version or DEFAULT_AZURE_API_VERSION,
    )


def _azure_speech(config: Settings, variable: str, role: str) -> AzureSpeechSettings:
    from activities.speech_providers.azure_speech import AzureSpeechSettings

    key = config.azure_speech_key
    role_endpoint: str | None = getattr(config, f"azure_speech_{role.lower()}_endpoint")
    endpoint = role_endpoint or config.azure_speech_endpoint
    host = config.azure_speech_host
    region = config.azure_speech_region
    missing = [] if key else ["AZURE_SPEECH_KEY"]
    if not (endpoint or host or region):
        missing.append(
            f"AZURE_SPEECH_REGION (e.g. westeurope), or AZURE_SPEECH_ENDPOINT / "
            f"AZURE_SPEECH_{role}_ENDPOINT, or AZURE_SPEECH_HOST"
        )
    if missing:
        raise _missing(variable, "azure", missing)
    return AzureSpeechSettings(key=key or "", region=region, endpoint=endpoint, host=host)
