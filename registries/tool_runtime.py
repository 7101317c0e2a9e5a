"""Running business tools: argument checking, handler lookup and the context a tool receives.

A tool is declared in YAML (`contracts.registry.ToolSpec`) and implemented by a plain function in
the Python module beside that YAML file:

    def block_card(ctx: ToolContext, *, last4: str, reason: str = "") -> dict[str, Any]: ...

Handlers get their side effects through `ctx`: the demo database and an idempotency key that is
the same for every retry of one tool call, so a retried activity never blocks a card twice.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from registries.errors import ToolArgumentError

ToolHandler = Callable[..., dict[str, Any]]

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler may use besides its arguments."""

    call_id: str
    #: Same for every attempt of one tool call; mutating tools key their effect on it.
    idempotency_key: str
    db: sqlite3.Connection
    #: The call's system vars (client_id, session_profile, ...), read-only by convention.
    session: Mapping[str, Any] = field(default_factory=dict)

    @property
    def client_id(self) -> str | None:
        value = self.session.get("client_id")
        if value is None:
            profile = self.session.get("session_profile") or {}
            value = profile.get("client_id") if isinstance(profile, Mapping) else None
        return str(value) if value is not None else None


def check_arguments(tool: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Validate LLM-supplied arguments against the subset of JSON schema tools use.

    Raises `ToolArgumentError` with a message the LLM can act on (it is returned to it).
    """
    if not isinstance(args, Mapping):
        raise ToolArgumentError(tool, "arguments must be a JSON object")
    props: Mapping[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in args]
    if missing:
        raise ToolArgumentError(tool, f"missing required argument(s): {', '.join(missing)}")
    if schema.get("additionalProperties") is False:
        extra = sorted(set(args) - set(props))
        if extra:
            allowed = ", ".join(props) or "none"
            raise ToolArgumentError(
                tool, f"unknown argument(s): {', '.join(extra)}; allowed: {allowed}"
            )
    for name, value in args.items():
        if name in props:
            _check_value(tool, name, props[name], value)


def _check_value(tool: str, name: str, schema: Mapping[str, Any], value: Any) -> None:
    expected = schema.get("type")
    if isinstance(expected, str) and expected in _JSON_TYPES:
        ok = isinstance(value, _JSON_TYPES[expected])
        if expected in ("integer", "number") and isinstance(value, bool):
            ok = False  # bool is an int subclass in Python, never a JSON number
        if not ok:
            raise ToolArgumentError(
                tool, f"argument {name!r} must be of type {expected}, got {value!r}"
            )
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(repr(c) for c in schema["enum"])
        raise ToolArgumentError(tool, f"argument {name!r} must be one of {choices}")
    pattern = schema.get("pattern")
    if pattern and isinstance(value, str) and re.fullmatch(pattern, value) is None:
        raise ToolArgumentError(tool, f"argument {name!r} must match {pattern}")
