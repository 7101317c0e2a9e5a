"""The call-start snapshot is reused while the registry's files are unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

from activities.snapshot import current_snapshot
from registries.loading import SHIPPED_REGISTRY, registry_fingerprint


def copy_registry(tmp_path: Path) -> Path:
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    return registry


def test_unchanged_files_give_the_same_snapshot_without_rebuilding(tmp_path: Path) -> None:
    registry = str(copy_registry(tmp_path))
    first = current_snapshot(registry, "banking")
    assert current_snapshot(registry, "banking") is first


def test_an_edit_of_the_same_size_is_noticed(tmp_path: Path) -> None:
    registry = copy_registry(tmp_path)
    before = current_snapshot(str(registry), "banking")
    scenario = registry / "scenariostore" / "banking" / "scenario.yaml"
    text = scenario.read_text()
    edited = text.replace("Harbor Private Bank", "Harbor Private Bunk", 1)
    assert edited != text and len(edited) == len(text)
    scenario.write_text(edited)
    after = current_snapshot(str(registry), "banking")
    assert after.content_hash != before.content_hash
    assert after.scenario.agent_defaults["company_name"] == "Harbor Private Bunk"


def test_a_prompt_or_tool_module_edit_changes_the_fingerprint(tmp_path: Path) -> None:
    registry = copy_registry(tmp_path)
    fingerprint = registry_fingerprint(registry)
    prompt = next((registry / "agentstore").rglob("*.jinja"))
    prompt.write_text(prompt.read_text() + "\nBe brief.\n")
    assert registry_fingerprint(registry) != fingerprint
    fingerprint = registry_fingerprint(registry)
    module = next((registry / "toolstore").glob("*.py"))
    module.write_text(module.read_text() + "\n")
    assert registry_fingerprint(registry) != fingerprint
