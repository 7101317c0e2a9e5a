"""Conversation test files: what a scenario author expects a call to do, turn by turn.

A test file lives beside its scenario (`scenariostore/<name>/tests/*.yaml`): a caller profile,
then turns of caller lines, each with expectations about what happens after it (active agent,
handoff, tool called, reply wording, how the call ends). A turn may also declare what the model
does (`model:`), which `baton scenario test --model scripted` plays instead of a language model.

Files are validated like every registry file: each problem names the file, the line, the field
path and how to fix it, and every problem is reported, not just the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from registries.errors import Problem, RegistryError
from registries.handoff_service import scenario_agent_names
from registries.loading import Registry, load_registry
from registries.yaml_source import Loc, YamlDocument, read_yaml, validation_problems

TESTS_FOLDER = "tests"
HANDOFF_TOOL = "handoff_to_agent"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _as_list(value: Any) -> Any:
    """One phrase or a list of phrases: both read as a list."""
    return [value] if isinstance(value, str) else value


class ToolExpectation(_Strict):
    """A tool the agent called during the turn; `args` need only be a subset of the call's."""

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class HandoffExpectation(_Strict):
    """A successful handoff during the turn, to `target`, of `type` and decided `by` when given."""

    target: str = Field(min_length=1)
    type: Literal["announced", "discrete"] | None = None
    #: Who decided it: the model (`llm`) or a route's `on_tool_result` rule (`rule`).
    by: Literal["llm", "rule"] | None = None


class EndExpectation(_Strict):
    """The call ended during the turn with `status`; `transfer`: handed to a human queue."""

    status: Literal["completed", "escalated", "hung_up", "failed"]
    transfer: bool | None = None


class Expectation(_Strict):
    """Everything checked after one caller line; leave out what does not matter."""

    agent: str | None = None
    handoff: HandoffExpectation | None = None
    no_handoff: bool = False
    tool: ToolExpectation | None = None
    #: Several tools, each of which must have been called during the turn.
    tools: list[ToolExpectation] = Field(default_factory=list)
    tool_not_called: str | None = None
    reply_contains: list[str] = Field(default_factory=list)
    reply_not_contains: list[str] = Field(default_factory=list)
    ends: EndExpectation | None = None
    escalation_reason: str | None = None

    _lists = field_validator("reply_contains", "reply_not_contains", mode="before")(_as_list)


class ToolCallStep(_Strict):
    """One tool call inside a scripted model response."""

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ModelStep(_Strict):
    """One response of the scripted model: words for the caller and/or tool calls, either one
    (`tool` with `args`) or several made together (`calls`), as models call tools in parallel."""

    say: str | None = None
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    calls: list[ToolCallStep] = Field(default_factory=list)

    @model_validator(mode="after")
    def _does_something(self) -> ModelStep:
        if self.tool is not None and self.calls:
            raise ValueError("give one call as `tool` + `args`, or several as `calls`, not both")
        if self.say is None and self.tool is None and not self.calls:
            raise ValueError(
                "a model step needs `say` (reply text), `tool` or `calls` (tool calls), or both"
            )
        return self

    @property
    def tool_calls(self) -> list[ToolCallStep]:
        single = [ToolCallStep(tool=self.tool, args=self.args)] if self.tool else []
        return single + self.calls


class Turn(_Strict):
    """One caller line, what the model does (scripted runs only) and what must happen."""

    caller: str = Field(min_length=1, max_length=2000)
    model: list[ModelStep] = Field(default_factory=list)
    expect: Expectation = Field(default_factory=Expectation)


class ConversationTest(_Strict):
    """A whole test file: one call."""

    name: str = Field(min_length=1, max_length=200)
    scenario: str | None = None
    #: The `--model`s this file is written for; by default `scripted` when its turns declare
    #: `model:` steps, else `offline` and `openai`.
    models: list[Literal["offline", "scripted", "openai"]] = Field(default_factory=list)
    profile: dict[str, Any] = Field(default_factory=dict)
    turns: list[Turn] = Field(min_length=1, max_length=100)

    def written_for(self, model: str) -> bool:
        """Whether this file runs under `--model model`."""
        if self.models:
            return model in self.models
        scripted = any(turn.model for turn in self.turns)
        return (model == "scripted") == scripted


@dataclass(frozen=True)
class TestFile:
    """A validated test file with where it came from."""

    path: Path
    display: str
    registry_root: Path
    scenario: str
    test: ConversationTest


def find_test_files(paths: list[Path], default_registry: Path) -> list[Path]:
    """The test files `paths` name: files, `tests/` folders, scenario folders or registries.

    No paths means every scenario's tests in `default_registry`.
    """
    found: list[Path] = []
    for path in paths or [default_registry]:
        if path.is_file():
            found.append(path)
        elif (path / "scenariostore").is_dir():
            found.extend(sorted((path / "scenariostore").glob(f"*/{TESTS_FOLDER}/*.yaml")))
        elif (path / TESTS_FOLDER).is_dir():
            found.extend(sorted((path / TESTS_FOLDER).glob("*.yaml")))
        elif path.is_dir():
            found.extend(sorted(path.glob("*.yaml")))
        else:
            raise RegistryError([Problem(str(path), None, "", "no such file or folder")])
    return list(dict.fromkeys(p.resolve() for p in found))


