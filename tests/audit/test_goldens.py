"""Every committed history reads into the same report as its golden (tests/audit/goldens.py
says how to regenerate them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.timeline_model import SCHEMA_VERSION, CallTimeline
from tests.audit.goldens import CALLS, GOLDENS, golden_name, reports


@pytest.mark.parametrize("history", CALLS, ids=golden_name)
async def test_the_report_matches_its_golden(history: Path) -> None:
    for fmt, text in (await reports(history)).items():
        golden = GOLDENS / f"{golden_name(history)}.{fmt}"
        assert golden.exists(), f"no golden {golden.name}: run python -m tests.audit.goldens"
        assert text == golden.read_text(encoding="utf-8"), (
            f"{golden.name} changed; if on purpose, run python -m tests.audit.goldens"
        )


@pytest.mark.parametrize("history", CALLS, ids=golden_name)
def test_the_json_golden_is_a_versioned_timeline(history: Path) -> None:
    data = json.loads((GOLDENS / f"{golden_name(history)}.json").read_text(encoding="utf-8"))
    assert data["schema_version"] == SCHEMA_VERSION
    timeline = CallTimeline.model_validate(data)
    assert timeline.items[0].kind == "call_start"
    assert timeline.items[-1].kind == "call_end"
    assert timeline.call.status != "active"
