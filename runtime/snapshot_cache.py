"""One in-memory copy of each pinned scenario snapshot per worker process.

Workflows use it to share one parsed snapshot between the calls they cache; the LLM activity
uses it to fetch a call's snapshot only once per hash.

Every call of a scenario pins the same snapshot (same content hash), and a worker caches
hundreds of calls; keeping one parsed copy per hash instead of one per call cuts the memory of
a cached call several times over. Safe for determinism: a content hash names exactly one
immutable value, so swapping a call's copy for the shared one changes no decision, on replay
or live. Workflows import it as a pass-through module so all their instances share it.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from contracts.snapshot import CallSnapshot

_MAX_SNAPSHOTS = 64
_snapshots: OrderedDict[str, CallSnapshot] = OrderedDict()
_lock = Lock()


def shared_snapshot(snapshot: CallSnapshot) -> CallSnapshot:
    """The process-wide instance equal to `snapshot` (registering it if it is new)."""
    key = snapshot.content_hash
    with _lock:
        existing = _snapshots.get(key)
        if existing is not None:
            _snapshots.move_to_end(key)
            return existing
        _snapshots[key] = snapshot
        while len(_snapshots) > _MAX_SNAPSHOTS:
            _snapshots.popitem(last=False)
        return snapshot


def cached_snapshot(content_hash: str) -> CallSnapshot | None:
    """The snapshot with this hash if this process has it."""
    with _lock:
        return _snapshots.get(content_hash)
