"""Real calls whose transfer's outcome comes from the platform: with BATON_PUBLIC_URL set, the
Twilio `<Dial>` and the ACS transfer name the gateway's callback URLs, the workflow waits on
the line (through the media stream's end) and the platform's signed report settles it.

Twilio's desk answering ends the call `transferred`; a desk that does not answer ends it
`escalated`, the ticket kept, and the `<Dial action>` is answered with TwiML telling the caller
the truth. ACS's CallTransferAccepted and CallTransferFailed events do the same. A report with
a wrong signature or token is refused (403) and leaves the call as it was."""

from __future__ import annotations

import asyncio
import json
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from temporalio.client import Client
from websockets.asyncio.client import connect

from audit.bundle import export_call
from audit.report import render
from audit.timeline import read_timeline
from contracts.transfer import NOBODY_FREE
from tests.fakes.acs_rest import FakeAcsRest
from tests.fakes.twilio_rest import FakeTwilioRest, TwilioUpdate, signed_by_twilio
from tests.gateway.conftest import GatewayStack, call_result, open_gateway_stack, speech_pcm
from tests.gateway.test_acs_transfer_call import escalating_acs_call
from tests.gateway.test_platform_call_ids import platform_id_of, twilio_start
from tests.gateway.test_transports import (
    LINE_QUIET,
    collect,
    session_for,
    telephone_frames,
    twilio_media,
)
from tests.gateway.test_twilio_transfer_call import ACCOUNT, DESK, registry_with_desk
from tests.workflow.conftest import items_of

TOKEN = "twilio-auth-token"


async def escalating_twilio_call(
    stack: GatewayStack,
    twilio: FakeTwilioRest,
    call_sid: str,
    updated: asyncio.Event,
    while_pending: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """A Twilio caller asks for a person; once Twilio is updated the stream stops, as Twilio's
    does. `while_pending(call_id)` runs then. Returns the workflow's result and transcript."""
    call_id = f"tw-{uuid.uuid4().hex[:8]}"
    session = session_for(stack, call_id)
    parameters = {"call_id": call_id, "token": stack.token(call_id)}
    async with connect(stack.url("twilio", None, None)) as ws:
        received: list[Any] = []
        reader = asyncio.create_task(collect(ws, received))
        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1"}))
        await ws.send(twilio_start(call_id, call_sid, parameters))
        assert await platform_id_of(stack, call_id) == call_sid
        await session.until_greeted()
        speech = await speech_pcm("I want to speak to a real person please.")
        for frame in telephone_frames(speech) + [LINE_QUIET] * 50:
            await ws.send(twilio_media(frame))
            await asyncio.sleep(0.02)
        await asyncio.wait_for(updated.wait(), 60)
        await ws.send(json.dumps({"event": "stop", "stop": {"callSid": call_sid}}))
        reader.cancel()
    if while_pending is not None:
        await while_pending(call_id)
    outcome = await call_result(session, 60)
    return {"outcome": outcome, "items": await session.transcript(), "call_id": call_id}


def twilio_on_loopback(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    call_sid: str,
    updated: asyncio.Event,
    **kw: Any,
) -> FakeTwilioRest:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path)))

    async def stream_ends_first(update: TwilioUpdate) -> None:
        updated.set()
        await asyncio.sleep(1.0)  # the stream's stop lands before the REST answer

    return FakeTwilioRest(
        account_sid=ACCOUNT,
        auth_token=TOKEN,
        calls=[call_sid],
        on_update=stream_ends_first,
        **kw,
    )


def point_platforms_here(monkeypatch: pytest.MonkeyPatch, stack: GatewayStack) -> str:
    base = f"http://{stack.base}"
    monkeypatch.setenv("BATON_PUBLIC_URL", base)
    return base


