"""Provider failures as Temporal and the metrics see them: the text, the error type, whether it
retries and which provider failed."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.chat_models.base import ChatModelError
from activities.chat_models.openai_wire import classify_exception
from activities.provider_errors import ProviderError, to_application_error
from activities.speech import SpeechActivities
from activities.speech_providers.azure_speech import (
    AzureRecognizer,
    AzureSpeechSettings,
    AzureSynthesizer,
)
from activities.speech_providers.base import SpeechRecognizer, SpeechSynthesizer
from activities.speech_providers.fallback import FallbackRecognizer
from activities.speech_providers.offline_stt import PocketsphinxRecognizer
from activities.speech_providers.offline_tts import EspeakSynthesizer
from contracts.proto import media_pb2
from contracts.speech import SynthesisRequest, TranscriptionRequest
from tests.fakes.azure_speech_server import FakeAzureSpeechServer


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


SEGMENT = struct.pack("<1600h", *([1000, -1000] * 800))  # 100 ms of a loud square wave


class OneSegmentGateway:
    """The media plane as the speech activities use it: one final segment, playback drained."""

    def stub(self, address: str) -> OneSegmentGateway:
        return self

    async def FetchSegment(  # noqa: N802 (the gRPC method's name)
        self, request: media_pb2.SegmentRequest, timeout: float
    ) -> AsyncIterator[media_pb2.SegmentAudio]:
        yield media_pb2.SegmentAudio(pcm16_16k=SEGMENT, final=True)

    def PlayReply(  # noqa: N802 (the gRPC method's name)
        self, audio: AsyncIterator[media_pb2.ReplyAudio]
    ) -> asyncio.Future[media_pb2.PlaybackOutcome]:
        async def drain() -> media_pb2.PlaybackOutcome:
            async for _ in audio:
                pass
            return media_pb2.PlaybackOutcome()

        return asyncio.ensure_future(drain())


def errors_counted(provider: str) -> float:
    labels = {"provider": provider, "retryable": "false"}
    return REGISTRY.get_sample_value("baton_provider_errors_total", labels) or 0.0


def speech_activities(
    monkeypatch: pytest.MonkeyPatch, recognizer: SpeechRecognizer, synthesizer: SpeechSynthesizer
) -> SpeechActivities:
    speech = SpeechActivities(recognizer, synthesizer)
    monkeypatch.setattr(speech, "channels", OneSegmentGateway())
    return speech


async def test_a_speech_sdk_failure_is_counted_under_its_provider_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Azure Speech's errors do not name their provider: the activity names it, both ways."""
    heard = TranscriptionRequest(call_id="c", gateway_address="gw", segment_ref="s")
    said = SynthesisRequest(call_id="c", gateway_address="gw", agent="Concierge", text="Hello.")
    async with FakeAzureSpeechServer(reject_status=401) as refusing:
        settings = AzureSpeechSettings(key="wrong-key", host=refusing.host)
        speech = speech_activities(
            monkeypatch,
            AzureRecognizer(settings, timeout=5),
            AzureSynthesizer(settings, timeout=5),
        )
        before = errors_counted("azure")
        for activity_call in (
            ActivityEnvironment().run(speech.transcribe_segment, heard),
            ActivityEnvironment().run(speech.synthesize_speech, said),
        ):
            with pytest.raises(ApplicationError, match="401"):
                await asyncio.wait_for(activity_call, 30)
    assert errors_counted("azure") == before + 2


async def test_a_fallback_failure_is_counted_under_the_provider_that_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Azure is down, so the offline recognizer hears the segment and refuses its language:
    the count names the offline recognizer, not the pair."""
    async with FakeAzureSpeechServer(reject_status=503) as down:
        primary = AzureRecognizer(AzureSpeechSettings(key="k", host=down.host), timeout=5)
        recognizer = FallbackRecognizer(primary, PocketsphinxRecognizer())
        speech = speech_activities(monkeypatch, recognizer, EspeakSynthesizer())
        before = errors_counted(PocketsphinxRecognizer.name)
        request = TranscriptionRequest(
            call_id="c", gateway_address="gw", segment_ref="s", locale="fr-FR"
        )
        with pytest.raises(ApplicationError, match="no offline recognizer model"):
            await asyncio.wait_for(
                ActivityEnvironment().run(speech.transcribe_segment, request), 30
            )
    assert errors_counted(PocketsphinxRecognizer.name) == before + 1
