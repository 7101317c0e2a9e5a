"""History events read straight from their JSON, for readers that only look.

The SDK's `WorkflowHistory.from_json` (the Replayer's input) deep-copies the JSON and builds
every protobuf message field by field in Python: about two thirds of a 500-turn report's time.
A reader needs each event's type, time and attributes, and protobufs only for the payloads it
decodes, so this walks the JSON as it is. Hand-written because neither the SDK nor protobuf
offers a lazy view of a JSON history.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass(frozen=True)
class Event:
    id: int
    #: The event type without its prefix: "ACTIVITY_TASK_SCHEDULED", "MARKER_RECORDED", ...
    type: str
    at: datetime
    #: The event's `...EventAttributes` object.
    attrs: dict[str, Any]


@lru_cache(maxsize=256)
def _type_name(raw: str) -> str:
    """`EVENT_TYPE_ACTIVITY_TASK_SCHEDULED` (the SDK, tctl) or `ActivityTaskScheduled` (older
    UI and CLI exports) as `ACTIVITY_TASK_SCHEDULED`."""
    if raw.startswith("EVENT_TYPE_"):
        return raw.removeprefix("EVENT_TYPE_")
    return _CAMEL.sub("_", raw).upper()


@lru_cache(maxsize=256)
def _attributes_key(type_name: str) -> str:
    """`ACTIVITY_TASK_SCHEDULED` -> `activityTaskScheduledEventAttributes`, the key protobuf's
    JSON gives an event's attributes: looked up directly instead of searching every key."""
    first, *rest = type_name.lower().split("_")
    return first + "".join(word.capitalize() for word in rest) + "EventAttributes"


def events_of(history: dict[str, Any]) -> Iterator[Event]:
    for event in history.get("events") or []:
        type_name = _type_name(str(event.get("eventType") or ""))
        attrs: Any = event.get(_attributes_key(type_name))
        if attrs is None:  # a history written with other key names: look for it
            attrs = next(
                (value for key, value in event.items() if key.endswith("EventAttributes")), {}
            )
        yield Event(
            id=int(event.get("eventId") or 0),
            type=type_name,
            at=datetime.fromisoformat(str(event["eventTime"])),
            attrs=attrs if isinstance(attrs, dict) else {},
        )


def payloads(node: Any) -> list[Payload]:
    """The payloads of a JSON `Payloads` object (`{"payloads": [...]}`), as protobufs."""
    if not isinstance(node, dict):
        return []
    return [
        Payload(
            metadata={
                key: _metadata_value(value) for key, value in raw.get("metadata", {}).items()
            },
            data=binascii.a2b_base64(raw.get("data", "")),
        )
        for raw in node.get("payloads") or []
    ]


@lru_cache(maxsize=1024)
def _metadata_value(encoded: str) -> bytes:
    """A metadata value decoded once: a call repeats a handful (encoding, codec key id) on
    every payload. (`a2b_base64` is what `base64.b64decode` calls, without its wrapping.)"""
    return binascii.a2b_base64(encoded)


def failure(node: Any) -> Failure:
    """A JSON `Failure` as the protobuf the data converter decodes (rare: parsed fully)."""
    return json_format.ParseDict(node or {}, Failure(), ignore_unknown_fields=True)
