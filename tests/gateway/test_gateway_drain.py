"""SIGTERM drains a `baton gateway` process: new calls are refused (503, saying why) while the
live ones carry on until they end, and a call still live when the grace runs out hears the
reply being played to its end, is told to dial again (1012) and carries on through the next
gateway.

Real processes: the dev server, one `baton worker` per queue (offline speech), a `baton
gateway` on fixed ports, and a browser-protocol caller in this process. The caller's lines go
in as text Updates; every reply comes back as audio paced in real time by the gateway.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import aiohttp
import pytest
import pytest_asyncio
from temporalio.client import Client
from websockets.exceptions import InvalidStatus

from baton.call_client import CallSession, greeted
from baton.temporal_server import EmbeddedTemporal, free_port
from contracts.calls import CallInput
from contracts.speech import SYNTHESIZE_SPEECH
from media_gateway.vad import BYTES_PER_MS
from tests.faults.callers import Caller, retrying
from tests.faults.processes import WorkerFleet
from tests.faults.slow_registry import slow_registry
from tests.faults.voice import GatewayProcess, TimedCaller

FRAUD = "Someone used my card abroad, I think it's fraud"
GOODBYE = "That's all, thank you, goodbye"
#: Bounds on steps that take a fraction of them, not expectations.
STEP_TIMEOUT = 60.0
#: The first test's grace: far beyond the test, so the gateway exits because its call ended.
LONG_GRACE = 600
#: The second test's grace: none, so the hand-back begins while a reply plays.
SHORT_GRACE = 0


@dataclass
class DrainRig(Caller):
    client: Client
    fleet: WorkerFleet
    temporal_address: str
    logs: Path
    registry: Path
    reply_timeout: ClassVar[float] = STEP_TIMEOUT
    gateways: list[GatewayProcess] = field(default_factory=list)
    callers: list[TimedCaller] = field(default_factory=list)

    async def gateway(self, grace: int, *extra_args: str) -> GatewayProcess:
        gateway = GatewayProcess(
            self.temporal_address,
            self.logs,
            self.registry,
            ("--drain-seconds", str(grace), *extra_args),
        )
        self.gateways.append(gateway)
        await gateway.start()
        return gateway

    async def dial(self, gateway: GatewayProcess, call_id: str) -> TimedCaller:
        caller = await gateway.dial(call_id)
        self.callers.append(caller)
        return caller


@pytest_asyncio.fixture
async def rig(
    temporal_server: EmbeddedTemporal, temporal_client: Client, tmp_path: Path
) -> AsyncIterator[DrainRig]:
    registry = slow_registry(tmp_path)
    fleet = WorkerFleet(temporal_server.address, tmp_path, {"BATON_REGISTRY": str(registry)})
    rig = DrainRig(temporal_client, fleet, temporal_server.address, tmp_path, registry)
    try:
        await fleet.start("calls", "llm", "tools", "speech")
        yield rig
    finally:
        for turn in rig.turns:
            turn.cancel()
        await asyncio.gather(*rig.turns, return_exceptions=True)
        for caller in rig.callers:
            await caller.close()
        for gateway in rig.gateways:
            await asyncio.to_thread(gateway.stop)
        await fleet.stop()


async def greeted_call(rig: DrainRig, gateway: GatewayProcess) -> tuple[TimedCaller, CallSession]:
    call_id = f"drain-{uuid.uuid4().hex[:10]}"
    caller = await rig.dial(gateway, call_id)
    session = CallSession(rig.client, CallInput(call_id=call_id))
    # Retried: the gateway starts the call's workflow a moment after the caller's start frame.
    await retrying(
        lambda: session.wait_for(greeted, STEP_TIMEOUT, what="the greeting was spoken"),
        STEP_TIMEOUT,
    )
    return caller, session


async def terminate(gateway: GatewayProcess) -> None:
    """SIGTERM, then until the gateway says it takes no new calls."""
    assert gateway.process is not None
    os.kill(gateway.process.pid, signal.SIGTERM)
    url = f"http://127.0.0.1:{gateway.http_port}/healthz"
    async with aiohttp.ClientSession() as http, asyncio.timeout(STEP_TIMEOUT):
        while (await (await http.get(url)).json())["accepting"]:
            await asyncio.sleep(0.05)


async def readiness(url: str, until: int | None = None) -> int:
    """The ops port's `/readyz` status; with `until`, polled until it is that one."""
    async with aiohttp.ClientSession() as http, asyncio.timeout(STEP_TIMEOUT):
        while True:
            async with http.get(url) as response:
                if until is None or response.status == until:
                    return response.status
            await asyncio.sleep(0.05)


