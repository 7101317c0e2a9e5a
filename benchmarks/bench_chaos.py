"""Chaos soak: many calls on loopback while processes are killed; prints figures, asserts nothing.

    python -m benchmarks.bench_chaos [--calls 200] [--voice-calls 4] [--minutes 10] [--quick]
                                     [--faults calls,llm,speech,tools,gateway,server] [--logs DIR]
                                     [--calls-workers 1]

The stack (`benchmarks.chaos_stack`): the dev server, a worker process per queue, a chat model
on loopback with a model's latency, and a `block_card` with a backend's. `--calls` callers talk
at once, each placing calls back to back (the fraud desk, a card blocked, small talk, goodbye)
with a pause to think before each line, until `--minutes` have passed; then the calls still
running finish.

`--voice-calls` more callers do the same through a `baton gateway` process and a `speech`
worker (benchmarks/chaos_voice.py): they hear each reply as audio, and their stall ends with
the first audio after it. Only a few: 200 voice calls need more CPU for speech than a 2-core
machine has, and a few are enough for every gateway and speech fault to stall some.

Meanwhile a scheduler kills, every `--fault-every` seconds (30 to 60), one of the `calls`,
`llm`, `speech` and `tools` workers, the gateway or the Temporal server with SIGKILL, and
starts its replacement at once (the server on the same port and file, the gateway on the same
ports: its callers redial). The kinds come in random order, each once per round, so a short
run meets them all. A gateway or speech fault stalls only voice calls, so only theirs count.
With `--calls-workers 2` the calls are shared by two `calls` workers as a deployment with a
spare runs them; a fault kills one, and its calls move to the survivor and the replacement.

Printed at the end (`benchmarks.chaos_report`): calls placed, completed, ended otherwise and
stuck; utterances lost, duplicated and answered with silence (each call's transcript read
back); block_card applied once per tool call; turn latency away from faults; the CPU each kind
of process used; and per fault kind the stall p50/p95/max, from the replacement being up to
each stalled call's next reply (its next audible step).

Everything is bounded: the run, the drain after it, every utterance (a reply that never comes
marks the call stuck) and every process start. It talks only to loopback and stops itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client, WorkflowUpdateFailedError

from baton.call_client import CallSession, new_utterance_id
from baton.temporal_server import EmbeddedTemporal
from benchmarks.chaos_report import (
    FAULT_KINDS,
    VOICE_KINDS,
    CallRecord,
    ChaosFigures,
    Turn,
    check_call,
    cpu_seconds,
    sample_load,
)
from benchmarks.chaos_stack import ChaosStack, chaos_stack
from benchmarks.chaos_voice import VoiceLine, voice_turn
from contracts.calls import CallInput
from runtime.logs import configure_logging
from runtime.temporal_client import connect
from tests.faults.callers import retrying, say_until_answered
from tests.faults.checks import Transcript
from tests.faults.processes import (
    Fault,
    WorkerFleet,
    kill_and_restart_server,
)
from tests.faults.voice import GatewayProcess

PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
#: One call: to the fraud desk (announced handoff), a card blocked (a mutating tool between two
#: model calls), small talk (one model call each), goodbye (end_call: the call completes).
SCRIPT = (
    "Someone used my card abroad last night, I think it's fraud",
    "It was an electronics store in Bucharest",
    "Please block my card ending in 8832",
    "Will I get a replacement card?",
    "That's all, thank you, goodbye",
)
WORKER_KINDS = ("calls", "llm", "speech", "tools")
#: A reply later than this marks the call stuck (far beyond any timeout a fault waits out).
UTTERANCE_DEADLINE = 120.0
#: Reading a finished call's transcript back (a query: a `calls` worker replays the call).
AUDIT_DEADLINE = 60.0
#: Calls set up at once; a contact center does not connect its callers in the same second.
STARTING = 20


@dataclass
class Settings:
    calls: int
    minutes: float
    fault_every: tuple[float, float]
    think: tuple[float, float]
    model_delay_ms: float
    tool_delay_ms: float
    drain: float
    seed: int | None
    #: The kinds of process the scheduler kills (a subset of FAULT_KINDS).
    faults: tuple[str, ...] = FAULT_KINDS
    #: Keep the processes' logs here (they go with the run's temporary folder otherwise).
    logs: Path | None = None
    #: Callers on the gateway, besides `calls` text callers.
    voice_calls: int = 0
    #: `calls` worker processes sharing the calls; a fault kills one of them.
    calls_workers: int = 1


class Chaos(ChaosFigures):
    """The callers and the fault scheduler; what they record is `ChaosFigures`'."""

    def __init__(
        self,
        settings: Settings,
        client: Client,
        registry: Path,
        gateway: GatewayProcess | None = None,
    ) -> None:
        super().__init__(settings.faults)
        self.settings = settings
        self.client = client
        self.registry = registry
        self.gateway = gateway
        self.starting = asyncio.Semaphore(STARTING)

    # -- callers ---------------------------------------------------------------------------

    async def caller(self, slot: int, until: float, *, voice: bool = False) -> None:
        # Spread the first calls over the first pause to think, as callers arrive over time.
        await asyncio.sleep(self.settings.think[1] * slot / self.settings.calls)
        while time.monotonic() < until:
            try:
                await self.one_call(voice)
            except Exception as exc:  # reported at the end; the caller places its next call
                self.caller_errors[f"{type(exc).__name__}: {exc}"[:120]] += 1

    async def one_call(self, voice: bool) -> None:
        call = CallInput(
            call_id=f"chaos-{uuid.uuid4().hex[:12]}",
            caller_profile=PROFILE,
            registry=str(self.registry),
        )
        session = CallSession(self.client, call)
        record = CallRecord(call.call_id, voice=voice)
        self.records.append(record)
        line = None
        if voice and self.gateway:
            line = VoiceLine(self.gateway, call.call_id, back=record.back)
        try:
            async with self.starting:
                if line is None:
                    await retrying(session.start, UTTERANCE_DEADLINE)
                else:  # the gateway starts the call; its greeting is the first audio
                    await line.dial(time.monotonic() + UTTERANCE_DEADLINE)
                    if not await line.heard_anything(UTTERANCE_DEADLINE):
                        raise TimeoutError
        except (TimeoutError, OSError):
            record.stuck = "never started"
            if line is not None:
                await line.close()
            return
        try:
            await self.talk(session, record, line)
        finally:
            if line is not None:
                await line.close()

    async def talk(self, session: CallSession, record: CallRecord, line: VoiceLine | None) -> None:
        before_goodbye: Transcript | None = None
        for n, text in enumerate(SCRIPT):
            await asyncio.sleep(random.uniform(*self.settings.think))
            if n == len(SCRIPT) - 1:
                # Read while the call is live: a `calls` worker answers from its cache, where
                # a query after the call has closed makes it replay the whole call, which at
                # hundreds of calls would be a good part of the load this bench measures.
                before_goodbye = await self.read_transcript(session, record)
                if before_goodbye is None:
                    return
            uid = new_utterance_id()
            sent = time.monotonic()
            try:
                if line is None:
                    reply = await say_until_answered(session, text, uid, UTTERANCE_DEADLINE)
                else:
                    sent, reply, heard = await voice_turn(
                        line, session, text, uid, UTTERANCE_DEADLINE
                    )
            except TimeoutError:
                record.said.append(uid)
                record.stuck = f"no reply in {UTTERANCE_DEADLINE:.0f} s"
                break
            except WorkflowUpdateFailedError:
                # The validator refused it: the call ended meanwhile (an escalation, say).
                record.refused += 1
                break
            record.said.append(uid)
            record.last_reply = time.monotonic()
            if line is not None:  # a voice turn's reply is its first audio
                if heard is None:
                    record.unheard.append(sent)
                record.last_reply = heard or record.last_reply
            record.turns.append(Turn(sent, record.last_reply))
            if reply.status != "active":
                break
        else:
            if reply.status == "completed" and before_goodbye is not None:
                # Completed by the goodbye, whose own reply shows it answered (once: a reply
                # is per utterance id); the rest of the call is in the transcript read before.
                record.status = "completed"
                check_call(record, before_goodbye, record.said[:-1])
                record.silent += 0 if reply.text else 1
                return
            if reply.status == "active":  # the goodbye did not end the call: hang up
                await retrying(lambda: session.hang_up("the caller said goodbye"), 30)
        await self.audit(session, record)

    async def read_transcript(self, session: CallSession, record: CallRecord) -> Transcript | None:
        try:
            return await retrying(session.transcript, AUDIT_DEADLINE)
        except Exception as exc:  # a call that cannot be read back is reported, not fatal
            record.stuck = record.stuck or f"not read back: {type(exc).__name__}"
            return None

    async def audit(self, session: CallSession, record: CallRecord) -> None:
        """Read a call that ended back (its outcome and transcript) and check it."""
        try:
            if record.stuck:
                await retrying(lambda: session.hang_up("stuck in the chaos bench"), 30)
            outcome = await retrying(session.handle.result, AUDIT_DEADLINE)
        except Exception as exc:
            record.stuck = record.stuck or f"no outcome: {type(exc).__name__}"
            return
        transcript = await self.read_transcript(session, record)
        if transcript is None:
            return
        record.status = str(outcome["status"])
        record.end_reason = str(outcome.get("end_reason") or "")
        check_call(record, transcript, record.said)

    # -- faults ----------------------------------------------------------------------------

    async def inject_faults(
        self, until: float, fleet: WorkerFleet, server: EmbeddedTemporal
    ) -> None:
        low, high = self.settings.fault_every
        deck: list[str] = []
        while True:
            pause = random.uniform(low, high)
            if time.monotonic() + pause > until:
                return
            await asyncio.sleep(pause)
            # Random order, but every kind once per round: a short run still meets them all.
            if not deck:
                deck = random.sample(self.settings.faults, len(self.settings.faults))
            kind = deck.pop()
            self.cpu[kind] += cpu_seconds(self.pid_of(kind, fleet, server))
            try:
                if kind == "server":
                    fault = await kill_and_restart_server(server)
                elif kind == "gateway":
                    assert self.gateway is not None
                    killed = self.gateway.kill()
                    up_at = (await self.gateway.start()).up_at
                    assert up_at is not None
                    fault = Fault(kind, killed.at, killed.mono, up_at)
                else:
                    fault = await fleet.replace(kind)
            except Exception as exc:  # a replacement that would not start is a finding
                self.fault_errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            self.faults.append(fault)
            print(
                f"  {time.strftime('%H:%M:%S')} killed {kind}, replacement up after "
                f"{fault.outage:.2f} s",
                flush=True,
            )

    def pid_of(self, kind: str, fleet: WorkerFleet, server: EmbeddedTemporal) -> int | None:
        if kind == "server":
            return server.pid
        if kind == "gateway":
            process = self.gateway.process if self.gateway else None
            return process.pid if process else None
        return fleet[kind].pid


