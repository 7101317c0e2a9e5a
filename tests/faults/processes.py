"""Baton's own processes, started as an operator starts them and killed as a crash kills them.

Each is `python -m baton.cli ...` (or another module) in a process of its own, ready once it
has printed its banner line. `kill` is SIGKILL to that one PID (a crash: no drain, no cleanup),
`stop` is SIGTERM (a worker drains its in-flight work) with SIGKILL only as the last resort.
Nothing here signals a process it did not start.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from baton.temporal_server import EmbeddedTemporal

#: A worker is up in about 1.5 s on an idle 2-core machine, much later under a bench's load.
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
QUEUE_KINDS = ("calls", "llm", "speech", "tools")


class ProcessStartError(RuntimeError):
    """A child died or stayed silent before printing its banner."""


class ChildProcess:
    """One child process; ready once a stdout line containing `ready` has appeared."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        ready: str,
        log: Path,
        env: Mapping[str, str] | None = None,
        module: str = "baton.cli",
        name: str = "",
    ) -> None:
        self.name = name or f"{module} {' '.join(args[:1])}"
        self.ready = ready
        self.banner = ""
        #: `time.monotonic()` when the banner appeared: the process serves from then on.
        self.up_at: float | None = None
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> str:
        """Block until the banner line; raises if the process exits or stays silent."""
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while self.ready.encode() not in buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProcessStartError(f"{self.name} not ready after {timeout:.0f} s")
                if not selector.select(min(left, 0.5)):
                    continue
                chunk = os.read(stdout.fileno(), 4096)
                if not chunk:
                    code = self.process.wait(timeout=STOP_TIMEOUT)
                    raise ProcessStartError(f"{self.name} exited with {code} before it was ready")
                buffer += chunk
        self.up_at = time.monotonic()
        text = buffer.decode(errors="replace")
        self.banner = next(line for line in text.splitlines() if self.ready in line)
        # Workers print only their banner, but a full pipe would block any chattier child.
        threading.Thread(target=self._drain, args=(stdout.fileno(),), daemon=True).start()
        return self.banner

    async def ready_async(self, timeout: float = READY_TIMEOUT) -> str:
        """`wait_ready` off the event loop, so replies keep arriving while a child starts."""
        return await asyncio.to_thread(self.wait_ready, timeout)

    @staticmethod
    def _drain(fd: int) -> None:
        try:
            while os.read(fd, 65536):
                pass
        except OSError:
            pass

    def kill(self) -> float:
        """SIGKILL (a crash), then reap it; returns the wall-clock time of the kill."""
        killed = time.time()
        if self.alive:
            os.kill(self.pid, signal.SIGKILL)
        self.process.wait(timeout=STOP_TIMEOUT)
        return killed

    def suspend(self) -> None:
        """SIGSTOP: the process holds whatever it was given (open polls, tasks) and does nothing."""
        os.kill(self.pid, signal.SIGSTOP)

    def stop(self) -> int | None:
        """SIGTERM and wait (a worker drains); SIGKILL if it is still alive after that."""
        if self.alive:
            os.kill(self.pid, signal.SIGCONT)  # a suspended process cannot handle SIGTERM
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
        return self.process.returncode


def worker_process(
    address: str, queues: str, log: Path, env: Mapping[str, str] | None = None
) -> ChildProcess:
    """`baton worker --queues <queues>`, started (call `wait_ready` or `ready_async`)."""
    return ChildProcess(
        ["worker", "--address", address, "--queues", queues],
        ready="worker serving",
        log=log,
        env=env,
        name=f"{queues} worker",
    )


@dataclass(frozen=True)
class Killed:
    """A process just killed: its kind, and when (wall clock and monotonic)."""

    kind: str
    at: float
    mono: float


@dataclass(frozen=True)
class Fault:
    """One kill -9 and the replacement that followed it at once."""

    kind: str
    #: Wall clock of the kill (`time.time()`), comparable with transcript timestamps.
    killed_at: float
    killed_mono: float
    #: `time.monotonic()` when the replacement was up (banner printed, server answering).
    up_mono: float

    @property
    def outage(self) -> float:
        """Seconds from the kill until the replacement was up."""
        return self.up_mono - self.killed_mono

    @property
    def up_at(self) -> float:
        """Wall clock when the replacement was up."""
        return self.killed_at + self.outage


