"""A real call over the Twilio transport that escalates ends `transferred`: the workers update
the live call (by the CallSid of its stream's `start`) with TwiML that dials the scenario's
target (a number, a SIP URI or a TaskRouter queue), on a loopback fake of Twilio's REST API,
and the stream then ends as Twilio's does."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client
from websockets.asyncio.client import connect

from registries.loading import SHIPPED_REGISTRY
from tests.fakes.twilio_rest import FakeTwilioRest, TwilioUpdate
from tests.gateway.conftest import call_result, open_gateway_stack, speech_pcm
from tests.gateway.test_platform_call_ids import platform_id_of, twilio_start
from tests.gateway.test_transports import (
    LINE_QUIET,
    collect,
    session_for,
    telephone_frames,
    twilio_media,
)
from tests.workflow.conftest import items_of

ACCOUNT = "AC" + "5" * 32
DESK = "+15551230000"
SIP_DESK = "sip:desk@pbx.example.com"
TASKROUTER_WORKFLOW = "WW" + "ab" * 16


def registry_with_desk(root: Path, kind: str = "phone", address: str = DESK) -> Path:
    """The shipped registry whose escalations all go to one desk."""
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    scenario = registry / "scenariostore" / "banking" / "scenario.yaml"
    data = yaml.safe_load(scenario.read_text())
    data["escalation"] = {
        "default_target": {"kind": kind, "address": address, "label": "Service desk"},
        "hold_timeout_seconds": 30,
    }
    scenario.write_text(yaml.safe_dump(data))
    return registry


def dialled(twiml: ET.Element, kind: str, call_id: str) -> str:
    """Where the TwiML Twilio received sends the caller, as the scenario's target names it."""
    if kind == "phone":
        number = twiml.find("Dial/Number")
        assert number is not None and twiml.find("Dial/Sip") is None
        return number.text or ""
    if kind == "sip":
        sip = twiml.find("Dial/Sip")
        assert sip is not None and twiml.find("Dial/Number") is None
        # The ticket rides along as a SIP header for the desk's phone system.
        address, _, header = (sip.text or "").partition("?")
        assert header.startswith("X-Baton-Ticket=") and len(header) > len("X-Baton-Ticket=")
        return address
    enqueue = twiml.find("Enqueue")
    assert enqueue is not None and twiml.find("Dial") is None  # Twilio holds the caller
    task = json.loads(enqueue.findtext("Task") or "{}")
    assert task["baton_call_id"] == call_id and task["baton_ticket_id"]
    return enqueue.get("workflowSid") or ""


@pytest.mark.parametrize(
    "kind,address",
    [("phone", DESK), ("sip", SIP_DESK), ("queue", TASKROUTER_WORKFLOW)],
)
async def test_an_escalated_twilio_call_is_transferred_by_updating_the_live_call(
    temporal_client: Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    address: str,
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path, kind, address)))
    call_id, call_sid = f"tw-{uuid.uuid4().hex[:8]}", "CA" + uuid.uuid4().hex
    updated = asyncio.Event()

    async def twilio_takes_the_call(update: TwilioUpdate) -> None:
        updated.set()
        # Twilio's stream ends as it takes the call, often before its REST answer arrives:
        # the caller's hang-up that the stop becomes must not undo the transfer.
        await asyncio.sleep(1.0)

    async with (
        FakeTwilioRest(
            account_sid=ACCOUNT,
            auth_token="token",
            calls=[call_sid],
            on_update=twilio_takes_the_call,
        ) as twilio,
        open_gateway_stack(temporal_client) as stack,
    ):
        for name, value in twilio.environment().items():
            monkeypatch.setenv(name, value)
        session = session_for(stack, call_id)
        parameters = {"call_id": call_id, "token": stack.token(call_id)}
        async with connect(stack.url("twilio", None, None)) as ws:
            received: list[Any] = []
            reader = asyncio.create_task(collect(ws, received))
            await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1"}))
            await ws.send(twilio_start(call_id, call_sid, parameters))
            assert await platform_id_of(stack, call_id) == call_sid  # the workflow is up
            await session.until_greeted()
            speech = await speech_pcm("I want to speak to a real person please.")
            for frame in telephone_frames(speech) + [LINE_QUIET] * 50:
                await ws.send(twilio_media(frame))
                await asyncio.sleep(0.02)
            await asyncio.wait_for(updated.wait(), 60)
            # Twilio ends the media stream once the call leaves <Connect><Stream>.
            await ws.send(json.dumps({"event": "stop", "stop": {"callSid": call_sid}}))
            reader.cancel()
        outcome = await call_result(session, 30)
        items = await session.transcript()
    assert outcome["status"] == "transferred"
    [update] = twilio.updates
    assert update.call_sid == call_sid
    assert dialled(update.twiml, kind, call_id) == address
    [transfer] = items_of(items, "transfer")
    assert transfer["outcome"] == "connected" and transfer["target_kind"] == kind
