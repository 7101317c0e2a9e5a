"""Benchmark whole calls on the embedded stack; prints figures, asserts nothing.

    python -m benchmarks.bench_call [--quick]

One run measures, against an in-process baseline of the same providers (offline policy, the
same tool handlers, the same HandoffService, no Temporal):
* turn orchestration overhead: Baton turn latency minus the in-process turn, p50/p95;
* handoff gap: the LLM's handoff tool call -> the target's first speech request (from history
  timestamps), announced and discrete;
* capacity: concurrent calls at one turn every 6 s, rising until p95 overhead passes 150 ms;
* history bytes per turn at turn 10 and turn 500 of one call;
* worker memory per cached call (RSS of a separate `baton worker` process).
Everything talks to loopback only and is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml
from temporalio.client import Client

from activities.agent_reply import AgentReplyActivity, build_turn_input
from activities.business_tools import execute_tool
from activities.snapshot import build_snapshot
from baton.call_client import CallSession
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from benchmarks.stats import line, pct
from contracts.agent_reply import AgentReplyRequest, ChatMessage
from contracts.calls import CallInput
from contracts.tools import ToolRequest
from registries.loading import SHIPPED_REGISTRY, load_registry
from runtime.logs import configure_logging
from runtime.temporal_client import connect

PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
TOOL_TURN = "What's my checking balance?"
PLAIN_TURN = "Hello, how are you?"
#: Calls being set up at once; a real contact center does not connect 400 callers in a second.
STARTING = asyncio.Semaphore(25)


# --- in-process baseline: the same providers, called directly ------------------------------


async def in_process_turn(utterance: str) -> float:
    """One Concierge turn without Temporal: model, tools, model again, as the workflow does."""
    registry = load_registry()
    snapshot = build_snapshot(registry, "banking")
    brief = snapshot.agents["Concierge"]
    model = AgentReplyActivity()
    system_vars = {"session_profile": PROFILE, "client_id": "C1001"}
    start = time.perf_counter()
    messages = [ChatMessage(role="user", content=utterance)]
    for _ in range(5):
        request = AgentReplyRequest(
            call_id="baseline",
            agent=brief.config,
            template_vars=brief.template_vars,
            system_vars=system_vars,
            handoff_instructions=brief.handoff_instructions,
            tools=brief.tools,
            routes=brief.routes,
            messages=messages,
        )
        result = await model.model.generate(build_turn_input(request))
        if not result.tool_calls:
            break
        messages.append(ChatMessage(role="assistant", tool_calls=result.tool_calls))
        for call in result.tool_calls:
            outcome = execute_tool(
                ToolRequest(
                    call_id="baseline",
                    tool=call.name,
                    arguments=json.loads(call.arguments),
                    idempotency_key=uuid.uuid4().hex,
                    system_vars=system_vars,
                )
            )
            messages.append(
                ChatMessage(role="tool", tool_call_id=call.id, content=str(outcome.result))
            )
    return (time.perf_counter() - start) * 1000


# --- Baton ---------------------------------------------------------------------------------


async def new_call(client: Client, **fields: object) -> CallSession:
    call = CallInput(
        call_id=f"bench-{uuid.uuid4().hex[:10]}",
        scenario="banking",
        caller_profile=PROFILE,
        **fields,
    )
    session = CallSession(client, call)
    async with STARTING:
        await session.start()
        # Polled gently: hundreds of calls polling fast would be the server's main load.
        await session.wait_for(lambda items: any(i["type"] == "greeting" for i in items), 60, 0.25)
    return session


async def timed_turn(session: CallSession, text: str) -> float:
    start = time.perf_counter()
    await session.say(text)
    return (time.perf_counter() - start) * 1000


async def overhead(client: Client, turns: int) -> None:
    print("turn orchestration overhead (text channel, offline policy):")
    for label, text in (
        ("plain turn (1 model call)", PLAIN_TURN),
        ("tool turn (model, tool, model)", TOOL_TURN),
    ):
        baseline = [await in_process_turn(text) for _ in range(turns)]
        session = await new_call(client)
        baton = [await timed_turn(session, text) for _ in range(turns)]
        await session.hang_up()
        line(f"{label}: in-process", baseline)
        line(f"{label}: Baton", baton)
        base50 = statistics.median(baseline)
        over = [b - base50 for b in baton]
        line(f"{label}: overhead", over)


async def handoff_gaps(client: Client, calls: int, registry: Path) -> None:
    """Gap from the model's handoff call to the target's first speech request, from history."""
    announced: list[float] = []
    discrete: list[float] = []
    for _ in range(calls):
        session = await new_call(
            client, channel="browser", gateway_address="127.0.0.1:9", registry=str(registry)
        )
        await session.say("Someone used my card abroad, I think it's fraud")
        await session.say("Thanks, the fraud matter is handled, I have another request")
        await session.hang_up()
        events = (await session.handle.fetch_history()).events
        names: dict[int, str] = {}
        gaps: list[float] = []
        handoff_called_at: float | None = None
        for event in events:
            when = event.event_time.ToMilliseconds()
            if event.HasField("activity_task_scheduled_event_attributes"):
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                names[event.event_id] = name
                if name == "synthesize_speech" and handoff_called_at is not None:
                    gaps.append(when - handoff_called_at)
                    handoff_called_at = None
            elif event.HasField("activity_task_completed_event_attributes"):
                done = event.activity_task_completed_event_attributes
                codec = client.data_converter.payload_codec
                payloads = list(done.result.payloads)
                if codec is not None and payloads:  # history holds ciphertext
                    payloads = await codec.decode(payloads)
                if (
                    names.get(done.scheduled_event_id) == "generate_agent_reply"
                    and payloads
                    and (b"handoff_to_agent" in payloads[0].data)
                ):
                    handoff_called_at = when
        # The script hands off twice: Concierge -> FraudAgent (announced), then back (discrete).
        if len(gaps) >= 2:
            announced.append(gaps[0])
            discrete.append(gaps[1])
    print("handoff gap (model's handoff call -> target's first speech request):")
    line("announced (target greets)", announced)
    line("discrete (target answers at once)", discrete)


async def paced_caller(
    session: CallSession,
    text: str,
    offset: float,
    deadline: float,
    samples: list[float],
    baseline: float,
) -> None:
    """One caller saying `text` every 6 s until `deadline`, recording turn overhead."""
    await asyncio.sleep(offset)
    while time.monotonic() < deadline:
        started = time.monotonic()
        samples.append(await timed_turn(session, text) - baseline)
        await asyncio.sleep(max(0.0, 6.0 - (time.monotonic() - started)))


async def capacity(
    client: Client, label: str, text: str, levels: list[int], seconds: float
) -> None:
    baseline = statistics.median([await in_process_turn(text) for _ in range(20)])
    print(f"capacity, {label} every 6 s per call (offline policy):")
    for level in levels:
        sessions = await asyncio.gather(*(new_call(client) for _ in range(level)))
        samples: list[float] = []
        deadline = time.monotonic() + seconds
        await asyncio.gather(
            *(
                paced_caller(s, text, 6.0 * i / level, deadline, samples, baseline)
                for i, s in enumerate(sessions)
            )
        )
        await asyncio.gather(*(s.hang_up() for s in sessions))
        line(f"{level} concurrent calls: overhead", samples)
        if pct(samples, 0.95) > 150:
            print(f"  p95 overhead passed 150 ms at {level} calls")
            return
    print(f"  p95 overhead stayed under 150 ms up to {levels[-1]} calls")


async def history_growth(client: Client, turns: int) -> None:
    session = await new_call(client, max_history_events=100_000)
    sizes: dict[int, int] = {}
    for turn in range(1, turns + 1):
        if turn in (10, turns):
            before = (await session.handle.describe()).raw_description
            await session.say(TOOL_TURN)
            after = (await session.handle.describe()).raw_description
            sizes[turn] = (
                after.workflow_execution_info.history_size_bytes
                - before.workflow_execution_info.history_size_bytes
            )
        else:
            await session.say(TOOL_TURN)
    await session.hang_up()
    print("history bytes per turn (tool turn, one call, no continue-as-new):")
    print(
        f"  turn 10: {sizes[10]} bytes   turn {turns}: {sizes[turns]} bytes   "
        f"ratio {sizes[turns] / sizes[10]:.2f}"
    )


def rss_kb(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1])
    return 0


def start_worker(address: str, queues: str = "calls,llm,speech,tools") -> subprocess.Popen[bytes]:
    """A `baton worker` process, returned once it polls."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "worker", "--address", address, "--queues", queues],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert worker.stdout is not None
    worker.stdout.readline()
    return worker


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    worker.terminate()
    worker.wait(timeout=30)


