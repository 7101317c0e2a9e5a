"""A bundle's runs parse into exactly the protobufs the SDK's `WorkflowHistory.from_json` makes,
without its copy of the whole dict when its renaming would change nothing (audit/bundle.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHistory

from audit.bundle import _parse_history

HISTORIES = sorted((Path(__file__).parent.parent / "histories").glob("*.json"))


def _bytes(history: WorkflowHistory) -> bytes:
    return History(events=history.events).SerializeToString(deterministic=True)


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
def test_every_committed_history_parses_as_the_sdk_parses_it(path: Path) -> None:
    data = json.loads(path.read_text())
    before = copy.deepcopy(data)
    assert _bytes(_parse_history("w", data)) == _bytes(WorkflowHistory.from_json("w", data))
    assert data == before  # the bundle's own dict is left as it was


def test_temporal_ui_json_still_goes_through_the_sdk() -> None:
    """The UI and CLI write `WorkflowExecutionStarted`, which only the SDK's renaming reads."""
    data = json.loads(HISTORIES[0].read_text())
    ui = copy.deepcopy(data)
    for event in ui["events"]:
        name = event["eventType"].removeprefix("EVENT_TYPE_")
        event["eventType"] = "".join(word.capitalize() for word in name.split("_"))
    assert ui["events"][0]["eventType"] == "WorkflowExecutionStarted"
    parsed = _parse_history("w", ui)
    assert _bytes(parsed) == _bytes(WorkflowHistory.from_json("w", data))
