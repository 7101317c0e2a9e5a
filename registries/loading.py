"""Loading a registry folder: `agentstore/`, `scenariostore/` and `toolstore/`.

Loading never raises for bad content: every problem found is collected (with file, line and
field) so `baton scenario check` can report them all at once. Code that needs a usable scenario
asks `Registry.require_scenario`, which raises `RegistryError` listing that scenario's problems.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import ValidationError

from contracts.registry import AgentConfig, ScenarioConfig, ToolFile, ToolSpec
from registries.errors import Problem, RegistryError, UnknownNameError
from registries.handoff_context import deep_merge
from registries.tool_schemas import argument_validator, schema_problem
from registries.validation import check_registry
from registries.yaml_source import YamlDocument, read_text, read_yaml, validation_problems
from runtime.settings import settings

#: The registry shipped with Baton (this package's folder).
SHIPPED_REGISTRY = Path(__file__).resolve().parent
PROMPT_SUFFIXES = (".jinja", ".j2", ".txt", ".md")
#: The folders of a registry that hold its YAML, prompts and tool modules.
STORES = ("agentstore", "scenariostore", "toolstore")


def registry_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """`--registry DIR`, else `$BATON_REGISTRY`, else the shipped registry."""
    chosen = explicit or settings().registry
    return Path(chosen).expanduser().resolve() if chosen else SHIPPED_REGISTRY


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass
class Registry:
    """Everything loaded from one registry folder, plus the problems met on the way."""

    root: Path
    agents: dict[str, AgentConfig] = field(default_factory=dict)
    scenarios: dict[str, ScenarioConfig] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    #: Tool name -> the Python module holding its handler.
    tool_modules: dict[str, Path] = field(default_factory=dict)
    #: Tool name -> its arguments' validator, built once here because every tool call uses it.
    tool_validators: dict[str, Draft202012Validator] = field(default_factory=dict)
    #: "agent:Name", "scenario:name", "tool:name" -> the YAML it came from (for line numbers).
    documents: dict[str, YamlDocument] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def scenario(self, name: str) -> ScenarioConfig:
        if name in self.scenarios:
            return self.scenarios[name]
        hint = get_close_matches(name, list(self.scenarios), n=1)
        known = ", ".join(sorted(self.scenarios)) or "none"
        suggestion = f" Did you mean {hint[0]!r}?" if hint else ""
        raise UnknownNameError(
            f"no scenario {name!r} in {_display(self.root)}.{suggestion} Known: {known}."
        )

    def require_scenario(self, name: str) -> ScenarioConfig:
        """The scenario, if it and everything it uses are free of errors."""
        scenario = self.scenario(name)
        errors = [p for p in check_registry(self, only=name) if p.severity == "error"]
        if errors:
            raise RegistryError(errors)
        return scenario


def load_registry(root: str | os.PathLike[str] | None = None) -> Registry:
    """Load every agent, tool and scenario under `root` (see `registry_root`)."""
    registry = Registry(root=registry_root(root))
    if not registry.root.is_dir():
        registry.problems.append(
            Problem(_display(registry.root), None, "", "registry folder does not exist")
        )
        return registry
    _load_tools(registry)
    _load_agents(registry)
    _load_scenarios(registry)
    return registry


def registry_fingerprint(root: str | os.PathLike[str] | None = None) -> tuple[object, ...]:
    """Path, size and change times of every file a registry is read from.

    Equal fingerprints mean nothing was edited, so a loaded registry can be reused; a stat of
    each file costs far less than parsing and checking the YAML and templates again.
    """
    base = registry_root(root)
    entries: list[tuple[str, int, int, int]] = []
    for store in STORES:
        for folder, subfolders, files in os.walk(base / store):
            subfolders[:] = [d for d in subfolders if d[0] not in "._"]
            for name in files:
                path = os.path.join(folder, name)
                stat = os.stat(path)
                entries.append((path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))
    return (str(base), tuple(sorted(entries)))


def _subfolders(path: Path) -> list[Path]:
    if not path.is_dir():
        return []
    return sorted(p for p in path.iterdir() if p.is_dir() and p.name[0] not in "._")


def _read_mapping(registry: Registry, path: Path) -> YamlDocument | None:
    doc = read_yaml(path, _display(path))
    if isinstance(doc, Problem):
        registry.problems.append(doc)
        return None
    if not isinstance(doc.data, Mapping):
        registry.problems.append(doc.problem((), "the file must hold a YAML mapping of fields"))
        return None
    return doc


def _load_tools(registry: Registry) -> None:
    for path in sorted((registry.root / "toolstore").glob("*.yaml")):
        doc = _read_mapping(registry, path)
        if doc is None:
            continue
        try:
            tool_file = ToolFile.model_validate(doc.data)
        except ValidationError as exc:
            registry.problems.extend(validation_problems(doc, exc, ToolFile))
            continue
        for index, tool in enumerate(tool_file.tools):
            if tool.name in registry.tools:
                registry.problems.append(
                    doc.problem(
                        ("tools", index, "name"),
                        f"tool {tool.name!r} is declared "
                        "twice in the tool store; keep one declaration",
                    )
                )
                continue
            registry.tools[tool.name] = tool
            registry.tool_modules[tool.name] = path.with_suffix(".py")
            registry.documents[f"tool:{tool.name}"] = doc
            # A tool with a broken schema stays declared, so agents listing it are not also
            # told it is unknown; its problem fails every scenario and it gets no validator.
            problem = schema_problem(doc, ("tools", index, "parameters"), tool.parameters)
            if problem is None:
                registry.tool_validators[tool.name] = argument_validator(tool.parameters)
            else:
                registry.problems.append(problem)


def _load_agents(registry: Registry) -> None:
    store = registry.root / "agentstore"
    defaults: Mapping[str, Any] = {}
    defaults_path = store / "_defaults.yaml"
    if defaults_path.exists():
        doc = _read_mapping(registry, defaults_path)
        defaults = doc.data if doc is not None else {}
    for folder in _subfolders(store):
        path = folder / "agent.yaml"
        if not path.exists():
            registry.problems.append(
                Problem(
                    _display(folder),
                    None,
                    "",
                    "agent folder has no agent.yaml; add one or remove the folder",
                )
            )
            continue
        doc = _read_mapping(registry, path)
        if doc is None:
            continue
        data = _normalise_agent(registry, doc, folder)
        try:
            agent = AgentConfig.model_validate(deep_merge(defaults, data))
        except ValidationError as exc:
            registry.problems.extend(validation_problems(doc, exc, AgentConfig))
            continue
        if agent.name in registry.agents:
            first = registry.documents[f"agent:{agent.name}"].display
            registry.problems.append(
                doc.problem(
                    ("name",),
                    f"agent {agent.name!r} is already defined in {first}; "
                    "agent names must be unique",
                )
            )
            continue
        registry.agents[agent.name] = agent
        registry.documents[f"agent:{agent.name}"] = doc


def _normalise_agent(registry: Registry, doc: YamlDocument, folder: Path) -> dict[str, Any]:
    """Accept the legacy `handoff_trigger` field and read the prompt file."""
    data = dict(doc.data)
    if "handoff_trigger" in data:
        trigger = data.pop("handoff_trigger")
        data["handoff"] = {**(data.get("handoff") or {}), "trigger": trigger}
    prompt = data.get("prompt")
    if isinstance(prompt, str) and prompt.strip().endswith(PROMPT_SUFFIXES) and "\n" not in prompt:
        prompt_path = folder / prompt.strip()
        if not prompt_path.is_file():
            registry.problems.append(
                doc.problem(
                    ("prompt",),
                    f"prompt file {prompt!r} not found next to agent.yaml;"
                    " create it or write the prompt inline",
                )
            )
            data["prompt"] = ""
            return data
        text = read_text(prompt_path, _display(prompt_path))
        if isinstance(text, Problem):
            registry.problems.append(text)
            text = ""
        data["prompt"] = text
        data["prompt_file"] = _display(prompt_path)
    return data


def _load_scenarios(registry: Registry) -> None:
    for folder in _subfolders(registry.root / "scenariostore"):
        load_scenario_file(registry, folder / "scenario.yaml")


def load_scenario_file(registry: Registry, path: Path) -> ScenarioConfig | None:
    """Load one scenario.yaml into `registry` (replacing a scenario of the same name)."""
    if not path.exists():
        registry.problems.append(
            Problem(_display(path.parent), None, "", "scenario folder has no scenario.yaml")
        )
        return None
    doc = _read_mapping(registry, path)
    if doc is None:
        return None
    try:
        scenario = ScenarioConfig.model_validate(doc.data)
    except ValidationError as exc:
        registry.problems.extend(validation_problems(doc, exc, ScenarioConfig))
        return None
    if scenario.name != path.parent.name:
        registry.problems.append(
            doc.problem(
                ("name",),
                f"name {scenario.name!r} differs from its folder "
                f"{path.parent.name!r}; make them the same",
            )
        )
        return None
    registry.scenarios[scenario.name] = scenario
    registry.documents[f"scenario:{scenario.name}"] = doc
    return scenario
