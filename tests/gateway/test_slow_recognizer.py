"""A recognizer slower than the filler threshold: while the caller's words are still being
recognized, the caller hears the short filler, and the transcript records it as waiting for
speech. Real dev server, workers, gateway and espeak-ng; the recognizer is the Azure Speech SDK
against its loopback fake, which answers only once the test lets it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.speech import SpeechActivities
from activities.speech_providers.azure_speech import AzureRecognizer, AzureSpeechSettings
from activities.speech_providers.offline_tts import EspeakSynthesizer
from baton.call_client import CallSession
from media_gateway.vad import BYTES_PER_MS
from registries.loading import SHIPPED_REGISTRY
from tests.fakes.azure_speech_server import FakeAzureSpeechServer
from tests.gateway.conftest import browser_caller, open_gateway_stack, speech_pcm
from tests.workflow.conftest import items_of
from workflows.outages import FILLER

SAID = "My card was stolen."


async def test_a_slow_recognizer_gets_the_filler_while_it_runs(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(SHIPPED_REGISTRY))
    recognized = asyncio.Event()
    async with FakeAzureSpeechServer(phrases=[(SAID, 0.9)], recognition_gate=recognized) as azure:
        settings = AzureSpeechSettings(key="test-key", host=azure.host)
        speech = SpeechActivities(AzureRecognizer(settings, timeout=30), EspeakSynthesizer())
        async with open_gateway_stack(temporal_client, speech=speech) as stack:
            caller = await browser_caller(stack, name="Alex Morgan", client_id="C1001")
            await caller.wait_event(lambda e: e["type"] == "timeline", timeout=30)
            session = CallSession(
                stack.client, stack.gateway.registry.calls[caller.call_id].control.call
            )
            await session.until_greeted(timeout=60)
            await caller.heard(300)
            await caller.say(await speech_pcm("my card was stolen"))
            said_at = len(caller.audio)  # the greeting stopped when the caller spoke
            # The recognizer holds the words: the filler is spoken meanwhile, not after.
            items = await session.wait_for(
                lambda t: bool(items_of(t, "filler")), timeout=60, what="a filler was recorded"
            )
            (filler,) = items_of(items, "filler")
            assert filler["waiting_for"] == "speech" and filler["text"] == FILLER
            assert not items_of(items, "user_turn")  # the words are not in yet
            async with asyncio.timeout(30):  # the filler's own audio reaches the caller
                while len(caller.audio) < said_at + 300 * BYTES_PER_MS:
                    await asyncio.sleep(0.02)
            recognized.set()
            items = await session.wait_for(
                lambda t: bool(items_of(t, "user_turn")), timeout=60, what="the words came in"
            )
            assert items_of(items, "user_turn")[0]["text"].startswith(SAID)
            await caller.close()