async def worker_memory(address: str, calls: int) -> None:
    worker = start_worker(address)
    try:
        client = await connect(address)
        warm = await new_call(client)
        await warm.say(TOOL_TURN)
        before = rss_kb(worker.pid)
        sessions = [await new_call(client) for _ in range(calls)]
        for session in sessions:
            await session.say(TOOL_TURN)
        after = rss_kb(worker.pid)
        print("worker memory per cached call (separate worker process):")
        print(
            f"  {calls} calls: RSS {before} KB -> {after} KB, "
            f"{(after - before) / calls:.0f} KB per call"
        )
        await asyncio.gather(*(s.hang_up() for s in [warm, *sessions]))
    finally:
        stop_worker(worker)


def fast_voices_registry(root: Path) -> Path:
    """The shipped registry with every voice at 10x speed: playback pacing is not what the
    handoff-gap figure measures, and slow pacing would only make the run long."""
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    defaults = registry / "agentstore" / "_defaults.yaml"
    data = yaml.safe_load(defaults.read_text())
    data.setdefault("voice", {})["rate"] = "+900%"
    defaults.write_text(yaml.safe_dump(data))
    for agent_file in (registry / "agentstore").glob("*/agent.yaml"):
        agent = yaml.safe_load(agent_file.read_text())
        if isinstance(agent.get("voice"), dict):
            agent["voice"]["rate"] = "+900%"
        agent_file.write_text(yaml.safe_dump(agent))
    return registry


