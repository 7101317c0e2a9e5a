"""Real ACS calls whose scenario sends escalations to a `queue`: the workers queue the call as
a Job Router job (a loopback fake speaking Job Router's REST shapes and checking every HMAC
signature) while the caller hears hold audio on their stream. A worker accepting the job gets
the call by Call Automation's transfer (`transferred`); a job Job Router cancels, or one nobody
accepts within the hold timeout (Baton then cancels it), ends `escalated`, the caller told
nobody is free and the ticket kept; a caller who hangs up in the queue ends `hung_up`, the job
cancelled so no worker is offered a caller who has gone."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client
from websockets.asyncio.client import connect

from activities.transfer.acs_jobrouter import (
    CALLER_LEFT,
    CALLER_LEFT_DISPOSITION,
    TIMEOUT_DISPOSITION,
)
from contracts.transfer import NOBODY_FREE
from tests.fakes.acs_jobrouter import FakeAcsJobRouter
from tests.gateway.conftest import GatewayStack, call_result, open_gateway_stack, speech_pcm
from tests.gateway.hold_check import HOLD_LIKENESS, acs_audio, hold_likeness
from tests.gateway.test_platform_call_ids import ACS_METADATA, platform_id_of
from tests.gateway.test_transports import collect, session_for
from tests.gateway.test_twilio_transfer_call import registry_with_desk
from tests.workflow.conftest import items_of

QUEUE = "banking-desk"
WORKER = "worker-7"
WORKER_PHONE = "+15557654321"
FRAME_BYTES = 640  # 20 ms of PCM16 mono 16 kHz

#: Plays Job Router (and ACS) while the job waits; True: the caller hangs up then.
Queued = Callable[[FakeAcsJobRouter, dict[str, Any], list[Any]], Awaitable[bool | None]]


def queue_registry(root: Path, hold_timeout: float = 30) -> Path:
    registry = registry_with_desk(root, kind="queue", address=QUEUE)
    scenario = registry / "scenariostore" / "banking" / "scenario.yaml"
    data = yaml.safe_load(scenario.read_text())
    data["escalation"]["hold_timeout_seconds"] = hold_timeout
    scenario.write_text(yaml.safe_dump(data))
    return registry


async def queued_acs_call(
    stack: GatewayStack, acs: FakeAcsJobRouter, connection_id: str, while_queued: Queued
) -> dict[str, Any]:
    """An ACS caller asks for a person; `while_queued` plays Job Router once the job waits.
    Returns the workflow's result, its transcript and what the stream received meanwhile."""
    call_id = f"acs-{uuid.uuid4().hex[:8]}"
    session = session_for(stack, call_id)
    url = stack.url("acs", call_id, stack.token(call_id))
    headers = {"x-ms-call-connection-id": connection_id}
    async with connect(url, additional_headers=headers) as ws:
        received: list[Any] = []
        reader = asyncio.create_task(collect(ws, received))
        await ws.send(json.dumps(ACS_METADATA))
        assert await platform_id_of(stack, call_id) == connection_id
        await session.until_greeted()
        speech = await speech_pcm("I want to speak to a real person please.")
        speech += bytes(FRAME_BYTES * 50)
        for i in range(0, len(speech), FRAME_BYTES):
            frame = base64.b64encode(speech[i : i + FRAME_BYTES]).decode()
            await ws.send(json.dumps({"kind": "AudioData", "audioData": {"data": frame}}))
            await asyncio.sleep(0.02)
        job = await acs.queued()
        start = len(received)
        hangs_up = await while_queued(acs, job, received)
        on_hold = received[start:]
        if hangs_up:  # ACS ends the call connection and the caller's stream
            acs.connections.discard(connection_id)
            await ws.close()
        outcome: dict[str, Any] = await call_result(session, 60)
        reader.cancel()
    return {"outcome": outcome, "items": await session.transcript(), "on_hold": on_hold}


async def held_for(seconds: float) -> None:
    await asyncio.sleep(seconds)


