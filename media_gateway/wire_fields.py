"""Strict field access for the gateway's wire formats: every failure is a `FrameError` naming
the field, so one bad frame is logged with its reason and costs only itself."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TypeAlias, TypeVar

from pydantic import ValidationError

Json: TypeAlias = dict[str, object]
_T = TypeVar("_T")


class FrameError(ValueError):
    """One inbound frame (or outbound request) was unusable; the connection itself is fine."""


def load_json(message: str | bytes, where: str) -> Json:
    try:
        value = json.loads(message)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError
        raise FrameError(f"{where}: malformed JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FrameError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def field_of(data: Json, key: str, kind: type[_T], where: str) -> _T:
    value = data.get(key)
    if not isinstance(value, kind):
        label = "object" if kind is dict else "string" if kind is str else kind.__name__
        raise FrameError(f"{where}: missing or non-{label} field {key!r}")
    return value


def int_field(data: Json, key: str, where: str) -> int:
    value = data.get(key)
    # bool is an int subclass; a JSON true is never a sample rate.
    if not isinstance(value, int) or isinstance(value, bool):
        raise FrameError(f"{where}: missing or non-integer field {key!r}")
    return value


def str_map(data: Json, key: str, where: str) -> dict[str, str]:
    value = data.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise FrameError(f"{where}: field {key!r} must be an object of strings")
    return dict(value)


def base64_field(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FrameError(f"{where}: invalid base64 payload: {exc}") from None


def pcm16(data: bytes, where: str) -> bytes:
    if len(data) % 2:
        raise FrameError(f"{where}: PCM16 audio has an odd byte length ({len(data)})")
    return data


def browser_frame_error(error: ValidationError, where: str) -> FrameError:
    """The first problem of a browser frame, naming the field as the other transports do."""
    problem = error.errors()[0]
    if problem["type"] == "union_tag_not_found":
        return FrameError(f"{where}: missing or non-string field 'type'")
    if problem["type"] == "union_tag_invalid":
        return FrameError(f"{where}: unknown type {problem['input'].get('type')!r}")
    kind, *field = problem["loc"]
    name = ".".join(str(part) for part in field)
    return FrameError(f"{where} {kind}: field {name!r}: {problem['msg'].lower()}")


def dumps(value: Json) -> str:
    return json.dumps(value, separators=(",", ":"))
