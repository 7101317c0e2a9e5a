"""A call's PII never sits readable in Temporal's store: `baton dev` as a person runs it, with
no key configured, then the server's SQLite files read byte by byte."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload

from baton.temporal_server import free_port
from contracts.temporal import workflow_id_for
from runtime.temporal_client import connect

CUSTOMER = "C1001"
#: The caller volunteers their identity, blocks a card and asks for a balance, so the name,
#: date of birth, SSN last four, card and balance all travel through the call's payloads.
SCRIPT = """\
Hi, this is Alex Morgan, born 1985-04-12, SSN last four 4321.
Someone used my card abroad last night, I think it's fraud
Please block my card ending in 8832
Thanks, the fraud matter is handled. I have another question, about my checking balance.
That's all, thank you, goodbye
"""


def customer_pii(database: Path) -> dict[str, re.Pattern[bytes]]:
    """The demo customer's PII, read from the demo database the call used. Short numbers must
    stand alone, so a run id or a ciphertext byte run that merely contains them does not count."""
    with sqlite3.connect(database) as db:
        name, dob, ssn4 = db.execute(
            "SELECT name, dob, ssn_last4 FROM customers WHERE id = ?", (CUSTOMER,)
        ).fetchone()
        (cents,) = db.execute(
            "SELECT balance_cents FROM accounts WHERE customer_id = ? AND type = 'checking'",
            (CUSTOMER,),
        ).fetchone()
    alone = r"(?<![0-9A-Za-z]){}(?![0-9A-Za-z])".format
    pii = {
        "name": re.escape(name),
        "customer id": alone(CUSTOMER),
        "date of birth": re.escape(dob),
        "SSN last four": alone(ssn4),
        "card": alone("8832"),
        "checking balance": alone(str(cents)) + "|" + re.escape(f"{cents / 100:,.2f}"),
        "what was said": "used my card abroad",
    }
    return {what: re.compile(pattern.encode()) for what, pattern in pii.items()}


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
    pii = customer_pii(tmp_path / "demo.sqlite3")
    # With the key (the one `baton dev` made in the data folder) the history holds the call...
    assert [what for what, found in pii.items() if not found.search(decoded)] == []
    # ...and without it, the store holds none of it.
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("temporal.sqlite3*"))
    assert stored and [what for what, found in pii.items() if found.search(stored)] == []


async def decoded_history(port: int) -> bytes:
    """Every payload of the call's history (inputs, results, updates, failures), decoded."""
    client = await connect(f"127.0.0.1:{port}")
    history = await client.get_workflow_handle(workflow_id_for("pii-check")).fetch_history()
    codec = client.data_converter.payload_codec
    assert codec is not None
    payloads = [p for event in history.events for p in payloads_in(event)]
    return b"\n".join(payload.data for payload in await codec.decode(payloads))


def payloads_in(message: Message) -> list[Payload]:
    """The payloads anywhere inside a history event, maps and repeated fields included."""
    if isinstance(message, Payload):
        return [message]
    found = []
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            values = list(value.values())
        else:
            values = [value] if isinstance(value, Message) else list(value)  # else repeated
        found += [p for item in values if isinstance(item, Message) for p in payloads_in(item)]
    return found