async def run(settings: Settings) -> None:
    if settings.seed is not None:
        random.seed(settings.seed)
    with tempfile.TemporaryDirectory(prefix="baton-chaos-") as folder:
        data = Path(folder)
        os.environ["BATON_DATA_DIR"] = folder
        logs = settings.logs or data
        logs.mkdir(parents=True, exist_ok=True)
        kinds = (
            WORKER_KINDS
            if settings.voice_calls
            else tuple(kind for kind in WORKER_KINDS if kind not in VOICE_KINDS)
        )
        duration = settings.minutes * 60
        async with chaos_stack(
            data,
            logs,
            kinds=kinds,
            voice=bool(settings.voice_calls),
            model_delay_ms=settings.model_delay_ms,
            tool_delay_ms=settings.tool_delay_ms,
            lifetime=duration + settings.drain + 300,
            warnings=settings.logs is not None,
            calls_workers=settings.calls_workers,
        ) as stack:
            await soak(settings, stack, duration)


async def soak(settings: Settings, stack: ChaosStack, duration: float) -> None:
    """The callers and the fault scheduler for `duration`, the drain, then the figures."""
    server, fleet = stack.server, stack.fleet
    client = await connect(server.address)
    chaos = Chaos(settings, client, stack.registry, stack.gateway)
    low, high = settings.fault_every
    print(
        f"chaos: {settings.calls} text and {settings.voice_calls} voice calls at once "
        f"for {settings.minutes:g} min on loopback, a fault every {low:g}-{high:g} s "
        f"among {', '.join(settings.faults)}; {settings.calls_workers} calls worker(s); "
        f"model {settings.model_delay_ms:g} ms, block_card {settings.tool_delay_ms:g} ms",
        flush=True,
    )
    began = time.monotonic()
    until = began + duration
    # Other work on the machine shares its cores: the figures mean little without it.
    loads = [os.getloadavg()[0]]
    sampler = asyncio.create_task(sample_load(loads))
    callers = [asyncio.create_task(chaos.caller(slot, until)) for slot in range(settings.calls)] + [
        asyncio.create_task(chaos.caller(slot, until, voice=True))
        for slot in range(settings.voice_calls)
    ]
    await chaos.inject_faults(until, fleet, server)
    _, running = await asyncio.wait(
        callers, timeout=max(0.0, until - time.monotonic()) + settings.drain
    )
    for task in running:
        task.cancel()
    await asyncio.gather(*callers, return_exceptions=True)
    for kind in (*stack.kinds, "gateway") if stack.gateway else stack.kinds:
        chaos.cpu[kind] += cpu_seconds(chaos.pid_of(kind, fleet, server))
    for replica in fleet.replicas("calls")[1:]:
        chaos.cpu["calls"] += cpu_seconds(replica.pid)
    chaos.cpu["server"] += cpu_seconds(server.pid)
    chaos.cpu["model"] += cpu_seconds(stack.model.pid)
    chaos.cpu["bench"] += cpu_seconds(os.getpid())
    sampler.cancel()
    chaos.report(time.monotonic() - began, len(running))
    print(
        f"load average (1 min) on {os.cpu_count()} cores: {loads[0]:.1f} at the start, "
        f"{statistics.median(loads):.1f} p50 and {max(loads):.1f} max during the run"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Baton chaos soak (prints figures)")
    parser.add_argument("--quick", action="store_true", help="20 calls, 2 min, faults 15-30 s")
    parser.add_argument("--calls", type=int, help="callers at once (default 200)")
    parser.add_argument(
        "--voice-calls", type=int, help="callers on the gateway besides (default 4, quick 2)"
    )
    parser.add_argument("--minutes", type=float, help="how long calls are placed (default 10)")
    parser.add_argument(
        "--fault-every", type=float, nargs=2, metavar=("MIN", "MAX"), help="seconds (30 60)"
    )
    parser.add_argument("--think", type=float, nargs=2, default=(3.0, 7.0), metavar=("MIN", "MAX"))
    parser.add_argument("--model-delay-ms", type=float, default=400.0, help="mean model latency")
    parser.add_argument("--tool-delay-ms", type=float, default=150.0, help="block_card latency")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--faults",
        default=",".join(FAULT_KINDS),
        help=f"kinds of process to kill, comma separated (default {','.join(FAULT_KINDS)})",
    )
    parser.add_argument(
        "--calls-workers", type=int, default=1, help="calls worker processes (a fault kills one)"
    )
    parser.add_argument("--logs", type=Path, help="keep every process's log in this folder")
    args = parser.parse_args()
    faults = tuple(kind.strip() for kind in args.faults.split(",") if kind.strip())
    if not faults or not set(faults) <= set(FAULT_KINDS):
        parser.error(f"--faults takes some of {', '.join(FAULT_KINDS)}")
    quick = args.quick
    voice_calls = (2 if quick else 4) if args.voice_calls is None else args.voice_calls
    if not voice_calls:  # nothing runs on the gateway or the speech worker: nothing to kill
        faults = tuple(kind for kind in faults if kind not in VOICE_KINDS)
    fault_low, fault_high = args.fault_every or ((15.0, 30.0) if quick else (30.0, 60.0))
    think_low, think_high = args.think
    settings = Settings(
        calls=args.calls or (20 if quick else 200),
        minutes=args.minutes or (2.0 if quick else 10.0),
        fault_every=(fault_low, fault_high),
        think=(think_low, think_high),
        model_delay_ms=args.model_delay_ms,
        tool_delay_ms=args.tool_delay_ms,
        drain=60.0 if quick else 180.0,
        seed=args.seed,
        faults=faults,
        logs=args.logs.resolve() if args.logs else None,
        voice_calls=voice_calls,
        calls_workers=max(1, args.calls_workers),
    )
    configure_logging("ERROR")
    asyncio.run(run(settings))


if __name__ == "__main__":
    # A SIGTERM still runs the cleanup in `run`, so no process of ours outlives the bench.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
