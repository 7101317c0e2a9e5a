"""The Twilio transfer against a loopback fake of Twilio's Calls resource: the live call is
updated with TwiML that dials the target, credentials and refusals are handled as Twilio
answers them, and an unavailable Twilio is left to Temporal's retries."""

from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest
from prometheus_client import REGISTRY
from temporalio.exceptions import ApplicationError

from activities.transfer.platforms import transfer_on_platform
from activities.transfer.twilio_transfer import transfer_twiml
from contracts.transfer import TransferKind, TransferRequest, TransferTarget
from tests.fakes.twilio_rest import FakeTwilioRest

ACCOUNT = "AC" + "1" * 32
TOKEN = "twilio-auth-token-for-tests"
WORKFLOW_SID = "WW" + "ab" * 16


def call_sid() -> str:
    return "CA" + uuid.uuid4().hex


def request_for(
    sid: str | None, kind: TransferKind = "phone", address: str = "+15551230000"
) -> TransferRequest:
    return TransferRequest(
        call_id="call-1",
        channel="twilio",
        platform_call_id=sid,
        target=TransferTarget(kind=kind, address=address, label="Fraud desk"),
        ticket_id="ticket-7",
        reason="escalate_tool",
    )


UseFake = Callable[[FakeTwilioRest], None]


@pytest.fixture
def use_fake(monkeypatch: pytest.MonkeyPatch) -> UseFake:
    def point_at(fake: FakeTwilioRest) -> None:
        for name, value in fake.environment().items():
            monkeypatch.setenv(name, value)

    return point_at


def refusals_counted() -> float:
    labels = {"provider": "twilio", "retryable": "false"}
    return REGISTRY.get_sample_value("baton_provider_errors_total", labels) or 0.0


def parse(twiml: str) -> ET.Element:
    return ET.fromstring(twiml)


def test_a_phone_target_dials_the_number_after_a_short_say() -> None:
    root = parse(
        transfer_twiml(
            TransferTarget(kind="phone", address="+15551230000"), call_id="c", ticket_id="t"
        )
    )
    assert [child.tag for child in root] == ["Say", "Dial"]
    assert root.findtext("Say")
    number = root.find("Dial/Number")
    assert number is not None and number.text == "+15551230000"
    assert root.find("Dial/Sip") is None


def test_a_sip_target_dials_the_uri_with_the_ticket_as_a_sip_header() -> None:
    target = TransferTarget(kind="sip", address="sip:desk@pbx.example.com")
    sip = parse(transfer_twiml(target, call_id="c", ticket_id="t 7")).find("Dial/Sip")
    assert sip is not None
    assert sip.text == "sip:desk@pbx.example.com?X-Baton-Ticket=t%207"


def test_a_taskrouter_queue_enqueues_a_task_carrying_the_ticket() -> None:
    target = TransferTarget(kind="queue", address=WORKFLOW_SID)
    enqueue = parse(transfer_twiml(target, call_id="call-1", ticket_id="ticket-7")).find("Enqueue")
    assert enqueue is not None and enqueue.get("workflowSid") == WORKFLOW_SID
    task = enqueue.findtext("Task")
    assert task is not None
    assert json.loads(task) == {"baton_ticket_id": "ticket-7", "baton_call_id": "call-1"}


def test_a_named_queue_enqueues_into_that_twilio_queue() -> None:
    target = TransferTarget(kind="queue", address="fraud <desk> & co")
    enqueue = parse(transfer_twiml(target, call_id="c", ticket_id="t")).find("Enqueue")
    assert enqueue is not None and enqueue.text == "fraud <desk> & co"  # escaped, not markup
    assert enqueue.get("workflowSid") is None


async def test_a_live_call_is_updated_with_the_twiml_and_the_transfer_is_connected(
    use_fake: UseFake,
) -> None:
    sid = call_sid()
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN, calls=[sid]) as twilio:
        use_fake(twilio)
        outcome = await transfer_on_platform(request_for(sid))
    assert outcome.status == "connected"
    assert sid in outcome.detail
    [update] = twilio.updates
    assert update.call_sid == sid and update.username == ACCOUNT
    number = update.twiml.find("Dial/Number")
    assert number is not None and number.text == "+15551230000"


@pytest.mark.parametrize(
    "kind,address,element",
    [
        ("phone", "+15551230000", "Dial/Number"),
        ("sip", "sip:desk@pbx.example.com", "Dial/Sip"),
        ("queue", WORKFLOW_SID, "Enqueue"),
    ],
)
async def test_each_target_kind_reaches_twilio_as_its_twiml_element(
    use_fake: UseFake, kind: TransferKind, address: str, element: str
) -> None:
    sid = call_sid()
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN, calls=[sid]) as twilio:
        use_fake(twilio)
        outcome = await transfer_on_platform(request_for(sid, kind, address))
    assert outcome.status == "connected"
    found = twilio.updates[0].twiml.find(element)
    assert found is not None
    named = found.get("workflowSid") if kind == "queue" else found.text
    assert (named or "").startswith(address)


