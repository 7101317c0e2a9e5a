"""JSON Schema (Draft 2020-12) for business tools: each tool's `parameters` is checked when the
registry loads, and the model's arguments are checked against it before every handler runs.

A validator is built once per tool when the registry loads (`Registry.tool_validators`), not per
call: tool calls are a hot path, and the activity keeps its loaded registry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError

from registries.errors import Problem, ToolArgumentError
from registries.yaml_source import Loc, YamlDocument, dotted

_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
#: How to write a value of each JSON type in YAML, for the fix of a schema keyword's type.
_WRITE_AS = {
    "array": "a list, e.g. [a, b]",
    "boolean": "true or false",
    "integer": "a whole number, e.g. 5",
    "number": "a number, e.g. 5",
    "object": "a mapping of keywords",
    "string": "a string",
    "null": "null",
}


def argument_validator(parameters: Mapping[str, Any]) -> Draft202012Validator:
    """The validator of one tool's arguments; `parameters` must have passed `schema_problem`.

    Formats are asserted, not just annotated: `format: date` exists to refuse "next tuesday".
    """
    return Draft202012Validator(parameters, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_problem(doc: YamlDocument, loc: Loc, parameters: Mapping[str, Any]) -> Problem | None:
    """Where `parameters` (found at `loc` in `doc`) breaks JSON Schema, phrased as a fix."""
    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        return doc.problem((*loc, *exc.absolute_path), _schema_fix(exc))
    return None


def _schema_fix(error: SchemaError) -> str:
    keyword = next((p for p in reversed(error.absolute_path) if isinstance(p, str)), "parameters")
    value = error.instance
    if keyword == "type" and error.validator == "anyOf":
        # The meta-schema says only "not valid under any of the given schemas" here.
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        unknown = [n for n in names if n not in _TYPES]
        if unknown:
            hint = get_close_matches(str(unknown[0]), _TYPES, n=1)
            fix = f"did you mean {hint[0]!r}?" if hint else f"use one of {', '.join(_TYPES)}"
            return f"{unknown[0]!r} is not a JSON Schema type; {fix}"
    if error.validator == "type":
        expected = error.validator_value
        wanted = [expected] if isinstance(expected, str) else _strings(expected)
        write = " or ".join(_WRITE_AS.get(str(t), str(t)) for t in wanted)
        return f"{keyword} cannot be {value!r}; write {write}"
    if error.validator == "format" and error.validator_value == "regex":
        return f"{value!r} is not a valid regular expression; fix the pattern"
    return f"{error.message}; see what {keyword} takes in JSON Schema (Draft 2020-12)"


def check_arguments(tool: str, validator: Draft202012Validator, args: Any) -> None:
    """Refuse arguments the tool's schema does not accept, naming every path that is wrong.

    Raises `ToolArgumentError`; its text goes back to the model, which can correct the call.
    """
    messages = _describe(validator.iter_errors(args))
    if messages:
        raise ToolArgumentError(tool, "; ".join(messages))


def _describe(errors: Iterable[ValidationError]) -> list[str]:
    messages: list[str] = []
    for error in errors:
        where = dotted(tuple(error.absolute_path))
        noun = "field(s)" if where else "argument(s)"
        # jsonschema words a missing or extra key as a property of the object; the model thinks
        # in arguments, and one line listing them all beats one error per name.
        if error.validator == "required" and isinstance(error.instance, Mapping):
            missing = [n for n in _strings(error.validator_value) if n not in error.instance]
            text = f"missing required {noun}: {', '.join(missing)}"
        elif error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
            schema = error.schema if isinstance(error.schema, Mapping) else {}
            allowed = list(schema.get("properties", {}))
            extra = [n for n in error.instance if not _declared(n, allowed, schema)]
            text = f"unknown {noun}: {', '.join(extra)}; allowed: {', '.join(allowed) or 'none'}"
        else:
            text = error.message
        message = f"{where}: {text}" if where else text
        if message not in messages:
            messages.append(message)
    return messages


def _strings(value: object) -> list[str]:
    """A keyword's list value; the stubs type it as possibly unset."""
    return [str(item) for item in value] if isinstance(value, list) else []


def _declared(name: str, properties: list[str], schema: Mapping[str, Any]) -> bool:
    patterns = schema.get("patternProperties", {})
    return name in properties or any(re.search(p, name) for p in patterns)
