"""Crashes: a worker killed with SIGKILL, and the Temporal server restarted mid-call."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from runtime.temporal_client import connect
from tests.workflow.conftest import Stack, items_of, started

FRAUD = "Someone used my card abroad, I think it's fraud"
BLOCK = "Please block my card ending in 8832"


class WorkerProcess:
    """`baton worker` in its own process, killable like a real crash."""

    def __init__(self, address: str, log: Path, queues: str = "calls,llm,speech,tools") -> None:
        self.log = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "baton.cli", "worker", "--address", address, "--queues", queues],
            stdout=subprocess.PIPE,
            stderr=self.log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()  # printed once the workers poll
        assert "worker serving" in line, line

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


@pytest.fixture
def worker_log(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "worker.log"
    yield path


async def test_killed_worker_is_replaced_without_losing_the_call(
    temporal_server: EmbeddedTemporal, temporal_client: Client, worker_log: Path
) -> None:
    stack = Stack(temporal_client)  # only to build the call; workers run in subprocesses
    first = WorkerProcess(temporal_server.address, worker_log)
    try:
        session = stack.call()
        await started(session)
        assert (await session.say(FRAUD)).agent == "FraudAgent"
        first.kill()
    finally:
        first.stop()
    pending = asyncio.create_task(session.say(BLOCK, utterance_id="after-crash"))
    await asyncio.sleep(0)  # the update is on its way while no worker is alive
    began = time.monotonic()
    second = WorkerProcess(temporal_server.address, worker_log)
    try:
        reply = await pending
        takeover = time.monotonic() - began
        print(f"replacement worker answered {takeover:.2f}s after starting")
        assert reply.agent == "FraudAgent" and "8832" in reply.text
        again = await session.say(BLOCK, utterance_id="after-crash")
        assert again.duplicate and again.text == reply.text
        state = await session.state()
        assert state["active_agent"] == "FraudAgent"
        assert state["visited"] == ["Concierge", "FraudAgent"]
        users = [u["utterance_id"] for u in items_of(state["transcript"], "user_turn")]
        assert len(users) == len(set(users)) == 2
        blocks = [
            c for c in items_of(state["transcript"], "tool_call") if c["tool"] == "block_card"
        ]
        assert len(blocks) == 1
        await session.hang_up()
        assert (await session.handle.result())["status"] == "hung_up"
    finally:
        second.stop()
    assert second.process.returncode == 0  # SIGTERM drains the worker and exits cleanly


async def test_server_restart_mid_call_keeps_the_call(tmp_path: Path) -> None:
    server = EmbeddedTemporal(DevServerOptions(db_filename=tmp_path / "restart.sqlite3"))
    await server.astart()
    try:
        stack = Stack(await connect(server.address))
        await stack.start_workers()
        try:
            session = stack.call()
            await started(session)
            assert (await session.say(FRAUD)).agent == "FraudAgent"
            server.stop()
            await server.astart()  # same port, same SQLite file
            reply = await session.say(BLOCK)
            assert reply.agent == "FraudAgent" and "8832" in reply.text
            state = await session.state()
            assert state["visited"] == ["Concierge", "FraudAgent"]
            assert len(items_of(state["transcript"], "user_turn")) == 2
            await session.hang_up()
            assert (await session.handle.result())["status"] == "hung_up"
        finally:
            await stack.stop_workers()
    finally:
        server.stop()


async def test_one_process_per_queue_serves_a_call(
    temporal_server: EmbeddedTemporal, temporal_client: Client, worker_log: Path
) -> None:
    # The LLM worker has never seen this call's scenario: it fetches the snapshot by query.
    workers = [
        WorkerProcess(temporal_server.address, worker_log, queue)
        for queue in ("calls", "llm", "speech", "tools")
    ]
    try:
        session = Stack(temporal_client).call()
        await started(session)
        reply = await session.say(FRAUD)
        assert reply.agent == "FraudAgent" and reply.spoken[0].kind == "greeting"
        block = await session.say(BLOCK)
        assert "8832" in block.text
        await session.hang_up()
        assert (await session.handle.result())["status"] == "hung_up"
    finally:
        for worker in workers:
            worker.stop()
    assert [w.process.returncode for w in workers] == [0, 0, 0, 0], worker_log.read_text()[-3000:]
