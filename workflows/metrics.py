"""Counting from workflow code, replay-safely.

`workflow.metric_meter()` drops every record made while a workflow replays, so a turn replayed
on another worker (a crash, an evicted cache) is never counted twice; recording emits no
command, so histories replay unchanged. The worker's runtime turns the records into Prometheus
metrics (runtime.sdk_metrics); without metrics on, the meter does nothing.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.metrics import (
        ESCALATIONS,
        HANDOFFS,
        UTTERANCES,
        EscalationReason,
        HandoffOutcome,
        UtteranceOutcome,
    )


def _count(name: str, labels: dict[str, str]) -> None:
    # The meter adds namespace, task queue and workflow type; the bridge keeps only the
    # labels contracts.metrics declares.
    workflow.metric_meter().create_counter(name).add(1, labels)


def count_handoff(
    scenario: str, source: str, target: str, handoff_type: str, outcome: HandoffOutcome
) -> None:
    _count(
        HANDOFFS,
        {
            "scenario": scenario,
            "source": source,
            "target": target,
            "type": handoff_type,
            "outcome": outcome,
        },
    )


def count_escalation(reason: EscalationReason) -> None:
    _count(ESCALATIONS, {"reason": reason})


def count_utterance(outcome: UtteranceOutcome) -> None:
    _count(UTTERANCES, {"outcome": outcome})
