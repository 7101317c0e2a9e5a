"""Pinned snapshots on disk, by content hash, so any worker can load a call's snapshot.

`load_call_snapshot` writes each snapshot it pins once; the LLM worker reads it by hash when its
process has not seen the hash and the registry's current files no longer build it (they were
edited after the call started). Workers on other machines share it through `$BATON_DATA_DIR`
(a shared volume in a deployment). A file is checked against its hash before it is trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

from contracts.snapshot import CallSnapshot
from runtime.paths import data_dir

_written: set[str] = set()


def snapshot_digest(snapshot: CallSnapshot) -> str:
    """The content hash of a snapshot: its canonical JSON, without where it was loaded from."""
    canonical = json.dumps(
        snapshot.model_dump(mode="json", exclude={"registry", "content_hash"}), sort_keys=True
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def store_dir() -> Path:
    return data_dir() / "snapshots"


def save_snapshot(snapshot: CallSnapshot) -> None:
    """Keep `snapshot` under its hash (once per process; an existing file is left alone)."""
    key = snapshot.content_hash
    if key in _written:
        return
    path = store_dir() / f"{key}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole, then renamed: a reader never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as out:
            out.write(snapshot.model_copy(update={"registry": None}).model_dump_json())
        os.replace(tmp, path)
    _written.add(key)


def load_saved_snapshot(content_hash: str) -> CallSnapshot | None:
    """The stored snapshot with this hash, or None when there is none (or it does not match)."""
    path = store_dir() / f"{content_hash}.json"
    with contextlib.suppress(FileNotFoundError, ValueError):
        snapshot = CallSnapshot.model_validate_json(path.read_bytes())
        if snapshot_digest(snapshot) == content_hash == snapshot.content_hash:
            return snapshot
    return None
