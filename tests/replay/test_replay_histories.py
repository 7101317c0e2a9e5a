"""Committed call histories still replay against today's workflow code.

A failure here means a change to workflow logic would break calls recorded before it: guard
the change with `workflow.patched(...)` instead of re-recording (see tests/histories/record.py).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runtime.codec import ENCODING, KEY_ID, CodecKeyError, new_key_line
from runtime.temporal_client import data_converter
from tests.conftest import TEST_CODEC_KEYS
from workflows.call_session import CallSessionWorkflow
from workflows.runner import workflow_runner

HERE = Path(__file__).parent.parent / "histories"
HISTORIES = sorted(HERE.glob("*.json"))


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
    # In the runner the workers use (workflows.runner).
    replayer = Replayer(
        workflows=[CallSessionWorkflow],
        data_converter=data_converter(),
        workflow_runner=workflow_runner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


#: Histories from v5 on hold ciphertext (v9: tests/histories/record.py).
ENCRYPTED = sorted(
    path for path in HISTORIES if path.name[:3] in ("v5-", "v6-", "v7-", "v8-", "v9-")
)


def payload_data(node: object) -> list[bytes]:
    """Every payload's data in a history's JSON, decoded from its base64."""
    if isinstance(node, dict):
        found = [base64.b64decode(node["data"])] if isinstance(node.get("data"), str) else []
        return found + [d for value in node.values() for d in payload_data(value)]
    if isinstance(node, list):
        return [d for value in node for d in payload_data(value)]
    return []


def test_encrypted_histories_are_committed_and_hold_no_plaintext() -> None:
    assert {p.stem for p in ENCRYPTED} >= {"v5-handoffs_and_return_visit", "v5-voice", "v6-voice"}
    plain = payload_data(json.loads((HERE / "v4-voice.json").read_text()))
    assert any(b"Alex Morgan" in data for data in plain)  # what a v4 history shows anyone
    for path in ENCRYPTED:
        sealed = payload_data(json.loads(path.read_text()))
        assert sealed and not [data for data in sealed if b"Alex Morgan" in data]
        assert base64.b64encode(ENCODING).decode() in path.read_text()


async def test_an_encrypted_history_without_its_key_fails_naming_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BATON_CODEC_KEYS", new_key_line("other"))  # the key was rotated out
    path = ENCRYPTED[0]
    history = WorkflowHistory.from_json(f"replay-{path.stem}", json.loads(path.read_text()))
    replayer = Replayer(workflows=[CallSessionWorkflow], data_converter=data_converter())
    with pytest.raises(CodecKeyError, match=r"key 'test1'.*add that key back"):
        await data_converter().decode(
            [history.events[0].workflow_execution_started_event_attributes.input.payloads[0]]
        )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    # The task fails (it would retry until the key is back), naming the error's type.
    assert result.replay_failure is not None and "CodecKeyError" in str(result.replay_failure)


async def test_an_encrypted_history_replays_with_its_key_behind_a_newer_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a rotation the recorded key is no longer the newest: old calls still replay."""
    monkeypatch.setenv("BATON_CODEC_KEYS", f"{TEST_CODEC_KEYS},{new_key_line('rotated-in')}")
    converter = data_converter()
    (fresh,) = await converter.encode(["new payloads use the newest key"])
    assert fresh.metadata[KEY_ID] == b"rotated-in"
    path = HERE / "v9-voice.json"
    history = WorkflowHistory.from_json(f"replay-{path.stem}", json.loads(path.read_text()))
    started = history.events[0].workflow_execution_started_event_attributes.input.payloads[0]
    assert started.metadata[KEY_ID] == b"test1"  # recorded with the key now behind the newest
    replayer = Replayer(workflows=[CallSessionWorkflow], data_converter=converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


async def test_a_v7_voice_history_shows_what_each_activity_did() -> None:
    """v7 calls carry the Web UI's summaries, sealed like every payload: the voice call says
    which agent spoke how much and when the caller's speech was recognized."""
    path = HERE / "v7-voice.json"
    history = WorkflowHistory.from_json("v7-voice", json.loads(path.read_text()))
    sealed = [e.user_metadata.summary for e in history.events if e.user_metadata.summary.data]
    assert sealed and all(p.metadata["encoding"] == ENCODING for p in sealed)
    summaries = await data_converter().decode(sealed, [str] * len(sealed))
    assert summaries[:3] == [
        "banking call history-voice · browser · caller C1001",  # the call's, set by the gateway
        "load scenario banking",
        "greeting · Concierge",
    ]
    assert "TTS greeting · Concierge" in summaries and "STT caller segment" in summaries
    assert "LLM · Concierge" in summaries
