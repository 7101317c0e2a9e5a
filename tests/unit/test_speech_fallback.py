"""A second speech provider for when the first is down (BATON_STT_FALLBACK / BATON_TTS_FALLBACK):
the Azure Speech SDK against loopback fakes of its service, one refusing with 503 or 401, and
the offline espeak-ng voice as the fallback synthesizer."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY

from activities.provider_errors import ProviderError
from activities.speech_providers.azure_speech import (
    AzureRecognizer,
    AzureSpeechSettings,
    AzureSynthesizer,
)
from activities.speech_providers.base import SpeechChunk
from activities.speech_providers.factory import recognizer_from_env, synthesizer_from_env
from activities.speech_providers.fallback import FallbackRecognizer, FallbackSynthesizer
from activities.speech_providers.offline_tts import EspeakSynthesizer
from tests.fakes.azure_speech_server import FakeAzureSpeechServer

SEGMENT = struct.pack("<1600h", *([1000, -1000] * 800))  # 100 ms of a loud square wave


def azure(server: FakeAzureSpeechServer) -> AzureSpeechSettings:
    return AzureSpeechSettings(key="test-key", host=server.host)


async def collect(chunks: AsyncIterator[SpeechChunk]) -> list[SpeechChunk]:
    return [chunk async for chunk in chunks]


def azure_failures() -> float:
    labels = {"provider": "azure", "retryable": "true"}
    return REGISTRY.get_sample_value("baton_provider_errors_total", labels) or 0.0


async def test_a_recognizer_that_is_down_hands_the_segment_to_its_fallback() -> None:
    before = azure_failures()
    async with (
        FakeAzureSpeechServer(reject_status=503) as down,
        FakeAzureSpeechServer(phrases=[("Block my card.", 0.8)]) as backup,
    ):
        recognizer = FallbackRecognizer(
            AzureRecognizer(azure(down), timeout=5), AzureRecognizer(azure(backup), timeout=5)
        )
        result = await asyncio.wait_for(recognizer.recognize(SEGMENT, locale="es-ES"), 30)
    assert result.text == "Block my card."
    assert "language=es-ES" in backup.connections[0].path  # the locale goes to the fallback too
    assert azure_failures() == before + 1  # the covered failure still counts, as the primary's


async def test_a_wrong_key_is_not_hidden_by_the_fallback() -> None:
    async with (
        FakeAzureSpeechServer(reject_status=401) as refusing,
        FakeAzureSpeechServer(phrases=[("Hello.", 0.8)]) as backup,
    ):
        recognizer = FallbackRecognizer(
            AzureRecognizer(azure(refusing), timeout=5), AzureRecognizer(azure(backup), timeout=5)
        )
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(recognizer.recognize(SEGMENT), 30)
    assert caught.value.retryable is False and backup.connections == []


async def test_a_synthesizer_that_is_down_is_replaced_by_the_offline_voice() -> None:
    async with FakeAzureSpeechServer(reject_status=503) as down:
        synthesizer = FallbackSynthesizer(
            AzureSynthesizer(azure(down), timeout=5), EspeakSynthesizer()
        )
        chunks = await asyncio.wait_for(collect(synthesizer.synthesize("One moment.")), 30)
    assert sum(len(c.pcm16_16k) for c in chunks) > 16000  # over half a second of audio
    assert chunks[-1].text_end == len("One moment.")


def test_the_fallbacks_come_from_the_environment() -> None:
    env = {
        "BATON_STT": "azure",
        "BATON_STT_FALLBACK": "offline-light",
        "BATON_TTS": "azure",
        "BATON_TTS_FALLBACK": "offline",
        "AZURE_SPEECH_KEY": "k",
        "AZURE_SPEECH_REGION": "westeurope",
    }
    recognizer = recognizer_from_env(env)
    synthesizer = synthesizer_from_env(env)
    assert isinstance(recognizer, FallbackRecognizer)
    assert isinstance(recognizer.primary, AzureRecognizer)
    assert isinstance(synthesizer, FallbackSynthesizer)
    assert isinstance(synthesizer.fallback, EspeakSynthesizer)
    assert not isinstance(recognizer_from_env({"BATON_STT": "offline-light"}), FallbackRecognizer)


def test_an_unknown_fallback_is_refused_naming_the_variable() -> None:
    with pytest.raises(ProviderError, match="BATON_TTS_FALLBACK must be one of"):
        synthesizer_from_env({"BATON_TTS_FALLBACK": "carrier-pigeon"})
