"""`baton worker`'s tuning flags reach the SDK workers of every queue they name, bad values are
refused as usage errors, and a worker reports not-ready from the moment it starts draining."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.client import Client

from baton.cli import build_parser, main
from baton.stack_commands import worker_tuning
from workers.tuning import WorkerTuning
from workers.worker import ServingState, build_workers, run_workers


def tuning_from(*argv: str) -> WorkerTuning:
    return worker_tuning(build_parser().parse_args(["worker", *argv]))


async def test_flags_set_each_queues_limits(temporal_client: Client) -> None:
    tuning = tuning_from(
        *("--max-workflow-tasks", "3", "--max-activities", "7", "--pollers", "2"),
        *("--sticky-cache", "11", "--drain-seconds", "4.5"),
    )
    workers = build_workers(temporal_client, ["calls", "llm", "tools"], tuning=tuning)
    configs = {worker.task_queue: worker.config() for worker in workers}
    calls, llm, tools = (configs[f"baton-{queue}"] for queue in ("calls", "llm", "tools"))
    assert calls["max_concurrent_workflow_tasks"] == 3
    assert calls["max_cached_workflows"] == 11
    assert llm["max_concurrent_activities"] == 7
    assert tools["max_concurrent_activities"] == 7  # and as many threads for its handlers
    for config in configs.values():
        assert config["max_concurrent_workflow_task_polls"] == 2
        assert config["max_concurrent_activity_task_polls"] == 2
        assert config["graceful_shutdown_timeout"] == timedelta(seconds=4.5)


def test_defaults_are_the_documented_ones() -> None:
    assert tuning_from() == WorkerTuning()
    assert WorkerTuning().max_workflow_tasks == 8
    assert WorkerTuning().drain_seconds == 20


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--pollers", "0"), ("--max-activities", "many"), ("--drain-seconds", "-1")],
)
def test_bad_values_are_usage_errors(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["worker", flag, value])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert flag in error and repr(value) in error and "Traceback" not in error


async def test_not_ready_while_draining(temporal_client: Client) -> None:
    state = ServingState()
    stop = asyncio.Event()
    tuning = WorkerTuning(drain_seconds=1)
    serving = asyncio.create_task(
        run_workers(temporal_client, ["tools"], stop, tuning=tuning, state=state)
    )
    async with asyncio.timeout(30):
        while not state.is_ready():
            await asyncio.sleep(0.01)
    stop.set()
    async with asyncio.timeout(30):
        while not state.draining:
            await asyncio.sleep(0)
    assert not state.is_ready()
    async with asyncio.timeout(30):
        await serving
    assert not state.running and not state.is_ready()
