"""The platform callback URLs and their authentication: Twilio's signature as Twilio documents
it, the adapters asking for reports only when BATON_PUBLIC_URL is set, and the gateway's
routes (a real aiohttp server on loopback, a real Temporal server) refusing what is not signed
and answering a `<Dial action>` for a call that has already ended."""

from __future__ import annotations

import base64
import uuid
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator

import pytest
import structlog.testing
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer
from temporalio.client import Client

from activities.transfer.platforms import transfer_on_platform
from activities.transfer.twilio_transfer import transfer_twiml
from contracts.transfer import NOBODY_FREE, TransferRequest, TransferTarget
from media_gateway.platform_callbacks import PlatformCallbacks, dial_settled, say_what_is_checked
from runtime.platform_callbacks import acs_access_key, acs_event_token, twilio_signature
from tests.fakes.acs_rest import FakeAcsRest
from tests.fakes.twilio_rest import FakeTwilioRest, signed_by_twilio

ACCOUNT = "AC" + "2" * 32
TOKEN = "twilio-auth-token"
PUBLIC = "https://gateway.example.com/baton"


def test_the_twilio_signature_matches_twilios_published_example() -> None:
    params = {
        "CallSid": "CA1234567890ABCDE",
        "Caller": "+12349013030",
        "Digits": "1234",
        "From": "+12349013030",
        "To": "+18005551212",
    }
    url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    assert twilio_signature("12345", url, params) == "0/KCTR6DLpKmkAf8muzZqo1nDgQ="


def test_the_dial_names_its_action_and_the_answered_callback_with_the_call_id_escaped() -> None:
    target = TransferTarget(kind="sip", address="sip:desk@pbx.example.com")
    root = ET.fromstring(
        transfer_twiml(target, call_id="a b/c", ticket_id="t", callbacks_base=PUBLIC)
    )
    dial = root.find("Dial")
    assert dial is not None
    assert dial.get("action") == f"{PUBLIC}/platform/twilio/dial/a%20b%2Fc"
    sip = dial.find("Sip")
    assert sip is not None
    assert sip.get("statusCallback") == f"{PUBLIC}/platform/twilio/answered/a%20b%2Fc"
    assert sip.get("statusCallbackEvent") == "answered"


def twilio_request(sid: str, kind: str = "phone", address: str = "+15551230000") -> TransferRequest:
    return TransferRequest(
        call_id="call-1",
        channel="twilio",
        platform_call_id=sid,
        target=TransferTarget.model_validate({"kind": kind, "address": address}),
        ticket_id="ticket-7",
    )


async def test_with_a_public_url_a_twilio_dial_is_pending_and_a_queue_still_connected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dial_sid, queue_sid = "CA" + uuid.uuid4().hex, "CA" + uuid.uuid4().hex
    async with FakeTwilioRest(
        account_sid=ACCOUNT, auth_token=TOKEN, calls=[dial_sid, queue_sid]
    ) as twilio:
        for name, value in twilio.environment().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("BATON_PUBLIC_URL", PUBLIC + "/")
        dialled = await transfer_on_platform(twilio_request(dial_sid))
        queued = await transfer_on_platform(twilio_request(queue_sid, "queue", "fraud"))
    assert dialled.status == "pending"
    assert queued.status == "connected"  # Twilio's queue holds the caller; nothing reports
    dial_update, queue_update = twilio.updates
    dial = dial_update.twiml.find("Dial")
    assert dial is not None and dial.get("action") == f"{PUBLIC}/platform/twilio/dial/call-1"
    assert queue_update.twiml.find("Enqueue") is not None


async def test_a_malformed_public_url_fails_the_transfer_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sid = "CA" + uuid.uuid4().hex
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN, calls=[sid]) as twilio:
        for name, value in twilio.environment().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("BATON_PUBLIC_URL", "gateway.example.com")
        outcome = await transfer_on_platform(twilio_request(sid))
    assert outcome.status == "failed" and "BATON_PUBLIC_URL" in outcome.detail
    assert twilio.updates == []


async def test_with_a_public_url_an_acs_transfer_names_its_events_url_and_is_pending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connection = str(uuid.uuid4())
    async with FakeAcsRest(connections=[connection]) as acs:
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        monkeypatch.setenv("BATON_PUBLIC_URL", PUBLIC)
        request = TransferRequest(
            call_id="call-9",
            channel="acs",
            platform_call_id=connection,
            target=TransferTarget(kind="phone", address="+15551230000"),
            ticket_id="ticket-9",
        )
        outcome = await transfer_on_platform(request)
    assert outcome.status == "pending"
    [transfer] = acs.transfers
    token = acs_event_token(acs.access_key, "call-9")
    assert transfer.callback_uri == f"{PUBLIC}/platform/acs/events/call-9?token={token}"


