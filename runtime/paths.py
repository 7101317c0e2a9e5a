"""Where Baton keeps its local data: one rule for every process."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """`$BATON_DATA_DIR`, or `~/.baton` when unset (demo database, dead letters, calls)."""
    base = os.environ.get("BATON_DATA_DIR")
    return Path(base).expanduser() if base else Path.home() / ".baton"
