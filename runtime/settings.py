"""Every environment variable Baton reads, in one typed object.

`Settings` is the list: a field per setting, its variable (and accepted aliases) and what it
does. Modules read `settings()` instead of `os.environ`; the README's table is generated from
this class and a test keeps the two equal (`python -m runtime.settings` prints it).

Values are kept as given (blank counts as unset); the module that uses a value checks its
meaning, so its error can say what the value is for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _var(*names: str, doc: str, default: str | None = None) -> Any:
    return Field(default=default, validation_alias=AliasChoices(*names), description=doc)


class Settings(BaseSettings):
    """Baton's configuration from the environment (see the module docstring)."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, env_ignore_empty=True)

    # -- every process ---------------------------------------------------------------------
    temporal_address: str | None = _var(
        "BATON_TEMPORAL_ADDRESS", doc="Temporal frontend `host:port` (default 127.0.0.1:7233)"
    )
    data_dir: str | None = _var(
        "BATON_DATA_DIR", doc="local data: dev server database, demo bank, tickets (~/.baton)"
    )
    cache_dir: str | None = _var(
        "BATON_CACHE_DIR",
        doc="files derived once per machine, e.g. the offline policy's int8 sentence model "
        "(default $XDG_CACHE_HOME/baton, ~/.cache/baton)",
    )
    xdg_cache_home: str | None = _var(
        "XDG_CACHE_HOME", doc="the user's cache folder; Baton's cache is its `baton` folder"
    )
    log_level: str | None = _var("BATON_LOG_LEVEL", doc="DEBUG, INFO (default), WARNING, ERROR")
    log_format: str | None = _var("BATON_LOG_FORMAT", doc="`json` for JSON lines on stderr")
    codec_keys: str | None = _var(
        "BATON_CODEC_KEYS", doc="history encryption keys, `id:base64` comma separated, newest last"
    )
    codec_key_file: str | None = _var(
        "BATON_CODEC_KEY_FILE", doc="file of `id base64` key lines (default: data dir codec-keys)"
    )
    codec_server_token: str | None = _var(
        "BATON_CODEC_SERVER_TOKEN", doc="bearer token `baton codec-server` requires"
    )
    metrics_port: str | None = _var(
        "BATON_METRICS_PORT",
        doc="port of /metrics, /healthz and /readyz on workers and gateways (off when unset)",
    )
    metrics_token: str | None = _var(
        "BATON_METRICS_TOKEN", doc="bearer token /metrics requires (needed off loopback)"
    )
    otlp_endpoint: str | None = _var(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        doc="OpenTelemetry collector (OTLP) URL: traces are exported only when set",
    )
    otlp_protocol: str | None = _var(
        "OTEL_EXPORTER_OTLP_PROTOCOL", doc="`grpc`, or `http/protobuf` (default) for OTLP traces"
    )
    # -- registry and tools ----------------------------------------------------------------
    registry: str | None = _var(
        "BATON_REGISTRY", doc="registry folder (agentstore/, scenariostore/, toolstore/)"
    )
    dead_letter_db: str | None = _var(
        "BATON_DEAD_LETTER_DB", doc="escalation tickets' SQLite file (data dir by default)"
    )
    ticket_sink: str | None = _var(
        "BATON_TICKET_SINK", doc="where tickets go: `sqlite` (default), `webhook` or `both`"
    )
    ticket_webhook_url: str | None = _var(
        "BATON_TICKET_WEBHOOK_URL", doc="URL tickets are POSTed to (https://, or loopback http://)"
    )
    ticket_webhook_secret: str | None = _var(
        "BATON_TICKET_WEBHOOK_SECRET", doc="HMAC-SHA256 key signing each webhook POST, ≥ 32 bytes"
    )
    ticket_webhook_allow_http: str | None = _var(
        "BATON_TICKET_WEBHOOK_ALLOW_HTTP", doc="`1` allows a plain http:// webhook off loopback"
    )
    # -- media gateway ---------------------------------------------------------------------
    gateway_secret: str | None = _var(
        "BATON_GATEWAY_SECRET", doc="media token (JWT, HS256) signing secret, ≥ 32 bytes"
    )
    operator_key: str | None = _var(
        "BATON_OPERATOR_KEY", doc="bearer key the softphone's POST /api/calls requires"
    )
    media_secret: str | None = _var(
        "BATON_MEDIA_SECRET",
        doc="gRPC media plane bearer secret, gateway and workers alike (default: data dir file)",
    )
    media_tls_cert: str | None = _var(
        "BATON_MEDIA_TLS_CERT", doc="media plane server certificate (PEM file): the gateway's TLS"
    )
    media_tls_key: str | None = _var(
        "BATON_MEDIA_TLS_KEY", doc="media plane server private key (PEM file)"
    )
    media_tls_ca: str | None = _var(
        "BATON_MEDIA_TLS_CA", doc="CA (PEM file) workers trust; set, workers reach gateways by TLS"
    )
    media_tls_server_name: str | None = _var(
        "BATON_MEDIA_TLS_SERVER_NAME", doc="name gateway certificates must carry (default: host)"
    )
    vad: str | None = _var(
        "BATON_VAD",
        doc="gateway voice activity detection: `offline` (Silero, default) or `offline-light` "
        "(energy only)",
    )
    # -- chat model (llm workers) ----------------------------------------------------------
    chat_provider: str | None = _var(
        "BATON_CHAT_PROVIDER", doc="`offline` (default), `openai` or `azure`"
    )
    openai_api_key: str | None = _var(
        "BATON_OPENAI_API_KEY", "OPENAI_API_KEY", doc="OpenAI (or compatible server) API key"
    )
    openai_base_url: str | None = _var(
        "BATON_OPENAI_BASE_URL", "OPENAI_BASE_URL", doc="OpenAI-compatible endpoint URL"
    )
    openai_model: str | None = _var(
        "BATON_OPENAI_MODEL", doc="model name for every agent (default: each agent's model)"
    )
    openai_stream: str | None = _var("BATON_OPENAI_STREAM", doc="`1` streams model replies")
    openai_timeout: str | None = _var(
        "BATON_OPENAI_TIMEOUT", doc="seconds per model request (default 30)"
    )
    azure_openai_endpoint: str | None = _var("AZURE_OPENAI_ENDPOINT", doc="Azure OpenAI endpoint")
    azure_openai_api_key: str | None = _var("AZURE_OPENAI_API_KEY", doc="Azure OpenAI key")
    azure_openai_deployment: str | None = _var(
        "AZURE_OPENAI_DEPLOYMENT", doc="Azure OpenAI chat deployment name"
    )
    azure_openai_stt_deployment: str | None = _var(
        "AZURE_OPENAI_STT_DEPLOYMENT", doc="Azure OpenAI transcription deployment name"
    )
    azure_openai_tts_deployment: str | None = _var(
        "AZURE_OPENAI_TTS_DEPLOYMENT", doc="Azure OpenAI speech deployment name"
    )
    azure_openai_api_version: str | None = _var(
        "AZURE_OPENAI_API_VERSION", doc="Azure OpenAI API version (default 2024-10-21)"
    )
    # -- speech (speech workers) -----------------------------------------------------------
    stt: str | None = _var(
        "BATON_STT", doc="recognizer: `offline` (Whisper), `offline-light`, `openai`, `azure`..."
    )
    tts: str | None = _var(
        "BATON_TTS", doc="synthesizer: `offline` (espeak-ng), `openai`, `azure`..."
    )
    stt_fallback: str | None = _var(
        "BATON_STT_FALLBACK", doc="recognizer for segments BATON_STT fails on (e.g. `offline`)"
    )
    tts_fallback: str | None = _var(
        "BATON_TTS_FALLBACK", doc="synthesizer for replies BATON_TTS fails on (e.g. `offline`)"
    )
    whisper_window: str | None = _var(
        "BATON_WHISPER_WINDOW",
        doc="offline recognizer's window: `fitted` to each utterance (default) or `full` (30 s)",
    )
    speech_timeout: str | None = _var(
        "BATON_SPEECH_TIMEOUT", doc="seconds per cloud speech request (default 30)"
    )
    openai_stt_model: str | None = _var("BATON_OPENAI_STT_MODEL", doc="OpenAI recognition model")
    openai_tts_model: str | None = _var("BATON_OPENAI_TTS_MODEL", doc="OpenAI speech model")
    openai_tts_voice: str | None = _var("BATON_OPENAI_TTS_VOICE", doc="OpenAI voice name")
    azure_speech_key: str | None = _var("AZURE_SPEECH_KEY", doc="Azure Speech key")
    azure_speech_region: str | None = _var("AZURE_SPEECH_REGION", doc="Azure Speech region")
    azure_speech_endpoint: str | None = _var(
        "AZURE_SPEECH_ENDPOINT", doc="Azure Speech endpoint (instead of a region)"
    )
    azure_speech_stt_endpoint: str | None = _var(
        "AZURE_SPEECH_STT_ENDPOINT", doc="Azure Speech endpoint for recognition only"
    )
    azure_speech_tts_endpoint: str | None = _var(
        "AZURE_SPEECH_TTS_ENDPOINT", doc="Azure Speech endpoint for synthesis only"
    )
    azure_speech_host: str | None = _var("AZURE_SPEECH_HOST", doc="Azure Speech host (containers)")
    azure_speech_voice: str | None = _var("BATON_AZURE_SPEECH_VOICE", doc="Azure neural voice")
    # -- transfer to a human (tools workers) -----------------------------------------------
    twilio_account_sid: str | None = _var(
        "TWILIO_ACCOUNT_SID", doc="Twilio account SID (AC...) whose calls a transfer updates"
    )
    twilio_auth_token: str | None = _var(
        "TWILIO_AUTH_TOKEN", doc="Twilio auth token (or set an API key and secret)"
    )
    twilio_api_key: str | None = _var("TWILIO_API_KEY", doc="Twilio API key SID (SK...)")
    twilio_api_secret: str | None = _var("TWILIO_API_SECRET", doc="Twilio API key secret")
    twilio_base_url: str | None = _var(
        "BATON_TWILIO_BASE_URL", doc="Twilio REST base URL (default https://api.twilio.com)"
    )
    acs_connection_string: str | None = _var(
        "ACS_CONNECTION_STRING",
        doc="Azure Communication Services `endpoint=https://...;accesskey=...` (Call Automation)",
    )
    transfer_timeout: str | None = _var(
        "BATON_TRANSFER_TIMEOUT", doc="seconds per platform transfer request (default 10)"
    )
    public_url: str | None = _var(
        "BATON_PUBLIC_URL",
        doc="the gateway's public https base URL: Twilio and ACS report a transfer's outcome there",
    )

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, values: Any) -> Any:
        if isinstance(values, Mapping):
            return {k: v.strip() for k, v in values.items() if isinstance(v, str) and v.strip()}
        return values

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Each environment variable Baton reads (aliases included) and what it is for."""
        table: dict[str, str] = {}
        for field in cls.model_fields.values():
            alias = field.validation_alias
            names = alias.choices if isinstance(alias, AliasChoices) else []
            for index, name in enumerate(names):
                doc = field.description or ""
                table[str(name)] = doc if index == 0 else f"alias of {names[0]}"
        return table


_NAMES = tuple(Settings.variables())
_parsed: dict[tuple[tuple[str, str], ...], Settings] = {}


def settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings in `env` (default: this process's environment).

    Read afresh from the environment at every call, so a change (a test, `baton dev` choosing
    a data folder) is seen at once; parsing is cached per distinct set of values, because
    building the model costs about a millisecond and tools read settings on every call.
    """
    source = os.environ if env is None else env
    values = {name: source[name] for name in _NAMES if name in source}
    key = tuple(sorted(values.items()))
    cached = _parsed.get(key)
    if cached is None:
        if len(_parsed) >= 16:
            _parsed.clear()
        cached = _parsed[key] = Settings.model_validate(values)
    return cached


def settings_table() -> str:
    """The README's table of environment variables."""
    rows = ["| variable | what it sets |", "|---|---|"]
    rows += [f"| `{name}` | {doc} |" for name, doc in Settings.variables().items()]
    return "\n".join(rows)


if __name__ == "__main__":
    print(settings_table())