async def test_a_twilio_desk_that_answers_ends_the_call_transferred(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_sid, updated = "CA" + uuid.uuid4().hex, asyncio.Event()
    async with (
        twilio_on_loopback(
            monkeypatch, tmp_path, call_sid, updated, dial_outcome="answered"
        ) as twilio,
        open_gateway_stack(temporal_client) as stack,
    ):
        for name, value in twilio.environment().items():
            monkeypatch.setenv(name, value)
        base = point_platforms_here(monkeypatch, stack)
        call = await escalating_twilio_call(stack, twilio, call_sid, updated)
    assert call["outcome"]["status"] == "transferred"
    [update] = twilio.updates
    dial = update.twiml.find("Dial")
    assert dial is not None
    assert dial.get("action") == f"{base}/platform/twilio/dial/{call['call_id']}"
    assert dial.get("timeout") == "25"  # rings out 5 s inside the scenario's 30 s hold
    number = dial.find("Number")
    assert number is not None and number.text == DESK
    assert number.get("statusCallbackEvent") == "answered"
    [answered] = twilio.callbacks
    assert answered.status == 204
    [transfer] = items_of(call["items"], "transfer")
    assert transfer["outcome"] == "taken" and transfer["detail"] == "the desk answered"


async def test_a_twilio_desk_that_does_not_answer_escalates_and_the_caller_hears_why(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_sid, updated = "CA" + uuid.uuid4().hex, asyncio.Event()
    async with (
        twilio_on_loopback(
            monkeypatch, tmp_path, call_sid, updated, dial_outcome="no-answer"
        ) as twilio,
        open_gateway_stack(temporal_client) as stack,
    ):
        for name, value in twilio.environment().items():
            monkeypatch.setenv(name, value)
        point_platforms_here(monkeypatch, stack)
        call = await escalating_twilio_call(stack, twilio, call_sid, updated)
        timeline = await read_timeline(await export_call(call["call_id"], client=stack.client))
    assert call["outcome"]["status"] == "escalated"
    assert call["outcome"]["ticket"]["ticket_id"]  # kept for the call back
    [action] = twilio.callbacks
    assert action.status == 200 and action.params["DialCallStatus"] == "no-answer"
    twiml = ET.fromstring(action.answer)
    assert [child.tag for child in twiml] == ["Say", "Hangup"]
    say = twiml.find("Say")
    assert say is not None and say.text == NOBODY_FREE
    [transfer] = items_of(call["items"], "transfer")
    assert transfer["outcome"] == "declined" and "no-answer" in transfer["detail"]
    # Twilio said it: the stream was gone, so the workflow did not try to speak it again.
    assert all(NOBODY_FREE not in turn["text"] for turn in items_of(call["items"], "agent_turn"))
    # The audit timeline, from history alone, shows the platform's report.
    stages = [i.details["stage"] for i in timeline.items if i.kind == "transfer"]
    assert stages == ["requested", "platform", "settled", "outcome"]
    assert "nobody took the call: twilio dial no-answer" in render(timeline, "md")


async def test_a_forged_twilio_report_is_refused_and_the_call_is_unaffected(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_sid, updated = "CA" + uuid.uuid4().hex, asyncio.Event()
    refusals: list[int] = []
    async with (
        twilio_on_loopback(
            monkeypatch, tmp_path, call_sid, updated, dial_outcome="answered", dial_delay=4.0
        ) as twilio,
        open_gateway_stack(temporal_client) as stack,
    ):
        for name, value in twilio.environment().items():
            monkeypatch.setenv(name, value)
        point_platforms_here(monkeypatch, stack)

        async def forge(call_id: str) -> None:
            dial = twilio.updates[0].twiml.find("Dial")
            assert dial is not None
            url = dial.get("action", "")
            params = {"AccountSid": ACCOUNT, "CallSid": call_sid, "DialCallStatus": "no-answer"}
            wrong = signed_by_twilio("not-the-token", url, params)
            async with aiohttp.ClientSession() as http:
                for headers in ({"X-Twilio-Signature": wrong}, {}):
                    async with http.post(url, data=params, headers=headers) as response:
                        refusals.append(response.status)

        call = await escalating_twilio_call(stack, twilio, call_sid, updated, forge)
    assert refusals == [403, 403]
    assert call["outcome"]["status"] == "transferred"  # the genuine report, seconds later
    [transfer] = items_of(call["items"], "transfer")
    assert transfer["outcome"] == "taken"


async def test_acs_transfer_accepted_ends_the_call_transferred(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path)))
    connection_id = str(uuid.uuid4())
    async with (
        FakeAcsRest(connections=[connection_id], transfer_result="accepted") as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        base = point_platforms_here(monkeypatch, stack)
        call = await escalating_acs_call(stack, connection_id)
    assert call["outcome"]["status"] == "transferred"
    [transfer] = acs.transfers
    assert (transfer.callback_uri or "").startswith(f"{base}/platform/acs/events/")
    [(_, events, status)] = acs.events_sent
    assert status == 200 and events[0]["type"].endswith("CallTransferAccepted")
    [item] = items_of(call["items"], "transfer")
    assert item["outcome"] == "taken" and item["taken_by"] == "acs"


async def test_acs_transfer_failed_escalates_and_tells_the_caller(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path)))
    connection_id = str(uuid.uuid4())
    async with (
        FakeAcsRest(connections=[connection_id], transfer_result="failed") as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        point_platforms_here(monkeypatch, stack)
        call = await escalating_acs_call(stack, connection_id)
    assert call["outcome"]["status"] == "escalated"
    assert call["outcome"]["ticket"]["ticket_id"]
    [item] = items_of(call["items"], "transfer")
    assert item["outcome"] == "declined"
    assert item["detail"] == "acs transfer failed (code 500, subcode 7000)"
    # The ACS caller is still on Baton's stream after a failed transfer: Baton says it.
    assert NOBODY_FREE in items_of(call["items"], "agent_turn")[-1]["text"]


async def test_a_forged_acs_event_is_refused_and_the_call_is_unaffected(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(registry_with_desk(tmp_path)))
    connection_id = str(uuid.uuid4())
    async with (
        FakeAcsRest(
            connections=[connection_id], transfer_result="accepted", event_delay=4.0
        ) as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        point_platforms_here(monkeypatch, stack)
        call_task = asyncio.create_task(escalating_acs_call(stack, connection_id))
        async with asyncio.timeout(60):
            while not acs.transfers:
                await asyncio.sleep(0.1)
        genuine = acs.transfers[0].callback_uri or ""
        failed = [{"type": "Microsoft.Communication.CallTransferFailed", "data": {}}]
        forged_token = await acs.send_events(genuine.split("?")[0] + "?token=forged", failed)
        no_token = await acs.send_events(genuine.split("?")[0], failed)
        call = await call_task
    assert (forged_token, no_token) == (403, 403)
    assert call["outcome"]["status"] == "transferred"
    assert [status for _, _, status in acs.events_sent] == [403, 403, 200]
