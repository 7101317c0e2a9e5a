"""`scenario check` rules for languages: the caller-language routing map must name agents of the
scenario and real language tags, and an agent that does not speak English is warned about when
the recognizer is the offline one, which only hears English (the call would work, but the
caller's words would come out as English guesses)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from contracts.registry import BCP47_TAG, AgentConfig, ScenarioConfig
from registries.errors import Problem
from registries.yaml_source import YamlDocument
from runtime.settings import settings

#: The recognizers that run on this machine: Whisper tiny.en and PocketSphinx's US model.
OFFLINE_RECOGNIZERS = frozenset({"", "offline", "offline-light"})


def offline_recognizer(stt: str | None = None) -> bool:
    """Whether `BATON_STT` (or `stt`) picks an English-only offline recognizer."""
    chosen = settings().stt if stt is None else stt
    return (chosen or "").strip().lower() in OFFLINE_RECOGNIZERS


def english_only_warning(agents: Iterable[AgentConfig]) -> str:
    """One line naming the agents the offline recognizer cannot hear ("" when none)."""
    foreign = sorted(f"{a.name} ({a.language})" for a in agents if not _english(a.language))
    if not foreign:
        return ""
    return (
        f"the offline recognizer hears English only, but {', '.join(foreign)} "
        "speak another language; set BATON_STT=azure or openai for them"
    )


def language_problems(
    doc: YamlDocument,
    scenario: ScenarioConfig,
    members: tuple[str, ...],
    agents: Mapping[str, AgentConfig],
) -> Iterator[Problem]:
    for language, agent in scenario.start_agent_by_language.items():
        where = ("start_agent_by_language", language)
        if not re.fullmatch(BCP47_TAG, language):
            yield doc.problem(
                where, f"{language!r} is not a language tag; write one such as es or es-MX"
            )
        if agent not in members:
            yield doc.problem(where, f"{agent!r} is not an agent in this scenario")
    if offline_recognizer():
        warning = english_only_warning(agents[name] for name in members if name in agents)
        if warning:
            yield doc.problem(("agents",), warning, "warning")


def _english(language: str) -> bool:
    return language.split("-")[0].lower() == "en"
