"""Temporal's retries carry a platform transfer through an unavailable Twilio or ACS: an
activity that calls `transfer_on_platform`, run by a real worker on the dev server with a
short retry policy, connects once the fake answers again, and a refusal is never retried; a
retry after a Twilio update whose answer was lost finds the dial started and updates nothing."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from activities.transfer.platforms import transfer_on_platform
    from contracts.transfer import TransferOutcome, TransferRequest, TransferTarget
    from tests.fakes.acs_rest import FakeAcsRest
    from tests.fakes.twilio_rest import FakeTwilioRest, TwilioUpdate

ATTEMPTS = 3
ACCOUNT = "AC" + "4" * 32


@activity.defn(name="platform_transfer_probe")
async def platform_transfer_probe(request: TransferRequest) -> TransferOutcome:
    return await transfer_on_platform(request)


@workflow.defn(name="PlatformTransferProbe")
class PlatformTransferProbe:
    @workflow.run
    async def run(self, request: TransferRequest) -> TransferOutcome:
        outcome: TransferOutcome = await workflow.execute_activity(
            platform_transfer_probe,
            request,
            start_to_close_timeout=timedelta(seconds=15),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(milliseconds=200), maximum_attempts=ATTEMPTS
            ),
        )
        return outcome


async def run_probe(client: Client, request: TransferRequest) -> TransferOutcome:
    queue = f"transfer-probe-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[PlatformTransferProbe],
        activities=[platform_transfer_probe],
    ):
        outcome: TransferOutcome = await client.execute_workflow(
            PlatformTransferProbe.run,
            request,
            id=queue,
            task_queue=queue,
        )
        return outcome


def request_for(channel: str, platform_call_id: str) -> TransferRequest:
    return TransferRequest.model_validate(
        {
            "call_id": "call-1",
            "channel": channel,
            "platform_call_id": platform_call_id,
            "target": TransferTarget(kind="phone", address="+15551230000"),
            "ticket_id": "ticket-9",
        }
    )


def twilio_env(monkeypatch: pytest.MonkeyPatch, twilio: FakeTwilioRest) -> None:
    for name, value in twilio.environment().items():
        monkeypatch.setenv(name, value)


async def test_a_twilio_5xx_is_retried_until_twilio_takes_the_call(
    temporal_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = "CA" + uuid.uuid4().hex
    async with FakeTwilioRest(
        account_sid=ACCOUNT, auth_token="t", calls=[sid], fail_next=[503]
    ) as twilio:
        twilio_env(monkeypatch, twilio)
        outcome = await run_probe(temporal_client, request_for("twilio", sid))
    assert outcome.status == "connected"
    assert [status for _, status in twilio.requests] == [503, 200]
    assert len(twilio.updates) == 1 and twilio.updates[0].call_sid == sid


async def test_acs_5xx_retries_carry_one_idempotency_key_and_transfer_once(
    temporal_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = str(uuid.uuid4())
    # Failures that take 0.6 s put the attempts seconds apart, as the header's clock counts.
    async with FakeAcsRest(connections=[connection], fail_next=[500, 502], fail_after=0.6) as acs:
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        outcome = await run_probe(temporal_client, request_for("acs", connection))
    assert outcome.status == "connected"
    assert [status for _, status in acs.requests] == [500, 502, 202]
    assert len(set(acs.request_ids)) == 1 and acs.request_ids[0] is not None
    # ...and the first attempt's time: the activity's schedule time survives its retries.
    assert len(set(acs.first_sent)) == 1 and acs.first_sent[0] is not None
    assert len(acs.transfers) == 1


async def test_a_twilio_that_stays_down_fails_the_activity_after_its_attempts(
    temporal_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = "CA" + uuid.uuid4().hex
    async with FakeTwilioRest(
        account_sid=ACCOUNT, auth_token="t", calls=[sid], fail_next=[503] * 5
    ) as twilio:
        twilio_env(monkeypatch, twilio)
        with pytest.raises(WorkflowFailureError) as failed:
            await run_probe(temporal_client, request_for("twilio", sid))
    cause = failed.value.cause
    assert isinstance(cause, ActivityError) and isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == "TransferPlatformUnavailable"
    assert len(twilio.requests) == ATTEMPTS and not twilio.updates


async def test_a_refusal_is_answered_failed_without_a_retry(
    temporal_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeTwilioRest(account_sid=ACCOUNT, auth_token="t") as twilio:  # no such call
        twilio_env(monkeypatch, twilio)
        outcome = await run_probe(temporal_client, request_for("twilio", "CA" + uuid.uuid4().hex))
    assert outcome.status == "failed" and "error 20404" in outcome.detail
    assert len(twilio.requests) == 1


async def test_a_twilio_update_whose_answer_was_lost_is_not_dialled_again(
    temporal_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = "CA" + uuid.uuid4().hex
    seen: list[TwilioUpdate] = []

    async def first_answer_lost(update: TwilioUpdate) -> None:
        seen.append(update)
        if len(seen) == 1:
            await asyncio.sleep(3.0)  # past BATON_TRANSFER_TIMEOUT: the worker stops waiting

    async with FakeTwilioRest(
        account_sid=ACCOUNT, auth_token="t", calls=[sid], on_update=first_answer_lost
    ) as twilio:
        twilio_env(monkeypatch, twilio)
        monkeypatch.setenv("BATON_TRANSFER_TIMEOUT", "1")
        outcome = await run_probe(temporal_client, request_for("twilio", sid))
    assert outcome.status == "connected" and "dialling" in outcome.detail
    assert len(twilio.updates) == 1  # the desk's phone was not hung up and rung again
    assert twilio.lists == [(sid, 200)]  # the retry asked whether the dial had started