async def test_a_queue_on_acs_waits_in_job_router_and_goes_to_the_worker_who_accepts(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(queue_registry(tmp_path)))
    connection_id = str(uuid.uuid4())

    async def a_worker_accepts(acs: FakeAcsJobRouter, job: dict[str, Any], _: list[Any]) -> None:
        await held_for(3.0)  # the job waits: the caller hears hold audio
        assert acs.transfers == []
        acs.assign(job["id"], WORKER)

    async with (
        FakeAcsJobRouter(
            connections=[connection_id],
            queues=[QUEUE],
            workers={WORKER: {"tags": {"transferTarget": WORKER_PHONE}}},
        ) as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        call = await queued_acs_call(stack, acs, connection_id, a_worker_accepts)
    assert hold_likeness(acs_audio(call["on_hold"]), 16000) >= HOLD_LIKENESS
    assert call["outcome"]["status"] == "transferred"
    ticket_id = call["outcome"]["ticket"]["ticket_id"]
    [job] = acs.jobs.values()
    assert job["channelId"] == "voice" and job["queueId"] == QUEUE
    assert job["channelReference"] == connection_id
    assert job["labels"]["callConnectionId"] == connection_id
    assert job["labels"]["batonTicketId"] == ticket_id
    [transfer] = acs.transfers  # to the worker's phone, by Call Automation
    assert transfer.connection_id == connection_id
    assert transfer.target["phoneNumber"] == {"value": WORKER_PHONE}
    assert acs.cancels == {}
    [item] = items_of(call["items"], "transfer")
    assert item["outcome"] == "connected" and item["target_kind"] == "queue"


async def test_a_job_router_cancels_the_job_and_the_caller_is_told_with_the_ticket_kept(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(queue_registry(tmp_path)))
    connection_id = str(uuid.uuid4())

    async def an_exception_policy_cancels(
        acs: FakeAcsJobRouter, job: dict[str, Any], _: list[Any]
    ) -> None:
        await held_for(1.0)
        acs.cancel_by_router(job["id"], "QueueTooLong")

    async with (
        FakeAcsJobRouter(connections=[connection_id], queues=[QUEUE]) as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        call = await queued_acs_call(stack, acs, connection_id, an_exception_policy_cancels)
    assert call["outcome"]["status"] == "escalated"
    assert call["outcome"]["ticket"] is not None
    assert acs.transfers == []
    [item] = items_of(call["items"], "transfer")
    assert item["outcome"] == "failed" and "cancelled (QueueTooLong)" in item["detail"]
    assert items_of(call["items"], "agent_turn")[-1]["text"] == NOBODY_FREE


async def test_a_job_nobody_accepts_in_the_hold_timeout_is_cancelled_and_the_caller_told(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(queue_registry(tmp_path, hold_timeout=5)))
    connection_id = str(uuid.uuid4())

    async def nobody_accepts(acs: FakeAcsJobRouter, job: dict[str, Any], _: list[Any]) -> None:
        await held_for(3.5)  # inside the 5 s hold timeout

    async with (
        FakeAcsJobRouter(connections=[connection_id], queues=[QUEUE]) as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        call = await queued_acs_call(stack, acs, connection_id, nobody_accepts)
    # The last two seconds: the reply saying the caller is put through may still be playing
    # when the job is queued (the transfer starts as the reply is spoken).
    assert hold_likeness(acs_audio(call["on_hold"])[-64000:], 16000) >= HOLD_LIKENESS
    assert call["outcome"]["status"] == "escalated"
    assert call["outcome"]["ticket"] is not None
    [job] = acs.jobs.values()
    assert job["status"] == "cancelled"
    assert acs.cancels[job["id"]]["dispositionCode"] == TIMEOUT_DISPOSITION
    assert acs.transfers == []
    [item] = items_of(call["items"], "transfer")
    assert item["outcome"] == "failed" and "nobody accepted the job in 5 s" in item["detail"]
    assert items_of(call["items"], "agent_turn")[-1]["text"] == NOBODY_FREE


async def test_a_caller_who_hangs_up_in_the_queue_has_the_job_cancelled(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_REGISTRY", str(queue_registry(tmp_path)))
    connection_id = str(uuid.uuid4())

    async def the_caller_hangs_up(acs: FakeAcsJobRouter, job: dict[str, Any], _: list[Any]) -> bool:
        await held_for(1.0)
        return True

    async with (
        FakeAcsJobRouter(connections=[connection_id], queues=[QUEUE]) as acs,
        open_gateway_stack(temporal_client) as stack,
    ):
        monkeypatch.setenv("ACS_CONNECTION_STRING", acs.connection_string)
        call = await queued_acs_call(stack, acs, connection_id, the_caller_hangs_up)
    assert call["outcome"]["status"] == "hung_up"
    assert call["outcome"]["ticket"] is not None
    [job] = acs.jobs.values()
    assert job["status"] == "cancelled"
    assert acs.cancels[job["id"]]["dispositionCode"] == CALLER_LEFT_DISPOSITION
    assert acs.transfers == []
    [item] = items_of(call["items"], "transfer")
    assert item["outcome"] == "hung_up" and CALLER_LEFT in item["detail"]
    assert NOBODY_FREE not in [turn["text"] for turn in items_of(call["items"], "agent_turn")]
