"""`baton history export` of a call that continued as new on a real dev server: the export
follows the whole chain from the first run, in order, and the report and verify read every run
from the bundle alone, with every worker stopped."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from temporalio.client import Client

from baton.temporal_server import EmbeddedTemporal
from tests.audit.cli import baton
from tests.workflow.conftest import Stack, started

FRAUD = "Someone used my card abroad, I think it's fraud"


async def test_a_call_that_continued_as_new_exports_every_run_in_order(
    temporal_client: Client, temporal_server: EmbeddedTemporal, tmp_path: Path
) -> None:
    stack = Stack(temporal_client)
    await stack.start_workers()
    # The lowest limit the call takes: its history continues as new every few turns, as
    # tests/histories/record.py records continue_as_new.
    session = stack.call(max_history_events=50)
    try:
        await started(session)
        await session.say(FRAUD)
        for n in range(4):
            await session.say(f"Please block my card ending in 8832 ({n})")
        await session.hang_up()
        await session.handle.result(follow_runs=True)
    finally:
        await stack.stop_workers()
    call_id = session.call.call_id
    chain = [
        execution.run_id
        async for execution in temporal_client.list_workflows(
            f"WorkflowId = '{session.workflow_id}'"
        )
    ]
    assert len(chain) >= 2, "the call did not continue as new"

    bundle_file = tmp_path / "call.bundle.json"
    exported = baton(
        "history", "export", call_id, "-o", str(bundle_file), "--address", temporal_server.address
    )
    assert exported.returncode == 0, exported.stderr
    bundle = json.loads(bundle_file.read_text())
    runs = bundle["runs"]
    assert len(runs) == len(chain) and sorted(r["run_id"] for r in runs) == sorted(chain)
    first = runs[0]["history"]["events"][0]["workflowExecutionStartedEventAttributes"]
    assert first["firstExecutionRunId"] == runs[0]["run_id"]
    for run, following in pairwise(runs):
        last = run["history"]["events"][-1]
        continued = last["workflowExecutionContinuedAsNewEventAttributes"]
        assert continued["newExecutionRunId"] == following["run_id"]
    assert "workflowExecutionCompletedEventAttributes" in runs[-1]["history"]["events"][-1]
    assert f"{len(runs)} run(s)" in exported.stderr

    report = baton("audit", "report", str(bundle_file), "--format", "json")
    assert report.returncode == 0, report.stderr
    timeline = json.loads(report.stdout)
    assert [r["run_id"] for r in timeline["runs"]] == [r["run_id"] for r in runs]
    assert [r["closed_as"] for r in timeline["runs"]] == ["continued_as_new"] * (len(runs) - 1) + [
        "completed"
    ]
    boundaries = [i for i in timeline["items"] if i["kind"] == "continue_as_new"]
    assert [b["run"] for b in boundaries] == list(range(1, len(runs)))
    assert [i["run"] for i in timeline["items"]] == sorted(i["run"] for i in timeline["items"])
    blocked = [
        i["tool"]["result"]["last4"]
        for i in timeline["items"]
        if i["kind"] == "tool_call" and i["tool"]["name"] == "block_card"
    ]
    assert blocked == ["8832"] * 4  # nothing lost at the boundaries
    assert timeline["call"]["visited"] == ["Concierge", "FraudAgent"]

    verify = baton("audit", "verify", str(bundle_file))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    lines = verify.stdout.splitlines()
    assert lines[1] == f"ok   hashes: {len(runs) + 2} parts match the manifest"
    assert lines[2].startswith(f"ok   replay: {len(runs)} runs, ")
    assert "block_card ×4" in lines[4]
    assert lines[-1] == "verified: all checks passed"
