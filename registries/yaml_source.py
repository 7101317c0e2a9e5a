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

#: The largest registry file (YAML or prompt) read; the shipped ones are under 6 KB.
MAX_FILE_BYTES = 256 * 1024
#: The most a YAML document may stand for once every alias is written out: one per node plus
#: the length of each scalar. The shipped files are under 5,000; a billion-laughs document is
#: billions, and the file itself is capped above, so this only ever refuses alias expansion.
MAX_EXPANDED_SIZE = 1_000_000


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


def read_text(path: Path, display: str) -> str | Problem:
    """A registry file's text, read only when it is no larger than `MAX_FILE_BYTES`."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)  # never more, whatever the file's size
        if len(raw) > MAX_FILE_BYTES:
            return Problem(
                display,
                None,
                "",
                f"file is larger than {MAX_FILE_BYTES // 1024} KiB; a registry file needs far "
                "less: split it or remove what does not belong in it",
            )
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Problem(display, None, "", f"cannot read file: {exc}")


def read_yaml(path: Path, display: str) -> YamlDocument | Problem:
    """Parse a file; a syntax error, an oversized file or an alias bomb comes back as a Problem
    with its line."""
    text = read_text(path, display)
    if isinstance(text, Problem):
        return text
    loader = _Loader(text)
    try:
        # One parse gives both the node tree (lines) and the data built from it. Composing is
        # cheap even for an alias bomb (an alias is a second reference to the same node); the
        # expansion is checked before anything is built from the tree.
        root = loader.get_single_node()
        if root is not None:
            bomb = alias_bomb(YamlDocument(path=path, data=None, root=root, display=display))
            if bomb is not None:
                return bomb
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


def alias_bomb(doc: YamlDocument) -> Problem | None:
    """A Problem when `doc` expands beyond `MAX_EXPANDED_SIZE` once its aliases are written
    out (a "billion laughs" document, or merge keys nested the same way), else None.

    Hand-written because neither PyYAML nor libyaml bounds alias expansion. The size of each
    distinct node is computed once, without expanding anything, so a bomb costs as little to
    refuse as it took to write; an alias that contains itself is refused too.
    """
    if doc.root is None:
        return None
    sizes, uses = _expanded_sizes(doc.root)
    if sizes is None:
        return doc.problem(
            (),
            "an alias refers to a node that contains it, which would repeat "
            "forever; write the value out instead",
        )
    if sizes[id(doc.root)] <= MAX_EXPANDED_SIZE:
        return None
    # Point at the smallest entry that is too big, stopping at an alias: that is the line to fix.
    loc: list[str | int] = []
    node: yaml.Node = doc.root
    while True:
        big = next(
            (
                (part, child)
                for part, child in _entries(node)
                if sizes[id(child)] > MAX_EXPANDED_SIZE
            ),
            None,
        )
        if big is None:
            break
        loc.append(big[0])
        node = big[1]
        if uses[id(node)] > 1:
            break
    return doc.problem(
        loc,
        f"grows past {MAX_EXPANDED_SIZE:,} characters once its YAML aliases are expanded "
        "(an alias bomb); write the values out or use far fewer aliases",
    )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _entries(node: yaml.Node) -> list[tuple[str | int, yaml.Node]]:
    """(key or index, value node) of a collection, as `YamlDocument.line_of` walks it."""
    if isinstance(node, yaml.MappingNode):
        return [(str(key.value), value) for key, value in node.value]
    if isinstance(node, yaml.SequenceNode):
        return list(enumerate(node.value))
    return []


def _expanded_sizes(root: yaml.Node) -> tuple[dict[int, int] | None, dict[int, int]]:
    """Each distinct node's expanded size (capped just above the limit, so the sums stay small)
    and how many times it is referenced; sizes are None when an alias contains itself.

    Iterative, because a document may nest as deep as libyaml allows (1,000 levels).
    """
    sizes: dict[int, int] = {}
    uses: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            children = _children(node)
            own = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            total = 1 + own + sum(sizes[id(child)] for child in children)
            sizes[key] = min(total, MAX_EXPANDED_SIZE + 1)
            for child in children:
                uses[id(child)] = uses.get(id(child), 0) + 1
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            return None, uses  # reached again while its own children are still being sized
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    return sizes, uses


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
