"""YAML files that remember where each value came from, so errors can say `file:line`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from registries.errors import Problem

Loc = Sequence[str | int]
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class YamlDocument:
    """One parsed YAML file: its data and its node tree (for line numbers)."""

    path: Path
    data: Any
    root: yaml.Node | None
    display: str

    def line_of(self, loc: Loc) -> int | None:
        """1-based line of the value at `loc` (a key path), or of its nearest ancestor."""
        node = self.root
        best = node.start_mark.line + 1 if node is not None else None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                match = next(
                    (
                        (key, value)
                        for key, value in node.value
                        if isinstance(key, yaml.ScalarNode) and key.value == str(part)
                    ),
                    None,
                )
                if match is None:
                    return best
                key_node, node = match
                best = key_node.start_mark.line + 1
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if not 0 <= part < len(node.value):
                    return best
                node = node.value[part]
                best = node.start_mark.line + 1
            else:
                return best
        return best

    def problem(self, loc: Loc, message: str, severity: str = "error") -> Problem:
        return Problem(self.display, self.line_of(loc), dotted(loc), message, severity)


def dotted(loc: Loc) -> str:
    """('handoffs', 2, 'to_agent') -> 'handoffs[2].to_agent'."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def read_yaml(path: Path, display: str) -> YamlDocument | Problem:
    """Parse a file; a syntax error comes back as a Problem with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Problem(display, None, "", f"cannot read file: {exc}")
    loader = _Loader(text)
    try:
        # One parse gives both the node tree (lines) and the data built from it.
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        what = exc.problem or "invalid YAML"
        return Problem(display, line, "", f"YAML syntax: {what}; check indentation and quoting")
    except yaml.YAMLError as exc:
        return Problem(display, None, "", f"YAML syntax: {exc}")
    finally:
        loader.dispose()
    return YamlDocument(path=path, data=data, root=root, display=display)


def validation_problems(
    doc: YamlDocument, exc: ValidationError, model: type[BaseModel]
) -> list[Problem]:
    """Turn pydantic's errors into plain-English problems with lines and a fix."""
    problems = []
    for error in exc.errors():
        loc = tuple(part for part in error["loc"] if isinstance(part, (str, int)))
        problems.append(doc.problem(loc, _explain(error, loc, model)))
    return problems


def _explain(error: Any, loc: tuple[str | int, ...], model: type[BaseModel]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        hint = get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
        fix = f"did you mean {hint[0]!r}?" if hint else f"allowed fields: {', '.join(allowed)}"
        return f"unknown field {loc[-1]!r}; {fix}"
    if kind == "missing":
        return f"required field {loc[-1]!r} is missing; add it"
    given = error.get("input")
    shown = repr(given) if not isinstance(given, (dict, list)) else type(given).__name__
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind.endswith("_type") or kind == "literal_error":
        return f"{message} (got {shown})"
    return message


def _fields_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """Field names of the (nested) model at `loc`, for 'did you mean' hints."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = _model_in(field.annotation)
        if current is None:
            return []
    return sorted(getattr(current, "model_fields", {}))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
