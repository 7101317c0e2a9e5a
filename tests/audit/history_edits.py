"""Editing a recorded call by hand, as a tamperer would: a payload decoded with the project's
converter (the codec's key included), changed, and sealed again in place."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from runtime.temporal_client import data_converter

JsonEdit = Callable[[dict[str, Any]], None]


async def edit_payload(payload_json: dict[str, Any], edit: JsonEdit) -> dict[str, Any]:
    """The payload (Temporal's JSON form) with its JSON value changed by `edit`, re-encoded
    through the same converter and codec, so it decodes like any honest payload."""
    converter = data_converter()
    payload = json_format.ParseDict(payload_json, Payload())
    (plain,) = await converter.payload_codec.decode([payload])  # type: ignore[union-attr]
    value = json.loads(plain.data)
    edit(value)
    plain.data = json.dumps(value).encode()
    (sealed,) = await converter.payload_codec.encode([plain])  # type: ignore[union-attr]
    return json_format.MessageToDict(sealed)


def scheduled_inputs(history: dict[str, Any], activity: str) -> list[dict[str, Any]]:
    """The input payload (JSON form) of every scheduled `activity`, in order."""
    found = []
    for event in history["events"]:
        attrs = event.get("activityTaskScheduledEventAttributes")
        if attrs and attrs["activityType"]["name"] == activity:
            found.append(attrs["input"]["payloads"][0])
    return found


def handoff_results(history: dict[str, Any]) -> list[dict[str, Any]]:
    """The `result` payload of every `resolve_handoff` local activity marker, in order."""
    found = []
    for event in history["events"]:
        attrs = event.get("markerRecordedEventAttributes")
        if not attrs or attrs["markerName"] != "core_local_activity":
            continue
        data = json.loads(base64.b64decode(attrs["details"]["data"]["payloads"][0]["data"]))
        if data.get("activity_type") == "resolve_handoff":
            found.append(attrs["details"]["result"]["payloads"][0])
    return found


def completed_results(history: dict[str, Any], activity: str) -> list[dict[str, Any]]:
    """The result payload (JSON form) of every completed `activity`, in order."""
    scheduled = {
        event["eventId"]
        for event in history["events"]
        if (attrs := event.get("activityTaskScheduledEventAttributes"))
        and attrs["activityType"]["name"] == activity
    }
    found = []
    for event in history["events"]:
        attrs = event.get("activityTaskCompletedEventAttributes")
        if attrs and attrs["scheduledEventId"] in scheduled:
            found.append(attrs["result"]["payloads"][0])
    return found
