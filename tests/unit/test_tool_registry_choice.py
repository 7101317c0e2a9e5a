"""The tools worker runs each tool from the registry its call names, as the workers load it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from activities.business_tools import execute_tool
from contracts.tools import ToolRequest

EXTRA_TOOL = {
    "tools": [
        {
            "name": "count_stamps",
            "description": "Count the caller's stamps.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        }
    ]
}


def request(tool: str) -> ToolRequest:
    return ToolRequest(call_id="c-1", tool=tool, idempotency_key=f"c-1:{tool}")


def test_a_changed_baton_registry_is_the_one_tools_run_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One process, two registries chosen by BATON_REGISTRY in turn (as the tests do, and as a
    # worker restarted with another folder would): the second must not be the first's cache.
    # The shipped registry has no such tool (and is now cached).
    assert execute_tool(request("count_stamps")).error == "count_stamps: no such business tool"
    registry = tmp_path / "registry"
    (registry / "toolstore").mkdir(parents=True)
    (registry / "agentstore").mkdir()
    (registry / "scenariostore").mkdir()
    (registry / "toolstore" / "stamps.yaml").write_text(yaml.safe_dump(EXTRA_TOOL))
    (registry / "toolstore" / "stamps.py").write_text(
        "def count_stamps(ctx):\n    return {'stamps': 7}\n"
    )
    monkeypatch.setenv("BATON_REGISTRY", str(registry))
    assert execute_tool(request("count_stamps")).result == {"stamps": 7}
    monkeypatch.delenv("BATON_REGISTRY")
    assert execute_tool(request("count_stamps")).error == "count_stamps: no such business tool"
