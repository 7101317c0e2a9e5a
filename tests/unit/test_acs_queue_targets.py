"""An escalation `queue` target serves ACS too (a Job Router queue id): `baton scenario check`
passes a scenario whose escalations go to one, as it does for console and Twilio queues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.gateway.test_acs_jobrouter_call import QUEUE, queue_registry
from tests.unit.test_cli import run


def test_a_job_router_queue_target_passes_scenario_check(capsys: Any, tmp_path: Path) -> None:
    registry = queue_registry(tmp_path)
    assert f"address: {QUEUE}" in (registry / "scenariostore/banking/scenario.yaml").read_text()
    code, out, err = run(capsys, "scenario", "check", str(registry))
    assert code == 0, err
    assert "banking: ok" in out and "0 error(s)" in out