async def main(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as data:
        os.environ["BATON_DATA_DIR"] = data
        options = DevServerOptions(db_filename=Path(data) / "temporal.sqlite3")
        server = await EmbeddedTemporal(options).astart()
        try:
            await worker_memory(server.address, 50 if quick else 200)
            # As deployed: workflows in one process, activities in another, so the
            # benchmark's own client never competes with the workers for a GIL.
            workers = [
                start_worker(server.address, "calls"),
                start_worker(server.address, "llm,speech,tools"),
            ]
            try:
                client = await connect(server.address)
                await overhead(client, 20 if quick else 100)
                await handoff_gaps(client, 5 if quick else 20, fast_voices_registry(Path(data)))
                await history_growth(client, 60 if quick else 500)
                seconds = 12 if quick else 30
                plain_levels = [50, 100] if quick else [100, 200, 300, 400]
                tool_levels = [25, 50] if quick else [50, 100, 150, 200]
                # Tool turns first: the plain series ends by overloading the server on purpose.
                await capacity(client, "a tool turn", TOOL_TURN, tool_levels, seconds)
                await capacity(client, "a plain turn", PLAIN_TURN, plain_levels, seconds)
            finally:
                for worker in workers:
                    stop_worker(worker)
        finally:
            server.stop()


if __name__ == "__main__":
    # A SIGTERM still runs the cleanup below, so the embedded server never outlives the bench.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description="Baton call benchmark")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    configure_logging("ERROR")
    asyncio.run(main(parser.parse_args().quick))
