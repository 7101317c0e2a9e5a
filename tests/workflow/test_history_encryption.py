"""A call's PII never sits readable in Temporal's store: `baton dev` as a person runs it, with
no key configured, then the server's SQLite files read byte by byte."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from baton.temporal_server import free_port
from contracts.temporal import workflow_id_for
from runtime.temporal_client import connect

PII = [b"Alex Morgan", b"C1001", b"8832", b"used my card abroad"]
SCRIPT = """\
Someone used my card abroad last night, I think it's fraud
Please block my card ending in 8832
That's all, thank you, goodbye
"""


def test_a_banking_call_leaves_only_ciphertext_in_the_temporal_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "BATON_CODEC_KEYS"}
    env.update(PYTHONUNBUFFERED="1", BATON_DATA_DIR=str(tmp_path))
    db = tmp_path / "temporal.sqlite3"
    dev_command = ["dev", "--port", str(port), "--db-file", str(db), "--http-port", "0"]
    dev = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", *dev_command, "--media-address", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert dev.stdout is not None and "workers serving" in (
            dev.stdout.readline() + dev.stdout.readline()
        )
        script = tmp_path / "call.txt"
        script.write_text(SCRIPT)
        call = ["call", "--script", str(script), "--call-id", "pii-check"]
        done = subprocess.run(
            [sys.executable, "-m", "baton.cli", *call, "--address", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        # Read back with the key file `baton dev` made in its data folder.
        monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
        monkeypatch.delenv("BATON_CODEC_KEYS")
        decoded = asyncio.run(decoded_history(port))
    finally:
        dev.send_signal(signal.SIGINT)
        dev.wait(timeout=30)
    # With the key (the one `baton dev` made in the data folder) the history holds the call...
    assert all(secret.decode() in decoded for secret in PII)
    # ...and without it, the store holds none of it.
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("temporal.sqlite3*"))
    assert stored and not [secret for secret in PII if secret in stored]


async def decoded_history(port: int) -> str:
    client = await connect(f"127.0.0.1:{port}")
    history = await client.get_workflow_handle(workflow_id_for("pii-check")).fetch_history()
    converter = client.data_converter
    texts = []
    for event in history.events:
        attrs = event.activity_task_completed_event_attributes
        for payload in await converter.payload_codec.decode(list(attrs.result.payloads)):  # type: ignore[union-attr]
            texts.append(payload.data.decode(errors="replace"))
        start = event.workflow_execution_started_event_attributes
        for payload in await converter.payload_codec.decode(list(start.input.payloads)):  # type: ignore[union-attr]
            texts.append(payload.data.decode(errors="replace"))
    return "\n".join(texts)
