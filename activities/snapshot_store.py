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
from typing import Any

from pydantic import BaseModel

from contracts.snapshot import CallSnapshot
from runtime.paths import data_dir

_written: set[str] = set()


#: The registry models' fields when calls were first pinned (tests/histories v1). A field
#: added since is hashed only when it differs from its default, so a snapshot recorded before
#: the field existed (decoded with the default) still hashes to the hash it pinned, and
#: `baton audit verify` keeps passing on old calls.
_FIRST_FIELDS: dict[str, frozenset[str]] = {
    "ScenarioConfig": frozenset(
        [
            "agent_defaults",
            "agents",
            "description",
            "generic_handoff",
            "handoff_type",
            "handoffs",
            "name",
            "start_agent",
            "template_vars",
        ]
    ),
    "AgentConfig": frozenset(
        [
            "description",
            "greeting",
            "handoff",
            "model",
            "name",
            "prompt",
            "prompt_file",
            "return_greeting",
            "template_vars",
            "tools",
            "voice",
        ]
    ),
    "ModelConfig": frozenset({"max_tokens", "name", "temperature"}),
    "HandoffEdge": frozenset(
        [
            "context_vars",
            "from_agent",
            "handoff_condition",
            "share_context",
            "to_agent",
            "tool",
            "type",
        ]
    ),
}


def snapshot_digest(snapshot: CallSnapshot) -> str:
    """The content hash of a snapshot: its canonical JSON, without where it was loaded from."""
    data = snapshot.model_dump(mode="json", exclude={"registry", "content_hash"})
    _drop_later_defaults(snapshot, data)
    canonical = json.dumps(data, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _drop_later_defaults(value: Any, data: Any) -> None:
    """Walk `value` and its JSON dump `data` together, removing later fields left unset."""
    if isinstance(value, BaseModel) and isinstance(data, dict):
        fields = type(value).model_fields
        first = _FIRST_FIELDS.get(type(value).__name__)
        for name, field in fields.items():
            if name not in data:
                continue
            current = getattr(value, name)
            later = first is not None and name not in first
            if later and current == field.get_default(call_default_factory=True):
                del data[name]
                continue
            _drop_later_defaults(current, data[name])
    elif isinstance(value, dict) and isinstance(data, dict):
        for key, item in value.items():
            if key in data:
                _drop_later_defaults(item, data[key])
    elif isinstance(value, list | tuple) and isinstance(data, list):
        for item, dumped in zip(value, data, strict=False):
            _drop_later_defaults(item, dumped)


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