def _registry_of(path: Path) -> Path | None:
    """The registry root above `.../scenariostore/<name>/tests/file.yaml`."""
    for parent in path.parents:
        if parent.name == "scenariostore":
            return parent.parent
    return None


def load_test_files(paths: list[Path], default_registry: Path) -> list[TestFile]:
    """Parse and check every test file; raises RegistryError listing every problem found."""
    files = find_test_files(paths, default_registry)
    if not files:
        where = ", ".join(str(p) for p in paths) or str(default_registry)
        problem = Problem(
            where, None, "", f"no test files found; write them as scenariostore/<name>/"
            f"{TESTS_FOLDER}/*.yaml"
        )  # fmt: skip
        raise RegistryError([problem])
    registries: dict[Path, Registry] = {}
    loaded: list[TestFile] = []
    problems: list[Problem] = []
    for path in files:
        root = _registry_of(path) or default_registry
        display = (
            str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else path.name
        )
        doc = read_yaml(path, display)
        if isinstance(doc, Problem):
            problems.append(doc)
            continue
        try:
            test = ConversationTest.model_validate(doc.data if doc.data is not None else {})
        except ValidationError as exc:
            problems.extend(validation_problems(doc, exc, ConversationTest))
            continue
        if root not in registries:
            registries[root] = load_registry(root)
        scenario = test.scenario or _scenario_of(path)
        found = _check_names(doc, test, scenario, registries[root])
        problems.extend(found)
        if not found and scenario:
            loaded.append(TestFile(path, display, root, scenario, test))
    if problems:
        raise RegistryError(problems)
    return loaded


def _scenario_of(path: Path) -> str:
    """The scenario a test file sits beside (`scenariostore/<name>/tests/x.yaml` -> name)."""
    return path.parent.parent.name if path.parent.name == TESTS_FOLDER else ""


def _unknown(doc: YamlDocument, loc: Loc, kind: str, name: str, known: list[str]) -> Problem:
    hint = get_close_matches(name, known, n=1, cutoff=0.6)
    fix = f"did you mean {hint[0]!r}?" if hint else f"known {kind}s: {', '.join(sorted(known))}"
    return doc.problem(loc, f"unknown {kind} {name!r}; {fix}")


def _check_names(
    doc: YamlDocument, test: ConversationTest, scenario_name: str, registry: Registry
) -> list[Problem]:
    """Agents and tools named in expectations must exist in the scenario under test."""
    if not scenario_name:
        return [doc.problem(("scenario",), "add `scenario: <name>`, or keep the file in "
                            f"scenariostore/<name>/{TESTS_FOLDER}/")]  # fmt: skip
    scenario = registry.scenarios.get(scenario_name)
    if scenario is None:
        return [_unknown(doc, ("scenario",), "scenario", scenario_name, list(registry.scenarios))]
    agents = list(scenario_agent_names(scenario, registry.agents))
    tools = sorted({*registry.tools, HANDOFF_TOOL})
    problems: list[Problem] = []
    for index, turn in enumerate(test.turns):
        at: tuple[str | int, ...] = ("turns", index, "expect")
        expect = turn.expect
        if expect.agent and expect.agent not in agents:
            problems.append(_unknown(doc, (*at, "agent"), "agent", expect.agent, agents))
        if expect.handoff and expect.handoff.target not in agents:
            loc = (*at, "handoff", "target")
            problems.append(_unknown(doc, loc, "agent", expect.handoff.target, agents))
        if expect.tool and expect.tool.name not in tools:
            problems.append(_unknown(doc, (*at, "tool", "name"), "tool", expect.tool.name, tools))
        if expect.tool_not_called and expect.tool_not_called not in tools:
            loc = (*at, "tool_not_called")
            problems.append(_unknown(doc, loc, "tool", expect.tool_not_called, tools))
        for want_index, wanted in enumerate(expect.tools):
            if wanted.name not in tools:
                loc = (*at, "tools", want_index, "name")
                problems.append(_unknown(doc, loc, "tool", wanted.name, tools))
        for step_index, step in enumerate(turn.model):
            if step.tool and step.tool not in tools:
                loc = ("turns", index, "model", step_index, "tool")
                problems.append(_unknown(doc, loc, "tool", step.tool, tools))
            for call_index, call in enumerate(step.calls):
                if call.tool not in tools:
                    loc = ("turns", index, "model", step_index, "calls", call_index, "tool")
                    problems.append(_unknown(doc, loc, "tool", call.tool, tools))
    return problems
