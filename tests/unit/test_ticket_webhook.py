"""The webhook sink against a real receiver on loopback that checks every signature: what it
sends, and which answers a retry can help with."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.escalation import deliver_escalation_ticket, file_escalation_ticket
from activities.ticket_sinks import open_tickets
from activities.ticket_sinks.webhook import signature
from contracts.escalation import EscalationTicket, TicketDelivery
from tests.fakes.ticket_webhook import TicketWebhookReceiver

SECRET = "test-only-webhook-secret-0123456789abcdef"


def ticket() -> EscalationTicket:
    return EscalationTicket(
        ticket_id="call-7",
        call_id="7",
        scenario="banking",
        reason="caller asked for a person",
        summary="caller: my card 4111 1111 1111 1111 was stolen, call me on 503-555-0142",
        active_agent="FraudAgent",
        last_utterances=["my ssn is 123-45-6789"],
        created_at=datetime(2026, 11, 25, 9, 30, tzinfo=UTC),
    )


@pytest.fixture
def webhook_sink(monkeypatch: pytest.MonkeyPatch):
    def configure(url: str, *, sink: str = "webhook", secret: str = SECRET) -> None:
        monkeypatch.setenv("BATON_TICKET_SINK", sink)
        monkeypatch.setenv("BATON_TICKET_WEBHOOK_URL", url)
        monkeypatch.setenv("BATON_TICKET_WEBHOOK_SECRET", secret)

    return configure


async def deliver() -> TicketDelivery:
    result = await ActivityEnvironment().run(deliver_escalation_ticket, ticket())
    assert isinstance(result, TicketDelivery)
    return result


async def refusal() -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(deliver_escalation_ticket, ticket())
    return raised.value


async def test_the_receiver_gets_the_redacted_ticket_signed_with_its_id_as_key(
    webhook_sink,
) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        webhook_sink(receiver.url)
        delivery = await deliver()
    assert delivery.delivered_to == ["webhook"]
    (attempt,) = receiver.attempts
    assert attempt.signature_ok and attempt.idempotency_key == "call-7"
    sent = receiver.tickets["call-7"]
    assert sent["summary"] == "caller: my card [card] was stolen, call me on [phone]"
    assert sent["last_utterances"] == ["my ssn is [ssn]"]


async def test_a_503_is_retryable_and_passes_on_the_receivers_retry_after(webhook_sink) -> None:
    async with TicketWebhookReceiver(SECRET, answers=[503]) as receiver:
        webhook_sink(receiver.url)
        error = await refusal()
    assert not error.non_retryable
    assert error.next_retry_delay == timedelta(seconds=1)
    assert "HTTP 503" in str(error) and "127.0.0.1" not in str(error)


async def test_a_400_is_final_and_names_only_the_status(webhook_sink) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        receiver.always = 400
        webhook_sink(receiver.url)
        error = await refusal()
    assert error.non_retryable and error.type == "TicketWebhookRefused"
    assert error.message == "ticket webhook refused the ticket: HTTP 400"
    assert len(receiver.attempts) == 1


@pytest.mark.parametrize("status", [408, 429, 500])
async def test_timeouts_throttling_and_server_errors_are_retryable(webhook_sink, status) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        receiver.always = status
        webhook_sink(receiver.url)
        error = await refusal()
    assert not error.non_retryable and f"HTTP {status}" in str(error)


async def test_a_receiver_with_another_secret_detects_the_mismatch(webhook_sink) -> None:
    async with TicketWebhookReceiver("another-receivers-secret-0123456789abcdef") as receiver:
        webhook_sink(receiver.url)
        error = await refusal()
    (attempt,) = receiver.attempts
    assert not attempt.signature_ok and attempt.answered == 401
    assert receiver.tickets == {}
    assert error.non_retryable  # a wrong secret is not cured by trying again


async def test_a_tampered_body_or_a_stale_timestamp_fails_the_receivers_check() -> None:
    receiver = TicketWebhookReceiver(SECRET)  # its check alone; nothing is served
    body = b'{"ticket_id": "call-7"}'
    now = int(time.time())
    assert receiver.signature_valid(str(now), body, signature(SECRET, now, body))
    assert not receiver.signature_valid(str(now), body + b" ", signature(SECRET, now, body))
    stale = now - 600  # a replay of a POST captured ten minutes ago
    assert not receiver.signature_valid(str(stale), body, signature(SECRET, stale, body))


async def test_an_unreachable_receiver_is_retryable(webhook_sink) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        url = receiver.url
    webhook_sink(url)  # the receiver has stopped: connection refused
    error = await refusal()
    assert not error.non_retryable and "unreachable" in str(error)


async def test_with_both_the_local_store_keeps_the_ticket_while_the_webhook_is_down(
    webhook_sink,
) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        receiver.always = 503
        webhook_sink(receiver.url, sink="both")
        assert await ActivityEnvironment().run(file_escalation_ticket, ticket()) == "call-7"
        await refusal()
    assert [t.ticket_id for t in open_tickets()] == ["call-7"]


async def test_the_default_sink_files_locally_and_delivers_nowhere() -> None:
    assert await ActivityEnvironment().run(file_escalation_ticket, ticket()) == "call-7"
    assert (await deliver()).delivered_to == []
    assert [t.ticket_id for t in open_tickets()] == ["call-7"]


async def test_a_webhook_only_worker_keeps_no_local_copy(webhook_sink) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        webhook_sink(receiver.url)
        await ActivityEnvironment().run(file_escalation_ticket, ticket())
        await deliver()
    assert open_tickets() == [] and list(receiver.tickets) == ["call-7"]


def test_the_readmes_verification_recipe_accepts_baton_signatures_only() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    recipe = next(
        block.split("\n", 1)[1]
        for block in readme.split("```")
        if block.startswith("python\n") and "def authentic" in block
    )
    namespace: dict[str, Any] = {}
    exec(recipe, namespace)  # the README's own code, as a receiver would paste it
    authentic = namespace["authentic"]
    body = ticket().model_dump_json().encode()
    now = int(time.time())
    header = signature(SECRET, now, body)
    assert authentic(SECRET.encode(), str(now), header, body)
    assert not authentic(SECRET.encode(), str(now), header, body.replace(b"7", b"8"))
    assert not authentic(b"someone-else", str(now), header, body)
    old = now - 3600
    assert not authentic(SECRET.encode(), str(old), signature(SECRET, old, body), body)