async def test_an_api_key_and_secret_are_accepted_in_place_of_the_auth_token(
    use_fake: UseFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, key = call_sid(), "SK" + "2" * 32
    async with FakeTwilioRest(
        account_sid=ACCOUNT, auth_token=TOKEN, api_key=(key, "key-secret"), calls=[sid]
    ) as twilio:
        use_fake(twilio)
        monkeypatch.delenv("TWILIO_AUTH_TOKEN")
        monkeypatch.setenv("TWILIO_API_KEY", key)
        monkeypatch.setenv("TWILIO_API_SECRET", "key-secret")
        outcome = await transfer_on_platform(request_for(sid))
    assert outcome.status == "connected"
    assert twilio.updates[0].username == key


async def test_a_wrong_auth_token_is_refused_by_twilio_and_the_transfer_fails(
    use_fake: UseFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = call_sid()
    refusals = refusals_counted()
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN, calls=[sid]) as twilio:
        use_fake(twilio)
        monkeypatch.setenv("TWILIO_AUTH_TOKEN", "not-the-token")
        outcome = await transfer_on_platform(request_for(sid))
    assert refusals_counted() == refusals + 1  # the non-retryable provider error alert sees it
    assert outcome.status == "failed"
    assert "HTTP 401" in outcome.detail and "error 20003" in outcome.detail
    assert "credentials" in outcome.detail
    assert twilio.requests == [(f"/2010-04-01/Accounts/{ACCOUNT}/Calls/{sid}.json", 401)]
    assert not twilio.updates


async def test_an_unknown_call_fails_with_twilios_error_code(use_fake: UseFake) -> None:
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN) as twilio:
        use_fake(twilio)
        outcome = await transfer_on_platform(request_for(call_sid()))
    assert outcome.status == "failed"
    assert "HTTP 404" in outcome.detail and "error 20404" in outcome.detail


async def test_a_call_no_longer_in_progress_fails_with_error_21220(use_fake: UseFake) -> None:
    sid = call_sid()
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN, calls=[sid]) as twilio:
        twilio.calls[sid] = "completed"
        use_fake(twilio)
        outcome = await transfer_on_platform(request_for(sid))
    assert outcome.status == "failed"
    assert "HTTP 400" in outcome.detail and "error 21220" in outcome.detail


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_an_unavailable_twilio_raises_a_retryable_error(
    use_fake: UseFake, status: int
) -> None:
    sid = call_sid()
    async with FakeTwilioRest(
        account_sid=ACCOUNT, auth_token=TOKEN, calls=[sid], fail_next=[status]
    ) as twilio:
        use_fake(twilio)
        with pytest.raises(ApplicationError) as raised:
            await transfer_on_platform(request_for(sid))
    assert not raised.value.non_retryable
    assert raised.value.type == "TransferPlatformUnavailable"
    assert f"HTTP {status}" in str(raised.value)


async def test_a_twilio_that_does_not_answer_raises_a_retryable_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN) as twilio:
        base = twilio.base_url
    for name, value in {
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "BATON_TWILIO_BASE_URL": base,
    }.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ApplicationError) as raised:  # nothing listens there any more
        await transfer_on_platform(request_for(call_sid()))
    assert not raised.value.non_retryable
    assert "did not answer" in str(raised.value)


async def test_missing_twilio_settings_fail_the_transfer_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "TWILIO_API_KEY", "TWILIO_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    outcome = await transfer_on_platform(request_for(call_sid()))
    assert outcome.status == "failed"
    assert "TWILIO_ACCOUNT_SID" in outcome.detail
    monkeypatch.setenv("TWILIO_ACCOUNT_SID", ACCOUNT)
    outcome = await transfer_on_platform(request_for(call_sid()))
    assert outcome.status == "failed" and "TWILIO_AUTH_TOKEN" in outcome.detail


@pytest.mark.parametrize(
    "sid,kind,address,expected",
    [
        (None, "phone", "+15551230000", "no Twilio CallSid"),
        ("CA../../Accounts", "phone", "+15551230000", "no Twilio CallSid"),
        ("CA" + "3" * 32, "phone", "555-1234", "E.164"),
        ("CA" + "3" * 32, "sip", "desk@pbx.example.com", "SIP URI"),
    ],
)
async def test_a_bad_call_sid_or_target_fails_before_any_request(
    use_fake: UseFake, sid: str | None, kind: TransferKind, address: str, expected: str
) -> None:
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token=TOKEN) as twilio:
        use_fake(twilio)
        outcome = await transfer_on_platform(request_for(sid, kind, address))
    assert outcome.status == "failed" and expected in outcome.detail
    assert twilio.requests == []
