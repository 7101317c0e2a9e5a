"""A voice call whose speech runs on OpenAI's audio endpoints passes each agent's language:
the recognizer's `language` and the synthesizer's locale instructions follow the agent who is
listening or speaking. Real dev server, workers (offline policy), gateway and a browser caller;
the speech providers are the `openai` SDK against a loopback OpenAI-compatible audio fake."""

from __future__ import annotations

import asyncio
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client

from activities.speech import SpeechActivities
from activities.speech_providers.openai_audio import OpenAIRecognizer, OpenAISynthesizer
from baton.call_client import CallSession
from registries.loading import SHIPPED_REGISTRY
from tests.fakes.openai_audio_server import FakeOpenAIAudioServer, speech, transcript
from tests.gateway.conftest import browser_caller, open_gateway_stack, speech_pcm
from tests.workflow.conftest import items_of

SAID = "I think someone stole my card."
#: What the fake speaks for every sentence: 300 ms of a quiet square wave at 24 kHz.
SENTENCE_AUDIO = struct.pack("<7200h", *([300, -300] * 3600))


def registry_with_a_spanish_concierge(root: Path) -> Path:
    """The shipped registry whose first desk, the Concierge, speaks es-ES; the desk it hands
    a stolen card to (FraudAgent) keeps the default en-US."""
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    agent = registry / "agentstore" / "concierge" / "agent.yaml"
    data = yaml.safe_load(agent.read_text())
    data["language"] = "es-ES"
    agent.write_text(yaml.safe_dump(data))
    return registry


def instructions_of(requests: list[Any]) -> list[str]:
    return [str(r.fields.get("instructions", "")) for r in requests if r.path.endswith("/speech")]


async def test_the_agents_language_reaches_openai_transcription_and_speech_in_a_call(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_a_spanish_concierge(tmp_path)))
    always = {"transcriptions": transcript(SAID), "speech": speech(SENTENCE_AUDIO)}
    with FakeOpenAIAudioServer(always=always, lifetime=120) as openai:
        recognizer = OpenAIRecognizer(api_key="test", base_url=openai.base_url, timeout=20)
        synthesizer = OpenAISynthesizer(api_key="test", base_url=openai.base_url, timeout=20)
        speech_activities = SpeechActivities(recognizer, synthesizer)
        async with open_gateway_stack(temporal_client, speech=speech_activities) as stack:
            caller = await browser_caller(stack, name="Alex Morgan", client_id="C1001")
            await caller.wait_event(lambda e: e["type"] == "timeline", timeout=30)
            session = CallSession(
                stack.client, stack.gateway.registry.calls[caller.call_id].control.call
            )
            await session.until_greeted(timeout=60)
            await caller.heard(300)
            await caller.say(await speech_pcm("my card was stolen"))
            # The scenario's handoff is announced: the fraud desk's greeting is the answer.
            items = await session.wait_for(
                lambda t: any(g["agent"] == "FraudAgent" for g in items_of(t, "greeting")),
                timeout=60,
                what="the fraud desk answered",
            )
            async with asyncio.timeout(30):  # until that greeting is being spoken
                while not any(i.endswith("en-US.") for i in instructions_of(openai.requests)):
                    await asyncio.sleep(0.05)
            await caller.close()
        await recognizer.aclose()
        await synthesizer.aclose()
    assert items_of(items, "user_turn")[0]["text"] == SAID
    # The caller spoke to the Concierge: its language, as the endpoint takes it (ISO-639-1).
    heard = [r for r in openai.requests if r.path.endswith("/transcriptions")]
    assert heard and all(r.fields["language"] == "es" for r in heard)
    # The Concierge greeted in es-ES, the desk it handed to in its own en-US, and nothing was
    # spoken without a locale.
    spoken = instructions_of(openai.requests)
    assert spoken[0].endswith("locale es-ES.") and spoken[-1].endswith("locale en-US.")
    assert {i.rsplit(" ", 1)[-1] for i in spoken} == {"es-ES.", "en-US."}
