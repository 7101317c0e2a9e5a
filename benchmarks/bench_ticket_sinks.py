"""What a ticket webhook costs the caller: the escalating turn's wait with the SQLite sink
alone, with a webhook that answers, and with a webhook that is down (503 to every POST).

An embedded Temporal server and workers in this process, text calls on the shipped banking
scenario, and the loopback receiver of tests/fakes (it checks each signature). For each mode
the bench times the caller's "I want to speak to a human agent please" turn, from sending it
to the reply, and for a webhook that answers, until the receiver has the ticket. It prints
medians with the ratio to the SQLite-only turn measured in the same run, asserts nothing,
talks only to loopback and stops itself (calls left retrying are terminated).

    python -m benchmarks.bench_ticket_sinks [--calls 5]
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
from benchmarks.stats import pct
from contracts.calls import CallInput
from runtime.temporal_client import connect
from tests.fakes.ticket_webhook import TicketWebhookReceiver
from workers.worker import run_workers

SECRET = "bench-only-webhook-secret-0123456789abcdef"
ASK = "I want to speak to a human agent please"
PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
MODES = ("sqlite only", "both, webhook answers", "both, webhook down (503)")
TIMEOUT = 60.0


async def escalate_once(session: CallSession) -> float:
    """Seconds from the caller's request for a person to the reply that says where they go."""
    await session.start()
    await session.wait_for(lambda items: any(i["type"] == "greeting" for i in items))
    started = time.monotonic()
    reply = await asyncio.wait_for(session.say(ASK), TIMEOUT)
    took = time.monotonic() - started
    if reply.status == "active":
        raise RuntimeError("the call did not escalate")
    return took


def new_session(client: Client) -> CallSession:
    call_id = f"bench-{uuid.uuid4().hex[:8]}"
    call = CallInput(call_id=call_id, scenario="banking", caller_profile=PROFILE)
    return CallSession(client, call)


async def until_delivered(receiver: TicketWebhookReceiver, ticket_id: str) -> None:
    async with asyncio.timeout(TIMEOUT):
        while ticket_id not in receiver.tickets:
            await asyncio.sleep(0.01)


async def run(calls: int, data: Path) -> None:
    server = await EmbeddedTemporal(
        DevServerOptions(db_filename=data / "temporal.sqlite3", tuned=True)
    ).astart()
    stop = asyncio.Event()
    workers: asyncio.Task[None] | None = None
    try:
        client = await connect(server.address)
        workers = asyncio.create_task(run_workers(client, ["calls", "llm", "tools"], stop))
        turns: dict[str, list[float]] = {mode: [] for mode in MODES}
        delivered: list[float] = []
        async with TicketWebhookReceiver(SECRET) as receiver:
            os.environ["BATON_TICKET_WEBHOOK_URL"] = receiver.url
            os.environ["BATON_TICKET_WEBHOOK_SECRET"] = SECRET
            await escalate_once(new_session(client))  # warm-up: caches, first connections
            # Modes take turns, so a burst of load on the machine falls on all of them alike.
            for _ in range(calls):
                for mode in MODES:
                    os.environ["BATON_TICKET_SINK"] = "sqlite" if mode == MODES[0] else "both"
                    receiver.always = 503 if "down" in mode else None
                    session = new_session(client)
                    started = time.monotonic()
                    turns[mode].append(await escalate_once(session))
                    if mode == MODES[1]:
                        await until_delivered(receiver, session.workflow_id)
                        delivered.append(time.monotonic() - started)
                    if "down" in mode:
                        await session.handle.terminate("bench over; the webhook stays down")
        report(turns, delivered)
    finally:
        stop.set()
        if workers is not None:
            await asyncio.wait_for(workers, TIMEOUT)
        server.stop()


def report(turns: dict[str, list[float]], delivered: list[float]) -> None:
    base = statistics.median(turns[MODES[0]])
    print("the escalating turn, from the caller's request to the reply, seconds")
    print(f"{'ticket sinks':<28}{'p50':>8}{'p95':>8}{'x sqlite':>10}")
    for mode, samples in turns.items():
        p50 = statistics.median(samples)
        print(f"{mode:<28}{p50:>8.3f}{pct(samples, 0.95):>8.3f}{p50 / base:>9.2f}x")
    if delivered:
        print(
            f"webhook answering: ticket at the receiver {statistics.median(delivered):.3f} s "
            "(median) after the call started"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5, help="calls per mode (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        os.environ["BATON_DATA_DIR"] = data
        asyncio.run(run(args.calls, Path(data)))


if __name__ == "__main__":
    # A SIGTERM still runs the cleanup, so the embedded server never outlives the bench.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
