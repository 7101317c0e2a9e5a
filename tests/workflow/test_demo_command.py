"""README command 1's main job, run as a person runs it: `baton demo` speaks the banking script,
which ends in a transfer to a person on the human-agent console."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from baton.temporal_server import free_port


def test_demo_call_is_spoken_recognized_and_handed_off(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "BATON_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "baton.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    # What the recognizer heard drove the call: the fraud desk, the card block, the way back.
    assert "caller (heard as) :" in out
    assert "handoff Concierge -> FraudAgent [announced" in out
    assert "FraudAgent calls block_card" in out and '"last4": "8832"' in out
    assert "handoff FraudAgent -> Concierge [discrete" in out
    assert "Concierge calls get_account_balance" in out
    # It ends with the caller asking for a person: on hold in the console's queue, then taken
    # there through the console's own API and line, and the call ends transferred.
    assert "Concierge calls escalate_human" in out
    assert "console (Private banking desk): call " in out
    assert "transfer to Private banking desk: taken by agent-demo" in out
    assert "call transferred" in out


def test_an_unreachable_model_is_a_few_plain_lines_and_an_escalation(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "BATON_DATA_DIR": str(tmp_path),
        "BATON_CHAT_PROVIDER": "openai",
        "BATON_OPENAI_API_KEY": "unused",
        "BATON_OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",  # nothing listens
    }
    done = subprocess.run(
        [sys.executable, "-m", "baton.cli", "demo", "--text"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "chat: OpenAI at http://127.0.0.1:" in done.stdout.splitlines()[0]  # honest banner
    assert "call escalated" in done.stdout
    errors = done.stderr.strip().splitlines()
    # One line per failed attempt (no tracebacks), and one saying why the call escalated.
    assert "Traceback" not in done.stderr
    assert sum("activity generate_agent_reply attempt" in line for line in errors) >= 2
    assert any("call escalated to a human" in line for line in errors)
    assert len(errors) <= 12, done.stderr
