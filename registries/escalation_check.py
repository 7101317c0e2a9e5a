"""`scenario check` rules for a scenario's `escalation` block: every agent and reason it names
must exist, or an escalation would silently fall through to the default target."""

from __future__ import annotations

from collections.abc import Iterator
from difflib import get_close_matches
from typing import get_args

from contracts.metrics import EscalationReason
from contracts.registry import ScenarioConfig
from registries.errors import Problem
from registries.yaml_source import YamlDocument

REASONS: tuple[str, ...] = get_args(EscalationReason)


def escalation_problems(
    doc: YamlDocument, scenario: ScenarioConfig, members: tuple[str, ...]
) -> Iterator[Problem]:
    """Unknown agent names and escalation reasons among the scenario's transfer targets."""
    config = scenario.escalation
    for name in config.agent_targets:
        if name not in members:
            yield doc.problem(
                ("escalation", "agent_targets", name),
                f"{name!r} is not an agent in this scenario; {_hint(name, members, 'agents')}",
            )
    for reason in config.reason_targets:
        if reason not in REASONS:
            yield doc.problem(
                ("escalation", "reason_targets", reason),
                f"{reason!r} is not an escalation reason; {_hint(reason, REASONS, 'reasons')}",
            )


def _hint(name: str, known: tuple[str, ...], what: str) -> str:
    close = get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else f"{what}: {', '.join(known)}"
