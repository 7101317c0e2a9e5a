"""`baton demo --export FILE`: the demo's server keeps nothing once it stops, so the demo writes
its call's bundle first; the audit commands then read that file with no server at all."""

from __future__ import annotations

import json
from pathlib import Path

from tests.audit.cli import baton


def test_the_demo_call_exports_and_reads_back_after_its_server_is_gone(tmp_path: Path) -> None:
    env = {"PYTHONUNBUFFERED": "1", "BATON_DATA_DIR": str(tmp_path)}
    bundle = tmp_path / "demo.bundle.json"
    demo = baton("demo", "--text", "--export", str(bundle), timeout=240, env=env)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert f"exported to {bundle}" in demo.stdout

    report = baton("audit", "report", str(bundle), "--format", "json", env=env)
    assert report.returncode == 0, report.stderr
    timeline = json.loads(report.stdout)
    assert timeline["call"]["status"] == "completed"
    assert timeline["call"]["visited"] == ["Concierge", "FraudAgent"]
    routes = [
        (i["handoff"]["source"], i["handoff"]["target"], i["handoff"]["handoff_type"])
        for i in timeline["items"]
        if i["kind"] == "handoff"
    ]
    assert routes == [
        ("Concierge", "FraudAgent", "announced"),
        ("FraudAgent", "Concierge", "discrete"),
    ]
    tools = [i["tool"]["name"] for i in timeline["items"] if i["kind"] == "tool_call"]
    assert "block_card" in tools and tools[-1] == "end_call"
