"""`baton worker` processes for benches: started as an operator starts them, stopped with
SIGTERM (a drain) and waited for, killed only if the drain overruns, and tied to the bench's
life (they die with it, even on kill -9), so a bench never leaves a worker behind."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time

from baton.tethered_process import popen_tethered

#: A worker is polling in about 1.5 s on an idle 2-core machine; far more under load.
READY_TIMEOUT = 120.0
#: What a bench's workers get to drain: a bench stops them between steps, with nothing held.
DRAIN_SECONDS = 5.0


class WorkerProcess:
    """One `baton worker --queues ...` process, returned once it polls."""

    def __init__(self, address: str, queues: str, *flags: str) -> None:
        self.queues = queues
        command = [sys.executable, "-m", "baton.cli", "worker", "--address", address]
        command += ["--queues", queues, "--drain-seconds", str(DRAIN_SECONDS), *flags]
        self.process = popen_tethered(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            self._wait_for_banner()
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def _wait_for_banner(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        seen = b""
        deadline = time.monotonic() + READY_TIMEOUT
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"worker serving" not in seen:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.queues} worker not polling after {READY_TIMEOUT} s")
                if selector.select(0.5):
                    chunk = os.read(stdout.fileno(), 4096)
                    if not chunk:
                        raise RuntimeError(f"{self.queues} worker exited before it polled")
                    seen += chunk

    def stop(self) -> int:
        """SIGTERM, wait for the drain; SIGKILL only past it. The exit code (0: drained)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=DRAIN_SECONDS + 30)
            except subprocess.TimeoutExpired:
                print(f"  ({self.queues} worker overran its drain: killed)", flush=True)
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


def stop_all(workers: list[WorkerProcess]) -> None:
    """Stop every worker, all draining at once."""
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGTERM)
    for worker in workers:
        worker.stop()
