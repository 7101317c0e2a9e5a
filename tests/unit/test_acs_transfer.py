"""The ACS transfer against a loopback fake of Call Automation's transferToParticipant, which
recomputes the HMAC-SHA256 signature of every request: the transfer is signed and shaped as
ACS documents it, refusals fail with ACS's error code, and an unavailable ACS is retried."""

from __future__ import annotations

import base64
import email.utils
import json
import uuid
from collections.abc import Callable

import aiohttp
import pytest
from temporalio.exceptions import ApplicationError

from activities.transfer.acs_transfer import API_VERSION, content_hash, sign
from activities.transfer.platforms import transfer_on_platform
from contracts.transfer import TransferKind, TransferRequest, TransferTarget
from tests.fakes.acs_rest import FakeAcsRest

UseFake = Callable[[FakeAcsRest], None]


def connection_id() -> str:
    return str(uuid.uuid4())


def request_for(
    connection: str | None, kind: TransferKind = "phone", address: str = "+15551230000"
) -> TransferRequest:
    return TransferRequest(
        call_id="call-1",
        channel="acs",
        platform_call_id=connection,
        target=TransferTarget(kind=kind, address=address, label="Fraud desk"),
        ticket_id="ticket-7",
        reason="escalate_tool",
    )


@pytest.fixture
def use_fake(monkeypatch: pytest.MonkeyPatch) -> UseFake:
    def point_at(fake: FakeAcsRest) -> None:
        monkeypatch.setenv("ACS_CONNECTION_STRING", fake.connection_string)

    return point_at


async def test_a_phone_transfer_is_signed_accepted_and_connected(use_fake: UseFake) -> None:
    connection = connection_id()
    async with FakeAcsRest(connections=[connection]) as acs:
        use_fake(acs)
        outcome = await transfer_on_platform(request_for(connection))
    assert outcome.status == "connected"
    assert connection in outcome.detail
    [transfer] = acs.transfers
    assert transfer.connection_id == connection
    assert transfer.target["phoneNumber"] == {"value": "+15551230000"}
    assert transfer.target["rawId"] == "4:+15551230000"
    assert transfer.operation_context == "ticket-7"


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("8:acs:resource_0000001f-user", "communicationUser"),
        ("8:orgid:5c3a-teams-user", "microsoftTeamsUser"),
    ],
)
async def test_a_sip_target_names_an_acs_or_teams_identity(
    use_fake: UseFake, address: str, kind: str
) -> None:
    connection = connection_id()
    async with FakeAcsRest(connections=[connection]) as acs:
        use_fake(acs)
        outcome = await transfer_on_platform(request_for(connection, "sip", address))
    assert outcome.status == "connected"
    target = acs.transfers[0].target
    assert target["kind"] == kind and target["rawId"] == address


@pytest.mark.parametrize(
    ("kind", "address", "expected"),
    [
        ("queue", "fraud-desk", "does not wait for a queue"),
        ("sip", "sip:desk@pbx.example.com", "Direct Routing"),
        ("phone", "555-1234", "E.164"),
    ],
)
async def test_targets_acs_cannot_reach_fail_clearly_before_any_request(
    use_fake: UseFake, kind: TransferKind, address: str, expected: str
) -> None:
    connection = connection_id()
    async with FakeAcsRest(connections=[connection]) as acs:
        use_fake(acs)
        outcome = await transfer_on_platform(request_for(connection, kind, address))
    assert outcome.status == "failed" and expected in outcome.detail
    assert acs.requests == []


async def test_a_wrong_access_key_is_refused_by_the_signature_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connection = connection_id()
    async with FakeAcsRest(connections=[connection]) as acs:
        wrong = base64.b64encode(b"some-other-resource-key").decode()
        monkeypatch.setenv("ACS_CONNECTION_STRING", f"endpoint={acs.base_url};accesskey={wrong}")
        outcome = await transfer_on_platform(request_for(connection))
    assert outcome.status == "failed"
    assert "HTTP 401" in outcome.detail and "Unauthorized" in outcome.detail
    assert acs.requests == [(connection, 401)] and not acs.transfers


async def test_the_fake_refuses_a_body_that_is_not_the_one_signed() -> None:
    """A correctly signed request whose body was swapped after signing is refused: the fake
    really recomputes the hash and the signature."""
    connection = connection_id()
    async with FakeAcsRest(connections=[connection]) as acs:
        path = (
            f"/calling/callConnections/{connection}:transferToParticipant?api-version={API_VERSION}"
        )
        signed = json.dumps({"targetParticipant": {"phoneNumber": {"value": "+15551230000"}}})
        sent = signed.replace("+15551230000", "+15559990000").encode()
        date = email.utils.formatdate(usegmt=True)
        body_hash = content_hash(signed.encode())
        host = acs.base_url.removeprefix("http://")
        headers = {
            "x-ms-date": date,
            "x-ms-content-sha256": body_hash,
            "Authorization": sign(
                acs.access_key,
                method="POST",
                path_and_query=path,
                host=host,
                date=date,
                body_hash=body_hash,
            ),
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(acs.base_url + path, data=sent, headers=headers) as swapped,
        ):
            assert swapped.status == 401
        headers["x-ms-content-sha256"] = content_hash(sent)  # hash right, signature stale
        async with (
            aiohttp.ClientSession() as session,
            session.post(acs.base_url + path, data=sent, headers=headers) as stale,
        ):
            assert stale.status == 401
            assert "signature" in (await stale.json())["error"]["message"]
    assert not acs.transfers


async def test_an_unknown_call_connection_fails_with_acs_error_code(use_fake: UseFake) -> None:
    async with FakeAcsRest() as acs:
        use_fake(acs)
        outcome = await transfer_on_platform(request_for(connection_id()))
    assert outcome.status == "failed"
    assert "HTTP 404" in outcome.detail and "error NotFound" in outcome.detail


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_an_unavailable_acs_raises_a_retryable_error(use_fake: UseFake, status: int) -> None:
    connection = connection_id()
    async with FakeAcsRest(connections=[connection], fail_next=[status]) as acs:
        use_fake(acs)
        with pytest.raises(ApplicationError) as raised:
            await transfer_on_platform(request_for(connection))
        assert not raised.value.non_retryable
        assert f"HTTP {status}" in str(raised.value)
        # The retry carries the same idempotency key, so ACS transfers once.
        assert (await transfer_on_platform(request_for(connection))).status == "connected"
    first, second = acs.request_ids
    assert first is not None and first == second
    assert len(acs.transfers) == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "ACS_CONNECTION_STRING"),
        ("accesskey=a2V5", "endpoint="),
        ("endpoint=https://x.communication.azure.com/;accesskey=not base64!", "accesskey="),
    ],
)
async def test_a_missing_or_malformed_connection_string_fails_naming_what_to_set(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: str
) -> None:
    if value is None:
        monkeypatch.delenv("ACS_CONNECTION_STRING", raising=False)
    else:
        monkeypatch.setenv("ACS_CONNECTION_STRING", value)
    outcome = await transfer_on_platform(request_for(connection_id()))
    assert outcome.status == "failed"
    assert "acs is not configured" in outcome.detail and expected in outcome.detail


async def test_a_call_with_no_connection_id_fails_before_any_request(use_fake: UseFake) -> None:
    async with FakeAcsRest() as acs:
        use_fake(acs)
        outcome = await transfer_on_platform(request_for(None))
    assert outcome.status == "failed" and "call connection id" in outcome.detail
    assert acs.requests == []
