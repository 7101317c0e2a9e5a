"""Errors of the registries, kept apart so every module can import them without cycles."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a registry file, phrased for the person who has to fix it."""

    file: str
    line: int | None
    field: str
    message: str
    severity: str = "error"  # "error" or "warning"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" {self.field}:" if self.field else ""
        return f"{where}: {self.severity}:{field} {self.message}"


class BatonError(Exception):
    """Base of every error Baton raises on purpose."""


class RegistryError(BatonError):
    """The registry has problems; `problems` lists every one found, not just the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class UnknownNameError(BatonError, LookupError):
    """A scenario, agent or tool name that the registry does not have."""


class ToolArgumentError(BatonError, ValueError):
    """Arguments to a business tool that its schema refuses; the text goes back to the LLM."""

    def __init__(self, tool: str, message: str) -> None:
        self.tool = tool
        super().__init__(f"{tool}: {message}")


class TemplateRenderError(BatonError):
    """A Jinja2 template that failed to render (e.g. a missing variable) or rendered too much.

    The message, `what: problem`, names the template and never quotes the caller's data;
    `line` is the template's line that failed, when Jinja knows it.
    """

    def __init__(self, what: str, problem: str, *, line: int | None = None) -> None:
        self.what = what
        self.problem = problem
        self.line = line
        super().__init__(f"{what}: {problem}")


class TemplateTooLargeError(TemplateRenderError):
    """A template whose output grew past its size cap."""
