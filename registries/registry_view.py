"""What the registry checks and the tool lookups read from a loaded registry.

`loading.Registry` satisfies this protocol. `validation` and `tool_handlers` depend on it rather
than on that class because `Registry.require_scenario` runs the checks: with the class on both
sides, loading and validation would import each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from jsonschema import Draft202012Validator

from contracts.registry import AgentConfig, ScenarioConfig, ToolSpec
from registries.errors import Problem
from registries.yaml_source import YamlDocument


class RegistryView(Protocol):
    """A loaded registry, read-only: its configs, where they came from and what went wrong."""

    @property
    def agents(self) -> Mapping[str, AgentConfig]: ...

    @property
    def scenarios(self) -> Mapping[str, ScenarioConfig]: ...

    @property
    def tools(self) -> Mapping[str, ToolSpec]: ...

    @property
    def tool_modules(self) -> Mapping[str, Path]:
        """Tool name -> the Python module holding its handler."""
        ...

    @property
    def tool_validators(self) -> Mapping[str, Draft202012Validator]:
        """Tool name -> the validator of its arguments, for every tool whose schema is valid."""
        ...

    @property
    def documents(self) -> Mapping[str, YamlDocument]:
        """Keys "agent:Name", "scenario:name", "tool:name" -> the YAML each came from."""
        ...

    @property
    def problems(self) -> Sequence[Problem]:
        """Problems met while loading (unreadable YAML, fields the schema refuses, ...)."""
        ...
