"""One long call for the audit benchmarks: recorded on a fresh embedded dev server with
in-process workers (the offline model: two handoffs, then tool turns with the Concierge), and
exported once its workers stopped, so what reads it afterwards has only the history.
Loopback only; the recording is bounded in time and the server stops with it."""

from __future__ import annotations

import asyncio
import time
import uuid

from audit.bundle import CallBundle, export_call
from baton.call_client import CallSession
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from contracts.calls import CallInput
from runtime.temporal_client import connect
from workers.worker import run_workers

PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
OPENING = [
    "Someone used my card abroad, I think it's fraud",
    "Thanks, the fraud matter is handled, I have another question about my balance",
]
TOOL_TURNS = ["What's my checking balance?", "Show me my recent transactions"]
RECORDING_DEADLINE_S = 900


async def record_call(turns: int) -> CallBundle:
    """A real call of `turns` turns on a fresh embedded server, exported after its workers
    stopped (so nothing but the history is read)."""
    async with EmbeddedTemporal(DevServerOptions()) as server:
        client = await connect(server.address)
        stop = asyncio.Event()
        workers = asyncio.create_task(run_workers(client, ["calls", "llm", "tools"], stop))
        call = CallInput(call_id=f"bench-{uuid.uuid4().hex[:8]}", caller_profile=PROFILE)
        session = CallSession(client, call)
        started = time.perf_counter()
        try:
            await session.start()
            await session.until_greeted()
            for n in range(turns):
                text = OPENING[n] if n < len(OPENING) else TOOL_TURNS[n % len(TOOL_TURNS)]
                await asyncio.wait_for(session.say(text), 60)
                if time.perf_counter() - started > RECORDING_DEADLINE_S:
                    raise TimeoutError(f"recording passed {RECORDING_DEADLINE_S} s at turn {n}")
            await session.hang_up()
            await session.handle.result(follow_runs=True)
        finally:
            stop.set()
            await workers
        print(f"recorded {turns} turns in {time.perf_counter() - started:.1f} s")
        return await export_call(call.call_id, client=client)
