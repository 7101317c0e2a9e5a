"""A voice call whose speech service is down is carried by the fallback its registry names, not
by the worker's environment: the speech worker runs Azure Speech alone (the real SDK against its
loopback fake, refusing every connection with 503; no BATON_STT_FALLBACK / BATON_TTS_FALLBACK),
the Concierge names `offline` for both roles and the scenario names `offline` for every other
agent's voice. Real dev server, workers (offline policy), gateway and a browser caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.speech import SpeechActivities
from activities.speech_providers.azure_speech import (
    AzureRecognizer,
    AzureSpeechSettings,
    AzureSynthesizer,
)
from baton.call_client import CallSession
from tests.fakes.azure_speech_server import STT_PATH, TTS_PATH, FakeAzureSpeechServer
from tests.gateway.conftest import audio_ms, browser_caller, open_gateway_stack, speech_pcm
from tests.gateway.test_speech_fallback_call import CALLER, assert_azure_failovers_logged
from tests.workflow.conftest import items_of
from tests.workflow.test_model_outages import registry_copy

SAID = "I think someone stole my card."


def speech_fallbacks(scenario: dict[str, Any], concierge: dict[str, Any]) -> None:
    concierge["speech_fallback"] = {"recognizer": "offline", "synthesizer": "offline"}
    scenario["speech_fallback"] = {"synthesizer": "offline"}


async def test_the_registrys_speech_fallback_carries_a_call_the_worker_has_none_for(
    temporal_client: Client,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", registry_copy(tmp_path, speech_fallbacks, None))
    for variable in ("BATON_STT_FALLBACK", "BATON_TTS_FALLBACK"):
        monkeypatch.delenv(variable, raising=False)
    async with FakeAzureSpeechServer(reject_status=503) as down:
        azure = AzureSpeechSettings(key="test-key", host=down.host)
        # The worker's own providers only: what covers them comes with each request.
        speech = SpeechActivities(
            AzureRecognizer(azure, timeout=5), AzureSynthesizer(azure, timeout=5)
        )
        async with open_gateway_stack(temporal_client, speech=speech) as stack:
            caller = await browser_caller(stack, name=CALLER, client_id="C1001")
            await caller.wait_event(lambda e: e["type"] == "timeline", timeout=30)
            session = CallSession(
                stack.client, stack.gateway.registry.calls[caller.call_id].control.call
            )
            await session.until_greeted(timeout=60)
            await caller.heard(300)  # the Concierge's greeting, in its fallback's voice
            await caller.say(await speech_pcm(SAID))
            said_at = audio_ms(caller.audio)
            items = await session.wait_for(
                lambda t: any(g["agent"] == "FraudAgent" for g in items_of(t, "greeting")),
                timeout=90,
                what="the fraud desk answered",
            )
            # The fraud desk names no fallback: the scenario's voice speaks for it.
            await caller.heard(said_at + 300, timeout=30)
            await caller.close()
    # The Concierge's fallback recognizer heard the words Azure could not.
    (turn,) = items_of(items, "user_turn")
    assert "stole my card" in turn["text"].lower()
    greetings = {g["agent"]: g for g in items_of(items, "greeting")}
    assert greetings["FraudAgent"].get("heard_text") is None  # said whole, not lost
    # Both roles asked Azure first and were refused.
    assert any(STT_PATH in c.path for c in down.connections)
    assert any(c.path.startswith(TTS_PATH) for c in down.connections)
    assert_azure_failovers_logged(capfd.readouterr())
