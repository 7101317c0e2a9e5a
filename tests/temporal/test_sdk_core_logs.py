"""The Temporal SDK's native core prints its warnings to stdout unless told otherwise; after
`configure_logging` they are log records on stderr and stdout stays empty (command output
such as `baton call --json` owns it)."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WARNING_TIMEOUT = 60.0

#: A worker whose server goes away: its polls fail and the core warns of the retries.
PROGRAM = """
import asyncio

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from runtime.logs import configure_logging


@activity.defn
async def idle() -> None:
    pass


async def main() -> None:
    configure_logging()
    server = EmbeddedTemporal(DevServerOptions())
    await server.astart()
    client = await Client.connect(server.address)
    async with Worker(client, task_queue="polled", activities=[idle]):
        server.stop()
        await asyncio.Event().wait()


asyncio.run(main())
"""


def test_sdk_core_warnings_go_to_stderr_and_never_to_stdout() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", PROGRAM],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None and process.stderr is not None
    err = b""
    try:
        deadline = time.monotonic() + WARNING_TIMEOUT
        with selectors.DefaultSelector() as selector:
            selector.register(process.stderr, selectors.EVENT_READ)
            while b"[sdk_core::" not in err:
                left = deadline - time.monotonic()
                assert left > 0, f"no SDK core warning on stderr: {err.decode()}"
                if selector.select(timeout=left):
                    chunk = os.read(process.stderr.fileno(), 65536)
                    assert chunk, f"exited ({process.wait()}): {err.decode()}"
                    err += chunk
    finally:
        process.kill()  # ours; it would wait forever
        out, rest = process.communicate(timeout=30)
    line = next(line for line in (err + rest).decode().splitlines() if "[sdk_core::" in line)
    assert "warning" in line and "retried" in line
    assert out == b""
