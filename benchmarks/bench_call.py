"""Benchmark whole calls on the embedded stack; prints figures, asserts nothing.

    python -m benchmarks.bench_call [--quick] [--steps memory,overhead,handoff,history,
        capacity,scale]

One run measures, against an in-process baseline of the same providers (offline policy, the
same tool handlers, the same HandoffService, no Temporal):
* turn orchestration overhead: Baton turn latency minus the in-process turn, p50/p95;
* handoff gap: the LLM's handoff tool call -> the target's first speech request (from history
  timestamps), announced and discrete;
* capacity: concurrent calls at one turn every 6 s, rising until p95 overhead passes 150 ms;
* history bytes per turn at turn 10 and turn 500 of one call;
* worker memory per cached call (RSS of a separate `baton worker` process);
* scale-out: throughput and p95 of the same load on four worker layouts (scale_out.py).
Every latency figure is also printed as a multiple of the bare Temporal floor (an Update
running one no-op activity, benchmarks/floor.py) measured on the same server in the same run,
interleaved with it, and every step prints the machine's CPU steal and load over its window:
shared machines move absolute figures, the ratios travel. Everything talks to loopback only,
is bounded in time, and stops every process it started (they also die with the bench).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from baton.call_client import CallSession
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from benchmarks.call_baseline import PROFILE, fast_voices_registry, in_process_turn
from benchmarks.floor import Floor, floor_throughput, ratio
from benchmarks.machine import MachineWindow
from benchmarks.scale_out import end_calls, pinging, scale_out
from benchmarks.stats import line, pct
from benchmarks.worker_processes import WorkerProcess, stop_all
from contracts.calls import CallInput
from runtime.logs import configure_logging
from runtime.temporal_client import connect

TOOL_TURN = "What's my checking balance?"
PLAIN_TURN = "Hello, how are you?"
#: Calls being set up at once; a real contact center does not connect 400 callers in a second.
STARTING = asyncio.Semaphore(25)


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


async def overhead(client: Client, floor: Floor, turns: int) -> None:
    print("turn orchestration overhead (text channel, offline policy; floor interleaved):")
    for label, text in (
        ("plain turn (1 model call)", PLAIN_TURN),
        ("tool turn (model, tool, model)", TOOL_TURN),
    ):
        baseline = [await in_process_turn(text) for _ in range(turns)]
        session = await new_call(client)
        window = MachineWindow()
        baton: list[float] = []
        floor_samples: list[float] = []
        for _ in range(turns):  # turn, floor, turn, floor: the machine drifts under both alike
            baton.append(await timed_turn(session, text))
            floor_samples.append(await floor.ping())
        await session.hang_up()
        line(f"{label}: in-process", baseline)
        line(f"{label}: Baton", baton)
        line(f"{label}: floor", floor_samples)
        base50 = statistics.median(baseline)
        over = [b - base50 for b in baton]
        line(f"{label}: overhead", over)
        floor50, floor95 = statistics.median(floor_samples), pct(floor_samples, 0.95)
        print(
            f"  {label}: overhead p50 {ratio(statistics.median(over), floor50)}, "
            f"p95 {ratio(pct(over, 0.95), floor95)}; whole turn p50 "
            f"{ratio(statistics.median(baton), floor50)}   {window.summary()}"
        )


async def handoff_gaps(client: Client, floor: Floor, calls: int, registry: Path) -> None:
    """Gap from the model's handoff call to the target's first speech request, from history."""
    announced: list[float] = []
    discrete: list[float] = []
    floor_samples: list[float] = []
    window = MachineWindow()
    for _ in range(calls):
        floor_samples += await floor.sample(5)
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
    line("floor (interleaved between calls)", floor_samples)
    floor50 = statistics.median(floor_samples)
    if announced and discrete:
        print(
            f"  p50 gap: announced {ratio(statistics.median(announced), floor50)}, "
            f"discrete {ratio(statistics.median(discrete), floor50)}   {window.summary()}"
        )


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
    client: Client,
    floor: Floor,
    label: str,
    text: str,
    levels: list[int],
    seconds: float,
) -> None:
    baseline = statistics.median([await in_process_turn(text) for _ in range(20)])
    floor_rate = await floor_throughput(floor)
    print(
        f"capacity, {label} every 6 s per call (offline policy; floor pinged under the same "
        f"load; idle floor throughput {floor_rate:.0f} Updates/s):"
    )
    carried = 0
    for level in levels:
        sessions = list(await asyncio.gather(*(new_call(client) for _ in range(level))))
        samples: list[float] = []
        floor_samples: list[float] = []
        window = MachineWindow()
        deadline = time.monotonic() + seconds
        pinger = asyncio.create_task(pinging(floor, deadline, floor_samples))
        await asyncio.gather(
            *(
                paced_caller(s, text, 6.0 * i / level, deadline, samples, baseline)
                for i, s in enumerate(sessions)
            )
        )
        await pinger
        await end_calls(sessions)
        line(f"{level} concurrent calls: overhead", samples)
        print(
            f"  {'':<46} p95 {ratio(pct(samples, 0.95), pct(floor_samples, 0.95))} "
            f"(floor p95 {pct(floor_samples, 0.95):.1f} ms under this load)   {window.summary()}"
        )
        if pct(samples, 0.95) > 150:
            print(f"  p95 overhead passed 150 ms at {level} calls")
            break
        carried = level
    if not carried:
        print(f"  capacity: below the first level ({levels[0]} calls) on this machine now")
        return
    # A call turns every 6 s; a turn is one Update, as one floor ping is.
    turns_per_s = carried / 6.0
    print(
        f"  capacity: {carried} calls = {turns_per_s:.1f} turns/s under the line, "
        f"{turns_per_s / floor_rate:.2f}x the floor's Updates/s"
    )


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


async def worker_memory(address: str, calls: int) -> None:
    # Text calls use no speech: a speech worker would only add its model to the RSS.
    worker = await asyncio.to_thread(WorkerProcess, address, "calls,llm,tools")
    try:
        client = await connect(address)
        # A few calls first: the worker's first calls load code and caches that stay.
        warm = [await new_call(client) for _ in range(5)]
        for session in warm:
            await session.say(TOOL_TURN)
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
        # Every call closed before the worker goes: its last tasks are not left to the next step.
        await end_calls([*warm, *sessions])
    finally:
        code = await asyncio.to_thread(worker.stop)
        print(f"  worker stopped with exit code {code} (0: drained)")


STEPS = ("memory", "overhead", "handoff", "history", "capacity", "scale")


async def run_steps(address: str, data: Path, quick: bool, steps: set[str]) -> None:
    client = await connect(address)
    floor = Floor(client)
    await floor.start()
    try:
        if "memory" in steps:
            await worker_memory(address, 50 if quick else 200)
        if steps & {"overhead", "handoff", "history", "capacity"}:
            # As deployed: workflows in one process, activities in another, so the
            # benchmark's own client never competes with the workers for a GIL.
            workers: list[WorkerProcess] = []
            try:
                for queues in ("calls", "llm,speech,tools"):
                    workers.append(await asyncio.to_thread(WorkerProcess, address, queues))
                await layered_steps(client, floor, data, quick, steps)
            finally:
                await asyncio.to_thread(stop_all, workers)
        if "scale" in steps:
            await scale_out(
                address,
                floor,
                lambda: new_call(client),
                TOOL_TURN,
                callers=20 if quick else 40,
                seconds=10 if quick else 20,
                rounds=1 if quick else 2,
            )
    finally:
        await floor.stop()


async def layered_steps(
    client: Client, floor: Floor, data: Path, quick: bool, steps: set[str]
) -> None:
    if "overhead" in steps:
        await overhead(client, floor, 20 if quick else 100)
    if "handoff" in steps:
        registry = fast_voices_registry(data)
        await handoff_gaps(client, floor, 5 if quick else 20, registry)
    if "history" in steps:
        await history_growth(client, 60 if quick else 500)
    if "capacity" in steps:
        seconds = 12 if quick else 30
        plain_levels = [50, 100] if quick else [100, 200, 300, 400]
        tool_levels = [25, 50] if quick else [50, 100, 150, 200]
        # Tool turns first: the plain series ends by overloading the server on purpose.
        await capacity(client, floor, "a tool turn", TOOL_TURN, tool_levels, seconds)
        await capacity(client, floor, "a plain turn", PLAIN_TURN, plain_levels, seconds)


async def main(quick: bool, steps: set[str]) -> None:
    with tempfile.TemporaryDirectory() as data:
        os.environ["BATON_DATA_DIR"] = data
        options = DevServerOptions(db_filename=Path(data) / "temporal.sqlite3")
        server = await EmbeddedTemporal(options).astart()
        window = MachineWindow()
        await asyncio.sleep(1.0)
        print(f"machine before the run, over 1 s: {window.summary()}")
        try:
            await run_steps(server.address, Path(data), quick, steps)
        finally:
            server.stop()


def parse_steps(text: str) -> set[str]:
    steps = {step.strip() for step in text.split(",") if step.strip()}
    unknown = steps - set(STEPS)
    if unknown or not steps:
        raise argparse.ArgumentTypeError(f"steps are {', '.join(STEPS)}")
    return steps


if __name__ == "__main__":
    # A SIGTERM still runs the cleanup below, so the embedded server never outlives the bench.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description="Baton call benchmark")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    parser.add_argument(
        "--steps",
        type=parse_steps,
        default=set(STEPS),
        help=f"comma-separated, from {','.join(STEPS)} (default: all)",
    )
    configure_logging("ERROR")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.quick, arguments.steps))
