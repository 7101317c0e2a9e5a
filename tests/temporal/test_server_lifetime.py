"""The embedded dev server dies with whatever started it, however that dies: `kill -9` of
`baton server`, `baton dev` or `baton demo` leaves no Temporal process and no taken port behind,
the SQLite store the killed server wrote opens again with every workflow in it, and a server
started from a thread that has since ended keeps running (the parent-death signal follows the
forking thread, see baton.tethered_process)."""

from __future__ import annotations

import asyncio
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client, WorkflowExecutionStatus

from baton import tethered_process
from baton.temporal_server import DevServerOptions, EmbeddedTemporal, free_port, port_is_free

pytestmark = pytest.mark.skipif(
    not tethered_process.supported(), reason="the parent-death signal is Linux only"
)

ROOT = Path(__file__).resolve().parents[2]
#: Bounds for things that take a fraction of that: a process to go, a port to be released.
GONE_TIMEOUT = 20.0
BANNER_TIMEOUT = 90.0


def _wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.05)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for whoever inherited it to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _temporal_children(pid: int) -> list[int]:
    """The `temporal server start-dev` processes whose parent is `pid`, read from /proc."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return [child for child in children if "start-dev" in _cmdline(child)]


def _read_until(process: subprocess.Popen[bytes], marker: str) -> str:
    """What the process printed up to `marker`, waiting at most BANNER_TIMEOUT; fails with
    what it printed if it exits first. Reads the pipe itself: a buffered reader would hold
    lines that select() then never reports."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + BANNER_TIMEOUT
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while marker.encode() not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {marker!r} within {BANNER_TIMEOUT:.0f} s; printed: {seen!r}"
            if selector.select(timeout=left):
                chunk = os.read(process.stdout.fileno(), 65536)
                assert chunk, f"exited ({process.wait()}) before {marker!r}: {seen!r}"
                seen += chunk
    return seen.decode()


class Processes:
    """The processes a test started, so that it ends only those, by PID."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[bytes]] = []
        self.servers: list[int] = []  # temporal children seen, with their command lines

    def baton(self, *argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-m", "baton.cli", *argv],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self.started.append(process)
        return process

    def server_of(self, process: subprocess.Popen[bytes]) -> int:
        children = _temporal_children(process.pid)
        assert len(children) == 1, children
        self.servers.append(children[0])
        return children[0]

    def end_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            if process.stdout is not None:
                process.stdout.close()
        for pid in self.servers:  # only a server of ours, not a process that took its PID
            if _alive(pid) and "start-dev" in _cmdline(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    try:
        yield started
    finally:
        started.end_all()


def _kill_9_and_wait_for_the_server_to_go(
    processes: Processes, process: subprocess.Popen[bytes], port: int
) -> None:
    server = processes.server_of(process)
    assert _alive(server)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=10) == -signal.SIGKILL
    _wait_until(lambda: not _alive(server), GONE_TIMEOUT, f"the dev server {server} exits")
    _wait_until(lambda: port_is_free("127.0.0.1", port), GONE_TIMEOUT, f"port {port} is free")


async def _store_two_workflows(address: str) -> tuple[str, str]:
    """One workflow left running (no worker serves its queue) and one terminated."""
    client = await Client.connect(address)
    running, ended = f"kept-{uuid.uuid4().hex[:8]}", f"ended-{uuid.uuid4().hex[:8]}"
    for workflow_id in (running, ended):
        await client.start_workflow("Unserved", id=workflow_id, task_queue="nobody-polls")
    await client.get_workflow_handle(ended).terminate("test")
    return running, ended


async def _statuses(address: str, *ids: str) -> list[WorkflowExecutionStatus | None]:
    client = await Client.connect(address)
    return [(await client.get_workflow_handle(i).describe()).status for i in ids]


def test_kill_9_of_baton_server_takes_its_dev_server_and_the_store_survives(
    tmp_path: Path, processes: Processes
) -> None:
    port, db_file = free_port(), tmp_path / "store.sqlite3"
    argv = ["server", "--port", str(port), "--no-ui", "--db-file", str(db_file)]
    first = processes.baton(*argv)
    _read_until(first, "Press Ctrl-C")
    address = f"127.0.0.1:{port}"
    running, ended = asyncio.run(_store_two_workflows(address))

    _kill_9_and_wait_for_the_server_to_go(processes, first, port)

    # The same port and db file: it starts (the port was free) and has both workflows.
    second = processes.baton(*argv)
    _read_until(second, "Press Ctrl-C")
    assert asyncio.run(_statuses(address, running, ended)) == [
        WorkflowExecutionStatus.RUNNING,
        WorkflowExecutionStatus.TERMINATED,
    ]
    server = processes.server_of(second)
    second.send_signal(signal.SIGTERM)  # a clean stop still stops its server cleanly
    assert second.wait(timeout=30) == 0
    _wait_until(lambda: not _alive(server), GONE_TIMEOUT, "the second dev server exits")


@pytest.mark.parametrize(
    ("command", "ready"),
    [
        (["dev", "--http-port", "0", "--media-address", "127.0.0.1:0"], "workers serving"),
        (["demo", "--text"], "Embedded Temporal dev server at"),
    ],
    ids=["dev", "demo"],
)
def test_kill_9_of_a_command_running_the_server_takes_the_server_along(
    tmp_path: Path, processes: Processes, command: list[str], ready: str
) -> None:
    port = free_port()
    env = {"BATON_DATA_DIR": str(tmp_path)}
    if command[0] == "dev":
        command = [*command, "--port", str(port), "--db-file", str(tmp_path / "t.sqlite3")]
    process = processes.baton(*command, env=env)
    banner = _read_until(process, ready)
    if command[0] == "demo":  # the demo picks its own port and prints it
        port = int(banner.split("dev server at 127.0.0.1:")[1].split(";")[0])
    _kill_9_and_wait_for_the_server_to_go(processes, process, port)


def test_a_server_started_from_a_thread_outlives_that_thread() -> None:
    server = EmbeddedTemporal(DevServerOptions())
    starter = threading.Thread(target=server.start)
    starter.start()
    starter.join(timeout=60)
    assert not starter.is_alive()
    try:
        pid = server.pid
        assert pid is not None

        async def answers() -> None:
            client = await Client.connect(server.address)
            await client.workflow_service.get_system_info(GetSystemInfoRequest())

        asyncio.run(answers())
        assert server.running and _alive(pid)
    finally:
        server.stop()