async def exit_code(gateway: GatewayProcess, timeout: float = STEP_TIMEOUT) -> int:
    assert gateway.process is not None
    async with asyncio.timeout(timeout):
        return await asyncio.to_thread(gateway.process.process.wait)


async def speech_attempts(session: CallSession) -> list[int]:
    """The attempt number of every reply the call's history shows started (1: the first)."""
    scheduled: set[int] = set()
    attempts: list[int] = []
    async for event in session.handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name == SYNTHESIZE_SPEECH:
                scheduled.add(event.event_id)
        elif event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            if started.scheduled_event_id in scheduled:
                attempts.append(started.attempt)
    return attempts


async def test_draining_gateway_refuses_new_calls_and_keeps_the_live_one(rig: DrainRig) -> None:
    ops_port = free_port()
    gateway = await rig.gateway(LONG_GRACE, "--metrics-port", str(ops_port))
    caller, session = await greeted_call(rig, gateway)
    ready = f"http://127.0.0.1:{ops_port}/readyz"
    assert await readiness(ready) == 200
    await terminate(gateway)
    # The ops port says so too, so a load balancer sends new callers elsewhere; the drain is
    # still on (its call is live), so this is the drain's answer, not a process going away.
    assert await readiness(ready, until=503) == 503
    assert gateway.process is not None and gateway.process.process.poll() is None

    with pytest.raises(InvalidStatus) as refused:
        await gateway.dial(f"drain-{uuid.uuid4().hex[:10]}")
    assert refused.value.response.status_code == 503
    assert b"draining" in refused.value.response.body

    # The live call goes on: a turn, its reply played in full, then the goodbye.
    before = len(caller.audio)
    reply = await rig.say(session, FRAUD)
    assert reply.agent == "FraudAgent"
    farewell = await rig.say(session, GOODBYE)
    assert farewell.status == "completed"
    assert len(caller.audio) > before
    for item in await session.transcript():
        if item["type"] in ("agent_turn", "greeting"):
            assert not item.get("interrupted") and item.get("heard_text") is None, item
    # The gateway leaves once its last call has ended, long before its grace would end.
    assert await exit_code(gateway) == 0


async def test_grace_over_hands_the_call_back_after_the_reply_playing(rig: DrainRig) -> None:
    gateway = await rig.gateway(SHORT_GRACE)
    caller, session = await greeted_call(rig, gateway)
    pending = rig.say_later(session, FRAUD)  # the fraud desk greets: a reply of seconds
    await caller.wait_event(
        lambda event: event["type"] == "speaking" and event["agent"] == "FraudAgent", STEP_TIMEOUT
    )
    await caller.hears_more(len(caller.audio), 300)
    at_signal = len(caller.audio)
    await terminate(gateway)

    # The reply plays to its end, then the caller is told to dial again.
    async with asyncio.timeout(STEP_TIMEOUT):
        await caller.ws.wait_closed()
    assert caller.ws.close_code == 1012, caller.ws.close_reason
    # The rest of the greeting came first: seconds of audio, where a reply cut at the signal
    # would have left at most the gateway's 60 ms lead.
    assert len(caller.audio) - at_signal >= 1000 * BYTES_PER_MS
    assert await exit_code(gateway) == 0
    reply = await pending
    assert reply.agent == "FraudAgent" and reply.status == "active"
    transcript = await session.transcript()
    spoken = [i for i in transcript if i["type"] in ("agent_turn", "greeting")]
    assert spoken[-1]["agent"] == "FraudAgent", spoken[-1]
    assert not spoken[-1].get("interrupted") and spoken[-1].get("heard_text") is None, spoken[-1]
    assert (await session.summary()).status == "active"  # handed back, not hung up
    # Played in full on the first connection: no reply needed a second attempt elsewhere.
    assert await speech_attempts(session) == [1] * len(await speech_attempts(session))

    # The caller dials again, through another gateway on other ports (another replica), and
    # carries on: the call follows the gateway that now holds it (workflows.lease).
    successor = await rig.gateway(LONG_GRACE)
    assert successor.media_address != gateway.media_address
    redialed = await rig.dial(successor, caller.call_id)
    await redialed.wait_event(lambda event: event["type"] == "timeline", STEP_TIMEOUT)
    async with asyncio.timeout(STEP_TIMEOUT):
        while (await session.state())["call"]["gateway_address"] != successor.media_address:
            await asyncio.sleep(0.05)
    farewell = await rig.say(session, GOODBYE)
    assert farewell.status == "completed"
    assert len(redialed.audio) > 0  # the goodbye was heard over the new connection
