"""Where Baton keeps its local data: one rule for every process."""

from __future__ import annotations

from pathlib import Path

from runtime.settings import settings


def data_dir() -> Path:
    """`$BATON_DATA_DIR`, or `~/.baton` when unset (demo database, dead letters, calls)."""
    base = settings().data_dir
    return Path(base).expanduser() if base else Path.home() / ".baton"