class WorkerFleet:
    """One `baton worker` process per queue kind, so each kind can be killed on its own (and
    replicas of a kind beside it, `add_replicas`)."""

    def __init__(self, address: str, logs: Path, env: Mapping[str, str] | None = None) -> None:
        self.address = address
        self.logs = logs
        self.env = dict(env or {})
        self.kind_env: dict[str, dict[str, str]] = {}
        self.workers: dict[str, ChildProcess] = {}
        #: Every process this fleet started, replaced ones included, for `stop`.
        self.started: list[ChildProcess] = []

    def _spawn(self, kind: str, replica: int = 1) -> ChildProcess:
        """Start a worker for `kind`; replicas past the first are `kind#2`, `kind#3`..."""
        key = kind if replica == 1 else f"{kind}#{replica}"
        worker = worker_process(
            self.address,
            kind,
            self.logs / f"worker-{key.replace('#', '-')}.log",
            {**self.env, **self.kind_env.get(kind, {})},
        )
        self.started.append(worker)
        self.workers[key] = worker
        return worker

    async def add_replicas(self, kind: str, count: int) -> None:
        """Start `count` more workers for `kind` beside the one `start` started; `kill` and
        `replace` still take the first, so the others are the survivors that share its calls."""
        spawned = [self._spawn(kind, replica) for replica in range(2, count + 2)]
        await asyncio.gather(*(worker.ready_async() for worker in spawned))

    def replicas(self, kind: str) -> list[ChildProcess]:
        """Every live-or-dead current worker of `kind`: the first, then its replicas."""
        return [w for key, w in self.workers.items() if key.split("#")[0] == kind]

    async def start(self, *kinds: str, env: Mapping[str, str] | None = None) -> None:
        """Start one worker per kind, all at once; `env` adds to these kinds' environment."""
        for kind in kinds:
            if env:
                self.kind_env[kind] = dict(env)
        spawned = [self._spawn(kind) for kind in kinds]
        await asyncio.gather(*(worker.ready_async() for worker in spawned))

    def __getitem__(self, kind: str) -> ChildProcess:
        return self.workers[kind]

    def kill(self, kind: str) -> Killed:
        """kill -9 the `kind` worker (nothing replaces it until `restart`)."""
        mono = time.monotonic()
        return Killed(kind, self.workers[kind].kill(), mono)

    async def restart(self, killed: Killed) -> Fault:
        """Start the replacement of a killed worker; the fault, once it is up."""
        replacement = self._spawn(killed.kind)
        await replacement.ready_async()
        assert replacement.up_at is not None
        return Fault(killed.kind, killed.at, killed.mono, replacement.up_at)

    async def replace(self, kind: str) -> Fault:
        """kill -9 the `kind` worker and start its replacement at once."""
        return await self.restart(self.kill(kind))

    async def stop(self) -> dict[str, int | None]:
        """SIGTERM every worker of this fleet still alive (in parallel); their exit codes, 0
        for a clean drain. Killed ones only have their logs closed."""
        live = [worker for worker in self.started if worker.alive]
        codes = await asyncio.gather(*(asyncio.to_thread(w.stop) for w in self.started))
        return {
            f"{w.name} (pid {w.pid})": code
            for w, code in zip(self.started, codes, strict=True)
            if w in live
        }


async def kill_and_restart_server(server: EmbeddedTemporal) -> Fault:
    """kill -9 the embedded Temporal server and start it again at once on the same port and
    SQLite file (set `db_filename`, or the restart finds nothing)."""
    assert server.options.db_filename is not None, "a restart keeps calls only with a db file"
    pid = server.pid
    assert pid is not None, "the server is not running"
    killed_mono, killed_at = time.monotonic(), time.time()
    os.kill(pid, signal.SIGKILL)
    await server.astop()  # reaps the dead process and closes its log
    await server.astart()
    return Fault("server", killed_at, killed_mono, time.monotonic())
