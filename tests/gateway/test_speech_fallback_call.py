"""A voice call whose speech service is down is carried by the fallback providers: Azure Speech
(the real SDK against its loopback fake, refusing every connection with 503) backed by the
offline Whisper recognizer and espeak-ng voice, as BATON_STT_FALLBACK / BATON_TTS_FALLBACK set
up. Real dev server, workers (offline policy), gateway and a browser caller. The caller hears
the greeting and is answered; the outage shows in `baton_provider_errors` under the primary's
name and in a warning that names the providers, never the caller."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY
from temporalio.client import Client

from activities.speech import SpeechActivities
from activities.speech_providers.azure_speech import (
    AzureRecognizer,
    AzureSpeechSettings,
    AzureSynthesizer,
)
from activities.speech_providers.fallback import FallbackRecognizer, FallbackSynthesizer
from activities.speech_providers.offline_tts import EspeakSynthesizer
from activities.speech_providers.offline_whisper import WhisperRecognizer
from baton.call_client import CallSession
from registries.loading import SHIPPED_REGISTRY
from tests.fakes.azure_speech_server import STT_PATH, TTS_PATH, FakeAzureSpeechServer
from tests.gateway.conftest import audio_ms, browser_caller, open_gateway_stack, speech_pcm
from tests.workflow.conftest import items_of

CALLER = "Alex Morgan"
SAID = "I think someone stole my card."
AZURE_FAILURES = ("baton_provider_errors_total", {"provider": "azure", "retryable": "true"})
STT_WARNING = "recognizer failed; its fallback hears this segment"
TTS_WARNING = "synthesizer failed; its fallback speaks this text"


def azure_failures() -> float:
    return REGISTRY.get_sample_value(*AZURE_FAILURES) or 0.0


async def test_a_call_whose_speech_service_is_down_is_heard_and_answered_by_the_fallbacks(
    temporal_client: Client, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(SHIPPED_REGISTRY))
    before = azure_failures()
    async with FakeAzureSpeechServer(reject_status=503) as down:
        azure = AzureSpeechSettings(key="test-key", host=down.host)
        recognizer = FallbackRecognizer(AzureRecognizer(azure, timeout=5), WhisperRecognizer())
        recognizer.warm_up()  # as `baton worker` does: Whisper loads before the first call
        synthesizer = FallbackSynthesizer(AzureSynthesizer(azure, timeout=5), EspeakSynthesizer())
        speech = SpeechActivities(recognizer, synthesizer)
        async with open_gateway_stack(temporal_client, speech=speech) as stack:
            caller = await browser_caller(stack, name=CALLER, client_id="C1001")
            await caller.wait_event(lambda e: e["type"] == "timeline", timeout=30)
            session = CallSession(
                stack.client, stack.gateway.registry.calls[caller.call_id].control.call
            )
            await session.until_greeted(timeout=60)
            await caller.heard(300)  # the greeting, in the fallback's voice
            await caller.say(await speech_pcm(SAID))
            said_at = audio_ms(caller.audio)  # the greeting stopped when the caller spoke
            items = await session.wait_for(
                lambda t: any(g["agent"] == "FraudAgent" for g in items_of(t, "greeting")),
                timeout=60,
                what="the fraud desk answered",
            )
            await caller.heard(said_at + 300, timeout=30)  # the answer, in the fallback's voice
            await caller.close()
    # Whisper heard the words the Azure recognizer could not.
    (turn,) = items_of(items, "user_turn")
    assert "stole my card" in turn["text"].lower()
    # Both roles asked Azure first and were refused.
    assert any(STT_PATH in c.path for c in down.connections)
    assert any(c.path.startswith(TTS_PATH) for c in down.connections)
    # One failure per refused segment or text, under the primary's name (not "azure|...").
    assert azure_failures() - before >= 2
    assert_azure_failovers_logged(capfd.readouterr())


def assert_azure_failovers_logged(logged: Any) -> None:
    """Both roles' failovers from Azure to the offline engines are logged, naming the two
    providers and nothing the caller said or is called."""
    warnings = [
        line
        for line in (logged.out + logged.err).splitlines()
        if STT_WARNING in line or TTS_WARNING in line
    ]
    assert any(STT_WARNING in w and "fallback=offline-whisper" in w for w in warnings)
    assert any(TTS_WARNING in w and "fallback=offline-espeak-ng" in w for w in warnings)
    assert all("primary=azure" in w for w in warnings)
    assert not [w for w in warnings if CALLER in w or "stole" in w.lower()]
