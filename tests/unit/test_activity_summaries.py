"""The one-line summaries the Temporal Web UI shows for a call's activities (workflows.summaries):
speech counts sentences, and a handoff names the route the pinned scenario declares for it."""

from __future__ import annotations

import pytest

from activities.snapshot import build_snapshot
from contracts.calls import CallInput
from contracts.registry import HANDOFF_TOOL
from contracts.snapshot import CallSnapshot
from registries.loading import Registry
from workflows import summaries


@pytest.fixture(scope="module")
def banking(shipped: Registry) -> CallSnapshot:
    return build_snapshot(shipped, "banking")


def test_speech_says_how_many_sentences_and_whose_voice() -> None:
    text = "Your card is blocked. Is there anything else?"
    assert summaries.speech("FraudAgent", text, "reply") == "TTS 2 sentences · FraudAgent"
    assert summaries.speech("Concierge", "One moment", "reply") == "TTS 1 sentence · Concierge"
    assert summaries.speech("FraudAgent", "Hi!", "greeting") == "TTS greeting · FraudAgent"
    streamed = summaries.speech("Concierge", "", "reply", streamed=True)
    assert streamed == "TTS streamed reply · Concierge"


@pytest.mark.parametrize(
    ("source", "args", "trigger", "expected"),
    [
        ("Concierge", {"target_agent": "FraudAgent"}, "llm", "Concierge → FraudAgent, announced"),
        ("Concierge", {"target_agent": "fraudagent"}, "llm", "Concierge → FraudAgent, announced"),
        ("FraudAgent", {"target_agent": "Concierge"}, "llm", "FraudAgent → Concierge, discrete"),
        (
            "Concierge",
            {"target_agent": "InvestmentAdvisor"},
            "supervisor",
            "Concierge → InvestmentAdvisor, discrete (supervisor)",
        ),
        (
            "Concierge",
            {"target_agent": "Concierge"},
            "llm",
            "Concierge → Concierge, already active",
        ),
        (
            "FraudAgent",
            {"target_agent": "ComplianceDesk"},
            "llm",
            "FraudAgent → ComplianceDesk, no route",
        ),
        ("Concierge", {"target_agent": "Santa"}, "llm", "Concierge → Santa, not an agent"),
        ("Concierge", {}, "llm", f"Concierge via {HANDOFF_TOOL}, no target named"),
    ],
)
def test_a_handoff_names_the_route_the_scenario_declares(
    banking: CallSnapshot, source: str, args: dict[str, str], trigger: str, expected: str
) -> None:
    summary = summaries.handoff(banking, source, HANDOFF_TOOL, args, trigger)
    assert summary == f"handoff {expected}"


def test_the_static_summary_names_the_caller_by_client_id_only() -> None:
    call = CallInput(
        call_id="c-1",
        scenario="banking",
        channel="browser",
        caller_profile={"name": "Alex Morgan", "phone": "+15550100", "client_id": "C1001"},
    )
    assert call.static_summary() == "banking call c-1 · browser · caller C1001"
    assert CallInput(call_id="c-2").static_summary() == "banking call c-2 · text"
