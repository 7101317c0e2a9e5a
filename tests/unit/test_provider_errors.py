"""Provider failures as Temporal sees them: the text, the error type and whether it retries."""

from __future__ import annotations

from activities.chat_models.base import ChatModelError
from activities.chat_models.openai_wire import classify_exception
from activities.provider_errors import ProviderError, to_application_error


def test_a_chat_model_error_names_its_provider_and_verdict() -> None:
    error = ChatModelError("HTTP 401: bad key", retryable=False, status_code=401, provider="openai")
    mapped = to_application_error(error, failure_type="ChatModelError")
    assert mapped.message == "openai: HTTP 401: bad key (not retryable)"
    assert mapped.type == "ChatModelError" and mapped.non_retryable


def test_the_context_comes_before_a_speech_provider_text() -> None:
    error = ProviderError("espeak-ng synthesis failed (status 3)", retryable=True)
    mapped = to_application_error(error, failure_type="SpeechProvider", context="synthesizing")
    assert mapped.message == "synthesizing: espeak-ng synthesis failed (status 3)"
    assert mapped.type == "SpeechProvider" and not mapped.non_retryable


def test_sdk_failures_are_provider_errors_for_chat_and_speech_alike() -> None:
    classified = classify_exception(ConnectionError("reset"), provider="azure-openai")
    assert isinstance(classified, ProviderError) and classified.retryable
    assert str(classified) == "azure-openai: transport error: ConnectionError: reset (retryable)"
