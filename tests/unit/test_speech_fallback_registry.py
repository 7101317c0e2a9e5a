"""An agent's or scenario's `speech_fallback`: checked by `baton scenario check` against the
speech providers a worker can build, agent before scenario, and served by the speech worker
per request (the worker's own BATON_STT_FALLBACK / BATON_TTS_FALLBACK when a request names
none)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from activities.provider_errors import ProviderError
from activities.speech_providers.base import Recognition, SpeechChunk
from activities.speech_providers.fallback import FallbackRecognizer, FallbackSynthesizer
from activities.speech_providers.requested_fallbacks import RequestedFallbacks
from baton.cli import main
from contracts.registry import SpeechFallback
from contracts.speech import SynthesisRequest, TranscriptionRequest
from registries.loading import load_registry
from registries.validation import check_registry
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS


def problems(write_registry: RegistryWriter, agent: Any = None, scenario: Any = None) -> list[str]:
    agents = {**AGENTS, "fraud": {**AGENTS["fraud"], "speech_fallback": agent or {}}}
    root = write_registry(
        agents=agents,
        scenarios={"demo": {**SCENARIO, "speech_fallback": scenario or {}}},
        tools=TOOLS,
    )
    return [str(p) for p in check_registry(load_registry(root))]


def test_known_providers_have_no_problems(write_registry: RegistryWriter) -> None:
    assert problems(write_registry, {"recognizer": "offline"}, {"synthesizer": "azure"}) == []


def test_an_unknown_provider_is_refused_with_file_field_and_fix(
    write_registry: RegistryWriter,
) -> None:
    found = problems(write_registry, agent={"recognizer": "azur"})
    assert any(
        "agentstore/fraud/agent.yaml:" in p
        and "error: speech_fallback.recognizer: 'azur' is not a speech provider; use one of "
        "offline, offline-light, openai, azure-openai, azure (did you mean 'azure'?)"
        in p
        for p in found
    ), found
    found = problems(write_registry, scenario={"synthesizer": "polly"})
    assert any(
        "scenariostore/demo/scenario.yaml:" in p
        and "error: speech_fallback.synthesizer: 'polly' is not a speech provider" in p
        for p in found
    ), found


def test_scenario_check_fails_on_it_and_reports_the_fallbacks_in_force(
    capsys: pytest.CaptureFixture[str], write_registry: RegistryWriter
) -> None:
    bad = {**AGENTS, "fraud": {**AGENTS["fraud"], "speech_fallback": {"synthesizer": "espeak"}}}
    root = write_registry(agents=bad, scenarios={"demo": SCENARIO}, tools=TOOLS)
    assert main(["scenario", "check", str(root)]) == 1
    out, err = capsys.readouterr()
    assert "speech_fallback.synthesizer: 'espeak' is not a speech provider" in out + err
    assert "Traceback" not in out + err
    good = {**AGENTS, "fraud": {**AGENTS["fraud"], "speech_fallback": {"recognizer": "azure"}}}
    scenario = {**SCENARIO, "speech_fallback": {"recognizer": "offline", "synthesizer": "offline"}}
    root = write_registry(agents=good, scenarios={"demo": scenario}, tools=TOOLS)
    assert main(["scenario", "check", str(root)]) == 0
    out, _ = capsys.readouterr()
    assert (
        "speech fallback: FraudAgent hears by azure, speaks by offline; "
        "FrontDesk hears by offline, speaks by offline" in out
    )


def test_the_agents_choice_beats_the_scenarios_role_by_role() -> None:
    scenario = SpeechFallback(recognizer="offline", synthesizer="offline")
    own = SpeechFallback(recognizer="azure")
    assert own.over(scenario) == SpeechFallback(recognizer="azure", synthesizer="offline")
    assert SpeechFallback().over(SpeechFallback()) == SpeechFallback()


def test_requests_recorded_before_the_field_still_decode() -> None:
    old = {"call_id": "c", "gateway_address": "g", "segment_ref": "s", "locale": "en-US"}
    assert TranscriptionRequest.model_validate(old).fallback_provider == ""
    spoken = {"call_id": "c", "gateway_address": "g", "agent": "A", "text": "Hi."}
    assert SynthesisRequest.model_validate(spoken).fallback_provider == ""


class Named:
    """A provider that answers with its name, or fails as a service that is down."""

    def __init__(self, name: str, *, down: bool = False) -> None:
        self.name, self.down = name, down

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        if self.down:
            raise ProviderError("503 from the service", retryable=True)
        return Recognition(text=self.name, confidence=1.0)

    async def synthesize(
        self, text: str, *, voice: str = "", rate: str = "+0%"
    ) -> AsyncIterator[SpeechChunk]:
        if self.down:
            raise ProviderError("503 from the service", retryable=True)
        yield SpeechChunk(pcm16_16k=self.name.encode(), text_end=len(text))


async def test_a_named_fallback_replaces_the_workers_own_and_is_built_once() -> None:
    built: list[str] = []

    def build(provider: str) -> Named:
        built.append(provider)
        return Named(f"registry-{provider}")

    primary, env_backup = Named("azure", down=True), Named("env-backup")
    served = RequestedFallbacks(
        FallbackRecognizer(primary, env_backup),
        FallbackSynthesizer(primary, env_backup),
        build_recognizer=build,
        build_synthesizer=build,
    )
    # No name: the worker's environment pair, as before.
    assert (await served.recognizer("").recognize(b"")).text == "env-backup"
    # A name: the worker's primary backed by the named provider, not by the environment's.
    heard = await served.recognizer("offline").recognize(b"")
    assert heard.text == "registry-offline"
    spoken = [c async for c in served.synthesizer("openai").synthesize("Hello.")]
    assert spoken[0].pcm16_16k == b"registry-openai"
    assert served.recognizer("offline") is served.recognizer("offline")
    assert built == ["offline", "openai"]


def test_a_fallback_this_worker_cannot_set_up_leaves_its_own_providers() -> None:
    def refuse(provider: str) -> Named:
        raise ProviderError(
            "speech_fallback.recognizer=azure needs AZURE_SPEECH_KEY", retryable=False
        )

    own = Named("offline-whisper")
    served = RequestedFallbacks(own, Named("espeak"), build_recognizer=refuse)
    assert served.recognizer("azure") is own
