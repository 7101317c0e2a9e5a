"""The LLM worker loads a call's pinned snapshot by hash, never by asking the workflow."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from activities import snapshot_store
from activities.snapshot import current_snapshot, pinned_snapshot
from runtime import snapshot_cache
from tests.unit.test_snapshot_cache import copy_registry


@pytest.fixture(autouse=True)
def _empty_process_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh worker process that has seen no snapshot."""
    monkeypatch.setattr(snapshot_cache, "_snapshots", type(snapshot_cache._snapshots)())
    monkeypatch.setattr(snapshot_store, "_written", set())


def test_a_new_worker_rebuilds_the_snapshot_from_an_unchanged_registry(tmp_path: Path) -> None:
    registry = str(copy_registry(tmp_path))
    pinned = current_snapshot(registry, "banking")
    loaded = pinned_snapshot(pinned.content_hash, "banking", registry)
    assert loaded == pinned
    assert snapshot_cache.cached_snapshot(pinned.content_hash) is loaded  # once per process


def test_after_a_registry_edit_the_pinned_snapshot_comes_from_the_store(tmp_path: Path) -> None:
    registry = copy_registry(tmp_path)
    pinned = current_snapshot(str(registry), "banking")
    snapshot_store.save_snapshot(pinned)
    scenario = registry / "scenariostore" / "banking" / "scenario.yaml"
    scenario.write_text(scenario.read_text().replace("Harbor Private Bank", "Other Bank", 1))
    assert current_snapshot(str(registry), "banking").content_hash != pinned.content_hash
    loaded = pinned_snapshot(pinned.content_hash, "banking", str(registry))
    assert loaded.content_hash == pinned.content_hash
    assert loaded.scenario == pinned.scenario


def test_a_tampered_stored_snapshot_is_not_trusted(tmp_path: Path) -> None:
    registry = copy_registry(tmp_path)
    pinned = current_snapshot(str(registry), "banking")
    snapshot_store.save_snapshot(pinned)
    stored = snapshot_store.store_dir() / f"{pinned.content_hash}.json"
    stored.write_text(stored.read_text().replace("Harbor Private Bank", "Evil Bank"))
    assert snapshot_store.load_saved_snapshot(pinned.content_hash) is None


def test_a_snapshot_found_nowhere_fails_the_turn_without_retries(tmp_path: Path) -> None:
    registry = str(copy_registry(tmp_path))
    with pytest.raises(ApplicationError) as raised:
        pinned_snapshot("0" * 64, "banking", registry)
    assert raised.value.non_retryable
    assert "BATON_DATA_DIR" in str(raised.value)
