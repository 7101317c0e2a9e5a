"""Shared fixtures: the shipped registry and small hand-built scenarios."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis  # noqa: F401 - see below
import pytest
import structlog
import yaml

from contracts.registry import AgentConfig, ScenarioConfig
from registries.loading import Registry, load_registry

pytest_plugins = ["tests.temporal_fixtures"]
#: A fixed, test-only history key (a real deployment keeps its keys out of the repository).
TEST_CODEC_KEYS = "test1:dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24="

# hypothesis' pytest plugin imports (and pytest rewrites, i.e. compiles) hypothesis lazily at the
# end of the session. Compiling then, amid the finalizers of gRPC and Temporal objects being
# collected, trips a CPython 3.11 bug ("SystemError: AST constructor recursion depth
# mismatch") that fails an otherwise green run; importing it up front compiles it early.


@pytest.fixture(scope="session")
def shipped() -> Registry:
    return load_registry()


@pytest.fixture(autouse=True)
def _structlog_restored() -> Iterator[None]:
    """A test that runs a command in-process configures logging (a quiet one at WARNING);
    later tests must still see their info lines, so each test gets the config back."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: Any) -> None:
    """Tools write to a demo database; never touch the developer's own one."""
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path_factory.mktemp("baton-data")))
    # One history key for the whole run, so every client, worker and child process (each may
    # see another data folder) reads what the others wrote.
    monkeypatch.setenv("BATON_CODEC_KEYS", TEST_CODEC_KEYS)
    monkeypatch.delenv("BATON_REGISTRY", raising=False)


def agent(name: str, **fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"name": name, **fields})


def scenario(**fields: Any) -> ScenarioConfig:
    return ScenarioConfig.model_validate({"name": "test", **fields})


RegistryWriter = Callable[..., Path]


@pytest.fixture
def write_registry(tmp_path: Path) -> RegistryWriter:
    """Write a registry folder from plain dicts; returns its root.

    `agents` maps folder -> agent.yaml data (a str is written verbatim), `scenarios` maps
    folder -> scenario.yaml data, `tools` maps file stem -> (yaml data, python source).
    """

    def write(
        *,
        agents: dict[str, Any] | None = None,
        scenarios: dict[str, Any] | None = None,
        tools: dict[str, tuple[Any, str]] | None = None,
        prompts: dict[str, str] | None = None,
    ) -> Path:
        root = tmp_path / "registry"
        for folder, data in (agents or {}).items():
            _write(root / "agentstore" / folder / "agent.yaml", data)
        for folder, text in (prompts or {}).items():
            _write(root / "agentstore" / folder / "prompt.jinja", text)
        for folder, data in (scenarios or {}).items():
            _write(root / "scenariostore" / folder / "scenario.yaml", data)
        for stem, (data, source) in (tools or {}).items():
            _write(root / "toolstore" / f"{stem}.yaml", data)
            _write(root / "toolstore" / f"{stem}.py", source)
        (root / "agentstore").mkdir(parents=True, exist_ok=True)
        (root / "scenariostore").mkdir(parents=True, exist_ok=True)
        return root

    return write


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
