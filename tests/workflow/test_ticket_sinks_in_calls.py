"""Tickets of real escalated calls: the webhook retried beside the call, never in its way,
SQLite kept meanwhile, a refusing receiver not retried, and `baton tickets` reading them."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import RetryState

from activities.ticket_sinks import open_tickets
from tests.audit.cli import baton
from tests.fakes.ticket_webhook import TicketWebhookReceiver
from tests.workflow.conftest import Stack, started

SECRET = "test-only-webhook-secret-0123456789abcdef"
ASK_FOR_A_PERSON = "I want to speak to a human agent please"


@pytest.fixture
def webhook_sink(monkeypatch: pytest.MonkeyPatch):
    def configure(url: str, sink: str) -> None:
        monkeypatch.setenv("BATON_TICKET_SINK", sink)
        monkeypatch.setenv("BATON_TICKET_WEBHOOK_URL", url)
        monkeypatch.setenv("BATON_TICKET_WEBHOOK_SECRET", SECRET)

    return configure


async def delivery_attempts(receiver: TicketWebhookReceiver, count: int) -> None:
    for _ in range(600):
        if len(receiver.attempts) >= count:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the webhook saw {len(receiver.attempts)} attempts, not {count}")


async def test_a_down_webhook_neither_holds_the_caller_nor_loses_the_ticket(
    stack: Stack, webhook_sink
) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        receiver.always = 503
        webhook_sink(receiver.url, "both")
        session = stack.call()
        await started(session)
        reply = await session.say(ASK_FOR_A_PERSON)
        # The caller has heard where the call goes while the receiver has accepted nothing.
        assert reply.status == "escalated" and "colleague" in reply.text
        assert receiver.tickets == {}
        (stored,) = open_tickets()  # `both`: SQLite has it whatever the webhook does
        assert stored.ticket_id == session.workflow_id
        await delivery_attempts(receiver, 2)  # Temporal retries the 503s
        receiver.always = None  # the receiver is back
        outcome = await asyncio.wait_for(session.handle.result(), timeout=60)
    assert outcome["status"] == "escalated"
    assert list(receiver.tickets) == [session.workflow_id]  # delivered once
    assert [a.answered for a in receiver.attempts][-1] == 200
    assert {a.answered for a in receiver.attempts[:-1]} == {503}
    assert all(a.signature_ok for a in receiver.attempts)
    assert {a.idempotency_key for a in receiver.attempts} == {session.workflow_id}
    assert receiver.tickets[session.workflow_id]["reason"] == stored.reason


async def test_a_receiver_refusing_the_ticket_is_asked_once_and_the_call_ends(
    stack: Stack, webhook_sink
) -> None:
    async with TicketWebhookReceiver(SECRET) as receiver:
        receiver.always = 400
        webhook_sink(receiver.url, "webhook")
        session = stack.call()
        await started(session)
        assert (await session.say(ASK_FOR_A_PERSON)).status == "escalated"
        outcome = await asyncio.wait_for(session.handle.result(), timeout=60)
    assert outcome["status"] == "escalated" and outcome["ticket"] is not None
    assert [a.answered for a in receiver.attempts] == [400]
    assert open_tickets() == []  # webhook only: no local copy
    history = await session.handle.fetch_history()
    failed = [
        e.activity_task_failed_event_attributes
        for e in history.events
        if e.HasField("activity_task_failed_event_attributes")
    ]
    # Messages are sealed by the codec; the failure's type and retry state are not.
    assert [(f.failure.application_failure_info.type, f.retry_state) for f in failed] == [
        ("TicketWebhookRefused", RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE)
    ]


async def test_baton_tickets_shows_a_real_escalated_calls_ticket(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    await session.say("My card was stolen, I think it's fraud")
    assert (await session.say(ASK_FOR_A_PERSON)).status == "escalated"
    await asyncio.wait_for(session.handle.result(), timeout=60)
    ticket_id = session.workflow_id
    listed = baton("tickets", "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == [ticket_id]
    shown = baton("tickets", "show", ticket_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    # The scenario sends FraudAgent's escalations to the fraud desk; a text call cannot be
    # handed over, so the call marked its ticket `escalated`: a person must call back.
    assert lines[0] == f"ticket {ticket_id} (escalated)"
    assert "  agent     FraudAgent" in lines
    assert any("Concierge → FraudAgent" in line for line in lines)  # the handoff history
    assert "  > My card was stolen, I think it's fraud" in lines  # the last utterances
