"""Run the `baton` command as an auditor would: a separate process, so nothing of the test's
own workers or clients can help it read a call."""

from __future__ import annotations

import os
import subprocess
import sys


def baton(
    *args: str, timeout: float = 90, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`baton ARGS…` with this environment plus `env`; never raises on a failing exit."""
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
