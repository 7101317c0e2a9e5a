"""Run the `baton` command as an auditor would: a separate process, so nothing of the test's
own workers or clients can help it read a call."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable


def baton(
    *args: str,
    timeout: float = 90,
    env: dict[str, str] | None = None,
    unset: Iterable[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`baton ARGS…` with this environment plus `env`, less the variables in `unset`; never
    raises on a failing exit."""
    environment = {**os.environ, **(env or {})}
    for name in unset:
        environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        check=False,
    )
