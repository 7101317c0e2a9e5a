"""README command 1's main job, run as a person runs it: `baton demo` speaks the banking script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
    assert "call completed" in out
