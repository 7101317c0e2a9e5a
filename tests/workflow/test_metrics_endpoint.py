"""`baton worker --metrics-port` as an SRE runs it: a real worker process on the session's dev
server, a scripted call with two handoffs, and its /metrics scraped before and after."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from temporalio.client import Client

from baton.call_client import CallSession
from baton.temporal_server import EmbeddedTemporal, free_port
from contracts.calls import CallInput

ROOT = Path(__file__).resolve().parents[2]
BATON = [sys.executable, "-m", "baton.cli"]
TOKEN = "scrape-token-for-tests"
PROFILE = {"name": "Alex Morgan", "client_id": "C1001", "phone": "+15551234567"}
#: Caller data that must never appear in a label (the call id is added per test).
CALLER_DATA = ("Alex", "Morgan", "C1001", "5551234567", "8832")


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(found: list[Sample], name: str, **labels: str) -> float:
    return sum(s.value for s in found if s.name == name and labels.items() <= s.labels.items())


@pytest.fixture
def worker(temporal_server: EmbeddedTemporal) -> Iterator[str]:
    """`baton worker` serving calls, llm and tools with its metrics port; yields its base URL."""
    port = free_port()
    env = {
        **os.environ,
        "BATON_TEMPORAL_ADDRESS": temporal_server.address,
        "BATON_METRICS_TOKEN": TOKEN,
        "PYTHONUNBUFFERED": "1",
    }
    process = subprocess.Popen(
        [*BATON, "worker", "--queues", "calls,llm,tools", "--metrics-port", str(port)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, "the worker exited"
            try:
                if get(f"{base}/readyz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            raise TimeoutError("the worker never became ready")
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def two_handoff_call(client: Client) -> str:
    call_id = f"m-{uuid.uuid4().hex[:10]}"
    session = CallSession(
        client, CallInput(call_id=call_id, scenario="banking", caller_profile=PROFILE)
    )
    await session.start()
    fraud = await session.say("Someone used my card abroad last night, I think it's fraud")
    assert fraud.agent == "FraudAgent"
    await session.say("Please block my card ending in 8832")
    back = await session.say(
        "Thanks, the fraud matter is handled. I have another question about my balance"
    )
    assert back.agent == "Concierge"
    return call_id


async def test_a_call_with_two_handoffs_moves_the_handoff_counter_by_two(
    worker: str, temporal_client: Client
) -> None:
    before = samples((await asyncio.to_thread(get, f"{worker}/metrics", TOKEN))[1])
    call_id = await two_handoff_call(temporal_client)
    # The SDK's core hands workflow records to the buffer on its own schedule (within about a
    # second); scrapes a little apart, as Prometheus would make them.
    for _ in range(50):
        status, text = await asyncio.to_thread(get, f"{worker}/metrics", TOKEN)
        assert status == 200
        after = samples(text)
        if value(after, "baton_handoffs_total") >= 2:
            break
        await asyncio.sleep(0.2)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    handoffs = "baton_handoffs_total"
    assert moved(handoffs) == 2
    banking = {"scenario": "banking", "outcome": "accepted"}
    assert moved(handoffs, source="Concierge", target="FraudAgent", type="announced", **banking)
    assert moved(handoffs, source="FraudAgent", target="Concierge", type="discrete", **banking)
    # Every model round and the card block were timed.
    assert moved("baton_turn_stage_seconds_count", stage="model") >= 3
    assert moved("baton_turn_stage_seconds_count", stage="tool") >= 1
    assert moved("baton_llm_tokens_total", kind="prompt") > 0
    # The SDK's own metrics share the endpoint.
    assert moved("temporal_workflow_task_schedule_to_start_latency_seconds_count") > 0
    assert value(after, "temporal_num_pollers", poller_type="activity_task") > 0
    # No label anywhere names the call or says anything about the caller.
    for sample in after:
        for label in sample.labels.values():
            assert call_id not in label and not any(bit in label for bit in CALLER_DATA), sample


async def test_metrics_need_the_token_and_health_paths_reveal_nothing(worker: str) -> None:
    assert (await asyncio.to_thread(get, f"{worker}/metrics"))[0] == 401
    assert (await asyncio.to_thread(get, f"{worker}/metrics", "wrong-token"))[0] == 401
    status, text = await asyncio.to_thread(get, f"{worker}/metrics", TOKEN)
    assert status == 200 and "baton_handoffs" in text
    assert await asyncio.to_thread(get, f"{worker}/healthz") == (200, "ok\n")
    assert await asyncio.to_thread(get, f"{worker}/readyz") == (200, "ready\n")


def test_the_gateway_serves_its_gauges_and_health_on_its_metrics_port(
    temporal_server: EmbeddedTemporal,
) -> None:
    port = free_port()
    env = {**os.environ, "BATON_TEMPORAL_ADDRESS": temporal_server.address}
    env.pop("BATON_METRICS_TOKEN", None)
    metrics = ["--metrics-port", str(port)]
    gateway = subprocess.Popen(
        [*BATON, "gateway", "--http-port", "0", "--media-address", "127.0.0.1:0", *metrics],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert gateway.poll() is None and time.monotonic() < deadline
            try:
                if get(f"{base}/readyz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.2)
        status, text = get(f"{base}/metrics")  # on loopback a token is optional
        assert status == 200
        found = samples(text)
        for transport in ("browser", "twilio", "acs"):
            assert value(found, "baton_active_calls", transport=transport) == 0
            assert value(found, "baton_websocket_connections", transport=transport) == 0
        assert value(found, "temporal_request_total") > 0  # its client's own calls
        assert get(f"{base}/healthz") == (200, "ok\n")
    finally:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(timeout=30)
        except subprocess.TimeoutExpired:
            gateway.kill()
            gateway.wait()
