"""Committed call histories still replay against today's workflow code.

A failure here means a change to workflow logic would break calls recorded before it: guard
the change with `workflow.patched(...)` instead of re-recording (see tests/histories/record.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runtime.temporal_client import data_converter
from workflows.call_session import CallSessionWorkflow

HISTORIES = sorted((Path(__file__).parent.parent / "histories").glob("*.json"))


FEATURES = (
    "plain_turns",
    "handoffs_and_return_visit",
    "barge_in",
    "ping_pong_escalation",
    "supervisor_and_keypad",
    "continue_as_new",
)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_committed_histories_cover_the_call_features(version: str) -> None:
    """v1: model requests carried the agent's brief; v2: they name the pinned snapshot."""
    names = {path.name.split(".")[0] for path in HISTORIES}
    assert {f"{version}-{feature}" for feature in FEATURES} <= names


def test_a_voice_call_through_a_real_gateway_is_committed() -> None:
    """v3: the gateway ended a reply on a barge-in and the segment went through recognition."""
    voice = Path(__file__).parent.parent / "histories" / "v3-voice.json"
    text = voice.read_text()
    assert "transcribe_segment" in text and "synthesize_speech" in text


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(f"replay-{path.stem}", json.loads(path.read_text()))
    replayer = Replayer(workflows=[CallSessionWorkflow], data_converter=data_converter())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
