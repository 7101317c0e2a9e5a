"""The banking demo, run as a person runs it with the most talkative logs, keeps the demo
customer's PII out of every process's logs.

`baton demo --text` is two processes: the CLI (Temporal client and every worker queue; its
logs are JSON lines on stderr with BATON_LOG_FORMAT=json) and the Temporal dev server it starts
(its output goes to a log file in the temp folder, deleted when the demo ends). Stdout is the
call's transcript, which shows what the caller said by design, so it is not a log; the test
checks instead that no log line strays onto it.

The caller volunteers their name, date of birth, SSN last four, card, e-mail and phone, and the
tools return their balance, so PII travels through every activity of the call; none of it may
appear in a log line.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from baton.stack_commands import DEMO_SCRIPT

#: The shipped banking script, with the caller volunteering their identity first and their
#: contact details after the card is blocked.
PII_LINES = {
    0: "Hi, this is Alex Morgan, born 1985-04-12, SSN last four 4321.",
    3: "Send the replacement to alex.morgan@example.com, or call me on +1-503-555-0142",
}
CUSTOMER = "C1001"
#: The demo data has no street address; the customer's home city seeds their transactions.
HOME_CITY = "Portland"
#: One demo run: a few seconds on a quiet machine, this bounds a starved one.
RUN_TIMEOUT = 120.0


def _script(tmp_path: Path) -> Path:
    lines = [
        line
        for line in DEMO_SCRIPT.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for index, line in sorted(PII_LINES.items()):
        lines.insert(index, line)
    path = tmp_path / "banking-with-pii.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _demo_env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "BATON_DATA_DIR": str(tmp_path / "data"),
        # The dev server's log file goes to the temp folder: this one, so the test can read it.
        "TMPDIR": str(tmp_path / "tmp"),
        "BATON_LOG_FORMAT": "json",
        "BATON_LOG_LEVEL": "DEBUG",  # the hard case: the most lines, the most detail
    }
    # The offline providers: no network, and no developer's cloud settings deciding the run.
    for name in ("BATON_CHAT_PROVIDER", "BATON_STT", "BATON_TTS", "BATON_TEMPORAL_ADDRESS"):
        env.pop(name, None)
    (tmp_path / "data").mkdir()
    (tmp_path / "tmp").mkdir()
    return env


def _run_demo(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str | None]:
    """Run `baton demo --text`; return its result and the dev server's log (None if none).

    The demo deletes the server's log when it stops the server, so the file is opened as soon
    as it appears and read through that handle at the end (an open file outlives its name)."""
    env = _demo_env(tmp_path)
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    command = [sys.executable, "-m", "baton.cli", "demo", "--text", "--script"]
    server_log: IO[str] | None = None
    with out_path.open("w") as out, err_path.open("w") as err:
        demo = subprocess.Popen(
            [*command, str(_script(tmp_path))], stdout=out, stderr=err, env=env, text=True
        )
        try:
            deadline = time.monotonic() + RUN_TIMEOUT
            # The log file is made before the server starts, seconds before the call begins.
            while server_log is None and demo.poll() is None and time.monotonic() < deadline:
                found = sorted((tmp_path / "tmp").glob("baton-temporal-*.log"))
                if found:
                    server_log = found[0].open(encoding="utf-8", errors="replace")
                else:
                    time.sleep(0.01)
            demo.wait(timeout=max(deadline - time.monotonic(), 1.0))
        finally:
            if demo.poll() is None:
                demo.kill()
                demo.wait()
    server_text = None
    if server_log is not None:
        with server_log:
            server_text = server_log.read()
    done = subprocess.CompletedProcess(
        demo.args, demo.returncode, out_path.read_text(), err_path.read_text()
    )
    return done, server_text


def _customer_pii(database: Path) -> dict[str, re.Pattern[str]]:
    """What identifies the demo customer, read from the demo database this very run used, each
    as a pattern that also finds the usual other spellings."""
    with sqlite3.connect(database) as db:
        name, dob, ssn4, phone, email = db.execute(
            "SELECT name, dob, ssn_last4, phone, email FROM customers WHERE id = ?", (CUSTOMER,)
        ).fetchone()
        accounts = db.execute(
            "SELECT id, balance_cents FROM accounts WHERE customer_id = ?", (CUSTOMER,)
        ).fetchall()
        cards = db.execute(
            "SELECT id, last4 FROM cards WHERE customer_id = ?", (CUSTOMER,)
        ).fetchall()
    year, month, day = dob.split("-")
    digits = re.sub(r"\D", "", phone)
    area, exchange, line = digits[-10:-7], digits[-7:-4], digits[-4:]
    pii = {
        "customer id": rf"\b{CUSTOMER}\b",
        "home city": rf"\b{HOME_CITY}\b",
        "e-mail": re.escape(email) + "|" + re.escape(email.split("@")[0]),
        "date of birth": "|".join(
            [dob, f"{month}/{day}/{year}", f"{int(month)}/{int(day)}/{year}", year + month + day]
        ),
        "SSN last four": rf"\b{ssn4}\b",
        # +1-503-555-0142, (503) 555-0142, 555.0142, 5550142 ...
        "phone": rf"(?<!\d)(?:\(?{area}\)?[-. ]?)?{exchange}[-. ]?{line}(?!\d)",
    }
    for part in name.split():
        pii[f"name ({part})"] = rf"(?i)\b{part}\b"
    for account_id, cents in accounts:
        pii[f"account {account_id}"] = rf"\b{re.escape(account_id)}\b"
        dollars = f"{cents / 100:,.2f}"
        pii[f"balance of {account_id}"] = rf"\b{cents}\b|{re.escape(dollars)}"
    for card_id, last4 in cards:
        pii[f"card {card_id}"] = rf"\b{re.escape(card_id)}\b|\b{last4}\b"
    return {what: re.compile(pattern) for what, pattern in pii.items()}


def _json_lines(text: str) -> list[dict[str, Any]]:
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)  # a line that is not JSON bypassed the log pipeline
        assert isinstance(record, dict) and {"event", "level", "timestamp"} <= record.keys()
        records.append(record)
    return records


def _leaks(text: str, pii: dict[str, re.Pattern[str]]) -> list[str]:
    return [
        f"{what}: {line[:300]}"
        for line in text.splitlines()
        for what, pattern in pii.items()
        if pattern.search(line)
    ]


def test_demo_logs_carry_no_customer_pii_at_debug(tmp_path: Path) -> None:
    done, server_log = _run_demo(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    pii = _customer_pii(tmp_path / "data" / "demo.sqlite3")

    # The PII really was in play: the caller said it, the tools returned it, the call ended.
    transcript = done.stdout
    assert "call completed" in transcript
    for what in ("name (Alex)", "date of birth", "SSN last four", "e-mail", "phone"):
        assert pii[what].search(transcript), f"the caller never said their {what}"
    assert pii["balance of A1001-CHK"].search(transcript), "no tool returned the balance"

    # Every line of the CLI's stderr went through the structured log pipeline (a stray print or
    # traceback would not parse), and none strayed onto stdout, which this test does not scan.
    records = _json_lines(done.stderr)
    for line in transcript.splitlines():
        try:
            stray = json.loads(line)
        except ValueError:
            continue
        assert not (isinstance(stray, dict) and "event" in stray), f"log line on stdout: {line}"

    # Not quiet by accident: DEBUG is on, and the lines of the call name it.
    call_id = re.search(r'"call_id": "(cli-[0-9a-f]+)"', transcript)
    assert call_id, "the transcript shows no call id"
    assert len(records) >= 10, done.stderr
    decisions = [r for r in records if r["event"] == "offline decision"]
    assert len(decisions) >= 6 and all(r["level"] == "debug" for r in decisions)
    assert any(r.get("call_id") == call_id.group(1) for r in records), done.stderr
    assert server_log is not None, "the demo's Temporal dev server wrote no log file"
    assert server_log.startswith("--- baton: starting server on 127.0.0.1:"), server_log[:300]

    leaks = _leaks(done.stderr, pii) + _leaks(server_log, pii)
    assert not leaks, "PII in the logs:\n" + "\n".join(leaks)