def test_the_acs_access_key_is_read_from_the_connection_string() -> None:
    key = base64.b64encode(b"k3y==").decode()
    assert acs_access_key(f"endpoint=https://x.example/;accesskey={key}") == b"k3y=="
    assert acs_access_key("endpoint=https://x.example/") is None
    assert acs_access_key("endpoint=https://x.example/;accesskey=not base64!") is None
    assert acs_access_key(None) is None


@pytest.fixture
async def gateway_routes(
    temporal_client: Client,
) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    app = web.Application()
    PlatformCallbacks(temporal_client).add_to(app)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield client


async def test_twilio_reports_need_the_auth_token_and_public_url_on_the_gateway(
    gateway_routes: TestClient[web.Request, web.Application], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TWILIO_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("BATON_PUBLIC_URL", PUBLIC)
    params = {"DialCallStatus": "no-answer"}
    url = f"{PUBLIC}/platform/twilio/dial/c1"
    headers = {"X-Twilio-Signature": signed_by_twilio(TOKEN, url, params)}
    response = await gateway_routes.post("/platform/twilio/dial/c1", data=params, headers=headers)
    assert response.status == 403
    assert "TWILIO_AUTH_TOKEN" in await response.text()


async def test_a_dial_action_for_an_ended_call_still_tells_the_caller_the_truth(
    gateway_routes: TestClient[web.Request, web.Application], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", TOKEN)
    monkeypatch.setenv("BATON_PUBLIC_URL", PUBLIC)
    call_id = f"gone-{uuid.uuid4().hex[:8]}"  # no such workflow: the signal finds nothing
    path = f"/platform/twilio/dial/{call_id}"

    async def dial_action(status: str) -> ClientResponse:
        params = {"CallSid": "CA" + "0" * 32, "DialCallStatus": status}
        signature = signed_by_twilio(TOKEN, PUBLIC + path, params)
        return await gateway_routes.post(
            path, data=params, headers={"X-Twilio-Signature": signature}
        )

    busy = await dial_action("busy")
    assert busy.status == 200
    twiml = ET.fromstring(await busy.text())
    assert twiml.findtext("Say") == NOBODY_FREE and twiml.find("Hangup") is not None
    completed = await dial_action("completed")
    assert ET.fromstring(await completed.text()).find("Say") is None
    odd = await dial_action("ringing")
    assert odd.status == 400


async def test_acs_events_need_the_access_key_and_the_calls_own_token(
    gateway_routes: TestClient[web.Request, web.Application], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = b"acs-access-key"
    event = [{"type": "Microsoft.Communication.CallTransferAccepted", "data": {}}]
    path = "/platform/acs/events/call-1"
    other_calls_token = acs_event_token(key, "call-2")
    monkeypatch.delenv("ACS_CONNECTION_STRING", raising=False)
    unset = await gateway_routes.post(f"{path}?token={acs_event_token(key, 'call-1')}", json=event)
    assert unset.status == 403
    encoded = base64.b64encode(key).decode()
    monkeypatch.setenv("ACS_CONNECTION_STRING", f"endpoint=https://x.example/;accesskey={encoded}")
    borrowed = await gateway_routes.post(f"{path}?token={other_calls_token}", json=event)
    assert borrowed.status == 403
    genuine = await gateway_routes.post(
        f"{path}?token={acs_event_token(key, 'call-1')}", json=event
    )
    assert genuine.status == 200  # no such call: nothing to settle, nothing refused
    not_json = await gateway_routes.post(
        f"{path}?token={acs_event_token(key, 'call-1')}", data=b"{not json"
    )
    assert not_json.status == 400


def test_a_dial_action_says_whether_the_desk_took_the_call_and_whether_the_caller_left() -> None:
    answered = dial_settled({"DialCallStatus": "answered", "CallStatus": "in-progress"})
    assert answered is not None and answered.taken and answered.taken_by == "twilio"
    busy = dial_settled({"DialCallStatus": "busy", "CallStatus": "in-progress"})
    assert busy is not None and not busy.taken and busy.detail == "twilio dial busy"
    left = dial_settled({"DialCallStatus": "canceled", "CallStatus": "completed"})
    assert left is not None and not left.taken
    assert left.detail == "twilio dial canceled; the caller hung up"
    assert dial_settled({"DialCallStatus": "queued"}) is None


def test_a_gateway_says_at_start_which_platforms_reports_it_can_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BATON_PUBLIC_URL", PUBLIC)
    monkeypatch.delenv("TWILIO_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ACS_CONNECTION_STRING", raising=False)
    with structlog.testing.capture_logs() as nothing_to_check:
        say_what_is_checked()
    assert [e["log_level"] for e in nothing_to_check] == ["warning"]
    assert "TWILIO_AUTH_TOKEN" in nothing_to_check[0]["event"]
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", TOKEN)
    with structlog.testing.capture_logs() as twilio_only:
        say_what_is_checked()
    assert [(e["log_level"], e.get("platforms")) for e in twilio_only] == [("info", "twilio")]
