"""The embedded Temporal dev server: it starts, knows Baton's search attributes, keeps workflows
across a restart on the same db file and port, and leaves nothing running once stopped."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from baton.temporal_server import (
    TUNED_DYNAMIC_CONFIG,
    DevServerOptions,
    EmbeddedTemporal,
    find_temporal_binary,
    free_port,
    port_is_free,
    server_command,
)
from contracts.temporal import SEARCH_ATTRIBUTES

ROOT = Path(__file__).resolve().parents[2]


@workflow.defn(sandboxed=False)
class WaitForRelease:
    """Waits for one signal and returns what it carried."""

    def __init__(self) -> None:
        self.value: str | None = None

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.value is not None)
        assert self.value is not None
        return self.value

    @workflow.signal
    def release(self, value: str) -> None:
        self.value = value

    @workflow.query
    def waiting(self) -> bool:
        return self.value is None


def _worker(client: Client, task_queue: str) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[WaitForRelease],
        workflow_runner=UnsandboxedWorkflowRunner(),
        graceful_shutdown_timeout=timedelta(seconds=1),
    )


def _indexed_type(name: str) -> int:
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()  # KeywordList -> KEYWORD_LIST
    return IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{snake}")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_command_line_tuning_and_search_attributes(tmp_path: Path) -> None:
    binary = find_temporal_binary()
    assert os.access(binary, os.X_OK)
    tuned = server_command(binary, DevServerOptions(db_filename=tmp_path / "t.db"), 7300, 0)
    assert "--headless" in tuned
    assert "journal_mode=wal" in tuned and "synchronous=normal" in tuned
    for key, value in TUNED_DYNAMIC_CONFIG.items():
        assert f"{key}={value}" in tuned
    assert "--search-attribute" not in tuned  # added after start, as `baton setup` does
    assert "--namespace" not in tuned
    in_memory = server_command(binary, DevServerOptions(), 7300, 0)
    assert "--sqlite-pragma" not in in_memory and "--db-filename" not in in_memory
    plain = server_command(binary, DevServerOptions(tuned=False, ui=True, namespace="x"), 1, 2)
    assert "--dynamic-config-value" not in plain and "--headless" not in plain
    assert plain[plain.index("--ui-port") + 1] == "2"
    assert plain[plain.index("--namespace") + 1] == "x"


@pytest.mark.asyncio
async def test_server_registers_baton_search_attributes(
    temporal_server: EmbeddedTemporal, temporal_client: Client
) -> None:
    assert temporal_server.address.startswith("127.0.0.1:")
    listed = await temporal_client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default"), timeout=timedelta(seconds=5)
    )
    for key, kind in SEARCH_ATTRIBUTES.items():
        assert listed.custom_attributes.get(key) == _indexed_type(kind), key


@pytest.mark.asyncio
async def test_workflow_survives_a_server_restart(tmp_path: Path) -> None:
    options = DevServerOptions(db_filename=tmp_path / "temporal.sqlite3")
    task_queue = f"restart-{uuid.uuid4()}"
    workflow_id = f"wait-{uuid.uuid4()}"
    server = EmbeddedTemporal(options)
    try:
        await server.astart()
        client = await Client.connect(server.address)
        async with _worker(client, task_queue):
            handle = await client.start_workflow(
                WaitForRelease.run, id=workflow_id, task_queue=task_queue
            )
            assert await handle.query(WaitForRelease.waiting) is True
        port, first_pid = server.port, server.pid
        assert first_pid is not None

        await server.astop()
        assert _gone(first_pid)
        await server.astart()
        assert server.port == port and server.pid != first_pid

        client = await Client.connect(server.address)
        handle = client.get_workflow_handle_for(WaitForRelease.run, workflow_id)
        described = await handle.describe()
        assert described.status == WorkflowExecutionStatus.RUNNING
        async with _worker(client, task_queue):
            await handle.signal(WaitForRelease.release, "after restart")
            assert await asyncio.wait_for(handle.result(), timeout=30) == "after restart"
    finally:
        await server.astop()


def test_stop_leaves_no_process_behind() -> None:
    with EmbeddedTemporal(DevServerOptions(ui=True)) as server:
        pid, port, ui_port = server.pid, server.port, server.ui_port
        assert pid is not None and server.running
        assert server.ui_url == f"http://127.0.0.1:{ui_port}"
    assert not server.running and server.pid is None
    assert _gone(pid)
    assert port_is_free("127.0.0.1", port) and port_is_free("127.0.0.1", ui_port)
    server.stop()  # stopping twice is harmless


def test_baton_server_command_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    db_file = tmp_path / "server.sqlite3"
    argv = ["server", "--port", str(port), "--no-ui", "--db-file", str(db_file)]
    command = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert command.stdout is not None
        banner = ""
        # The command prints its banner only once the server answers.
        while "Press Ctrl-C" not in banner:
            line = command.stdout.readline()
            assert line, command.communicate(timeout=5)
            banner += line
        command.send_signal(signal.SIGTERM)
        rest, err = command.communicate(timeout=30)
        out = banner + rest
    finally:
        if command.poll() is None:
            command.kill()
            command.wait(timeout=5)
    assert command.returncode == 0, err
    assert f"127.0.0.1:{port}" in out and "Web UI" not in out
    assert "stopped" in err
    assert db_file.exists() and port_is_free("127.0.0.1", port)


def test_the_server_store_and_log_are_readable_by_their_owner_only(
    temporal_server: EmbeddedTemporal,
) -> None:
    db = temporal_server.options.db_filename
    assert db is not None
    files = [*db.parent.glob(db.name + "*"), temporal_server.log_path]
    assert db in files and temporal_server.log_path.stat().st_size > 0
    assert {path.name: oct(path.stat().st_mode & 0o777) for path in files} == {
        path.name: "0o600" for path in files
    }
