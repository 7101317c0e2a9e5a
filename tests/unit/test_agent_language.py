"""An agent's `language`: validated as a BCP-47 tag, routing callers by their language, the
voice that speaks it, and the warning for agents the offline recognizer cannot hear."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from activities.speech_providers.voices import voice_for
from contracts.registry import AgentConfig
from contracts.snapshot import AgentBrief, CallSnapshot
from registries.loading import load_registry
from registries.validation import check_registry
from tests.conftest import RegistryWriter, scenario
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS
from workflows.call_start import start_agent_for


@pytest.mark.parametrize("tag", ["en-US", "es", "es-419", "zh-Hans-CN", "fil-PH"])
def test_language_tags_are_accepted(tag: str) -> None:
    assert AgentConfig(name="A", language=tag).language == tag


@pytest.mark.parametrize("tag", ["english", "en_US", "EN-us", "e", ""])
def test_other_language_values_are_refused(tag: str) -> None:
    with pytest.raises(ValidationError, match="language"):
        AgentConfig(name="A", language=tag)


def snapshot(by_language: dict[str, str]) -> CallSnapshot:
    agents = {name: AgentBrief(config=AgentConfig(name=name)) for name in ("Front", "Spanish")}
    return CallSnapshot(
        scenario=scenario(start_agent="Front", start_agent_by_language=by_language),
        agents=agents,
        content_hash="x",
    )


@pytest.mark.parametrize(
    ("language", "start"),
    [("es-MX", "Spanish"), ("es", "Spanish"), ("en-US", "Front"), (None, "Front"), (42, "Front")],
)
def test_the_callers_language_picks_the_start_agent(language: Any, start: str) -> None:
    assert start_agent_for(snapshot({"es": "Spanish"}), language) == start


def test_a_full_tag_wins_over_its_language() -> None:
    picks = snapshot({"es": "Front", "es-MX": "Spanish"})
    assert start_agent_for(picks, "es-MX") == "Spanish"
    assert start_agent_for(picks, "es-ES") == "Front"


def test_the_voice_follows_the_agents_language() -> None:
    assert voice_for("en-US-JennyNeural", "es-MX") == "es-MX-DaliaNeural"
    assert voice_for("en-US-JennyNeural", "fr") == "fr-FR-DeniseNeural"
    assert voice_for("es-MX-JorgeNeural", "es-MX") == "es-MX-JorgeNeural"  # its own voice stays
    assert voice_for("en-US-JennyNeural", "") == "en-US-JennyNeural"
    assert voice_for("alloy", "es-MX") == "alloy"  # not an Azure voice: the provider maps it


def problems(write_registry: RegistryWriter, **changes: Any) -> list[str]:
    agents = {**AGENTS, "fraud": {**AGENTS["fraud"], **changes.pop("fraud", {})}}
    root = write_registry(agents=agents, scenarios={"demo": {**SCENARIO, **changes}}, tools=TOOLS)
    return [str(p) for p in check_registry(load_registry(root))]


def test_language_routes_must_name_agents_and_tags(write_registry: RegistryWriter) -> None:
    found = problems(
        write_registry, start_agent_by_language={"spanish": "FraudAgent", "es": "Nobody"}
    )
    assert any("'spanish' is not a language tag" in p for p in found), found
    assert any("'Nobody' is not an agent in this scenario" in p for p in found), found


def test_the_offline_recognizer_warns_about_agents_it_cannot_hear(
    write_registry: RegistryWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BATON_STT", raising=False)
    found = problems(write_registry, fraud={"language": "es-MX"})
    assert any(
        "warning" in p and "hears English only" in p and "FraudAgent (es-MX)" in p for p in found
    ), found
    monkeypatch.setenv("BATON_STT", "azure")
    assert not any("English only" in p for p in problems(write_registry, fraud={"language": "es"}))
